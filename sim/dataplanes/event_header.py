"""Byte codecs shared by the content-filter families: IPv4/IPv6 + UDP + pubsub values.

The content-filter packets of seeds 001 and 004 are Ethernet / IP / UDP /
pubsub, where the pubsub header carries one unsigned big-endian value per
attribute (``value_bits`` each, seed 004 B2: 16 bit). PLEROMA (seed 001)
puts the event's dz in the IP destination address; the range filter (004)
matches the pubsub values. The UDP destination port selects the pubsub
parser state (seed 004 B6.5: [I] a dedicated port, :data:`PUBSUB_UDP_PORT`).

References
----------
Seed 001 §2.2 (dz in the IPv4/IPv6 destination), seed 004 §4.2 (P4 header
chain and ``pubsub_t``), digest seed001-004 B2, B6.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
IPV4_HEADER_BYTES = 20
IPV6_HEADER_BYTES = 40
UDP_HEADER_BYTES = 8
PUBSUB_UDP_PORT = 0x4242
PROTO_UDP = 17
HOST_IPV4_BASE = 0x0A00_0000  # 10.0.0.0/8
HOST_IPV6_BASE = 0xFD00 << 112  # fd00::/8


def ipv4_checksum(header: bytes) -> int:
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True, slots=True)
class PubsubLayout:
    """``dims`` values of ``value_bits`` bits each (a multiple of 8)."""

    dims: int
    value_bits: int = 16

    def __post_init__(self) -> None:
        if self.value_bits % 8 or not 8 <= self.value_bits <= 64:
            raise ValueError(f"value_bits must be a multiple of 8 in [8, 64]; "
                             f"got {self.value_bits}")

    @property
    def value_bytes(self) -> int:
        return self.value_bits // 8

    @property
    def size(self) -> int:
        return self.dims * self.value_bytes

    def pack(self, values: Sequence[int]) -> bytes:
        if len(values) != self.dims:
            raise ValueError(f"event has {len(values)} values, the header {self.dims}")
        return b"".join(int(v).to_bytes(self.value_bytes, "big") for v in values)

    def unpack(self, data: bytes) -> tuple[int, ...]:
        n = self.value_bytes
        if len(data) < self.size:
            raise ValueError("pubsub header truncated")
        return tuple(int.from_bytes(data[i * n:(i + 1) * n], "big") for i in range(self.dims))


def udp(body_len: int, dport: int = PUBSUB_UDP_PORT, sport: int = PUBSUB_UDP_PORT) -> bytes:
    return (sport.to_bytes(2, "big") + dport.to_bytes(2, "big")
            + (UDP_HEADER_BYTES + body_len).to_bytes(2, "big") + bytes(2))


def ipv4_header(src: int, dst: int, payload_len: int, ttl: int = 64) -> bytes:
    head = (bytes([0x45, 0]) + (IPV4_HEADER_BYTES + payload_len).to_bytes(2, "big")
            + bytes(4) + bytes([ttl, PROTO_UDP]) + bytes(2)
            + src.to_bytes(4, "big") + dst.to_bytes(4, "big"))
    csum = ipv4_checksum(head)
    return head[:10] + csum.to_bytes(2, "big") + head[12:]


def ipv6_header(src: int, dst: int, payload_len: int, hop_limit: int = 64) -> bytes:
    return (bytes([0x60, 0, 0, 0]) + payload_len.to_bytes(2, "big")
            + bytes([PROTO_UDP, hop_limit]) + src.to_bytes(16, "big") + dst.to_bytes(16, "big"))


def ip_udp_pubsub(family: int, src: int, dst: int, pubsub: bytes, payload_len: int) -> bytes:
    """The header bytes after Ethernet: IP + UDP + the pubsub values.

    ``payload_len`` is the length of the application payload that follows,
    so the IP and UDP length fields are those of the whole frame.
    """
    body = len(pubsub) + payload_len
    u = udp(body)
    if family == 4:
        return ipv4_header(src, dst, UDP_HEADER_BYTES + body) + u + pubsub
    return ipv6_header(src, dst, UDP_HEADER_BYTES + body) + u + pubsub


@dataclass(frozen=True, slots=True)
class ParsedIp:
    """What the content parsers extract: IP destination, UDP port, pubsub bytes."""

    family: int
    dst: int
    dport: int
    pubsub: bytes


def parse_ip_udp(ethertype: int, header: bytes) -> ParsedIp | None:
    """Parse IP + UDP; None for anything else (the P4 parsers reject it)."""
    if ethertype == ETHERTYPE_IPV4 and len(header) >= IPV4_HEADER_BYTES + UDP_HEADER_BYTES:
        if header[0] != 0x45 or header[9] != PROTO_UDP:
            return None
        dst = int.from_bytes(header[16:20], "big")
        off = IPV4_HEADER_BYTES
        family = 4
    elif ethertype == ETHERTYPE_IPV6 and len(header) >= IPV6_HEADER_BYTES + UDP_HEADER_BYTES:
        if header[0] >> 4 != 6 or header[6] != PROTO_UDP:
            return None
        dst = int.from_bytes(header[24:40], "big")
        off = IPV6_HEADER_BYTES
        family = 6
    else:
        return None
    dport = int.from_bytes(header[off + 2:off + 4], "big")
    return ParsedIp(family, dst, dport, header[off + UDP_HEADER_BYTES:])


def host_ipv4(host_id: int) -> int:
    return HOST_IPV4_BASE + host_id + 1


def host_ipv6(host_id: int) -> int:
    return HOST_IPV6_BASE + host_id + 1
