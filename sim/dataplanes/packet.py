"""Packets as the exact bytes a switch sees, and the notification that causes them.

A :class:`Packet` is an Ethernet frame: destination and source MAC, EtherType,
the strategy's header stack (``header``, the bytes right after the Ethernet
header) and the payload. ``frame_bytes`` counts 14 B of Ethernet plus header
plus payload, with no preamble, FCS or minimum-size padding (veth captures see
none of those; seed 000 digest §7.6).

References
----------
Seed 000 §3.2 (Fig. 3.2 frame layout: Ethernet | Size | e_0..e_k-1 | payload).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topologies.model import Topology

ETH_HEADER_BYTES = 14
BROADCAST_MAC = 0xFFFF_FFFF_FFFF
_HOST_MAC_BASE = 0x02_00_00_00_00_00  # locally administered unicast
_GROUP_MAC_BASE = 0x01_00_5E_00_00_00  # IPv4-multicast-mapped MAC block


@dataclass(frozen=True, slots=True)
class Packet:
    """One Ethernet frame.

    Parameters
    ----------
    dst_mac, src_mac : int
        48-bit MAC addresses.
    ethertype : int
        16-bit EtherType (0x9999 for the label-stack families).
    header : bytes
        The strategy's header stack, after the Ethernet header.
    payload : bytes
        The serialized event.
    """

    dst_mac: int
    src_mac: int
    ethertype: int
    header: bytes = b""
    payload: bytes = b""

    @property
    def frame_bytes(self) -> int:
        return ETH_HEADER_BYTES + len(self.header) + len(self.payload)

    def to_bytes(self) -> bytes:
        """The frame exactly as it goes on the wire (no FCS)."""
        return (
            self.dst_mac.to_bytes(6, "big")
            + self.src_mac.to_bytes(6, "big")
            + self.ethertype.to_bytes(2, "big")
            + self.header
            + self.payload
        )

    @classmethod
    def from_bytes(cls, frame: bytes, header_len: int) -> Packet:
        """Split a wire frame; ``header_len`` comes from the family's codec."""
        if len(frame) < ETH_HEADER_BYTES + header_len:
            raise ValueError(f"frame of {len(frame)} B is shorter than its headers")
        body = frame[ETH_HEADER_BYTES:]
        return cls(
            dst_mac=int.from_bytes(frame[0:6], "big"),
            src_mac=int.from_bytes(frame[6:12], "big"),
            ethertype=int.from_bytes(frame[12:14], "big"),
            header=body[:header_len],
            payload=body[header_len:],
        )

    def with_header(self, header: bytes) -> Packet:
        return Packet(self.dst_mac, self.src_mac, self.ethertype, header, self.payload)


@dataclass(frozen=True, slots=True)
class Notification:
    """One published event.

    ``event`` is the content (None for the receiver-set-only workloads of
    seed 000 ch. 3-6, where matching is abstracted away).
    """

    notification_id: int
    publisher: str
    t_s: float = 0.0
    event: Any = None


def host_mac(topology: Topology, host: str) -> int:
    """Locally administered MAC of ``host`` (02:00:00:00:00:01 for h1)."""
    return _HOST_MAC_BASE + topology.host_id(host) + 1


def group_mac(group: int) -> int:
    """Multicast MAC for group/tree id ``group`` (01:00:5e:xx:xx:xx, 23-bit id)."""
    if not 0 <= group < 1 << 23:
        raise ValueError(f"group id {group} does not fit the 23-bit multicast MAC range")
    return _GROUP_MAC_BASE + group


def payload_for(notification: Notification, payload_bytes: int) -> bytes:
    """Deterministic payload of ``payload_bytes`` carrying the notification id.

    The first 8 bytes are the id (big endian) so captures on real switches
    can be matched to notifications; the rest is zero padding.
    """
    if payload_bytes < 0:
        raise ValueError(f"payload_bytes must be >= 0, got {payload_bytes}")
    tag = notification.notification_id.to_bytes(8, "big")
    if payload_bytes <= 8:
        return tag[8 - payload_bytes:] if payload_bytes else b""
    return tag + bytes(payload_bytes - 8)


@dataclass(frozen=True, slots=True)
class Encoding:
    """What the publisher injects for one notification.

    ``header_entries`` counts stack entries over all packets (0 for
    strategies without a stack).
    """

    packets: tuple[Packet, ...]
    header_entries: int = 0

    @property
    def header_bytes(self) -> int:
        return sum(len(p.header) for p in self.packets)
