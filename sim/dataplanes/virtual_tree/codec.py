"""Byte-exact codec of typed label stacks: ``Size | label_0 | ... | label_{k-1}``.

The frame layout of seed 000 Fig. 3.2 with the field widths of the ch. 5
P4_16 program (Listing 5.1): after the Ethernet header (EtherType 0x9999)
comes a ``Size`` field holding the number of labels (16 bit), then the labels
(16 bit each), then the payload. A label is a ``type`` in the top bits (2 bit)
and an ``id`` in the low bits (14 bit). All fields are big endian, as the
P4 deparser emits them.

Every width is a parameter of :class:`LabelFormat` (the defaults are the
thesis's); the ``neighbor_labels`` family (hops, destinations) uses the same
codec with its own type codes. A value that does not fit its field raises
:class:`FieldRangeError` naming the field, never truncates.

Type codes of the virtual-tree program (the thesis gives none, digest ch. 5
§1.4 [R]): ``00`` invalid, ``01`` hop, ``10`` stop, ``11`` tree.

References
----------
Seed 000 §3.2 (Fig. 3.2 frame layout), §5.2.6 (Listing 5.1: ``Size_h``
``bit<16> num_entries``, ``Entry_h`` ``bit<16> ident`` = 2-bit type + 14-bit
id; EtherType 0x9999); digest ch. 1-4 §2.1, §7.11 and ch. 5-7 §1.4.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from sim.dataplanes.packet import Packet
from topologies.registry import SpecError, check

ETHERTYPE_STACK = 0x9999

KIND_INVALID = 0b00
KIND_HOP = 0b01
KIND_STOP = 0b10
KIND_TREE = 0b11


#: struct codes of the big-endian unsigned widths (bytes) that have one
_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}


class FieldRangeError(ValueError):
    """A value does not fit the header or metadata field it must go into."""


class StackDecodeError(ValueError):
    """The bytes after the Ethernet header are not a well-formed label stack."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelFormat:
    """Field widths of a typed label stack.

    Parameters
    ----------
    label_bits : int
        Width of one label (type + id) in bits; a multiple of 8 (default 16).
    type_bits : int
        Width of the type tag at the top of a label (default 2).
    size_bits : int
        Width of the ``Size`` field (number of labels); a multiple of 8
        (default 16).
    bitmask_bits : int
        Width of the port bitmasks (``remaining_ports``, ``served_ports``,
        stored tree masks); ports ``1..bitmask_bits`` map to bits ``0..``
        (default 64).
    ethertype : int
        EtherType that marks a label stack (default 0x9999).
    """

    label_bits: int = 16
    type_bits: int = 2
    size_bits: int = 16
    bitmask_bits: int = 64
    ethertype: int = ETHERTYPE_STACK

    def __post_init__(self) -> None:
        validate_widths(self.label_bits, self.type_bits, self.size_bits, self.bitmask_bits,
                        self.ethertype)

    # -- derived widths ------------------------------------------------------
    @property
    def id_bits(self) -> int:
        """Width of the id part of a label (``label_bits - type_bits``)."""
        return self.label_bits - self.type_bits

    @property
    def label_bytes(self) -> int:
        return self.label_bits // 8

    @property
    def size_bytes(self) -> int:
        return self.size_bits // 8

    @property
    def max_id(self) -> int:
        return (1 << self.id_bits) - 1

    @property
    def max_entries(self) -> int:
        return (1 << self.size_bits) - 1

    def header_bytes(self, entries: int) -> int:
        """Bytes of a stack with ``entries`` labels (Size field included)."""
        return self.size_bytes + entries * self.label_bytes

    # -- labels --------------------------------------------------------------
    def label(self, kind: int, ident: int, what: str = "label id") -> int:
        """Pack ``kind`` and ``ident`` into one label value.

        Raises
        ------
        FieldRangeError
            If ``ident`` does not fit ``id_bits`` or ``kind`` does not fit
            ``type_bits``; the message names the field and ``what`` the id is.
        """
        if not 0 <= kind < 1 << self.type_bits:
            raise FieldRangeError(f"label type {kind} does not fit the {self.type_bits}-bit "
                                  f"type field (type_bits)")
        if not 0 <= ident <= self.max_id:
            raise FieldRangeError(f"{what} {ident} does not fit the {self.id_bits}-bit id field "
                                  f"(id_bits = label_bits - type_bits; ids 0..{self.max_id})")
        return (kind << self.id_bits) | ident

    def kind(self, label: int) -> int:
        return label >> self.id_bits

    def ident(self, label: int) -> int:
        return label & self.max_id

    # -- port bitmasks -------------------------------------------------------
    def port_bit(self, port: int) -> int:
        """The bitmask bit of ``port`` (port 1 = bit 0, seed 000 Listing 5.4)."""
        if not 1 <= port <= self.bitmask_bits:
            raise FieldRangeError(f"port {port} does not fit the {self.bitmask_bits}-bit port "
                                  f"bitmask (bitmask_bits; ports 1..{self.bitmask_bits})")
        return 1 << (port - 1)

    def port_mask(self, ports: Iterable[int]) -> int:
        mask = 0
        for p in ports:
            mask |= self.port_bit(p)
        return mask

    def mask_ports(self, mask: int) -> tuple[int, ...]:
        """Ports of the 1-bits of ``mask``, ascending."""
        return tuple(i + 1 for i in range(mask.bit_length()) if mask >> i & 1)

    # -- stacks --------------------------------------------------------------
    def encode(self, labels: Sequence[int]) -> bytes:
        """``Size`` followed by the labels, big endian.

        Raises
        ------
        FieldRangeError
            If there are more labels than ``Size`` can count or a label is
            wider than ``label_bits``.
        """
        n = len(labels)
        lay = _layout(self)
        if n > lay.max_entries:
            raise FieldRangeError(f"stack of {len(labels)} labels does not fit the "
                                  f"{self.size_bits}-bit Size field (size_bits)")
        if lay.packed and (not n or (min(labels) >= 0 and max(labels) < lay.limit)):
            return lay.stack(n).pack(n, *labels)  # the bytes of the loop below, faster
        out = bytearray(len(labels).to_bytes(self.size_bytes, "big"))
        width = self.label_bytes
        for lab in labels:
            if not 0 <= lab < 1 << self.label_bits:
                raise FieldRangeError(f"label {lab:#x} does not fit {self.label_bits} bits "
                                      f"(label_bits)")
            out += lab.to_bytes(width, "big")
        return bytes(out)

    def decode(self, body: bytes) -> tuple[tuple[int, ...], int]:
        """Parse a stack at the start of ``body`` (what follows the Ethernet header).

        Returns
        -------
        labels : tuple of int
            The labels, top of stack first.
        header_len : int
            Bytes taken by ``Size`` and the labels; the payload follows.

        Raises
        ------
        StackDecodeError
            If ``body`` is shorter than the ``Size`` field or than the labels
            it announces.
        """
        lay = _layout(self)
        sb = lay.size_bytes
        if len(body) < sb:
            raise StackDecodeError(f"{len(body)} B cannot hold the {sb}-byte Size field")
        count = int.from_bytes(body[:sb], "big")
        width = lay.label_bytes
        end = sb + count * width
        if len(body) < end:
            raise StackDecodeError(f"Size announces {count} labels ({end} B) but only "
                                   f"{len(body)} B follow the Ethernet header")
        if lay.packed:
            return lay.labels(count).unpack_from(body, sb), end
        labels = tuple(int.from_bytes(body[i:i + width], "big") for i in range(sb, end, width))
        return labels, end

    def parse(self, packet: Packet) -> tuple[tuple[int, ...], bytes] | None:
        """What the parser of the label programs extracts: the labels and payload of
        ``packet``, or None when it is no non-empty stack of this format (wrong
        EtherType, a stack that does not decode, or no label): the frame is dropped."""
        if packet.ethertype != self.ethertype:
            return None
        try:
            labels, payload = self.split_body(packet.header, packet.payload)
        except StackDecodeError:
            return None
        return (labels, payload) if labels else None

    def split_body(self, header: bytes, payload: bytes) -> tuple[tuple[int, ...], bytes]:
        """Labels and payload of a frame whose body is ``header + payload``."""
        lay = _layout(self)
        sb = lay.size_bytes
        if lay.packed and len(header) >= sb:  # the whole stack in ``header``: no copy
            count = int.from_bytes(header[:sb], "big")
            end = sb + count * lay.label_bytes
            if end <= len(header):
                labels = lay.labels(count).unpack_from(header, sb)
                return labels, header[end:] + payload if end < len(header) else payload
        labels, end = self.decode(header + payload)
        return labels, (header + payload)[end:]


class _Layout:
    """Byte layout of one :class:`LabelFormat`, with its ``struct`` codecs per stack size
    (``packed``: both widths have a ``struct`` code)."""

    __slots__ = ("fmt", "size_bytes", "label_bytes", "limit", "max_entries", "packed",
                 "_code", "_size_code", "_stacks", "_labels")

    def __init__(self, fmt: LabelFormat) -> None:
        self.fmt = fmt
        self.size_bytes, self.label_bytes = fmt.size_bytes, fmt.label_bytes
        self.limit, self.max_entries = 1 << fmt.label_bits, fmt.max_entries
        self._code, self._size_code = _CODES.get(self.label_bytes), _CODES.get(self.size_bytes)
        self.packed = bool(self._code and self._size_code)
        self._stacks: dict[int, struct.Struct] = {}
        self._labels: dict[int, struct.Struct] = {}

    def stack(self, n: int) -> struct.Struct:
        """Size field and ``n`` labels."""
        s = self._stacks.get(n)
        if s is None:
            s = self._stacks[n] = struct.Struct(f">{self._size_code}{n}{self._code}")
        return s

    def labels(self, n: int) -> struct.Struct:
        """``n`` labels."""
        s = self._labels.get(n)
        if s is None:
            s = self._labels[n] = struct.Struct(f">{n}{self._code}")
        return s


@lru_cache(maxsize=64)
def _layout(fmt: LabelFormat) -> _Layout:
    """The ``struct`` layouts of ``fmt``, keyed by its value (a frozen dataclass).

    A pure function of an immutable value, like ``re``'s pattern cache: no
    cell-dependent state, so it is not part of :class:`sim.dataplanes.caches.Caches`.
    """
    return _Layout(fmt)


@dataclass(frozen=True, slots=True)
class LabelCounts:
    """How many labels of each type a header holds (seed 000 §5.2.4: tree, stop, hop)."""

    tree: int = 0
    stop: int = 0
    hop: int = 0

    @property
    def total(self) -> int:
        return self.tree + self.stop + self.hop


def count_labels(fmt: LabelFormat, headers: Iterable[bytes]) -> LabelCounts:
    """Tree, stop and hop labels in ``headers`` (each a ``Size | labels`` stack, e.g.
    the ``header`` of every packet of an encoding), decoded with ``fmt``.

    The counts are read from the bytes, so they are what the switches see;
    for the virtual-tree program they add up to the header's entries.

    Raises
    ------
    StackDecodeError
        If a header is not a well-formed stack or holds a label of type
        ``00`` (invalid).
    """
    tree = stop = hop = 0
    shift = fmt.id_bits
    for header in headers:
        labels, _ = fmt.decode(header)
        for label in labels:
            kind = label >> shift
            if kind == KIND_TREE:
                tree += 1
            elif kind == KIND_STOP:
                stop += 1
            elif kind == KIND_HOP:
                hop += 1
            else:
                raise StackDecodeError(f"label {label:#x} has the invalid type {kind:#b}")
    return LabelCounts(tree, stop, hop)


def validate_widths(label_bits: int, type_bits: int, size_bits: int, bitmask_bits: int,
                    ethertype: int) -> None:
    """Check a set of field widths (shared by :class:`LabelFormat` and strategy params).

    Raises
    ------
    SpecError
        Naming the first field that is out of range.
    """
    check(label_bits % 8 == 0 and 8 <= label_bits <= 64,
          f"label_bits must be a multiple of 8 in 8..64, got {label_bits}")
    check(1 <= type_bits < label_bits,
          f"type_bits must be in 1..label_bits-1 ({label_bits - 1}), got {type_bits}")
    check(size_bits % 8 == 0 and 8 <= size_bits <= 32,
          f"size_bits must be a multiple of 8 in 8..32, got {size_bits}")
    check(1 <= bitmask_bits <= 512, f"bitmask_bits must be in 1..512, got {bitmask_bits}")
    check(0 <= ethertype <= 0xFFFF, f"ethertype must be in 0..0xffff, got {ethertype}")


__all__ = [
    "ETHERTYPE_STACK", "FieldRangeError", "KIND_HOP", "KIND_INVALID", "KIND_STOP", "KIND_TREE",
    "LabelCounts", "LabelFormat", "SpecError", "StackDecodeError", "count_labels",
    "validate_widths",
]
