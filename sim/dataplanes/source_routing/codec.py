"""Byte codec of the source-routing label stacks (switch/{port, bitmask, mc-group}, mixed).

Wire format after the Ethernet header (seed 000 Fig. 3.2), all fields big
endian, no padding::

    | Size : size_bits | e_0 | e_1 | ... | e_{Size-1} | payload |
    e_i = | id : id_bits | tag : tag_bits (mixed only) | value : value_bits |

``Size`` counts the entries that follow. ``id`` is the switch id
(:meth:`topologies.model.Topology.switch_id`, 0-based). ``value`` is a port
number (switch/port), a port bitmask with bit ``i - 1`` (LSB first) standing
for port ``i`` (switch/bitmask), a multicast group id (switch/mc-group) or,
in mixed stacks, any of the three as told by ``tag`` (:data:`TAG_PORT`,
:data:`TAG_BITMASK`, :data:`TAG_MCGROUP`; 0 is invalid). An entry must be a
whole number of bytes, as P4 headers are.

Thesis defaults: ``id`` 8 bit, port 8 bit (2 B entries), bitmask/group 16 bit
(3 B entries), mixed ``8 | 8 | 16`` (4 B, digest §3.5), ``Size`` 16 bit
(ch. 5 ``num_entries``), EtherType 0x9999.

References
----------
Seed 000 §3.2 (Fig. 3.2, Listing 3.1), §3.3.1-3.3.4, §3.5.2 (entry sizes);
digest ch. 1-4 §2.1, §3.2-3.5.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import lshift, or_
from typing import NamedTuple

from sim.dataplanes.packet import ETH_HEADER_BYTES, Packet
from topologies.registry import SpecError

ETHERTYPE_STACK = 0x9999  # same value as strategies.frame_size (ch. 5 P4_16 parser)

TAG_PORT = 1
TAG_BITMASK = 2
TAG_MCGROUP = 3
TAG_NAMES = {TAG_PORT: "port", TAG_BITMASK: "bitmask", TAG_MCGROUP: "mcgroup"}


class StackDecodeError(ValueError):
    """Bytes that are not a well-formed stack (truncated, or Size too large)."""


class StackEntry(NamedTuple):
    """One stack element ``<switch_id, [tag,] value>``.

    A named tuple rather than a frozen dataclass: parsing a stack creates one
    per entry, and a tuple is several times cheaper to create.
    """

    switch_id: int
    value: int
    tag: int = 0

    def __str__(self) -> str:
        tag = f"{TAG_NAMES.get(self.tag, self.tag)}," if self.tag else ""
        return f"<{self.switch_id},{tag}{self.value}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class StackLayout:
    """Field widths of one compiled source-routing program.

    Parameters
    ----------
    id_bits : int
        Switch-id width (thesis 8: up to 256 switches).
    tag_bits : int
        Strategy-tag width; 0 = untagged entries (switch/port, bitmask,
        mc-group), > 0 for mixed stacks (digest §3.5 recommends 8).
    value_bits : int
        Width of the routing information (port 8, bitmask/group 16).
    size_bits : int
        Width of the ``Size`` field (16, ch. 5 ``num_entries``).
    ethertype : int
        EtherType that marks a stack (0x9999).
    value_field : str
        Name of the strategy parameter behind ``value_bits`` (``port_bits``,
        ``bitmask_bits``, ``group_bits``, ``value_bits``), used in messages.
    """

    id_bits: int = 8
    tag_bits: int = 0
    value_bits: int = 8
    size_bits: int = 16
    ethertype: int = ETHERTYPE_STACK
    value_field: str = "value_bits"

    def __post_init__(self) -> None:
        for name in ("id_bits", "value_bits", "size_bits"):
            if getattr(self, name) < 1:
                raise SpecError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.tag_bits < 0:
            raise SpecError(f"tag_bits must be >= 0, got {self.tag_bits}")
        bits = self.id_bits + self.tag_bits + self.value_bits
        if bits % 8:
            fields = "id_bits + tag_bits + " if self.tag_bits else "id_bits + "
            raise SpecError(
                f"a stack entry must be whole bytes: {fields}{self.value_field} = {bits} bits "
                f"(id_bits={self.id_bits}, {self.value_field}={self.value_bits}) is not a "
                "multiple of 8")
        if self.size_bits % 8:
            raise SpecError(f"size_bits must be a multiple of 8, got {self.size_bits}")
        if not 0x0600 <= self.ethertype <= 0xFFFF:
            raise SpecError(f"ethertype must be in 0x0600..0xffff, got {self.ethertype:#x}")

    @property
    def entry_bytes(self) -> int:
        return (self.id_bits + self.tag_bits + self.value_bits) // 8

    @property
    def size_bytes(self) -> int:
        return self.size_bits // 8

    @property
    def max_entries(self) -> int:
        """Largest count the ``Size`` field can hold."""
        return (1 << self.size_bits) - 1

    def header_bytes(self, entries: int) -> int:
        """Bytes of a stack with ``entries`` entries, ``Size`` included."""
        return self.size_bytes + entries * self.entry_bytes

    def check(self, entry: StackEntry) -> None:
        """Raise ValueError naming the field ``entry`` does not fit."""
        if not 0 <= entry.switch_id < 1 << self.id_bits:
            raise ValueError(f"switch id {entry.switch_id} does not fit the {self.id_bits}-bit "
                             f"id field (id_bits={self.id_bits})")
        if not 0 <= entry.value < 1 << self.value_bits:
            raise ValueError(f"value {entry.value} of {entry} does not fit the "
                             f"{self.value_bits}-bit field ({self.value_field}={self.value_bits})")
        if not 0 <= entry.tag < 1 << self.tag_bits:  # untagged layouts only allow tag 0
            raise ValueError(f"tag {entry.tag} of {entry} does not fit tag_bits={self.tag_bits}")


def encode_stack(entries: Sequence[StackEntry], layout: StackLayout) -> bytes:
    """``Size`` + entries as the exact header bytes.

    Raises
    ------
    ValueError
        If a field does not fit its width (the message names the field) or
        there are more entries than ``Size`` can count.
    """
    if len(entries) > layout.max_entries:
        raise ValueError(f"{len(entries)} entries do not fit the {layout.size_bits}-bit Size "
                         f"field (size_bits={layout.size_bits})")
    value_bits = layout.value_bits
    id_shift = layout.tag_bits + value_bits
    id_end, value_end, tag_end = 1 << layout.id_bits, 1 << value_bits, 1 << layout.tag_bits
    width = layout.entry_bytes
    out = [len(entries).to_bytes(layout.size_bytes, "big")]
    for e in entries:
        sid, value, tag = e.switch_id, e.value, e.tag
        if not (0 <= sid < id_end and 0 <= value < value_end and 0 <= tag < tag_end):
            layout.check(e)  # raises, naming the field
        out.append(((sid << id_shift) | (tag << value_bits) | value).to_bytes(width, "big"))
    return b"".join(out)


def decode_stack(body: bytes, layout: StackLayout) -> tuple[tuple[StackEntry, ...], int]:
    """Parse the stack at the start of ``body`` (header + payload).

    Returns the entries and the number of header bytes consumed.

    Raises
    ------
    StackDecodeError
        If ``body`` is shorter than its ``Size`` field says.
    """
    sb, width = layout.size_bytes, layout.entry_bytes
    if len(body) < sb:
        raise StackDecodeError(f"{len(body)} B cannot hold the {sb} B Size field")
    count = int.from_bytes(body[:sb], "big")
    end = sb + count * width
    if len(body) < end:
        raise StackDecodeError(f"Size says {count} entries ({end} B) but only {len(body)} B follow "
                               "the Ethernet header")
    if count >= _COLUMNS_FROM and not (layout.id_bits % 8 or layout.tag_bits % 8
                                       or layout.value_bits % 8):
        return _decode_columns(body, sb, end, layout), end
    return _decode_each(body, sb, end, layout), end


#: stacks from this many entries on are parsed a field column at a time (the
#: per-entry loop is faster below: ``stackcast bench timed`` parses many short stacks)
_COLUMNS_FROM = 4


def _decode_each(body: bytes, start: int, end: int, layout: StackLayout
                 ) -> tuple[StackEntry, ...]:
    """The entries in ``body[start:end]``, one word per entry."""
    id_shift = layout.tag_bits + layout.value_bits
    vmask = (1 << layout.value_bits) - 1
    tmask = (1 << layout.tag_bits) - 1
    entries = []
    for off in range(start, end, layout.entry_bytes):
        word = int.from_bytes(body[off:off + layout.entry_bytes], "big")
        tag = (word >> layout.value_bits) & tmask
        entries.append(StackEntry(word >> id_shift, word & vmask, tag))
    return tuple(entries)


def _decode_columns(body: bytes, start: int, end: int, layout: StackLayout
                    ) -> tuple[StackEntry, ...]:
    """As :func:`_decode_each` for whole-byte fields: every field a column at a time."""
    width = layout.entry_bytes
    ib, tb, vb = layout.id_bits // 8, layout.tag_bits // 8, layout.value_bits // 8

    def column(offset: int, nbytes: int) -> Iterable[int]:
        col: Iterable[int] = body[start + offset:end:width]
        for k in range(1, nbytes):
            col = list(map(or_, map(lshift, col, repeat(8)), body[start + offset + k:end:width]))
        return col

    tags = column(ib, tb) if tb else repeat(0)
    return tuple(map(StackEntry, column(0, ib), column(ib + tb, vb), tags))


def header_length(body: bytes, layout: StackLayout) -> int:
    """Length in bytes of the stack at the start of ``body`` (``Size`` included)."""
    return decode_stack(body, layout)[1]


def parse_frame(frame: bytes, layout: StackLayout) -> Packet:
    """Split a wire frame into a :class:`~sim.dataplanes.packet.Packet` by the stack's ``Size``."""
    return Packet.from_bytes(frame, header_length(frame[ETH_HEADER_BYTES:], layout))
