"""``broadcast``: a preinstalled spanning tree per publisher reaching every host.

Seed 000 §3.5.4 and digest §7.18: a shortest-path tree from the publisher's
switch over all switches and hosts (the publisher's own host excluded),
installed as one multicast group per switch keyed by (broadcast MAC,
publisher MAC). Hosts filter locally, so every non-receiver reached counts as
a false positive. Trees are installed for the publishers the controller knows.
"""

from __future__ import annotations

from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.l2.fast_path import l2_fast_path
from sim.dataplanes.packet import BROADCAST_MAC, Notification, host_mac
from sim.dataplanes.trees import shortest_path_tree
from strategies.base import Knowledge, register_strategy
from strategies.l2.rules import L2Strategy, install_tree_groups
from topologies.model import Topology


@register_strategy
class Broadcast(L2Strategy):
    name = "broadcast"
    scope = "publisher"
    summary = "spanning tree per publisher to every host; hosts filter (false positives)"

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        builder = StateBuilder()
        for pub in knowledge.publishers:
            everyone = [h for h in topology.hosts if h != pub]
            tree = shortest_path_tree(topology, topology.host_switch(pub), everyone)
            install_tree_groups(builder, topology, tree, topology.host_id(pub) + 1,
                                BROADCAST_MAC, host_mac(topology, pub))
        return builder.build(topology.switches)

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The broadcast walk of :mod:`sim.dataplanes.l2.fast_path`; not for subclasses."""
        if type(self) is not Broadcast:
            return None
        return l2_fast_path(topology, delays, self.encode, "broadcast", caches=self.caches)

    def destinations(self, topology: Topology, state: ControlState, notification: Notification,
                     receivers: frozenset[str]) -> tuple[int, ...]:
        """One broadcast frame, whatever the receivers."""
        return (BROADCAST_MAC,)
