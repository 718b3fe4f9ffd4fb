"""scapy definition of the BIER header (RFC 8296), byte-equal to the Python codec.

A second, independent serialisation of :mod:`sim.dataplanes.bier.codec`
for building and dissecting the frames sent to and captured from BMv2
(``p4/bier.p4``). One class per BitString length (:func:`bier_header`,
cached), fields in wire order (RFC 8296 §2)::

    bift_id 20 | tc 3 | s 1 | ttl 8 | nibble 4 | version 4 | bsl 4 | entropy 20 |
    oam 2 | rsv 2 | dscp 6 | proto 6 | bfir_id 16 | bitstring BSL |
    inner_dst 48 | inner_src 48 | inner_type 16

The last three fields are the Ethernet header of the carried frame (Proto 3):
the class holds what a BIER :class:`~sim.dataplanes.packet.Packet` keeps in
``header`` (and what ``p4/bier.p4`` parses as ``hdr.bier`` and
``hdr.inner_ethernet``), so the event payload follows it as Raw.

:mod:`hil.headers` dispatches to this module for a :class:`BierSpec`
(``spec_of`` of a :class:`~sim.dataplanes.bier.reference.BierDataPlane`).
This module imports scapy; the pure layers never import it.

References
----------
RFC 8296 §2 (fields and widths), §2.2 (EtherType 0xAB37);
:mod:`sim.dataplanes.bier.codec` (the definition of the wire format).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from scapy.fields import BitField, MACField, XShortField
from scapy.layers.l2 import Ether
from scapy.packet import Packet as ScapyPacket
from scapy.packet import Raw

from sim.dataplanes.bier.codec import FIELDS, BierHeader, bsl_code
from sim.dataplanes.bier.reference import BierDataPlane
from sim.dataplanes.packet import ETH_HEADER_BYTES, Packet


@dataclass(frozen=True, slots=True)
class BierSpec:
    """The header layout of one ``p4/bier.p4`` build: its BitString length in bits."""

    bsl_bits: int

    def __post_init__(self) -> None:
        bsl_code(self.bsl_bits)  # raises for lengths RFC 8296 does not define


def _mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


@cache
def bier_header(spec: BierSpec) -> type[ScapyPacket]:
    """The scapy class of the BIER header (+ carried Ethernet header) of ``spec``."""
    fields: list[Any] = [BitField(name, 0, width) for name, width in FIELDS]
    fields += [BitField("bitstring", 0, spec.bsl_bits),
               MACField("inner_dst", "00:00:00:00:00:00"),
               MACField("inner_src", "00:00:00:00:00:00"),
               XShortField("inner_type", 0)]
    return type(f"Bier{spec.bsl_bits}", (ScapyPacket,),
                {"name": f"BIER ({spec.bsl_bits}-bit BitString)", "fields_desc": fields})


def bier_spec_of(model: Any) -> BierSpec | None:
    """The spec of a BIER data-plane model (``strategy.model()``), else None."""
    return BierSpec(model.bsl_bits) if isinstance(model, BierDataPlane) else None


def bier(spec: BierSpec, header: BierHeader, inner: Packet) -> ScapyPacket:
    """The scapy header for ``header`` carrying a frame with ``inner``'s Ethernet header."""
    if header.bsl_bits != spec.bsl_bits:
        raise ValueError(f"a {header.bsl_bits}-bit BitString in a {spec.bsl_bits}-bit header")
    values = {name: getattr(header, name) for name, _ in FIELDS}
    return bier_header(spec)(bitstring=header.bitstring, inner_dst=_mac(inner.dst_mac),
                             inner_src=_mac(inner.src_mac), inner_type=inner.ethertype,
                             **values)


def bier_to_scapy(packet: Packet, spec: BierSpec) -> ScapyPacket:
    """Rebuild a BIER packet (codec fields) as a scapy frame."""
    header = BierHeader.from_bytes(packet.header)
    inner = Packet.from_bytes(packet.header[header.size_bytes:], 0)
    if len(inner.payload) or len(packet.header) != header.size_bytes + ETH_HEADER_BYTES:
        raise ValueError(f"a BIER packet's header is the BIER header and the carried 14 B "
                         f"Ethernet header; got {len(packet.header)} B")
    frame = Ether(dst=_mac(packet.dst_mac), src=_mac(packet.src_mac),
                  type=packet.ethertype) / bier(spec, header, inner)
    return frame / Raw(packet.payload) if packet.payload else frame


def bier_dissect(frame: bytes, spec: BierSpec) -> ScapyPacket:
    """Dissect wire bytes: Ethernet, the BIER class of ``spec``, the event as Raw."""
    return Ether(frame[:ETH_HEADER_BYTES]) / bier_header(spec)(frame[ETH_HEADER_BYTES:])
