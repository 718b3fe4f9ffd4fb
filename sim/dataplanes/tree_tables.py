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

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from sim.dataplanes.l2.fast_path_kernels import compiled
from topologies.model import Topology


class TreeTables:
    """Spanning shortest-path trees (switches and every host) from each root switch.

    Nodes are numbered globally (switches ``0..S-1`` in topology order, then
    hosts). Per root, the ``N = S + H`` nodes are laid out in preorder of the
    tree with children in port order (the order of the stacks, seed 000 §3.2),
    so a subtree is the range ``[i, end[i])``. Arrays are ``(S, N)``, indexed
    ``[root, preorder number]`` unless noted; a root's row is filled the first
    time a notification uses it (:meth:`ensure`), by :func:`build_row` (a
    compiled loop over the topology's adjacency arrays).

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
        self._adjacency: Adjacency | None = None
        self.kernel = _kernel()  # build_row, compiled where numba is installed

    @property
    def size(self) -> int:
        return len(self.names)

    def ensure(self, rows: np.ndarray) -> None:
        """Fill the rows of the roots in ``rows`` that are not built yet."""
        todo = np.unique(rows[~self.built[rows]]).tolist()
        if not todo:
            return
        if self._adjacency is None:
            self._adjacency = Adjacency(self.topology, self.gid)
        adj = self._adjacency
        for r in todo:
            self.kernel(r, self.n_switches, adj.bfs_start, adj.bfs_nb, adj.kid_start, adj.kid_nb,
                   adj.kid_delay, adj.host_parent, self.node[r], self.parent[r], self.end[r],
                   self.depth[r], self.delay[r], self.pos_of[r], adj.scratch)
            self.is_switch[r] = self.node[r] < self.n_switches
            self.built[r] = True


class Adjacency:
    """Every node's ports as arrays over global node numbers (switches, then hosts).

    ``bfs_nb[bfs_start[x]:bfs_start[x + 1]]``: the neighbours of ``x`` in the
    order :func:`~sim.dataplanes.trees.bfs_parents` visits them (the port
    map's order); ``kid_nb[kid_start[x]:kid_start[x + 1]]``: the neighbours by
    port number (the order of children, one entry per neighbour: the port
    :meth:`~topologies.model.Topology.port_to` names), ``kid_delay`` the delay
    of the neighbour's link back to ``x`` (s). ``host_parent[h - S]``: the
    switch of host ``h``.
    """

    def __init__(self, topology: Topology, gid: dict[str, int]) -> None:
        names = (*topology.switches, *topology.hosts)
        bfs_start, kid_start = [0], [0]
        bfs_nb: list[int] = []
        kid_nb: list[int] = []
        kid_delay: list[float] = []
        for x in names:
            ports = topology.ports(x)
            bfs_nb.extend(gid[info.neighbor] for info in ports.values())
            bfs_start.append(len(bfs_nb))
            for port in sorted(ports):
                nb = ports[port].neighbor
                if topology.port_to(x, nb) != port:
                    continue  # a parallel link: children are ordered by port_to
                kid_nb.append(gid[nb])
                kid_delay.append(topology.ports(nb)[topology.port_to(nb, x)].link.delay_s)
            kid_start.append(len(kid_nb))
        self.bfs_start = np.array(bfs_start, np.int64)
        self.bfs_nb = np.array(bfs_nb, np.int64)
        self.kid_start = np.array(kid_start, np.int64)
        self.kid_nb = np.array(kid_nb, np.int64)
        self.kid_delay = np.array(kid_delay, np.float64)
        self.host_parent = np.array([gid[topology.host_switch(h)] for h in topology.hosts],
                                    np.int64)
        self.scratch = np.zeros((5, len(names)), np.int64)


def build_row(r: int, n_switches: int, bfs_start: np.ndarray, bfs_nb: np.ndarray,
              kid_start: np.ndarray, kid_nb: np.ndarray, kid_delay: np.ndarray,
              host_parent: np.ndarray, node: np.ndarray, parent: np.ndarray, end: np.ndarray,
              depth: np.ndarray, delay: np.ndarray, pos_of: np.ndarray,
              scratch: np.ndarray) -> None:
    """Fill one root's row of :class:`TreeTables` (plain Python that numba compiles).

    The tree is :func:`~sim.dataplanes.trees.bfs_parents` from switch ``r``
    (breadth first over switches in port-map order, the first to reach a
    switch is its parent) with every host under its switch; it is laid out in
    preorder with children in port order. Positions after the last reachable
    node keep their old values (zeros in a new table).
    """
    n = scratch.shape[1]
    par, queue, order, size, via = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4]
    for x in range(n_switches):
        par[x] = -2  # not reached
    for h in range(n_switches, n):
        par[h] = host_parent[h - n_switches]
    par[r] = -1
    head, tail = 0, 1
    queue[0] = r
    while head < tail:
        x = queue[head]
        head += 1
        for e in range(bfs_start[x], bfs_start[x + 1]):
            nb = bfs_nb[e]
            if nb >= n_switches or par[nb] != -2:
                continue
            par[nb] = x
            queue[tail] = nb
            tail += 1
    # preorder, children in port order (pushed in reverse so the first pops first)
    count, top = 0, 1
    queue[0] = r
    while top > 0:
        top -= 1
        x = queue[top]
        order[count] = x
        pos_of[x] = count
        count += 1
        for e in range(kid_start[x + 1] - 1, kid_start[x] - 1, -1):
            c = kid_nb[e]
            if par[c] == x:
                via[c] = e
                queue[top] = c
                top += 1
    for i in range(count):
        size[order[i]] = 1
    for i in range(count - 1, 0, -1):
        size[par[order[i]]] += size[order[i]]
    for i in range(count):
        x = order[i]
        node[i] = x
        end[i] = i + size[x]
        if x == r:
            parent[i] = -1
            depth[i] = 0
            delay[i] = 0.0
        else:
            up = pos_of[par[x]]
            parent[i] = up
            depth[i] = depth[up] + 1
            delay[i] = kid_delay[via[x]]


def _kernel() -> Callable[..., None]:
    return compiled("tree_tables.build_row", build_row) or build_row


@lru_cache(maxsize=8)
def tree_tables(topology: Topology) -> TreeTables:
    """One table set per topology (topologies are immutable and compare by identity)."""
    return TreeTables(topology)
