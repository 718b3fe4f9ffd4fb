"""Kundel et al.'s flat content table, with its two attribute/value header encodings.

Reference model of ``p4/kundel.p4``, pass by pass:

1. Parser (EtherType 0x9001). Two encodings (seed 002 §III-A, Fig. 3/4):

   - ``id``: ``first_id`` (k bits), then per attribute ``value`` (32 bit)
     and ``nextId`` (k bits), the last ``nextId`` = 0 (terminator; ID 0 may
     only come first). The BMv2 workaround of one parser state per ID is the
     same byte walk: each ``parse_event_i`` extracts ``event[i]`` and sets
     bit i of the metadata valid bitmask. IDs at or above ``slots`` end
     parsing (``default: accept``).
   - ``bitmask``: an ``n_max``-bit mask (bit i = attribute i present, LSB =
     attribute 0, digest D1), then the present values in ascending ID
     order; the slicing loop extracts the lowest set bit first.
2. Ingress: table ``MyIngress.event`` with keys ``meta.valid_bitmask``
   (ternary) and ``meta.value_<i>`` (range, i < ``slots``; metadata stacks
   are always valid, digest A.3); actions ``MyIngress.forward(mcast_grp)``,
   ``MyIngress.forwardSingle(port)``; default ``MyIngress.drop``.
3. Egress: a replica leaving on its ingress port is dropped.

One pass, one lookup, no recirculation.

References
----------
Seed 002 §III (Listings 1-2, Fig. 3-4), digest seed002-003 A.2-A.4, D1, D2, D5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sim.dataplanes.caches import Caches
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, PipelineResult
from sim.dataplanes.prefix_filter.reference import emit_action
from sim.dataplanes.table_index import lookup as fast_lookup

ETHERTYPE_KUNDEL = 0x9001
TABLE = "MyIngress.event"
KEY_MASK = "meta.valid_bitmask"
FORWARD_GROUP = "MyIngress.forward"
FORWARD_SINGLE = "MyIngress.forwardSingle"


def value_slot(i: int) -> str:
    return f"meta.value_{i}"


@dataclass(frozen=True, slots=True)
class KundelFormat:
    """Header encoding parameters."""

    encoding: Literal["id", "bitmask"] = "id"
    id_bits: int = 8
    n_max: int = 32
    value_bits: int = 32

    def __post_init__(self) -> None:
        if self.id_bits % 8 or not 8 <= self.id_bits <= 24:
            raise ValueError(f"id_bits must be 8, 16 or 24 on the wire; got {self.id_bits}")
        if self.n_max % 8 or not 8 <= self.n_max <= 256:
            raise ValueError(f"n_max must be a multiple of 8 in [8, 256]; got {self.n_max}")
        if self.value_bits != 32:
            raise ValueError("seed 002 values are 32 bit")

    def encode(self, values: dict[int, int]) -> bytes:
        """Header bytes for attribute ID -> value (ascending IDs, digest D8)."""
        ids = sorted(values)
        vb = self.value_bits // 8
        if self.encoding == "bitmask":
            mask = 0
            for i in ids:
                if not 0 <= i < self.n_max:
                    raise ValueError(f"attribute ID {i} does not fit the {self.n_max}-bit mask")
                mask |= 1 << i
            return mask.to_bytes(self.n_max // 8, "big") + b"".join(
                values[i].to_bytes(vb, "big") for i in ids)
        kb = self.id_bits // 8
        if not ids:
            raise ValueError("an event carries at least one attribute")
        if 0 in ids and ids[0] != 0:
            raise ValueError("ID 0 must come first")
        out = ids[0].to_bytes(kb, "big")
        for j, i in enumerate(ids):
            nxt = ids[j + 1] if j + 1 < len(ids) else 0
            out += values[i].to_bytes(vb, "big") + nxt.to_bytes(kb, "big")
        return out

    def parse(self, data: bytes, slots: int) -> tuple[int, dict[int, int], int] | None:
        """(valid bitmask, ID -> value for IDs < slots, bytes consumed), None if truncated."""
        vb = self.value_bits // 8
        found: dict[int, int] = {}
        if self.encoding == "bitmask":
            mb = self.n_max // 8
            if len(data) < mb:
                return None
            mask = int.from_bytes(data[:mb], "big")
            off = mb
            rest = mask
            while rest:
                i = (rest & -rest).bit_length() - 1
                if len(data) < off + vb:
                    return None
                if i < slots:
                    found[i] = int.from_bytes(data[off:off + vb], "big")
                off += vb
                rest &= rest - 1
        else:
            kb = self.id_bits // 8
            if len(data) < kb:
                return None
            cur = int.from_bytes(data[:kb], "big")
            off = kb
            first = True
            while (cur != 0 or first) and cur < slots and cur not in found:
                if len(data) < off + vb + kb:
                    return None
                found[cur] = int.from_bytes(data[off:off + vb], "big")
                cur = int.from_bytes(data[off + vb:off + vb + kb], "big")
                off += vb + kb
                first = False
        valid = 0
        for i in found:
            valid |= 1 << i
        return valid, found, off

    def header_bits(self, n: int) -> int:
        """Wire bits for n attributes (terminator included for ``id``)."""
        if self.encoding == "bitmask":
            return self.n_max + self.value_bits * n
        return self.id_bits * (n + 1) + self.value_bits * n


@dataclass(frozen=True)
class KundelDataPlane:
    fmt: KundelFormat = KundelFormat()
    slots: int = 17  # the repository implements IDs 0-16
    name: str = "kundel"
    #: vectorised table indexes (:mod:`sim.dataplanes.table_index`), kept between
    #: packets; pass the cell's :class:`Caches` to share them, else a fresh one
    caches: Caches = field(default_factory=Caches, compare=False, repr=False)

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        parsed = (self.fmt.parse(packet.header, self.slots)
                  if packet.ethertype == ETHERTYPE_KUNDEL else None)
        if parsed is None:
            return PipelineResult(passes=1, recirculations=0, lookups=0, emitted=(), dropped=1)
        valid, values, _ = parsed
        key = [valid] + [values.get(i, 0) for i in range(self.slots)]
        entry = fast_lookup(config, TABLE, *key, caches=self.caches)
        if entry is None:
            return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=(), dropped=1)
        (_, value), = entry.params
        action = "MyIngress.set_mcast_grp" if entry.action == FORWARD_GROUP else \
            "MyIngress.forward"
        emitted = emit_action(switch, config, action, value, packet, in_port)
        return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=emitted,
                              dropped=0 if emitted else 1)


DATAPLANES.add("kundel", KundelDataPlane())
