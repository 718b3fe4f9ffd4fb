"""Stored trees on a base state: the ``check_tree`` rules of ``tree`` and ``hybrid``.

A stored tree puts one ``check_tree`` rule on every tree switch with children
(seed 000 §4.2.3, §4.3.2): the tree label -> the bitmask of the child ports,
or (``variant="mcgroup"``) -> a multicast group of them. Receiver-scoped
strategies install them per notification on their receiver-independent base
rules (:meth:`strategies.base.Strategy.base_state`).

:class:`StoredTrees` collects the rules switch by switch in the order an
install adds them, and :meth:`StoredTrees.state` builds the state: the
switches without rules keep the base's configuration, the others get the
base configuration plus their rules, built by a
:class:`~sim.dataplanes.control_state.StateBuilder` on that base (so the
state equals adding the rules one by one) and kept in
``caches.stored_configs``: a switch that stores the same rules in two
installs (the same child ports under the same tree id) gets the same
configuration object, which control-write counting and the data-plane
memos skip.

:func:`one_tree_state` builds the state of a single shortest-path tree (what
``tree`` installs per notification in a receiver-scoped cell) without the
tree, the rule objects or the builder: the child ports of each tree switch
come from the root's cached breadth-first parents
(:func:`strategies.l2.tree_groups.tree_child_ports`) and each tree switch's
configuration from a cache keyed by its base configuration and ports
(``caches.group_configs``, :class:`~sim.dataplanes.derived_configs.DerivedConfigs`),
made on a miss as :meth:`StoredTrees.state`'s builder makes it (a
:class:`~sim.dataplanes.derived_configs.ConfigExtension`, marked with its
writes from the base configuration); the state is
:func:`~sim.dataplanes.control_state.derived_state` of the base, so totals and
control writes look at the tree switches only. It equals
:meth:`StoredTrees.state` of the same tree (``tests/strategies/test_stored_trees.py``).

References
----------
Seed 000 §4.2.3, §4.3.2 (Figs. 4.4-4.6); digest ch. 1-4 §3.8-3.9.
"""

from __future__ import annotations

from typing import Any

from sim.dataplanes.caches import Identity, Store
from sim.dataplanes.control_state import (
    EMPTY_SWITCH,
    ControlState,
    MulticastGroup,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    derived_state,
)
from sim.dataplanes.derived_configs import ConfigExtension, DerivedConfigs, derived_configs
from sim.dataplanes.trees import Tree
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import (
    CHECK_TREE,
    tree_group_entry,
    tree_ports_entry,
)
from strategies.l2.tree_groups import tree_child_ports
from topologies.model import Topology


class StoredTrees:
    """The ``check_tree`` rules (and groups) of stored trees, per switch.

    Parameters
    ----------
    topology : Topology
    fmt : LabelFormat
    variant : {"bitmask", "mcgroup"}
        Child-port bitmask rules, or group rules with one multicast group each
        (group id = tree id).
    """

    def __init__(self, topology: Topology, fmt: LabelFormat, variant: str = "bitmask") -> None:
        self.topology = topology
        self.fmt = fmt
        self.variant = variant
        self.entries: dict[str, list[TableEntry]] = {}
        self.groups: dict[str, list[tuple[int, tuple[int, ...]]]] = {}

    def add(self, tree: Tree, tree_id: int) -> None:
        """Store ``tree`` under ``tree_id``: one rule per tree switch with children.

        Raises
        ------
        FieldRangeError
            If the tree id or a port does not fit the label format.
        """
        topology = self.topology
        for sw in tree.switches(topology):
            ports = [topology.port_to(sw, c) for c in tree.children.get(sw, ())]
            if not ports:
                continue
            if self.variant == "mcgroup":
                self.groups.setdefault(sw, []).append((tree_id, tuple(ports)))
                self.entries.setdefault(sw, []).append(tree_group_entry(self.fmt, tree_id, tree_id))
            else:
                self.entries.setdefault(sw, []).append(tree_ports_entry(self.fmt, tree_id, ports))

    def add_to(self, builder: StateBuilder) -> None:
        """Add the rules to ``builder`` (switch by switch, groups before entries)."""
        for sw, entries in self.entries.items():
            for group, ports in self.groups.get(sw, ()):
                builder.add_group(sw, group, ports)
            for entry in entries:
                builder.add_entry(sw, entry)

    def state(self, base: ControlState, configs: Store[tuple[Any, ...], Any],
              publisher_info: dict[str, Any]) -> ControlState:
        """``base`` plus the stored rules (configurations shared through ``configs``)."""
        switches = {}
        kept_of = base.switches
        for sw in self.topology.switches:
            kept = kept_of.get(sw, EMPTY_SWITCH)
            entries, groups = self.entries.get(sw), self.groups.get(sw)
            if entries is None and groups is None:
                switches[sw] = kept
                continue
            key = (Identity(kept), tuple(entries or ()), tuple(groups or ()))
            config = configs.get(key)
            if config is None:
                builder = StateBuilder(base=ControlState(switches={sw: kept}))
                for group, ports in groups or ():
                    builder.add_group(sw, group, ports)
                for entry in entries or ():
                    builder.add_entry(sw, entry)
                config = configs.put(key, builder.build((sw,)).switches[sw])
            switches[sw] = config
        return ControlState(switches=switches, publisher_info=publisher_info)


def one_tree_state(topology: Topology, fmt: LabelFormat, variant: str, base: ControlState,
                   root: str, receivers: frozenset[str], tree_id: int,
                   configs: Store[tuple[Any, ...], Any], publisher_info: dict[str, Any]
                   ) -> ControlState:
    """``StoredTrees(topology, fmt, variant)`` holding ``shortest_path_tree(topology, root,
    receivers)`` under ``tree_id``, as :meth:`StoredTrees.state` on ``base`` (see the
    module docstring); ``configs``: the store of the per-base configuration caches.

    ``base`` must hold every switch of ``topology`` in topology order (a
    :meth:`~strategies.base.Strategy.base_state`).

    Raises
    ------
    FieldRangeError
        If the tree id or a port does not fit the label format (as :meth:`StoredTrees.add`).
    KeyError
        If a receiver's switch cannot be reached from ``root`` (as the tree does).
    ValueError
        If a tree switch's base configuration has ``check_tree`` rules or the group
        (:class:`~sim.dataplanes.derived_configs.ConfigExtension`).
    """
    made = derived_configs(base, configs)
    kept_of = made.kept
    changed = {}
    for sw, ports in tree_child_ports(topology, root, receivers).items():
        kept = kept_of[sw]
        key = ("vt stored tree", kept, tree_id, *ports)
        config = made.get(key)
        if config is None:
            config = made.put(key, _tree_config(made, fmt, variant, kept, tree_id, ports))
        changed[sw] = config
    return derived_state(base, changed, publisher_info)


def _tree_config(made: DerivedConfigs, fmt: LabelFormat, variant: str, kept: Identity,
                 tree_id: int, ports: list[int]) -> SwitchConfig:
    """Base configuration ``kept`` plus one stored tree's rule (and group), as a
    :class:`StateBuilder` on it adds them (:meth:`StoredTrees.state`), made through a
    :class:`~sim.dataplanes.derived_configs.ConfigExtension` (marked with its writes
    from ``kept``).

    Raises
    ------
    ValueError
        If ``kept`` has ``check_tree`` rules or the group already (``tree``'s base
        rules have neither).
    """
    if variant != "mcgroup":
        entry = tree_ports_entry(fmt, tree_id, ports)
        return ConfigExtension(kept.obj, {CHECK_TREE: (entry,)}).config({})  # type: ignore[arg-type]
    key = ("vt stored tree rule", kept, tree_id)
    extension = made.get(key)
    if extension is None:
        extension = made.put(key, ConfigExtension(
            kept.obj, {CHECK_TREE: (tree_group_entry(fmt, tree_id, tree_id),)}))  # type: ignore[arg-type]
    return extension.config(  # type: ignore[no-any-return]
        {tree_id: MulticastGroup(tree_id, tuple((p, 1) for p in ports))})
