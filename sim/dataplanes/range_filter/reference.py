"""Range filter: seed 004's ``publish_subscribe`` table over the pubsub values.

Reference model of ``p4/range_filter.p4`` (the P4_16 port of seed 004's
P4_14 program), pass by pass:

1. Parser: Ethernet -> IPv4 (0x0800) -> UDP; UDP destination port
   :data:`~sim.dataplanes.event_header.PUBSUB_UDP_PORT` -> ``pubsub``
   (``dims`` values of ``value_bits``). Anything else never reaches a table.
2. Ingress: ``if (hdr.pubsub.isValid()) publish_subscribe.apply(); else
   drop``. Table ``MyIngress.publish_subscribe``, keys
   ``hdr.pubsub.value_<i>`` (range) in attribute order, priorities decide
   (the most specific entry wins); actions ``MyIngress.set_outport(port)``
   and ``MyIngress.multicast(group)`` (``standard_metadata.mcast_grp``);
   default ``MyIngress._drop``.
3. Egress: a replica leaving on its ingress port is dropped.

One pass, one lookup.

References
----------
Seed 004 §4.2 (header ``pubsub_t``, table ``publish_subscribe``, actions,
multicast groups), digest seed001-004 B2, B6.4-B6.5.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.dataplanes.caches import Caches
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.event_header import PUBSUB_UDP_PORT, PubsubLayout, parse_ip_udp
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, PipelineResult
from sim.dataplanes.prefix_filter.reference import emit_action
from sim.dataplanes.table_index import lookup as fast_lookup

TABLE = "MyIngress.publish_subscribe"
FORWARD = "MyIngress.set_outport"
MULTICAST = "MyIngress.multicast"


def value_key(i: int) -> str:
    return f"hdr.pubsub.value_{i}"


def _emit_name(action: str) -> str:
    return {FORWARD: "MyIngress.forward", MULTICAST: "MyIngress.set_mcast_grp"}[action]


@dataclass(frozen=True)
class RangeFilterDataPlane:
    """The range filter for one header layout (dims x value_bits)."""

    layout: PubsubLayout = PubsubLayout(1, 16)
    name: str = "range_filter"
    #: vectorised table indexes (:mod:`sim.dataplanes.table_index`), kept between
    #: packets; pass the cell's :class:`Caches` to share them, else a fresh one
    caches: Caches = field(default_factory=Caches, compare=False, repr=False)

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        parsed = parse_ip_udp(packet.ethertype, packet.header)
        if parsed is None or parsed.family != 4 or parsed.dport != PUBSUB_UDP_PORT \
                or len(parsed.pubsub) < self.layout.size:
            return PipelineResult(passes=1, recirculations=0, lookups=0, emitted=(), dropped=1)
        values = self.layout.unpack(parsed.pubsub)
        entry = fast_lookup(config, TABLE, *values, caches=self.caches)
        if entry is None:
            return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=(), dropped=1)
        (_, value), = entry.params
        emitted = emit_action(switch, config, _emit_name(entry.action), value, packet, in_port)
        return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=emitted,
                              dropped=0 if emitted else 1)


DATAPLANES.add("range_filter", RangeFilterDataPlane())
