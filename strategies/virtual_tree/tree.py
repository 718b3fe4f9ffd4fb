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

from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.packet import Notification
from sim.dataplanes.trees import shortest_path_tree, steiner_tree
from sim.dataplanes.virtual_tree.reference import install_port_rules, tree_label
from strategies.base import Encoding, Knowledge, Strategy, register_strategy
from strategies.virtual_tree.data_plane import VirtualTreeModel
from strategies.virtual_tree.labels import (
    LabelParams,
    check_receivers,
    encode_stacks,
    tree_key,
    validate_label_params,
)
from strategies.virtual_tree.stored_trees import StoredTrees, one_tree_state
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
            fmt = self.fmt
            for sw in topology.switches:
                install_port_rules(builder, topology, sw, fmt, hops=False, stops=False)

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """:meth:`install_reference`; the shortest-path tree of a single receiver set
        (what a receiver-scoped cell installs per notification) built directly
        (:func:`~strategies.virtual_tree.stored_trees.one_tree_state`, the same state)."""
        single = [(pub, receivers) for pub in knowledge.publishers
                  for receivers in knowledge.receiver_sets[pub]]
        if self.params.tree != "spt" or len(single) != 1 or not single[0][1]:
            return self.install_reference(topology, knowledge)
        ((pub, receivers),) = single
        check_receivers(pub, receivers)
        fmt = self.fmt
        tree_label(fmt, 1)  # raises if the id does not fit
        return one_tree_state(topology, fmt, self.params.variant, self.base_state(topology),
                              topology.host_switch(pub), receivers, 1,
                              self.caches.group_configs, {"trees": {tree_key(pub, receivers): 1}})

    def install_reference(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """One stored tree per known receiver set on :meth:`base_rules` (configurations
        of equal rules shared, :mod:`~strategies.virtual_tree.stored_trees`): the
        definition."""
        fmt = self.fmt
        params: TreeParams = self.params
        rules = StoredTrees(topology, fmt, params.variant)
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
                rules.add(build(topology, topology.host_switch(pub), receivers), tree_id)
        return rules.state(self.base_state(topology), self.caches.stored_configs,
                           {"trees": trees})

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        pub = notification.publisher
        check_receivers(pub, receivers)
        if not receivers:
            return Encoding(())
        tree_id = stored_tree_ids(self.caches, topology, state).get(
            (pub, receivers)) if isinstance(receivers, frozenset) else None
        if tree_id is None:
            key = tree_key(pub, receivers)
            try:
                tree_id = state.publisher_info["trees"][key]
            except KeyError:
                raise LookupError(f"no stored tree installed for {key}") from None
        fmt = self.fmt
        return encode_stacks(topology, self.params, fmt, notification, payload,
                             [tree_label(fmt, tree_id)])


def stored_tree_ids(caches: Caches, topology: Topology, state: ControlState
                    ) -> dict[tuple[str, frozenset[str]], int]:
    """``(publisher, receivers) -> tree id`` of the trees ``state`` tells the publishers
    about (``publisher_info["trees"]``, keyed by :func:`tree_key`), read once per state
    (``caches.vt_compiled``). A key that does not read back to itself is left out (the
    encoder then looks it up by :func:`tree_key`)."""

    def read() -> dict[tuple[str, frozenset[str]], int]:
        out = {}
        for key, tree_id in state.publisher_info.get("trees", {}).items():
            pub, _, rest = key.partition(":")
            receivers = frozenset(rest.split(",")) if rest else frozenset()
            if tree_key(pub, receivers) == key:
                out[(pub, receivers)] = tree_id
        return out

    return caches.vt_compiled.get_or_make(  # type: ignore[no-any-return]
        (Identity(state), Identity(topology)), read)
