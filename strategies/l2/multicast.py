"""``multicast``: IP/OpenFlow-style multicast with per-publisher stored trees.

Seed 000 §2.3 (iv) and §3.5.4 (OFM): source-based trees, one per publisher and
receiver set, keyed by a group MAC instead of IP + UDP port; "flow rules are
only preinstalled for specific subscriber permutations actively involved", so
the controller installs exactly the receiver sets it knows. Each tree switch
gets one multicast group (its child ports) and one exact rule; the frame
carries no extra header bytes. The tree is the shortest-path tree (default)
or the Steiner heuristic. A single receiver set's shortest-path tree (what a
receiver-scoped cell installs per notification) is built directly on shared
switch configurations (:mod:`strategies.l2.tree_groups`), equal to the builder's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.l2.fast_path import l2_fast_path
from sim.dataplanes.packet import Notification, group_mac
from sim.dataplanes.trees import shortest_path_tree, steiner_tree
from strategies.base import Knowledge, register_strategy
from strategies.l2.rules import L2Strategy, install_tree_groups
from strategies.l2.tree_groups import tree_group_state
from topologies.model import Topology


@dataclass(frozen=True, slots=True, kw_only=True)
class MulticastParams:
    tree: Literal["spt", "steiner"] = "spt"


def tree_key(publisher: str, receivers: frozenset[str]) -> str:
    """Key under which a receiver set's group id is published to encoders."""
    return publisher + ":" + ",".join(sorted(receivers))


@register_strategy
class Multicast(L2Strategy):
    name = "multicast"
    Params = MulticastParams
    summary = "per-publisher stored trees per receiver set, one multicast group per switch"

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """One tree per known (publisher, receiver set): :meth:`install_reference`; the
        shortest-path tree of a single receiver set (what a receiver-scoped cell installs
        per notification) built directly (:func:`strategies.l2.tree_groups.tree_group_state`,
        the same state)."""
        single = [(pub, receivers) for pub in knowledge.publishers
                  for receivers in knowledge.receiver_sets[pub]]
        if self.params.tree != "spt" or len(single) != 1 or not single[0][1]:
            return self.install_reference(topology, knowledge)
        ((pub, receivers),) = single
        return tree_group_state(topology, self.base_state(topology), topology.host_switch(pub),
                                receivers, 1, group_mac(1), self.caches.group_configs,
                                {"groups": {tree_key(pub, receivers): 1}})

    def install_reference(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """Every tree added rule by rule to a :class:`StateBuilder` (the reference)."""
        builder = StateBuilder()
        groups: dict[str, int] = {}
        build_tree = steiner_tree if self.params.tree == "steiner" else shortest_path_tree
        for pub in knowledge.publishers:
            for receivers in sorted(knowledge.receiver_sets[pub], key=sorted):
                key = tree_key(pub, receivers)
                if key in groups or not receivers:
                    continue
                gid = groups[key] = len(groups) + 1
                tree = build_tree(topology, topology.host_switch(pub), receivers)
                install_tree_groups(builder, topology, tree, gid, group_mac(gid))
        return builder.build(topology.switches, {"groups": groups})

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The multicast walk of :mod:`sim.dataplanes.l2.fast_path` (shortest-path trees
        only); not for subclasses."""
        if type(self) is not Multicast or self.params.tree != "spt":
            return None
        return l2_fast_path(topology, delays, self.encode, "multicast", caches=self.caches)

    def destinations(self, topology: Topology, state: ControlState, notification: Notification,
                     receivers: frozenset[str]) -> tuple[int, ...]:
        """The group MAC of the receiver set's installed tree (none without receivers)."""
        if not receivers:
            return ()
        key = tree_key(notification.publisher, receivers)
        try:
            gid = state.publisher_info["groups"][key]
        except KeyError:
            raise LookupError(f"no multicast tree installed for {key}") from None
        return (group_mac(gid),)
