"""Per-topology tables of the shortest-path tree from every root, laid out for fast paths.

The fast paths of the tree-walking families (source-routing stacks and hops,
:mod:`sim.dataplanes.source_routing.fast_path`; L2 broadcast/multicast and ALM,
:mod:`sim.dataplanes.l2.fast_path`) walk the same spanning shortest-path trees
as the reference engine (:func:`sim.dataplanes.trees.bfs_parents`, children in
port order as in the stacks of seed 000 §3.2): this module lays them out as
arrays once per topology.

References
----------
Seed 000 §3.2 (preorder stacks, port order); digest ch. 1-4 §3.2-3.3.
"""

from __future__ import annotations

from functools import lru_cache, partial

import numpy as np

from sim.dataplanes.trees import bfs_parents
from topologies.model import Topology


class TreeTables:
    """Spanning shortest-path trees (switches and every host) from each root switch.

    Nodes are numbered globally (switches ``0..S-1`` in topology order, then
    hosts). Per root, the ``N = S + H`` nodes are laid out in preorder of the
    tree with children in port order (the order of the stacks, seed 000 §3.2),
    so a subtree is the range ``[i, end[i])``. Arrays are ``(S, N)``, indexed
    ``[root, preorder number]`` unless noted; a root's row is filled the first
    time a notification uses it (:meth:`ensure`).

    Attributes
    ----------
    node : global node index; parent : preorder number of the parent (root:
    -1); end : preorder number after the subtree; depth : hops from the root;
    delay : delay of the link parent -> node (s); is_switch : 1 for switches, 0 for hosts;
    pos_of : ``[root, global node]`` -> preorder number.
    """

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.names = (*topology.switches, *topology.hosts)
        self.gid = {n: i for i, n in enumerate(self.names)}
        self.n_switches = s = len(topology.switches)
        n = len(self.names)
        self.node, self.parent, self.end, self.depth, self.pos_of = (
            np.zeros((s, n), np.int32) for _ in range(5))
        self.delay = np.zeros((s, n), np.float64)
        self.is_switch = np.zeros((s, n), np.int64)
        self.built = np.zeros(s, bool)

    @property
    def size(self) -> int:
        return len(self.names)

    def ensure(self, rows: np.ndarray) -> None:
        """Fill the rows of the roots in ``rows`` that are not built yet."""
        for r in np.unique(rows[~self.built[rows]]).tolist():
            self._build(r)

    def _build(self, r: int) -> None:
        topology, gid = self.topology, self.gid
        root = topology.switches[r]
        par = dict(bfs_parents(topology, root))
        for h in topology.hosts:
            par[h] = topology.host_switch(h)
        kids: dict[str, list[str]] = {}
        for c, p in par.items():
            kids.setdefault(p, []).append(c)
        for p, cs in kids.items():
            cs.sort(key=partial(topology.port_to, p))  # children in port order
        preorder: list[str] = []
        stack = [root]
        while stack:
            x = stack.pop()
            preorder.append(x)
            stack.extend(reversed(kids.get(x, ())))
        num = {x: k for k, x in enumerate(preorder)}
        size: dict[str, int] = {}
        for x in reversed(preorder):
            size[x] = 1 + sum(size[c] for c in kids.get(x, ()))
        node, parent, end = self.node[r], self.parent[r], self.end[r]
        depth, delay, pos_of = self.depth[r], self.delay[r], self.pos_of[r]
        for i, x in enumerate(preorder):
            up = par.get(x)
            node[i] = gid[x]
            pos_of[gid[x]] = i
            end[i] = i + size[x]
            if up is None:
                parent[i] = -1
            else:
                parent[i] = num[up]
                depth[i] = depth[num[up]] + 1
                delay[i] = topology.ports(x)[topology.port_to(x, up)].link.delay_s
        self.is_switch[r] = node < self.n_switches
        self.built[r] = True


@lru_cache(maxsize=8)
def tree_tables(topology: Topology) -> TreeTables:
    """One table set per topology (topologies are immutable and compare by identity)."""
    return TreeTables(topology)
