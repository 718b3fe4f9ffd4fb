"""One receiver set's shortest-path tree as multicast-group configurations, built directly.

``multicast`` installs, per notification, the shortest-path tree of one
receiver set (:func:`sim.dataplanes.trees.shortest_path_tree`) as one
multicast group and one ``l2_forward`` rule per tree switch
(:func:`strategies.l2.rules.install_tree_groups` on a
:class:`~sim.dataplanes.control_state.StateBuilder`, the reference). This
module builds the same state without the tree and the builder:

- :func:`tree_child_ports` walks from each receiver's switch up the cached
  breadth-first parents of the root (:func:`sim.dataplanes.trees.bfs_parents`)
  until it meets the part of the tree already walked, collecting each tree
  switch's child ports (the tree's children in port order are its ports in
  ascending order);
- :func:`tree_group_state` makes each tree switch's configuration (the group
  of its child ports and the one rule of the group MAC) through a cache: two
  installs that give a switch the same ports on the same base configuration
  get the same configuration object (multicast's base is empty, so the object
  does not depend on the switch), whose control writes and lookup memos are
  then skipped. Those of one base configuration share one table mapping
  (:class:`~sim.dataplanes.derived_configs.ConfigExtension`), so comparing two
  of them compares their groups only.

Both equal the reference exactly (``tests/strategies/test_tree_groups.py``).

References
----------
Seed 000 §2.3 (iv), §3.5.4 (OFM: one group and one rule per tree switch);
digest ch. 1-4 §7.3 (shortest-path ties to the lowest name).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sim.dataplanes.caches import Store
from sim.dataplanes.control_state import (
    ControlState,
    MulticastGroup,
    derived_state,
)
from sim.dataplanes.derived_configs import ConfigExtension, derived_configs
from sim.dataplanes.l2.reference import MULTICAST, TABLE
from sim.dataplanes.trees import bfs_parents, host_ports
from strategies.l2.rules import l2_entry
from topologies.model import Topology


def tree_child_ports(topology: Topology, root: str, targets: Iterable[str]
                     ) -> dict[str, list[int]]:
    """Each switch of ``shortest_path_tree(topology, root, targets)`` -> the ports
    towards its children, ascending (the tree's port order).

    Raises
    ------
    KeyError
        If a target's switch cannot be reached from ``root`` (as the tree does).
    """
    parents = bfs_parents(topology, root)
    port_to, attached = topology.port_to, host_ports(topology)
    ports: dict[str, list[int]] = {}
    for host in targets:
        node, port = attached[host]
        got = ports.get(node)
        if got is not None:  # its switch (and the path above it) is in the tree already
            got.append(port)
            continue
        ports[node] = [port]
        while node != root:
            parent = parents[node]
            got = ports.get(parent)
            if got is not None:
                got.append(port_to(parent, node))
                break
            ports[parent] = [port_to(parent, node)]
            node = parent
    for got in ports.values():
        got.sort()
    return ports


def tree_group_state(topology: Topology, base: ControlState, root: str,
                     targets: Iterable[str], group: int, dst_mac: int,
                     configs: Store[tuple[Any, ...], Any],
                     publisher_info: Mapping[str, Any]) -> ControlState:
    """``base`` plus the tree of ``targets`` from switch ``root`` as multicast group
    ``group`` keyed by ``dst_mac`` (any source): what
    :func:`~strategies.l2.rules.install_tree_groups` adds to a builder on ``base``.

    ``configs``: where tree-switch configurations are shared between installs
    (:func:`~sim.dataplanes.derived_configs.derived_configs` of ``base``, keyed by
    the switch's base configuration, the group and the ports).

    Raises
    ------
    ValueError
        If a tree switch's base configuration has ``l2_forward`` rules or the group
        already (:class:`~sim.dataplanes.derived_configs.ConfigExtension`).
    """
    made = derived_configs(base, configs)
    kept_of = made.kept
    changed = {}
    for sw, ports in tree_child_ports(topology, root, targets).items():
        kept = kept_of[sw]
        key = ("l2 tree", kept, group, dst_mac, *ports)
        config = made.get(key)
        if config is None:
            extension_key = ("l2 tree rule", kept, group, dst_mac)
            extension = made.get(extension_key)
            if extension is None:
                extension = made.put(extension_key, ConfigExtension(
                    kept.obj, {TABLE: (l2_entry(dst_mac, MULTICAST, group),)}))  # type: ignore[arg-type]
            config = made.put(key, extension.config(
                {group: MulticastGroup(group, tuple((p, 1) for p in ports))}))
        changed[sw] = config
    return derived_state(base, changed, publisher_info)
