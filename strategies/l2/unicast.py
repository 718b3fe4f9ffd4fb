"""``unicast``: one copy per receiver along shortest paths (seed 000 §2.3, §3.5.4).

Every switch holds one exact L2 rule per host (destination MAC -> next-hop
port on the BFS shortest path towards the host's switch, ties to the lowest
name; :func:`~strategies.l2.rules.shortest_path_flows`, which shares one
entry object per (host, port) among the switches). The publisher sets the
destination MAC and sends the copies one after another, so its feed-in time
grows with the receiver count (204 copies at 0.1 ms = 20.4 ms, seed 000 §3.5.4).
"""

from __future__ import annotations

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.l2.fast_path import l2_fast_path
from sim.dataplanes.packet import Notification, host_mac
from strategies.base import Knowledge, register_strategy
from strategies.l2.rules import L2Strategy, shortest_path_flows
from topologies.model import Topology


@register_strategy
class Unicast(L2Strategy):
    name = "unicast"
    scope = "topology"
    cell_invariant = True
    summary = "one copy per receiver along shortest paths, L2 exact-match rules"

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        home = topology.host_switch
        return shortest_path_flows(topology, [
            (host_mac(topology, h), home(h), topology.port_to(home(h), h))
            for h in topology.hosts])

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The unicast walk of :mod:`sim.dataplanes.l2.fast_path`; not for subclasses."""
        if type(self) is not Unicast:
            return None
        return l2_fast_path(topology, delays, self.encode, "unicast", caches=self.caches)

    def destinations(self, topology: Topology, state: ControlState, notification: Notification,
                     receivers: frozenset[str]) -> tuple[int, ...]:
        """One frame per receiver, by host id."""
        return tuple(host_mac(topology, h) for h in sorted(receivers, key=topology.host_id))
