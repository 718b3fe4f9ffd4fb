"""L2 flows plus per-replica destination rewrite: the ALM baselines' data plane.

Reference model of the broker-overlay switch program (a ``p4/alm.p4`` would
be ``p4/l2_multicast.p4`` plus one egress table). Ingress is the ``l2``
family's table, ``MyIngress.l2_forward`` (destination MAC exact, source MAC
ternary):

- ``MyIngress.forward(port)``: one copy out of ``port``; this is how the SDN
  flows carry overlay messages between brokers, to subscribers and to a
  switch's own broker port (seed 000 §3.5.4: "This and following ALM
  variants rely on SDN flows to deliver the messages to downstream
  brokers");
- on a miss, ``MyIngress.broker_group`` (destination MAC exact) maps the
  packet a broker sent to one of its switch's local groups with
  ``MyIngress.set_mcast_grp(group)`` (kept apart from the flows, which do not
  change with the receivers); the packet-replication engine makes one
  replica per ``(port, rid)`` of the group; the egress table
  ``MyEgress.replica_dst`` (``standard_metadata.egress_rid`` exact) then
  rewrites each replica's destination MAC with ``MyEgress.set_dst(mac)``, so
  one packet from a broker becomes one unicast copy per downstream broker or
  subscriber (ALM with mc-groups: "each corresponding to a permutation of
  neighbor nodes");
- a miss in both drops the frame.

One pass; one or two ingress lookups plus one egress lookup per replica.
Pass trace: the single pass ``(-1,)``; every copy (the forwarded frame or
each PRE replica) leaves after it (``after_pass`` 0, ``depth`` 1).

References
----------
Seed 000 §2.3 (i) and §3.5.4 (ALM variants); digest §3.1 (i), §7.17.
"""

from __future__ import annotations

from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.l2.reference import FORWARD, MULTICAST, TABLE
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, Emit, PipelineResult

GROUP_TABLE = "MyIngress.broker_group"
EGRESS_TABLE = "MyEgress.replica_dst"
SET_DST = "MyEgress.set_dst"
#: The pass trace of every packet: one pass, begun on arrival.
ONE_PASS = (-1,)

__all__ = ["EGRESS_TABLE", "FORWARD", "GROUP_TABLE", "MULTICAST", "SET_DST", "TABLE",
           "AlmDataPlane"]


class AlmDataPlane:
    """Reference model of the ALM switch program (see the module docstring)."""

    name = "alm"

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        entry = config.lookup(TABLE, packet.dst_mac, packet.src_mac)
        lookups = 1
        if entry is not None and entry.action == FORWARD:
            return PipelineResult(passes=1, recirculations=0, lookups=1,
                                  emitted=(Emit(entry.param("port"), packet, 1, 0),),
                                  pass_parents=ONE_PASS)
        if entry is None:
            entry = config.lookup(GROUP_TABLE, packet.dst_mac)
            lookups = 2
        if entry is None:
            return PipelineResult(passes=1, recirculations=0, lookups=2, emitted=(), dropped=1,
                                  pass_parents=ONE_PASS)
        if entry.action != MULTICAST:
            raise LookupError(f"{switch}: unknown action {entry.action} in {entry.table}")
        group = config.multicast_groups.get(entry.param("group"))
        if group is None:
            raise LookupError(f"{switch}: multicast group {entry.param('group')} not installed")
        emitted = []
        for port, rid in group.replicas:
            rewrite = config.lookup(EGRESS_TABLE, rid)
            copy = packet
            if rewrite is not None:
                copy = Packet(rewrite.param("mac"), packet.src_mac, packet.ethertype,
                              packet.header, packet.payload)
            emitted.append(Emit(port, copy, 1, 0))
        return PipelineResult(passes=1, recirculations=0, lookups=lookups + len(group.replicas),
                              emitted=tuple(emitted), pass_parents=ONE_PASS)


DATAPLANES.add(AlmDataPlane.name, AlmDataPlane())
