"""``hops``: neighbour-id labels of the delivery tree in preorder (seed 000 §4.2.1).

The publisher lists the ids of every node of its delivery tree, switches and
subscriber hosts, in preorder, the root (its own switch) omitted. Every
switch holds one rule per port, "the ID of the next node" -> that port, so
the rule base is deg(v) + hosts(v) rules per switch and independent of
subscriptions (update-free). A switch clones the packet to each neighbour it
finds in the stack and trims each clone to that neighbour's subtree
(predictive pruning), on the ``neighbor_labels`` data plane.

Deviations and choices:

- The delivery tree is the shortest-path tree from the publisher's switch
  (the thesis states no algorithm). It makes the neighbour split unambiguous:
  inside a node's subtree the only nodes adjacent to it are its children
  (digest §3.6 [I]), which a Steiner tree does not guarantee.
- Labels are 16 bit (2-bit type ``01`` + 14-bit node id; switches then
  hosts), which the thesis leaves open (digest §7.11).
- ``on_oversize="split"`` sends one packet per child subtree of the
  publisher's switch, each starting with that child's id.

References
----------
Seed 000 §4.2.1 (Fig. 4.1), §3.3.1 (predictive pruning), §3.4.1 (oversize);
digest ch. 1-4 §3.6, §7.3, §7.11.
"""

from __future__ import annotations

from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.neighbor_labels.codec import node_label
from sim.dataplanes.neighbor_labels.fast_path import hops_fast_path
from sim.dataplanes.neighbor_labels.reference import install_clone_sessions, neighbor_entry
from sim.dataplanes.trees import shortest_path_tree
from sim.dataplanes.virtual_tree.codec import LabelFormat
from strategies.base import Knowledge, register_strategy
from strategies.frame_size import frame_limit
from strategies.neighbor_labels.label_strategy import NeighborLabelStrategy, Stacks
from strategies.virtual_tree.labels import label_format, subtree_preorder
from topologies.model import Topology


@register_strategy
class Hops(NeighborLabelStrategy):
    """Neighbour-id labels in preorder; one rule per port on every switch."""

    name = "hops"
    summary = "node ids of the delivery tree in preorder; one neighbour rule per port"

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """One ``check_neighbor`` rule and one clone session per port of every switch."""
        fmt = label_format(self.params)
        builder = StateBuilder()
        for sw in topology.switches:
            for port, info in topology.ports(sw).items():
                builder.add_entry(sw, neighbor_entry(fmt, topology, info.neighbor, port))
            install_clone_sessions(builder, topology, sw, fmt)
        return builder.build(topology.switches)

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The closed-form tree walk of :mod:`sim.dataplanes.neighbor_labels.fast_path`
        (seed 000 §4.2.1); None for subclasses, which may change ``encode``,
        ``host_receive`` or ``extra_metrics``, and where node ids do not fit the labels."""
        if type(self) is not Hops:
            return None
        return hops_fast_path(topology, delays, self.encode, fmt=label_format(self.params),
                              frame_limit=frame_limit(self.params.mtu_bytes,
                                                      self.params.on_oversize),
                              caches=self.caches)

    def stacks(self, topology: Topology, fmt: LabelFormat, publisher: str,
               receivers: frozenset[str]) -> Stacks:
        """The delivery tree's nodes in preorder; split: one stack per child subtree."""
        root = topology.host_switch(publisher)
        tree = shortest_path_tree(topology, root, receivers)
        labels = [node_label(fmt, topology, n) for n in tree.preorder() if n != root]

        def split() -> list[list[int]]:
            return [[node_label(fmt, topology, n) for n in subtree_preorder(tree, child)]
                    for child in tree.children.get(root, ())]

        return labels, split
