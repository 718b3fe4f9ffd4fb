"""Prefix filter: PLEROMA's dz flows as an LPM table on the IP destination.

Reference model of ``p4/prefix_filter.p4``, pass by pass:

1. Parser: Ethernet -> IPv4 (EtherType 0x0800) or IPv6 (0x86DD) -> UDP;
   anything else is dropped by the parser (no lookup).
2. Ingress: table ``MyIngress.dz_forward`` (IPv4) or
   ``MyIngress.dz_forward_v6`` (IPv6), keys ``standard_metadata.ingress_port``
   (exact) and ``hdr.ipv4.dstAddr`` / ``hdr.ipv6.dstAddr`` (lpm): a flow
   ``(ingress port -> dz -> egress ports)`` of seed 001 with priority =
   prefix length. Actions ``MyIngress.forward(port)`` or
   ``MyIngress.set_mcast_grp(group)`` (PRE replication); a miss drops.
3. Egress: a replica whose egress port equals the ingress port is dropped
   (flows never name their ingress port; the check makes merged flows safe).

One pass, one lookup, no recirculation, no header rewrite.

References
----------
Seed 001 §2.3 (flows: in_port + masked destination, highest priority wins),
§5.1 (merged flows); digest seed001-004 A1 "Flows" and Part C (LPM on the
IPv4 destination with in_port exact).
"""

from __future__ import annotations

from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.event_header import parse_ip_udp
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, Emit, PipelineResult

TABLE_V4 = "MyIngress.dz_forward"
TABLE_V6 = "MyIngress.dz_forward_v6"
KEY_PORT = "standard_metadata.ingress_port"
KEY_V4 = "hdr.ipv4.dstAddr"
KEY_V6 = "hdr.ipv6.dstAddr"
FORWARD = "MyIngress.forward"
MULTICAST = "MyIngress.set_mcast_grp"


def emit_action(switch: str, config: SwitchConfig, action: str, value: int, packet: Packet,
                in_port: int) -> tuple[Emit, ...]:
    """Emits of ``forward(port)`` / ``set_mcast_grp(group)``, ingress port pruned."""
    if action == FORWARD:
        ports: tuple[int, ...] = (value,)
    elif action == MULTICAST:
        group = config.multicast_groups.get(value)
        if group is None:
            raise LookupError(f"{switch}: multicast group {value} not installed")
        ports = group.ports
    else:
        raise LookupError(f"{switch}: unknown action {action}")
    return tuple(Emit(p, packet) for p in ports if p != in_port)


class PrefixFilterDataPlane:
    name = "prefix_filter"

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        parsed = parse_ip_udp(packet.ethertype, packet.header)
        if parsed is None:
            return PipelineResult(passes=1, recirculations=0, lookups=0, emitted=(), dropped=1)
        table = TABLE_V4 if parsed.family == 4 else TABLE_V6
        entry = config.lookup(table, in_port, parsed.dst)
        if entry is None:
            return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=(), dropped=1)
        (_, value), = entry.params
        emitted = emit_action(switch, config, entry.action, value, packet, in_port)
        return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=emitted,
                              dropped=0 if emitted else 1)


DATAPLANES.add(PrefixFilterDataPlane.name, PrefixFilterDataPlane())
