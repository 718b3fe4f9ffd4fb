"""Byte codec of the Elmo header: p-rules per layer, shared p-rules, default p-rules.

Wire format after the Ethernet header (EtherType :data:`ETHERTYPE_ELMO`), all
fields big endian and MSB first, each element below padded with zero bits to
a whole number of bytes (a P4_16 header is whole bytes on BMv2), in this order::

    elmo      | group_id:32 | flags:8 | n_spine:8 | n_leaf:8 |            7 B
    up_leaf   | multipath:1 | up:Ul | down:Dl | pad |          if flags & UP_LEAF
    up_spine  | multipath:1 | up:Us | down:Ds | pad |          if flags & UP_SPINE
    core      | down:Dc | pad |                                if flags & CORE
    spine     | k-1:Kc | bitmap:Ds | id:Ip x k | pad |         n_spine times
    spine_dft | bitmap:Ds | pad |                              if flags & SPINE_DEFAULT
    leaf      | k-1:Kc | bitmap:Dl | id:Il x k | pad |         n_leaf times
    leaf_dft  | bitmap:Dl | pad |                              if flags & LEAF_DEFAULT
    payload

``flags``: :data:`UP_LEAF` 0x80, :data:`UP_SPINE` 0x40, :data:`CORE` 0x20,
:data:`SPINE_DEFAULT` 0x10, :data:`LEAF_DEFAULT` 0x08; the low three bits
are zero. A P4 parser extracts ``elmo``, then each present element; the
shared p-rules of a layer are a header stack of ``n_spine`` / ``n_leaf``
elements whose type (one per k = 1..K) it picks by a ``lookahead`` of the
``Kc``-bit id count.

Field widths (:class:`ElmoLayout`, fixed per network like the constants of
Elmo's P4_14 programs, Elmo-MCast/p4-programs ``elmo_leaf_switch.p4``
``NUM_HOSTS_PER_LEAF`` ... ``LEAF_ID_SIZE_in_BITS``): ``Dl``/``Ul`` the down
(host) and up (spine) ports of a leaf, ``Ds``/``Us`` those of a spine (leaves,
cores), ``Dc`` the down ports of a core (one per pod), ``Il`` the leaf-id and
``Ip`` the pod-id width, ``Kc`` the width of ``k - 1`` for at most ``K``
switch ids per p-rule (Elmo's K_max, §3.2). At Elmo's 27,648-host network
(12 pods x 48 leaves x 48 hosts, 4 spines per pod, 4 cores) a leaf p-rule
naming three leaves is 2 + 48 + 3 x 10 = 80 bits (10 B).

Differences from the P4_14 programs, each for byte alignment or because this
model has no outer IP header: one ``group_id`` (Elmo matches s-rules on the
inner IPv4 destination, ``elmo_downstream_leaf_s_rule_tbl``); per-layer
counts in ``elmo`` instead of a ``next_p_rule`` bit per p-rule and a count of
ids instead of a ``next_id`` bit per id; upstream bitmaps before downstream
ones; presence flags instead of the one-bit ``type_``. Elmo's own packets ride
in VXLAN (§6); those outer headers are not modelled.

References
----------
Elmo SIGCOMM 2019 §3.1-3.2 (p-rules per layer, multipath flag, shared
p-rules with switch-id lists, default p-rule), Fig. 3; Elmo-MCast/p4-programs
``elmo_leaf_switch.p4``, ``elmo_spine_switch.p4``, ``elmo_core_switch.p4``
(header types and widths).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil
from typing import NamedTuple

#: EtherType of an Elmo frame (a value no other family here uses; Elmo itself
#: is inside VXLAN, whose outer headers this model leaves out).
ETHERTYPE_ELMO = 0x9E10
#: EtherType of the frame a leaf hands a host once it stripped the Elmo header
#: (the plain event frame of the L2 baselines, IEEE 802 local experimental 1).
ETHERTYPE_EVENT = 0x88B5

UP_LEAF, UP_SPINE, CORE, SPINE_DEFAULT, LEAF_DEFAULT = 0x80, 0x40, 0x20, 0x10, 0x08
_KNOWN_FLAGS = UP_LEAF | UP_SPINE | CORE | SPINE_DEFAULT | LEAF_DEFAULT
FIXED_BYTES = 7
GROUP_ID_BITS = 32
MAX_RULES = 255  # n_spine / n_leaf are 8-bit counts


class ElmoDecodeError(ValueError):
    """Bytes that are not a well-formed Elmo header (truncated, bad flags or counts)."""


class UpRule(NamedTuple):
    """An upstream p-rule (leaf or spine): downstream and upstream port bitmaps and
    the multipath flag (forward on one of the ``up`` ports, Elmo §3.1)."""

    down: int
    up: int
    multipath: bool


class PRule(NamedTuple):
    """A downstream p-rule: the port bitmap shared by the switches ``ids``."""

    ids: tuple[int, ...]
    bitmap: int


@dataclass(frozen=True, slots=True)
class ElmoHeader:
    """The Elmo header of one packet (a section is None or empty when absent)."""

    group_id: int
    up_leaf: UpRule | None = None
    up_spine: UpRule | None = None
    core: int | None = None
    spine_rules: tuple[PRule, ...] = ()
    spine_default: int | None = None
    leaf_rules: tuple[PRule, ...] = ()
    leaf_default: int | None = None

    @property
    def entries(self) -> int:
        """The p-rules it carries (upstream, core, shared and default p-rules)."""
        return (len(self.spine_rules) + len(self.leaf_rules)
                + sum(x is not None for x in (self.up_leaf, self.up_spine, self.core,
                                               self.spine_default, self.leaf_default)))

    @property
    def flags(self) -> int:
        return ((UP_LEAF if self.up_leaf is not None else 0)
                | (UP_SPINE if self.up_spine is not None else 0)
                | (CORE if self.core is not None else 0)
                | (SPINE_DEFAULT if self.spine_default is not None else 0)
                | (LEAF_DEFAULT if self.leaf_default is not None else 0))


@dataclass(frozen=True, slots=True, kw_only=True)
class ElmoLayout:
    """Field widths of one compiled Elmo program (module docstring), in bits.

    Every width is >= 1; ``max_ids`` (K) is in 1..16 and ``count_bits`` holds
    ``k - 1``.
    """

    leaf_down: int
    leaf_up: int
    spine_down: int
    spine_up: int
    core_down: int
    leaf_id: int
    pod_id: int
    max_ids: int = 3

    def __post_init__(self) -> None:
        for name in ("leaf_down", "leaf_up", "spine_down", "spine_up", "core_down", "leaf_id",
                     "pod_id"):
            if getattr(self, name) < 1:
                raise ValueError(f"Elmo layout: {name} must be >= 1 bit, got {getattr(self, name)}")
        if not 1 <= self.max_ids <= 16:
            raise ValueError(f"Elmo layout: max_ids must be in 1..16, got {self.max_ids}")

    @property
    def count_bits(self) -> int:
        return max(1, (self.max_ids - 1).bit_length())

    @property
    def params(self) -> tuple[tuple[str, int], ...]:
        """The widths as (name, value) pairs (the ``elmo_switch`` rule carries them)."""
        return tuple((f, getattr(self, f)) for f in LAYOUT_FIELDS)

    # -- sizes in bytes ----------------------------------------------------------------
    @property
    def up_leaf_bytes(self) -> int:
        return ceil((1 + self.leaf_up + self.leaf_down) / 8)

    @property
    def up_spine_bytes(self) -> int:
        return ceil((1 + self.spine_up + self.spine_down) / 8)

    @property
    def core_bytes(self) -> int:
        return ceil(self.core_down / 8)

    def spine_rule_bytes(self, ids: int) -> int:
        return ceil((self.count_bits + self.spine_down + ids * self.pod_id) / 8)

    def leaf_rule_bytes(self, ids: int) -> int:
        return ceil((self.count_bits + self.leaf_down + ids * self.leaf_id) / 8)

    @property
    def spine_default_bytes(self) -> int:
        return ceil(self.spine_down / 8)

    @property
    def leaf_default_bytes(self) -> int:
        return ceil(self.leaf_down / 8)

    def header_bytes(self, header: ElmoHeader) -> int:
        """Length of ``encode_header(header, self)`` without building it."""
        return (FIXED_BYTES
                + (self.up_leaf_bytes if header.up_leaf is not None else 0)
                + (self.up_spine_bytes if header.up_spine is not None else 0)
                + (self.core_bytes if header.core is not None else 0)
                + sum(self.spine_rule_bytes(len(r.ids)) for r in header.spine_rules)
                + (self.spine_default_bytes if header.spine_default is not None else 0)
                + self.leaf_section_bytes(header))

    def leaf_section_bytes(self, header: ElmoHeader) -> int:
        """Bytes of the leaf p-rules and the leaf default p-rule."""
        return (sum(self.leaf_rule_bytes(len(r.ids)) for r in header.leaf_rules)
                + (self.leaf_default_bytes if header.leaf_default is not None else 0))


#: The :class:`ElmoLayout` fields, in the order of :attr:`ElmoLayout.params`.
LAYOUT_FIELDS = ("leaf_down", "leaf_up", "spine_down", "spine_up", "core_down", "leaf_id",
                 "pod_id", "max_ids")


# -- bit packing ------------------------------------------------------------------------


def _pack(fields: Sequence[tuple[int, int, str]]) -> bytes:
    """``(value, width, name)`` MSB first, zero-padded to whole bytes."""
    acc = 0
    n = 0
    for value, width, name in fields:
        if not 0 <= value < 1 << width:
            raise ValueError(f"Elmo header: {name} = {value} does not fit {width} bits")
        acc = (acc << width) | value
        n += width
    pad = -n % 8
    return (acc << pad).to_bytes((n + pad) // 8, "big")


class _Reader:
    """Reads whole-byte elements of known bit layouts from ``body``."""

    __slots__ = ("body", "pos")

    def __init__(self, body: bytes, pos: int) -> None:
        self.body = body
        self.pos = pos

    def element(self, nbytes: int, what: str) -> tuple[int, int]:
        """The next element as an integer and its width in bits."""
        end = self.pos + nbytes
        if end > len(self.body):
            raise ElmoDecodeError(f"truncated Elmo header: {what} needs {nbytes} B at offset "
                                  f"{self.pos}, only {len(self.body) - self.pos} B left")
        word = int.from_bytes(self.body[self.pos:end], "big")
        self.pos = end
        return word, 8 * nbytes

    def peek_bits(self, bits: int, what: str) -> int:
        if self.pos >= len(self.body):
            raise ElmoDecodeError(f"truncated Elmo header: no byte left for {what}")
        return self.body[self.pos] >> (8 - bits)


def _take(word: int, width: int, at: int, bits: int) -> int:
    """The ``bits``-wide field starting ``at`` bits from the MSB of a ``width``-bit word."""
    return (word >> (width - at - bits)) & ((1 << bits) - 1)


def encode_header(header: ElmoHeader, layout: ElmoLayout) -> bytes:
    """The exact header bytes of ``header``.

    Raises
    ------
    ValueError
        If a value does not fit its field (the message names it), a p-rule has
        no id or more than ``layout.max_ids``, or a layer has more than 255 p-rules.
    """
    lay = layout
    for name, rules in (("spine", header.spine_rules), ("leaf", header.leaf_rules)):
        if len(rules) > MAX_RULES:
            raise ValueError(f"Elmo header: {len(rules)} {name} p-rules exceed the 8-bit count")
    out = [_pack(((header.group_id, GROUP_ID_BITS, "group_id"), (header.flags, 8, "flags"),
                  (len(header.spine_rules), 8, "n_spine"),
                  (len(header.leaf_rules), 8, "n_leaf")))]
    for up, up_bits, down_bits, name in ((header.up_leaf, lay.leaf_up, lay.leaf_down, "leaf"),
                                         (header.up_spine, lay.spine_up, lay.spine_down,
                                          "spine")):
        if up is not None:
            out.append(_pack(((int(up.multipath), 1, "multipath"),
                              (up.up, up_bits, f"upstream {name} up bitmap"),
                              (up.down, down_bits, f"upstream {name} down bitmap"))))
    if header.core is not None:
        out.append(_pack(((header.core, lay.core_down, "core bitmap"),)))
    out.append(encode_layer(header.spine_rules, header.spine_default, lay, "spine"))
    out.append(encode_layer(header.leaf_rules, header.leaf_default, lay, "leaf"))
    return b"".join(out)


def layer_widths(layout: ElmoLayout, layer: str) -> tuple[int, int]:
    """(bitmap, id) widths of the downstream ``layer`` ("spine" or "leaf")."""
    if layer == "spine":
        return layout.spine_down, layout.pod_id
    if layer == "leaf":
        return layout.leaf_down, layout.leaf_id
    raise ValueError(f"layer must be 'spine' or 'leaf', got {layer!r}")


def encode_layer(rules: Sequence[PRule], default: int | None, layout: ElmoLayout,
                 layer: str) -> bytes:
    """:func:`encode_layer_reference` with the fields of a p-rule shifted into one
    integer inline; any value out of range goes to the reference, which raises."""
    bitmap_bits, id_bits = layer_widths(layout, layer)
    bitmap_end = 1 << bitmap_bits
    id_end = 1 << id_bits
    head_bits = layout.count_bits + bitmap_bits
    out = bytearray()
    for rule in rules:
        ids, bitmap = rule.ids, rule.bitmap
        if not (1 <= len(ids) <= layout.max_ids and 0 <= bitmap < bitmap_end):
            return encode_layer_reference(rules, default, layout, layer)
        acc = (len(ids) - 1) << bitmap_bits | bitmap
        for i in ids:
            if not 0 <= i < id_end:
                return encode_layer_reference(rules, default, layout, layer)
            acc = acc << id_bits | i
        width = head_bits + len(ids) * id_bits
        pad = -width % 8
        out += (acc << pad).to_bytes((width + pad) >> 3, "big")
    if default is not None:
        if not 0 <= default < bitmap_end:
            return encode_layer_reference(rules, default, layout, layer)
        pad = -bitmap_bits % 8
        out += (default << pad).to_bytes((bitmap_bits + pad) >> 3, "big")
    return bytes(out)


def encode_layer_reference(rules: Sequence[PRule], default: int | None, layout: ElmoLayout,
                           layer: str) -> bytes:
    """The bytes of one downstream layer: its shared p-rules, then its default p-rule.

    Raises
    ------
    ValueError
        As :func:`encode_header`.
    """
    bitmap_bits, id_bits = layer_widths(layout, layer)
    out = []
    for rule in rules:
        if not 1 <= len(rule.ids) <= layout.max_ids:
            raise ValueError(f"Elmo header: a {layer} p-rule names {len(rule.ids)} switches "
                             f"(1..{layout.max_ids} allowed)")
        out.append(_pack(((len(rule.ids) - 1, layout.count_bits, "id count"),
                          (rule.bitmap, bitmap_bits, f"{layer} p-rule bitmap"),
                          *((i, id_bits, f"{layer} id") for i in rule.ids))))
    if default is not None:
        out.append(_pack(((default, bitmap_bits, f"{layer} default bitmap"),)))
    return b"".join(out)


def decode_layer(body: bytes, count: int, has_default: bool, layout: ElmoLayout, layer: str,
                 start: int = 0) -> tuple[tuple[PRule, ...], int | None, int]:
    """Parse ``count`` p-rules (and the default p-rule) of ``layer`` from ``body[start:]``:
    the p-rules, the default bitmap (None) and the offset after them.

    Raises
    ------
    ElmoDecodeError
        As :func:`decode_header`.
    """
    bitmap_bits, id_bits = layer_widths(layout, layer)
    r = _Reader(body, start)
    rules = _rules(r, count, layout, bitmap_bits, id_bits, layer)
    default = _default(r, has_default, bitmap_bits, layer)
    return rules, default, r.pos


def decode_header(body: bytes, layout: ElmoLayout) -> tuple[ElmoHeader, int]:
    """Parse the Elmo header at the start of ``body`` (header + payload).

    Returns the header and the number of bytes it takes.

    Raises
    ------
    ElmoDecodeError
        If ``body`` is truncated, the flags have unknown bits set or an id
        count exceeds ``layout.max_ids``.
    """
    lay = layout
    r = _Reader(body, 0)
    word, width = r.element(FIXED_BYTES, "the fixed header")
    group_id = word >> 24
    flags, n_spine, n_leaf = (word >> 16) & 0xFF, (word >> 8) & 0xFF, word & 0xFF
    if flags & ~_KNOWN_FLAGS:
        raise ElmoDecodeError(f"Elmo flags {flags:#04x} set reserved bits")
    ups: list[UpRule | None] = []
    for flag, up_bits, down_bits, nbytes in ((UP_LEAF, lay.leaf_up, lay.leaf_down,
                                              lay.up_leaf_bytes),
                                             (UP_SPINE, lay.spine_up, lay.spine_down,
                                              lay.up_spine_bytes)):
        if not flags & flag:
            ups.append(None)
            continue
        word, width = r.element(nbytes, "an upstream p-rule")
        ups.append(UpRule(down=_take(word, width, 1 + up_bits, down_bits),
                          up=_take(word, width, 1, up_bits), multipath=bool(word >> (width - 1))))
    core = None
    if flags & CORE:
        word, width = r.element(lay.core_bytes, "the core p-rule")
        core = _take(word, width, 0, lay.core_down)
    spine_rules, spine_default, pos = decode_layer(body, n_spine, bool(flags & SPINE_DEFAULT),
                                                   lay, "spine", r.pos)
    leaf_rules, leaf_default, pos = decode_layer(body, n_leaf, bool(flags & LEAF_DEFAULT), lay,
                                                 "leaf", pos)
    return ElmoHeader(group_id, ups[0], ups[1], core, spine_rules, spine_default, leaf_rules,
                      leaf_default), pos


def _rules(r: _Reader, count: int, lay: ElmoLayout, bitmap_bits: int, id_bits: int,
           name: str) -> tuple[PRule, ...]:
    out = []
    cb = lay.count_bits
    for _ in range(count):
        k = r.peek_bits(cb, f"a {name} p-rule") + 1
        if k > lay.max_ids:
            raise ElmoDecodeError(f"a {name} p-rule names {k} switches, more than max_ids="
                                  f"{lay.max_ids}")
        nbytes = ceil((cb + bitmap_bits + k * id_bits) / 8)
        word, width = r.element(nbytes, f"a {name} p-rule")
        ids = tuple(_take(word, width, cb + bitmap_bits + j * id_bits, id_bits) for j in range(k))
        out.append(PRule(ids, _take(word, width, cb, bitmap_bits)))
    return tuple(out)


def _default(r: _Reader, present: bool, bitmap_bits: int, name: str) -> int | None:
    if not present:
        return None
    word, width = r.element(ceil(bitmap_bits / 8), f"the {name} default p-rule")
    return _take(word, width, 0, bitmap_bits)
