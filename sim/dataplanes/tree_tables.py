"""Per-topology tables of the shortest-path tree from every root, laid out for fast paths.

The fast paths of the tree-walking families (source-routing stacks and hops,
:mod:`sim.dataplanes.source_routing.fast_path`; L2 broadcast/multicast and ALM,
:mod:`sim.dataplanes.l2.fast_path`) walk the same spanning shortest-path trees
as the reference engine (:func:`sim.dataplanes.trees.bfs_parents`, children in
port order as in the stacks of seed 000 §3.2): this module lays them out as
arrays, one row per root as notifications need it, in a bounded number of
rows (:class:`TreeTables`).

References
----------
Seed 000 §3.2 (preorder stacks, port order); digest ch. 1-4 §3.2-3.3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.l2.fast_path_kernels import compiled
from topologies.model import Topology

#: Bytes of one root's row over all its arrays, per node (5 int32, 1 float64, 1 int64).
ROW_BYTES_PER_NODE = 5 * 4 + 8 + 8
#: What the rows may take together before roots share slots (bytes): 3,728 roots of
#: the 4,000-switch jellyfish (one host per switch), 977 of fattree:k=48's 2,880.
ROW_BUDGET_BYTES = 1 << 30
#: Slots at least (where the topology has as many switches): every caller's batch
#: of notifications has at most this many distinct roots.
MIN_SLOTS = 256


def default_slots(n_switches: int, n_nodes: int) -> int:
    """Rows kept: every root while they fit :data:`ROW_BUDGET_BYTES`, else as many as
    fit but at least :data:`MIN_SLOTS` (at most one per switch)."""
    fit = ROW_BUDGET_BYTES // max(1, ROW_BYTES_PER_NODE * n_nodes)
    return max(1, min(n_switches, max(MIN_SLOTS, fit)))


class TreeTables:
    """Spanning shortest-path trees (switches and every host) from root switches.

    Nodes are numbered globally (switches ``0..S-1`` in topology order, then
    hosts). Per root, the ``N = S + H`` nodes are laid out in preorder of the
    tree with children in port order (the order of the stacks, seed 000 §3.2),
    so a subtree is the range ``[i, end[i])``. Arrays are ``(slots, N)``,
    indexed ``[slot, preorder number]`` unless noted: :meth:`ensure` maps the
    roots a batch needs to slots, filling a slot's row by :func:`build_row`
    (a compiled loop over the topology's adjacency arrays) when its root is not
    there. With fewer slots than switches (:func:`default_slots`: the rows of
    a large network would take ``36 N`` B per root, 3.2 GB for every root of
    fattree:k=48), the least recently used root gives its slot up; a row is
    always the whole tree of its root, so results never depend on the slots.

    Attributes
    ----------
    node : global node index; parent : preorder number of the parent (root:
    -1); end : preorder number after the subtree; depth : hops from the root;
    delay : delay of the link parent -> node (s); is_switch : 1 for switches, 0 for hosts;
    pos_of : ``[slot, global node]`` -> preorder number.
    slot_of : ``[root]`` -> its slot, -1 when it has none; root_of : ``[slot]`` ->
    its root, -1 while empty.

    Parameters
    ----------
    topology : Topology
    slots : int, optional
        Rows kept (default :func:`default_slots`).
    """

    def __init__(self, topology: Topology, slots: int | None = None) -> None:
        self.topology = topology
        self.names = (*topology.switches, *topology.hosts)
        self.gid = {n: i for i, n in enumerate(self.names)}
        self.n_switches = s = len(topology.switches)
        n = len(self.names)
        k = default_slots(s, n) if slots is None else slots
        if k < 1:
            raise ValueError(f"slots must be >= 1, got {k}")
        self.capacity = k
        self.node, self.parent, self.end, self.depth, self.pos_of = (
            np.zeros((k, n), np.int32) for _ in range(5))
        self.delay = np.zeros((k, n), np.float64)
        self.is_switch = np.zeros((k, n), np.int64)
        self.slot_of = np.full(s, -1, np.int64)
        self.root_of = np.full(k, -1, np.int64)
        self._last_use = np.full(k, -1, np.int64)  # the call that last needed the slot
        self._calls = 0
        self._adjacency: Adjacency | None = None
        self.kernel = _kernel()  # build_row, compiled where numba is installed

    @property
    def size(self) -> int:
        return len(self.names)

    def ensure(self, roots: np.ndarray) -> np.ndarray:
        """The slots holding the trees of ``roots`` (same shape), filled where missing.

        Raises
        ------
        ValueError
            If ``roots`` has more distinct roots than :attr:`capacity`.
        """
        roots = np.asarray(roots)
        self._calls += 1
        need = np.unique(roots)
        if len(need) > self.capacity:
            raise ValueError(f"{len(need)} roots in one call, but the tree tables keep "
                             f"{self.capacity}")
        have = self.slot_of[need]
        self._last_use[have[have >= 0]] = self._calls
        todo = need[have < 0].tolist()
        if todo:
            # empty slots first, then the least recently used (never one of this call)
            free = np.argsort(self._last_use, kind="stable")[:len(todo)].tolist()
            if self._adjacency is None:
                self._adjacency = Adjacency(self.topology, self.gid)
            adj = self._adjacency
            for r, k in zip(todo, free, strict=True):
                old = self.root_of[k]
                if old >= 0:  # a new root's row starts from zeros, as in a new table
                    self.slot_of[old] = -1
                    for a in (self.node, self.parent, self.end, self.depth, self.pos_of,
                              self.delay):
                        a[k] = 0
                self.kernel(r, self.n_switches, adj.bfs_start, adj.bfs_nb, adj.kid_start,
                            adj.kid_nb, adj.kid_delay, adj.host_parent, self.node[k],
                            self.parent[k], self.end[k], self.depth[k], self.delay[k],
                            self.pos_of[k], adj.scratch)
                self.is_switch[k] = self.node[k] < self.n_switches
                self.root_of[k] = r
                self.slot_of[r] = k
                self._last_use[k] = self._calls
        return self.slot_of[roots].astype(roots.dtype, copy=False)

    def batches(self, publishers: Sequence[str], size: int) -> list[list[int]]:
        """Positions of a call's notifications (by publisher) in batches of at most
        ``size`` whose roots (the publishers' switches) fit the slots: in order while
        every switch has a slot, else grouped by root, so each root's row is built at
        most once per call."""
        step = max(1, min(size, self.capacity))
        order = list(range(len(publishers)))
        if self.capacity < self.n_switches:
            topo, gid = self.topology, self.gid
            roots = [gid[topo.host_switch(p)] if topo.is_host(p) else -1 for p in publishers]
            order.sort(key=roots.__getitem__)
        return [order[a:a + step] for a in range(0, len(order), step)]


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


def tree_tables(topology: Topology, caches: Caches | None = None) -> TreeTables:
    """The table set of ``topology`` kept in ``caches`` (``caches.tree_tables``; a new
    one without ``caches``)."""
    if caches is None:
        return TreeTables(topology)
    return caches.tree_tables.get_or_make(Identity(topology), lambda: TreeTables(topology))
