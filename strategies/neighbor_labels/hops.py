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
from sim.dataplanes.neighbor_labels.codec import node_label
from sim.dataplanes.neighbor_labels.reference import (
    NeighborLabelsDataPlane,
    install_clone_sessions,
    neighbor_entry,
)
from sim.dataplanes.packet import Notification
from sim.dataplanes.trees import shortest_path_tree
from strategies.base import Encoding, Knowledge, Strategy, register_strategy
from strategies.virtual_tree.labels import (
    LabelParams,
    check_receivers,
    encode_stacks,
    label_format,
    subtree_preorder,
)
from topologies.model import Topology


@register_strategy
class Hops(Strategy):
    """Neighbour-id labels in preorder; one rule per port on every switch."""

    name = "hops"
    dataplane = "neighbor_labels"
    Params = LabelParams
    scope = "topology"
    summary = "node ids of the delivery tree in preorder; one neighbour rule per port"

    def model(self) -> NeighborLabelsDataPlane:
        return NeighborLabelsDataPlane(label_format(self.params))

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """One ``check_neighbor`` rule and one clone session per port of every switch."""
        fmt = label_format(self.params)
        builder = StateBuilder()
        for sw in topology.switches:
            for port, info in topology.ports(sw).items():
                builder.add_entry(sw, neighbor_entry(fmt, topology, info.neighbor, port))
            install_clone_sessions(builder, topology, sw, fmt)
        return builder.build(topology.switches)

    def update(self, topology: Topology, state: ControlState, knowledge: Knowledge
               ) -> ControlState:
        """Subscriptions never change the rules (they depend on the topology only)."""
        return state

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        check_receivers(notification.publisher, receivers)
        if not receivers:
            return Encoding(())
        fmt = label_format(self.params)
        root = topology.host_switch(notification.publisher)
        tree = shortest_path_tree(topology, root, receivers)
        labels = [node_label(fmt, topology, n) for n in tree.preorder() if n != root]

        def split() -> list[list[int]]:
            return [[node_label(fmt, topology, n) for n in subtree_preorder(tree, child)]
                    for child in tree.children.get(root, ())]

        return encode_stacks(topology, self.params, fmt, notification, payload, labels, split)
