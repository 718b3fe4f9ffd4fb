"""Delivery trees: shortest-path trees and a Steiner heuristic, both deterministic.

A :class:`Tree` is rooted at the publisher's switch and spans the switches
needed to reach a set of target hosts; host leaves are part of it. Children
are kept in port order, which is the order the label-stack encoders emit
(preorder, seed 000 §3.2).

- :func:`shortest_path_tree`: BFS from the root; a node's parent is the
  first neighbour (in port order, i.e. by name) that reached it, so ties go
  to the lowest name (seed 000 digest §7.3). Pruned to the targets.
- :func:`steiner_tree`: the shortest-path heuristic (Takahashi-Matsuyama /
  DDMC style): grow from the root, repeatedly attaching the terminal closest
  to the current tree along a shortest path; ties by name.

Both read all-pairs hop distances that are computed once per topology.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sim.dataplanes.control_state import TableEntry
from topologies.model import Topology, node_sort_key


@dataclass(frozen=True)
class Tree:
    """A rooted delivery tree over switches and host leaves.

    Attributes
    ----------
    root : str
        The publisher's switch.
    parent : mapping
        Node -> parent node (the root has none).
    children : mapping
        Node -> children in port order (hosts are leaves).
    """

    root: str
    parent: Mapping[str, str]
    children: Mapping[str, tuple[str, ...]]

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self.preorder())

    def switches(self, topology: Topology) -> tuple[str, ...]:
        return tuple(n for n in self.preorder() if not topology.is_host(n))

    def edges(self) -> tuple[tuple[str, str], ...]:
        """(parent, child) pairs in preorder."""
        return tuple((self.parent[n], n) for n in self.preorder() if n != self.root)

    def preorder(self) -> Iterable[str]:
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(self.children.get(node, ())))

    def leaves(self) -> tuple[str, ...]:
        return tuple(n for n in self.preorder() if not self.children.get(n))


def _build(root: str, parent: dict[str, str], topology: Topology) -> Tree:
    kids: dict[str, list[str]] = {}
    for child, par in parent.items():
        kids.setdefault(par, []).append(child)
    children = {}
    for n, cs in kids.items():
        ports = {c: topology.port_to(n, c) for c in cs}
        children[n] = tuple(sorted(cs, key=ports.__getitem__))
    return Tree(root=root, parent=parent, children=children)


#: parent entries the cache of :func:`bfs_parents` holds, all roots together
BFS_CACHE_ENTRIES = 1 << 20
_bfs_cache: OrderedDict[tuple[Topology, str], Mapping[str, str]] = OrderedDict()
_bfs_held = [0]  # entries in _bfs_cache


def bfs_parents(topology: Topology, root: str) -> Mapping[str, str]:
    """Shortest-path-tree parents of every switch, from ``root`` (ties: lowest name).

    Cached for the roots used last, up to :data:`BFS_CACHE_ENTRIES` parent
    entries in all (every root up to about 1,000 switches; 262 roots at 4,000): a dict
    of ``S`` entries per root. What needs every root, :func:`bfs_next_hops`,
    computes array by array.
    """
    key = (topology, root)
    got = _bfs_cache.get(key)
    if got is not None:
        _bfs_cache.move_to_end(key)
        return got
    got = _bfs_cache[key] = _bfs(topology, root)
    _bfs_held[0] += len(got) + 1
    while _bfs_held[0] > BFS_CACHE_ENTRIES and len(_bfs_cache) > 1:
        _bfs_held[0] -= len(_bfs_cache.popitem(last=False)[1]) + 1
    return got


def _bfs(topology: Topology, root: str) -> dict[str, str]:
    parent: dict[str, str] = {}
    seen = {root}
    queue = deque([root])
    neighbors = switch_neighbors(topology)
    while queue:
        node = queue.popleft()
        for nb in neighbors[node]:
            if nb in seen:
                continue
            seen.add(nb)
            parent[nb] = node
            queue.append(nb)
    return parent


@lru_cache(maxsize=8)
def switch_neighbors(topology: Topology) -> Mapping[str, tuple[str, ...]]:
    """Every switch's switch neighbours, in the order of its port map (hosts left out)."""
    return {sw: tuple(info.neighbor for info in topology.ports(sw).values()
                      if not topology.is_host(info.neighbor))
            for sw in topology.switches}


@lru_cache(maxsize=8)
def host_ports(topology: Topology) -> Mapping[str, tuple[str, int]]:
    """Every host's switch and the port of that switch towards it."""
    return {h: (sw, topology.port_to(sw, h))
            for h, sw in ((h, topology.host_switch(h)) for h in topology.hosts)}


class SwitchAdjacency:
    """The switch-to-switch links of a topology as arrays (switch indices in topology order).

    Neighbours of switch ``i`` are ``nb[start[i]:start[i + 1]]`` in port order;
    ``back[e]`` is the port of ``nb[e]`` towards ``i`` (:meth:`Topology.port_to`)
    and ``delay[e]`` that link's delay (s).
    """

    def __init__(self, topology: Topology) -> None:
        sid = {s: i for i, s in enumerate(topology.switches)}
        start, nb, back, delay = [0], [], [], []
        for sw in topology.switches:
            for info in topology.ports(sw).values():
                j = sid.get(info.neighbor)
                if j is None:
                    continue
                port = topology.port_to(info.neighbor, sw)
                nb.append(j)
                back.append(port)
                delay.append(topology.ports(info.neighbor)[port].link.delay_s)
            start.append(len(nb))
        self.start = np.asarray(start, np.int64)
        self.nb = np.asarray(nb, np.int64)
        self.back = np.asarray(back, np.int64)
        self.delay = np.asarray(delay, np.float64)


@lru_cache(maxsize=8)
def switch_adjacency(topology: Topology) -> SwitchAdjacency:
    """One :class:`SwitchAdjacency` per topology (linear in the links)."""
    return SwitchAdjacency(topology)


def bfs_next_hops(topology: Topology, root: int, impl: str = "auto"
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tree of :func:`bfs_parents` from switch index ``root``, as arrays over switches.

    Returns ``(parent, port, delay)``: the parent's switch index (-1 for the
    root and unreachable switches), the port of each switch towards its
    parent (0 there) and that link's delay (s). ``impl``: "jit" runs
    :func:`bfs_kernel` compiled by numba (one FIFO breadth-first search over
    the adjacency arrays, microseconds per thousand switches), "numpy" the
    search level by level in numpy (:func:`bfs_levels`, the fallback without
    numba or with ``STACKCAST_NO_JIT=1``), "auto" the first available. Both
    give the tree of :func:`bfs_parents` (``tests/sim/test_trees.py``).
    """
    if impl not in ("auto", "jit", "numpy"):
        raise ValueError(f"impl must be auto, jit or numpy; got {impl!r}")
    kernel = _bfs_compiled() if impl != "numpy" else None
    if kernel is None:
        if impl == "jit":
            raise ValueError("impl='jit' needs numba (pip install numba; STACKCAST_NO_JIT unset)")
        return bfs_levels(topology, root)
    adj = switch_adjacency(topology)
    n = len(adj.start) - 1
    parent = np.empty(n, np.int64)
    port = np.empty(n, np.int64)
    delay = np.empty(n, np.float64)
    kernel(root, adj.start, adj.nb, adj.back, adj.delay, parent, port, delay,
           np.empty(n, np.int64))
    return parent, port, delay


def bfs_kernel(root: int, start: np.ndarray, nb: np.ndarray, back: np.ndarray,
               link_delay: np.ndarray, parent: np.ndarray, port: np.ndarray,
               delay: np.ndarray, queue: np.ndarray) -> None:
    """Fill ``parent``, ``port`` and ``delay`` (:func:`bfs_next_hops`) from switch ``root``
    over the arrays of a :class:`SwitchAdjacency` (plain Python that numba compiles).

    The search of :func:`bfs_parents`: a FIFO queue, each node's neighbours in
    port-map order, the first to reach a node is its parent. ``queue`` is a work
    array of at least one entry per switch.
    """
    n = start.shape[0] - 1
    for i in range(n):
        parent[i] = -2  # not reached yet
        port[i] = 0
        delay[i] = 0.0
    parent[root] = -1
    queue[0] = root
    head, tail = 0, 1
    while head < tail:
        x = queue[head]
        head += 1
        for e in range(start[x], start[x + 1]):
            y = nb[e]
            if parent[y] != -2:
                continue
            parent[y] = x
            port[y] = back[e]
            delay[y] = link_delay[e]
            queue[tail] = y
            tail += 1
    for i in range(n):
        if parent[i] == -2:
            parent[i] = -1


def _bfs_compiled() -> Callable[..., None] | None:
    from sim.dataplanes.l2.fast_path_kernels import compiled

    return compiled("trees.bfs_kernel", bfs_kernel)


def bfs_levels(topology: Topology, root: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`bfs_next_hops` level by level in numpy (no compiler needed).

    A level's nodes in the order the FIFO queue of :func:`bfs_parents` takes
    them, each node's neighbours in port order, the first to reach a node is
    its parent, so the tree is the same.
    """
    adj = switch_adjacency(topology)
    n = len(adj.start) - 1
    parent = np.full(n, -1, np.int64)
    port = np.zeros(n, np.int64)
    delay = np.zeros(n, np.float64)
    seen = np.zeros(n, bool)
    seen[root] = True
    frontier = np.asarray([root], np.int64)
    counts_all = np.diff(adj.start)
    while len(frontier):
        counts = counts_all[frontier]
        total = int(counts.sum())
        if not total:
            break
        # edge ids of the frontier's neighbour lists, concatenated in order
        offsets = np.repeat(adj.start[frontier] - np.cumsum(counts) + counts, counts)
        edges = offsets + np.arange(total)
        src = np.repeat(frontier, counts)
        dst = adj.nb[edges]
        new = ~seen[dst]
        edges, src, dst = edges[new], src[new], dst[new]
        dst, first = np.unique(dst, return_index=True)  # first edge reaching each node
        order = np.argsort(first, kind="stable")
        first, dst = first[order], dst[order]
        parent[dst] = src[first]
        port[dst] = adj.back[edges[first]]
        delay[dst] = adj.delay[edges[first]]
        seen[dst] = True
        frontier = dst
    return parent, port, delay


def shortest_path_tables(topology: Topology, destinations: Sequence[tuple[str, int]],
                         entry: Callable[[int, int], TableEntry]
                         ) -> list[tuple[TableEntry, ...]]:
    """Per switch (topology order), one rule per destination towards it along BFS paths.

    ``destinations``: (home switch, port of the home switch towards the
    destination) in table order; ``entry(k, port)`` is destination ``k``'s
    rule out of ``port``. A switch other than the home uses the port towards
    its parent in the home's tree (:func:`bfs_parents`, ties to the lowest
    name; :func:`next_hop_port` for hosts). The ``S x D`` rules are
    references to one entry per (destination, port) in use, and the trees
    are computed one home at a time (:func:`bfs_next_hops`), so no dict per
    home is kept.

    Raises
    ------
    KeyError
        If a switch cannot reach a destination's home switch.
    """
    switches = topology.switches
    sid = {sw: i for i, sw in enumerate(switches)}
    d = len(destinations)
    homes = sorted({sid[home] for home, _ in destinations})
    row = {h: k for k, h in enumerate(homes)}
    ports = np.zeros((len(homes), len(switches)), np.int32)  # [home, switch] -> port
    for h in homes:
        parent, up, _ = bfs_next_hops(topology, h)
        cut = np.flatnonzero(parent < 0)
        if len(cut) > 1:
            raise KeyError(switches[int(cut[cut != h][0])])
        ports[row[h]] = up  # 0 on the home switch itself
    home_row = np.asarray([row[sid[home]] for home, _ in destinations], np.int64)
    used = [np.unique(r).tolist() for r in ports]
    # [destination, port] -> its entry; port 0 (the home switch) -> the one out of its own port
    entries = np.empty((d, int(ports.max(initial=0)) + 1), object)
    for k, (_, local) in enumerate(destinations):
        for p in used[home_row[k]]:
            entries[k, p] = entry(k, p if p else local)
    pick = np.arange(d)
    return [tuple(entries[pick, ports[home_row, i]].tolist()) for i in range(len(switches))]


def next_hop_port(topology: Topology, switch: str, host: str) -> int:
    """Port of ``switch`` on the BFS shortest path towards ``host`` (ties: lowest name).

    The next hop is the parent of ``switch`` in the shortest-path tree rooted
    at the host's switch, so all switches agree on one path per destination.
    """
    home = topology.host_switch(host)
    nxt = host if switch == home else bfs_parents(topology, home)[switch]
    return topology.port_to(switch, nxt)


def _attach_hosts(topology: Topology, parent: dict[str, str], targets: Iterable[str]) -> None:
    for h in targets:
        parent[h] = topology.host_switch(h)


def shortest_path_tree(topology: Topology, root: str, targets: Iterable[str]) -> Tree:
    """Shortest-path tree from switch ``root`` pruned to the target hosts.

    A target host attached to ``root`` itself is a direct child of the root.
    """
    full = bfs_parents(topology, root)
    parent: dict[str, str] = {}
    for h in targets:
        node = topology.host_switch(h)
        parent[h] = node
        while node != root and node not in parent:
            parent[node] = full[node]
            node = full[node]
    return _build(root, parent, topology)


def spanning_tree(topology: Topology, root: str) -> Tree:
    """Shortest-path tree from ``root`` over every switch and every host."""
    parent = dict(bfs_parents(topology, root))
    _attach_hosts(topology, parent, topology.hosts)
    return _build(root, parent, topology)


@lru_cache(maxsize=4)
def hop_distances(topology: Topology) -> tuple[dict[str, int], np.ndarray]:
    """All-pairs switch hop distances: (switch -> row index, int32 matrix; -1: unreachable).

    One breadth-first search per switch: compiled (:func:`distance_kernel`) where
    numba is installed, else :func:`distance_rows` in Python (64 MB and seconds
    at 4,000 switches compiled; minutes interpreted).
    """
    index = {s: i for i, s in enumerate(topology.switches)}
    n = len(index)
    dist = np.full((n, n), -1, dtype=np.int32)
    adj = switch_adjacency(topology)
    from sim.dataplanes.l2.fast_path_kernels import compiled

    kernel = compiled("trees.distance_kernel", distance_kernel)
    if kernel is None:
        distance_rows(topology, index, dist)
    else:
        kernel(adj.start, adj.nb, dist, np.empty(n, np.int64))
    return index, dist


def distance_kernel(start: np.ndarray, nb: np.ndarray, dist: np.ndarray,
                    queue: np.ndarray) -> None:
    """Fill ``dist[i, j]`` (all -1 on entry) with the hops from switch ``i`` to ``j``
    over the arrays of a :class:`SwitchAdjacency` (plain Python that numba compiles)."""
    n = start.shape[0] - 1
    for i in range(n):
        row = dist[i]
        row[i] = 0
        queue[0] = i
        head, tail = 0, 1
        while head < tail:
            x = queue[head]
            head += 1
            d = row[x] + 1
            for e in range(start[x], start[x + 1]):
                y = nb[e]
                if row[y] < 0:
                    row[y] = d
                    queue[tail] = y
                    tail += 1


def distance_rows(topology: Topology, index: Mapping[str, int], dist: np.ndarray) -> None:
    """:func:`distance_kernel` with dicts and deques (no compiler needed)."""
    for s, i in index.items():
        dist[i, i] = 0
        queue = deque([s])
        while queue:
            node = queue.popleft()
            d = dist[i, index[node]] + 1
            for info in topology.ports(node).values():
                j = index.get(info.neighbor)
                if j is not None and dist[i, j] < 0:
                    dist[i, j] = d
                    queue.append(info.neighbor)


def steiner_tree(topology: Topology, root: str, targets: Iterable[str]) -> Tree:
    """Shortest-path Steiner heuristic from ``root`` to the targets' switches.

    Repeatedly attaches the not-yet-covered terminal switch closest (in hops)
    to any tree switch, along a BFS shortest path from that tree switch;
    ties go to the lowest terminal name, then the earliest-added tree switch.
    """
    targets = list(targets)
    index, dist = hop_distances(topology)
    terminals = sorted({topology.host_switch(h) for h in targets} - {root}, key=node_sort_key)
    in_tree = [root]
    parent: dict[str, str] = {}
    tree_rows = [index[root]]
    remaining = list(terminals)
    while remaining:
        cols = [index[t] for t in remaining]
        sub = dist[np.ix_(tree_rows, cols)]
        best = int(sub.min())
        ti = int(np.argmin(sub.min(axis=0)))  # first (lowest-name) terminal at best distance
        anchor_i = int(np.flatnonzero(sub[:, ti] == best)[0])  # earliest-added tree switch
        anchor, term = in_tree[anchor_i], remaining[ti]
        node = term
        path_parent = bfs_parents(topology, anchor)
        chain = []
        while node != anchor and node not in parent and node != root:
            chain.append(node)
            node = path_parent[node]
        # node is now the anchor or a tree node reached earlier on the path
        for n in chain:
            parent[n] = path_parent[n]
        for n in reversed(chain):
            in_tree.append(n)
            tree_rows.append(index[n])
        remaining = [t for t in remaining if t not in parent]
    _attach_hosts(topology, parent, targets)
    return _build(root, parent, topology)
