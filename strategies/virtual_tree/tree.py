"""``tree``: one stored publisher-centric tree per receiver set, one label (seed 000 §4.2.3).

The controller stores, for each receiver set it knows, the delivery tree of
the publisher; the publisher's header is a single tree label (``Size`` +
one 16-bit label = 4 B, constant). Both variants run on the
``virtual_tree`` data plane (the ch. 5 program, whose ``check_tree`` table is
the stored-tree table of §4.3.2):

- ``variant="bitmask"`` (default, §4.3.2/Fig. 4.6): on every tree switch a
  ``check_tree`` rule tree label -> 64-bit bitmask of the child ports; the
  switch makes one clone per 1-bit (``m - 1`` recirculations for ``m``
  bits), helped by the constant ``extract_port`` ternary rules (one per port
  on every switch) and one clone session per port.
- ``variant="mcgroup"`` (§4.2.3, "local multicast groups ... all the
  required clones ... with a single action"): on every tree switch a
  ``check_tree`` rule tree label -> ``set_tree_group(group)`` and a
  multicast group of the child ports (group id = tree id); one pass per
  switch, no helper rules. This reuses the ``virtual_tree`` program with its
  group action rather than the ``l2`` family, so the header (one label) and
  the byte counts are the same as the bitmask variant's.

Rule count: |V_T| ``check_tree`` rules per tree (every tree switch, leaves
included), plus, for ``bitmask``, ``deg(v)`` ``extract_port`` rules per
switch; ``ControlState.multicast_groups`` counts the groups of ``mcgroup``.

Deviations and choices:

- Trees are installed for exactly the receiver sets in
  ``Knowledge.receiver_sets`` ("for every possible combination of active
  subscribers" is the thesis's state explosion; digest §7.14); tree ids are
  1, 2, ... in sorted order of (publisher, receiver set).
- The tree is the shortest-path tree (``tree="spt"``, default) or the
  Steiner heuristic (``tree="steiner"``); the thesis states none.
- Stored masks hold child ports only (publisher-centric, directed), unlike
  ch. 5's bidirectional virtual trees.

References
----------
Seed 000 §4.2.3, §4.3.2, §4.4.2 (Figs. 4.5-4.7); digest ch. 1-4 §3.8, §7.14.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.packet import Notification
from sim.dataplanes.trees import Tree, shortest_path_tree, steiner_tree
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import (
    install_port_rules,
    tree_group_entry,
    tree_label,
    tree_ports_entry,
)
from strategies.base import Encoding, Knowledge, Strategy, register_strategy
from strategies.virtual_tree.data_plane import VirtualTreeModel
from strategies.virtual_tree.labels import (
    LabelParams,
    check_receivers,
    encode_stacks,
    label_format,
    tree_key,
    validate_label_params,
)
from topologies.model import Topology
from topologies.registry import check


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeParams(LabelParams):
    """Parameters of ``tree``: the label widths of :class:`LabelParams` plus

    Parameters
    ----------
    variant : {"bitmask", "mcgroup"}
        How a stored tree is kept on a switch (see the module docstring).
    tree : {"spt", "steiner"}
        Delivery-tree algorithm.
    """

    variant: Literal["bitmask", "mcgroup"] = "bitmask"
    tree: Literal["spt", "steiner"] = "spt"

    def __post_init__(self) -> None:
        validate_label_params(self)
        check(self.variant in ("bitmask", "mcgroup"),
              f"variant must be bitmask or mcgroup; got {self.variant!r}")
        check(self.tree in ("spt", "steiner"), f"tree must be spt or steiner; got {self.tree!r}")


def install_stored_tree(builder: StateBuilder, topology: Topology, tree: Tree, tree_id: int,
                        fmt: LabelFormat, variant: str = "bitmask") -> None:
    """Store ``tree`` under ``tree_id``: one ``check_tree`` rule per tree switch.

    ``bitmask``: the rule carries the child-port bitmask; ``mcgroup``: the
    rule names multicast group ``tree_id``, which holds the child ports.
    """
    for sw in tree.switches(topology):
        ports = [topology.port_to(sw, c) for c in tree.children.get(sw, ())]
        if not ports:
            continue
        if variant == "mcgroup":
            builder.add_group(sw, tree_id, ports)
            builder.add_entry(sw, tree_group_entry(fmt, tree_id, tree_id))
        else:
            builder.add_entry(sw, tree_ports_entry(fmt, tree_id, ports))


@register_strategy
class StoredTree(VirtualTreeModel, Strategy):
    """One tree label per notification; a stored tree per known receiver set."""

    name = "tree"
    vt_fast_path = True
    dataplane = "virtual_tree"
    Params = TreeParams
    scope = "receivers"
    summary = "one stored tree per receiver set, referenced by one tree label"

    def base_rules(self, builder: StateBuilder, topology: Topology) -> None:
        """``bitmask``: the ``extract_port`` helpers and clone sessions of every switch."""
        if self.params.variant == "bitmask":
            fmt = label_format(self.params)
            for sw in topology.switches:
                install_port_rules(builder, topology, sw, fmt, hops=False, stops=False)

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        fmt = label_format(self.params)
        params: TreeParams = self.params
        builder = self.state_builder(topology)
        build = steiner_tree if params.tree == "steiner" else shortest_path_tree
        trees: dict[str, int] = {}
        for pub in knowledge.publishers:
            for receivers in sorted(knowledge.receiver_sets[pub], key=sorted):
                key = tree_key(pub, receivers)
                if key in trees or not receivers:
                    continue
                check_receivers(pub, receivers)
                tree_id = trees[key] = len(trees) + 1
                tree_label(fmt, tree_id)  # raises if the id does not fit
                install_stored_tree(builder, topology,
                                    build(topology, topology.host_switch(pub), receivers),
                                    tree_id, fmt, params.variant)
        return builder.build(topology.switches, {"trees": trees})

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        check_receivers(notification.publisher, receivers)
        if not receivers:
            return Encoding(())
        key = tree_key(notification.publisher, receivers)
        try:
            tree_id = state.publisher_info["trees"][key]
        except KeyError:
            raise LookupError(f"no stored tree installed for {key}") from None
        fmt = label_format(self.params)
        return encode_stacks(topology, self.params, fmt, notification, payload,
                             [tree_label(fmt, tree_id)])
