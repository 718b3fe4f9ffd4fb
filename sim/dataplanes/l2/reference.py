"""Plain L2 forwarding with multicast groups: the baselines' data plane.

Reference model of ``p4/l2_multicast.p4``. One ingress table,
``MyIngress.l2_forward``, keyed by the destination MAC (exact) and the source
MAC (ternary, so a broadcast tree can be chosen per publisher):

- ``MyIngress.forward(port)`` sends the frame out of one port (unicast,
  seed 000 §3.5.4 "Ethernet MAC-address-based flows");
- ``MyIngress.set_mcast_grp(group)`` hands it to the packet-replication
  engine, which emits one copy per replica port (OpenFlow-style multicast and
  the preinstalled broadcast tree);
- a miss drops the frame.

One pass, one lookup, no recirculation, no header bytes (pass trace: the
single arrival pass, every copy leaves after it).
"""

from __future__ import annotations

from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, Emit, PipelineResult

TABLE = "MyIngress.l2_forward"
FORWARD = "MyIngress.forward"
MULTICAST = "MyIngress.set_mcast_grp"


class L2DataPlane:
    name = "l2"

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        entry = config.lookup(TABLE, packet.dst_mac, packet.src_mac)
        if entry is None:
            return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=(), dropped=1,
                                  pass_parents=(-1,))
        if entry.action == FORWARD:
            emitted: tuple[Emit, ...] = (Emit(entry.param("port"), packet, after_pass=0),)
        elif entry.action == MULTICAST:
            group = config.multicast_groups.get(entry.param("group"))
            if group is None:
                raise LookupError(f"{switch}: multicast group {entry.param('group')} not installed")
            emitted = tuple(Emit(p, packet, after_pass=0) for p in group.ports)
        else:
            raise LookupError(f"{switch}: unknown action {entry.action} in {TABLE}")
        return PipelineResult(passes=1, recirculations=0, lookups=1, emitted=emitted,
                              pass_parents=(-1,))


DATAPLANES.add(L2DataPlane.name, L2DataPlane())
