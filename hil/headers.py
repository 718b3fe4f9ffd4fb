"""scapy definitions of every header family, byte-equal to the Python codecs (issue 7).

Each family's codec (in :mod:`sim.dataplanes`) is the definition of the wire
format; the scapy classes here are a second, independent serialisation used to
build, send and dissect frames on BMv2 (tests check ``bytes(scapy) == codec``
and that scapy dissects codec bytes back to the same fields):

==========================  ===============================================  ==========
family                       header after Ethernet                            spec
==========================  ===============================================  ==========
source routing (port,        ``Size | <id [, tag], value> ...``               StackLayout
bitmask, mc-group, mixed)
virtual tree, neighbour      ``Size | <type, id> ...``                        LabelFormat
labels
Kundel (id encoding)         ``first_id | <value32, next_id> ...``            KundelFormat
Kundel (bitmask encoding)    ``mask (n_max) | value32 ...``                   KundelFormat
Camus                        pubsub values (EtherType 0x88B6)                 PubsubLayout
range filter, PLEROMA        IPv4/IPv6 | UDP | pubsub values                  PubsubLayout
BIER (hil/bier_headers.py)   RFC 8296 header | carried Ethernet header        BierSpec
L2 / ALM                     none (payload only)                              None
==========================  ===============================================  ==========

Widths are parameters of each spec, so the classes are built per spec by
:func:`header_class` (cached). Several families share EtherType 0x9999, so
nothing is bound to Ethernet globally: :func:`dissect` takes the spec.

This module imports scapy; the pure layers never import it (tests/test_purity.py).

References
----------
Seed 000 §3.2 (Fig. 3.2), §5.2.6 (Listing 5.1); seed 002 §III-A (Fig. 3/4);
seed 004 §4.2 (``pubsub_t``); see the codec modules for the field tables.
"""

from __future__ import annotations

from functools import cache
from typing import Any, overload

from scapy.base_classes import BasePacket
from scapy.fields import BitField, BitFieldLenField, FieldListField, PacketListField
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet as ScapyPacket
from scapy.packet import Raw

from hil.bier_headers import BierSpec, bier_dissect, bier_header, bier_spec_of, bier_to_scapy
from sim.dataplanes.camus.reference import ETHERTYPE_CAMUS
from sim.dataplanes.event_header import (
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    PROTO_UDP,
    PUBSUB_UDP_PORT,
    PubsubLayout,
)
from sim.dataplanes.kundel.reference import ETHERTYPE_KUNDEL, KundelFormat
from sim.dataplanes.packet import Packet
from sim.dataplanes.source_routing.codec import StackLayout, decode_stack
from sim.dataplanes.virtual_tree.codec import LabelFormat

HeaderSpec = StackLayout | LabelFormat | KundelFormat | PubsubLayout | BierSpec
Spec = HeaderSpec | None


def _mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def _element(name: str, fields: list[Any]) -> type[ScapyPacket]:
    """A list element class: no payload of its own (the rest goes back to the list)."""
    return type(name, (ScapyPacket,), {
        "name": name, "fields_desc": fields,
        "extract_padding": lambda self, s: (b"", s),
    })


def _header(name: str, fields: list[Any], element: type[ScapyPacket] | None = None
            ) -> type[ScapyPacket]:
    """A header class; ``element`` is the class of its list elements, if any."""
    return type(name, (ScapyPacket,), {"name": name, "fields_desc": fields, "element": element})


# -- per-family classes ----------------------------------------------------------


@cache
def source_routing_header(layout: StackLayout) -> type[ScapyPacket]:
    """``Size`` + entries ``<switch_id [, tag], value>`` (seed 000 Fig. 3.2)."""
    fields = [BitField("switch_id", 0, layout.id_bits)]
    if layout.tag_bits:
        fields.append(BitField("tag", 0, layout.tag_bits))
    fields.append(BitField("value", 0, layout.value_bits))
    entry = _element("SourceRoutingEntry", fields)
    return _header("SourceRoutingStack", [
        BitFieldLenField("size", None, layout.size_bits, count_of="entries"),
        PacketListField("entries", [], entry, count_from=lambda pkt: pkt.size),
    ], entry)


@cache
def label_stack_header(fmt: LabelFormat) -> type[ScapyPacket]:
    """``Size`` + labels ``<type, id>`` (seed 000 Listing 5.1)."""
    label = _element("Label", [BitField("type", 0, fmt.type_bits),
                               BitField("id", 0, fmt.id_bits)])
    return _header("LabelStack", [
        BitFieldLenField("size", None, fmt.size_bits, count_of="labels"),
        PacketListField("labels", [], label, count_from=lambda pkt: pkt.size),
    ], label)


@cache
def kundel_header(fmt: KundelFormat) -> type[ScapyPacket]:
    """Kundel's attribute/value header, id or bitmask encoding (seed 002 Fig. 3/4)."""
    if fmt.encoding == "bitmask":
        return _header("KundelBitmask", [
            BitField("mask", 0, fmt.n_max),
            FieldListField("values", [], BitField("value", 0, fmt.value_bits),
                           count_from=lambda pkt: bin(pkt.mask).count("1")),
        ])
    attr = _element("KundelAttribute", [BitField("value", 0, fmt.value_bits),
                                        BitField("next_id", 0, fmt.id_bits)])

    def more(pkt: ScapyPacket, done: list[BasePacket], cur: ScapyPacket | None,
             remain: bytes) -> type[ScapyPacket] | None:
        # one attribute at least; then until a next_id of 0 (the terminator)
        if cur is None or (cur.next_id != 0 and remain):
            return attr
        return None

    return _header("KundelId", [
        BitField("first_id", 0, fmt.id_bits),
        PacketListField("attributes", [], next_cls_cb=more),
    ], attr)


@cache
def pubsub_header(layout: PubsubLayout) -> type[ScapyPacket]:
    """One ``value_bits`` value per attribute, ``v0`` .. (seed 004 ``pubsub_t``)."""
    return _header("Pubsub", [BitField(f"v{i}", 0, layout.value_bits)
                              for i in range(layout.dims)])


@overload
def header_class(spec: HeaderSpec) -> type[ScapyPacket]: ...


@overload
def header_class(spec: None) -> None: ...


def header_class(spec: Spec) -> type[ScapyPacket] | None:
    """The scapy class of the header a spec describes (None: no header)."""
    if spec is None:
        return None
    if isinstance(spec, StackLayout):
        return source_routing_header(spec)
    if isinstance(spec, LabelFormat):
        return label_stack_header(spec)
    if isinstance(spec, KundelFormat):
        return kundel_header(spec)
    if isinstance(spec, PubsubLayout):
        return pubsub_header(spec)
    if isinstance(spec, BierSpec):
        return bier_header(spec)
    raise TypeError(f"no scapy header for {type(spec).__name__}; expected StackLayout, "
                    "LabelFormat, KundelFormat, PubsubLayout or None")


def spec_of(model: Any, strategy: Any = None) -> Spec:
    """The header spec of a data-plane model (``strategy.model()``), else of the
    strategy: a ``layout`` or ``fmt`` attribute; None for families without a
    header of their own (and PLEROMA, whose pubsub values then stay Raw)."""
    if (bier := bier_spec_of(model)) is not None:
        return bier
    for owner in (model, strategy):
        for name in ("layout", "fmt"):
            spec = getattr(owner, name, None)
            if isinstance(spec, (StackLayout, LabelFormat, KundelFormat, PubsubLayout)):
                return spec
    return None


# -- building from field values ------------------------------------------------


def source_routing(layout: StackLayout, entries: list[tuple[int, ...]]) -> ScapyPacket:
    """A stack from ``(switch_id, value)`` or, tagged, ``(switch_id, tag, value)`` tuples."""
    cls = source_routing_header(layout)
    entry = cls.element
    names = ("switch_id", "tag", "value") if layout.tag_bits else ("switch_id", "value")
    return cls(entries=[entry(**dict(zip(names, e, strict=True))) for e in entries])


def label_stack(fmt: LabelFormat, labels: list[int]) -> ScapyPacket:
    """A stack from packed label values (type in the top ``type_bits``)."""
    cls = label_stack_header(fmt)
    label = cls.element
    return cls(labels=[label(type=fmt.kind(v), id=fmt.ident(v)) for v in labels])


def kundel(fmt: KundelFormat, values: dict[int, int]) -> ScapyPacket:
    """Kundel's header for attribute id -> value (ascending ids, as the codec)."""
    cls = kundel_header(fmt)
    ids = sorted(values)
    if fmt.encoding == "bitmask":
        return cls(mask=sum(1 << i for i in ids), values=[values[i] for i in ids])
    attr = cls.element
    nxt = ids[1:] + [0]
    return cls(first_id=ids[0] if ids else 0,
               attributes=[attr(value=values[i], next_id=n) for i, n in zip(ids, nxt, strict=True)])


def pubsub(layout: PubsubLayout, values: list[int]) -> ScapyPacket:
    if len(values) != layout.dims:
        raise ValueError(f"{len(values)} values for a {layout.dims}-value pubsub header")
    fields: dict[str, Any] = {f"v{i}": v for i, v in enumerate(values)}
    return pubsub_header(layout)(**fields)


def ip_udp(family: int, src: int, dst: int) -> ScapyPacket:
    """IP + UDP as :func:`sim.dataplanes.event_header.ip_udp_pubsub` writes them
    (IPv4 id 0, no flags, TTL 64; UDP ports 0x4242, checksum 0)."""
    u = UDP(sport=PUBSUB_UDP_PORT, dport=PUBSUB_UDP_PORT, chksum=0)
    if family == 4:
        return IP(version=4, ihl=5, tos=0, id=0, flags=0, frag=0, ttl=64, proto=PROTO_UDP,
                  src=_ipv4(src), dst=_ipv4(dst)) / u
    if family == 6:
        return IPv6(tc=0, fl=0, nh=PROTO_UDP, hlim=64, src=_ipv6(src), dst=_ipv6(dst)) / u
    raise ValueError(f"IP family must be 4 or 6, got {family}")


def _ipv4(value: int) -> str:
    return ".".join(str(b) for b in value.to_bytes(4, "big"))


def _ipv6(value: int) -> str:
    raw = value.to_bytes(16, "big")
    return ":".join(raw[i:i + 2].hex() for i in range(0, 16, 2))


# -- frames -----------------------------------------------------------------------


def _ether(packet: Packet) -> ScapyPacket:
    return Ether(dst=_mac(packet.dst_mac), src=_mac(packet.src_mac), type=packet.ethertype)


def to_scapy(packet: Packet, spec: Spec) -> ScapyPacket:
    """Rebuild a simulator packet field by field as a scapy frame.

    The header is decoded with the family's codec, then re-serialised by scapy;
    ``bytes(to_scapy(p, spec)) == p.to_bytes()`` is what the tests check.
    """
    if isinstance(spec, BierSpec):
        return bier_to_scapy(packet, spec)
    eth = _ether(packet)
    payload = Raw(packet.payload) if packet.payload else None
    if spec is None:
        if packet.ethertype in (ETHERTYPE_IPV4, ETHERTYPE_IPV6) and packet.header:
            v4 = packet.ethertype == ETHERTYPE_IPV4
            src, dst = ((packet.header[12:16], packet.header[16:20]) if v4
                        else (packet.header[8:24], packet.header[24:40]))
            rest = packet.header[(20 if v4 else 40) + 8:] + packet.payload
            head = ip_udp(4 if v4 else 6, int.from_bytes(src, "big"), int.from_bytes(dst, "big"))
            return eth / head / Raw(rest) if rest else eth / head
        if packet.header:
            raise ValueError(f"packet has a {len(packet.header)} B header but no spec was given")
        return eth / payload if payload is not None else eth
    if isinstance(spec, StackLayout):
        entries, _ = decode_stack(packet.header, spec)
        head = source_routing(spec, [((e.switch_id, e.tag, e.value) if spec.tag_bits
                                      else (e.switch_id, e.value)) for e in entries])
    elif isinstance(spec, LabelFormat):
        labels, _ = spec.decode(packet.header)
        head = label_stack(spec, list(labels))
    elif isinstance(spec, KundelFormat):
        parsed = spec.parse(packet.header, 1 << 24)  # every id: no slot limit on the wire
        if parsed is None:
            raise ValueError("Kundel header truncated")
        head = kundel(spec, parsed[1])
    elif packet.ethertype == ETHERTYPE_CAMUS:
        head = pubsub(spec, list(spec.unpack(packet.header)))
    elif packet.ethertype in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
        v4 = packet.ethertype == ETHERTYPE_IPV4
        ip_len = 20 if v4 else 40
        src, dst = ((packet.header[12:16], packet.header[16:20]) if v4
                    else (packet.header[8:24], packet.header[24:40]))
        values = spec.unpack(packet.header[ip_len + 8:])
        head = (ip_udp(4 if v4 else 6, int.from_bytes(src, "big"), int.from_bytes(dst, "big"))
                / pubsub(spec, list(values)))
    else:
        raise ValueError(f"EtherType {packet.ethertype:#06x} carries no pubsub header")
    frame = eth / head
    return frame / payload if payload is not None else frame


def dissect(frame: bytes, spec: Spec) -> ScapyPacket:
    """Dissect wire bytes with the family's header class (what follows is Raw)."""
    if isinstance(spec, BierSpec):
        return bier_dissect(frame, spec)
    eth = Ether(frame[:14])
    body = frame[14:]
    if spec is None:
        if eth.type in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
            return eth / (IP if eth.type == ETHERTYPE_IPV4 else IPv6)(body)
        return eth / Raw(body) if body else eth
    if isinstance(spec, PubsubLayout) and eth.type in (ETHERTYPE_IPV4, ETHERTYPE_IPV6):
        ip_cls = IP if eth.type == ETHERTYPE_IPV4 else IPv6
        ip = ip_cls(body)
        udp = ip[UDP]
        rest = bytes(udp.payload)
        udp.remove_payload()
        return eth / ip / pubsub_header(spec)(rest)
    if isinstance(spec, KundelFormat) and eth.type != ETHERTYPE_KUNDEL:
        raise ValueError(f"EtherType {eth.type:#06x} is not Kundel's {ETHERTYPE_KUNDEL:#06x}")
    return eth / header_class(spec)(body)
