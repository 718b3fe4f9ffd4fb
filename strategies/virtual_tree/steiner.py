"""Steiner heuristics of the virtual-tree encoder on the 0/1-weighted switch graph.

:func:`steiner_sph` is the shortest-path heuristic (Takahashi-Matsuyama; the
DDMC family of [103]) that :mod:`strategies.virtual_tree.encoder` documents: grow from
the publisher's switch, repeatedly attach the terminal at the smallest 0/1
distance to the current tree along its shortest path (ties: lowest switch
index; paths: the first found by a deterministic 0-1 BFS), distances kept
incrementally by a 0-1 BFS from each newly added path.

:func:`steiner_sph_counted` runs the very same loop (interleaved 0-1 BFS
in port order, same tie-breaking, same budget test) as a compiled kernel
(:mod:`strategies.virtual_tree.steiner_jit`, numba when installed, else the
pure-Python routine); a property test checks that both give the same tree,
edge for edge, or both give up.

References
----------
Seed 000 §5.2.7 (Algorithm 5.1, Steiner tree ``E_dist``), [103] Shaikh &
Shin (destination-driven multicast); digest ch. 5-7 §1.6, A1.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

import networkx as nx
import numpy as np

from strategies.virtual_tree.encoder_kernel import GRAPH_PARTS, pack
from strategies.virtual_tree.steiner_jit import sph_kernel
from topologies.model import Topology

_INF = 1 << 30


@dataclass(frozen=True, eq=False)
class EncoderGraph:
    """Integer-indexed view of a topology for the encoder (built once per topology).

    Attributes
    ----------
    names : tuple of str
        Switch names by index (the topology's switch order).
    index : dict
        Switch name -> index.
    adj : tuple
        Per switch: ``(neighbour index, edge id)`` of its switch links, in port order.
    ends : tuple
        Edge id -> ``(a, b)`` switch indices, or ``None`` for host links and
        index 0.
    host_link : dict
        Host -> ``(switch index, edge id)``.
    edge_count : int
        Largest edge id + 1 (the length of per-edge flag arrays).
    indptr, nbr, eid : numpy.ndarray
        ``adj`` in compressed form (switch ``i``'s links are
        ``nbr[indptr[i]:indptr[i + 1]]`` / ``eid[...]``), for the compiled routine.
    host_indptr, host_eid : numpy.ndarray
        Host links per switch in the same form.
    host_edges : dict
        Host -> edge ids of all its links.
    end_a, end_b : numpy.ndarray
        Edge id -> its switch indices (``ends``), -1 for host links.
    link_switch : numpy.ndarray
        Edge id -> the switch of a host link, -1 for switch links.
    host_index : dict
        Host -> host id (its index in the topology's hosts).
    host_switch, host_edge : numpy.ndarray
        Host id -> ``host_link``.
    host_link_ptr, host_link_eid : numpy.ndarray
        Host id -> edge ids of all its links (``host_edges``, compressed).
    edge_ports : tuple
        Edge id -> ``(switch, port)`` of each of its switch ends (a, then b).
    packed : (numpy.ndarray, numpy.ndarray)
        The arrays above in the order of
        :data:`strategies.virtual_tree.encoder_kernel.GRAPH_PARTS`, packed into one
        (:func:`~strategies.virtual_tree.encoder_kernel.pack`).
    """

    names: tuple[str, ...]
    index: dict[str, int]
    adj: tuple[tuple[tuple[int, int], ...], ...]
    ends: tuple[tuple[int, int] | None, ...]
    host_link: dict[str, tuple[int, int]]
    edge_count: int
    indptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    nbr: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    eid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    host_indptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    host_eid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    host_edges: dict[str, tuple[int, ...]] = field(default_factory=dict)
    end_a: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    end_b: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    link_switch: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    host_index: dict[str, int] = field(default_factory=dict)
    host_switch: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    host_edge: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    host_link_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    host_link_eid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    edge_ports: tuple[tuple[tuple[str, int], ...], ...] = ()
    packed: tuple[np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.zeros(0, np.int64), np.zeros(1, np.int64)))

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(indptr, nbr, eid, host_indptr, host_eid)``: the graph of the compiled routines."""
        return self.indptr, self.nbr, self.eid, self.host_indptr, self.host_eid


@lru_cache(maxsize=64)
def encoder_graph(topology: Topology) -> EncoderGraph:
    """The :class:`EncoderGraph` of ``topology`` (cached per topology)."""
    index = {s: i for i, s in enumerate(topology.switches)}
    edge_count = max((lk.edge_id for lk in topology.links), default=0) + 1
    ends: list[tuple[int, int] | None] = [None] * edge_count
    adj: list[list[tuple[int, int]]] = [[] for _ in index]
    host_link: dict[str, tuple[int, int]] = {}
    host_adj: list[list[int]] = [[] for _ in index]
    host_edges: dict[str, list[int]] = {}
    for sw, i in index.items():
        for info in topology.ports(sw).values():
            j = index.get(info.neighbor)
            if j is None:
                host_link[info.neighbor] = (i, info.link.edge_id)
                host_adj[i].append(info.link.edge_id)
                host_edges.setdefault(info.neighbor, []).append(info.link.edge_id)
                continue
            adj[i].append((j, info.link.edge_id))
            ends[info.link.edge_id] = (min(i, j), max(i, j))
    indptr = np.zeros(len(adj) + 1, np.int64)
    indptr[1:] = np.cumsum([len(row) for row in adj])
    flat = [pair for row in adj for pair in row]
    host_indptr = np.zeros(len(adj) + 1, np.int64)
    host_indptr[1:] = np.cumsum([len(row) for row in host_adj])
    end_a = np.full(edge_count, -1, np.int64)
    end_b = np.full(edge_count, -1, np.int64)
    for e, pair in enumerate(ends):
        if pair is not None:
            end_a[e], end_b[e] = pair
    link_switch = np.full(edge_count, -1, np.int64)
    for i, row in enumerate(host_adj):
        link_switch[row] = i
    hosts = [host_link.get(h, (-1, -1)) for h in topology.hosts]
    per_host = [host_edges.get(h, []) for h in topology.hosts]
    host_link_ptr = np.zeros(len(per_host) + 1, np.int64)
    host_link_ptr[1:] = np.cumsum([len(es) for es in per_host])
    edge_ports: list[tuple[tuple[str, int], ...]] = [()] * edge_count
    for lk in topology.links:
        edge_ports[lk.edge_id] = tuple((node, port) for node, port in
                                       ((lk.a, lk.a_port), (lk.b, lk.b_port))
                                       if not topology.is_host(node))
    g = EncoderGraph(names=tuple(topology.switches), index=index,
                 adj=tuple(tuple(a) for a in adj), ends=tuple(ends),
                 host_link=host_link, edge_count=edge_count, indptr=indptr,
                 nbr=np.array([j for j, _ in flat], np.int64),
                 eid=np.array([e for _, e in flat], np.int64),
                 host_indptr=host_indptr,
                 host_eid=np.array([e for row in host_adj for e in row], np.int64),
                 host_edges={h: tuple(es) for h, es in host_edges.items()},
                 end_a=end_a, end_b=end_b, link_switch=link_switch,
                 host_index={h: i for i, h in enumerate(topology.hosts)},
                 host_switch=np.array([s for s, _ in hosts], np.int64),
                 host_edge=np.array([e for _, e in hosts], np.int64),
                 host_link_ptr=host_link_ptr,
                 host_link_eid=np.array([e for es in per_host for e in es], np.int64),
                 edge_ports=tuple(edge_ports))
    return replace(g, packed=pack([getattr(g, name) for name in GRAPH_PARTS]))


# -- Steiner heuristics ---------------------------------------------------------


def steiner_sph(g: EncoderGraph, root: int, terminals: Iterable[int],
                virtual: bytearray | None = None, within: np.ndarray | None = None,
                induced: tuple[np.ndarray, ...] | None = None
                ) -> tuple[list[int], list[int]]:
    """Shortest-path Steiner heuristic on the 0/1-weighted switch graph.

    Compiled (:func:`steiner_sph_counted`) when numba is available, else
    :func:`steiner_sph_within`: the same tree either way.

    Parameters
    ----------
    g : EncoderGraph
    root : int
        Switch index the tree grows from.
    terminals : iterable of int
        Switch indices to connect (the root may be among them).
    virtual : bytearray, optional
        Per edge id: 1 if the edge weighs 0 (a virtual-tree edge).
    within : numpy.ndarray of bool, optional
        Per switch: whether the tree may use it (the subgraph it induces);
        default: every switch. The terminals must be connected in it.
    induced : tuple of numpy.ndarray, optional
        :func:`induced_arrays` of ``within``, when the caller keeps it for many
        calls on one subgraph (the same tree; computed here otherwise).

    Returns
    -------
    edges : list of int
        Edge ids of the tree, each path in the order it was attached
        (terminal end first).
    nodes : list of int
        Switch indices of the tree (root first).

    Raises
    ------
    ValueError
        If a terminal is not connected to the root.
    """
    if sph_kernel is None:
        adj = None if within is None else induced_adjacency(g, within)
        result = steiner_sph_within(g, root, terminals, virtual, adj, None)
        assert result is not None  # no budget: always a tree
        return result
    remaining = np.array(sorted(set(terminals) - {root}), np.int64)
    virt = virtual if virtual is not None else bytearray(g.edge_count)
    counted = steiner_sph_counted(g, root, remaining, virt, np.zeros(g.edge_count, np.uint8),
                                  None, arrays=None if within is None else
                                  induced if induced is not None else
                                  induced_arrays(g, within))
    assert counted is not None  # no budget: always a tree
    return counted[0].tolist(), counted[1].tolist()


def induced_adjacency(g: EncoderGraph, within: np.ndarray
                      ) -> list[tuple[tuple[int, int], ...]]:
    """``g.adj`` restricted to the switches of ``within`` (port order kept)."""
    return [tuple((v, e) for v, e in nb if within[v]) if within[u] else ()
            for u, nb in enumerate(g.adj)]


def induced_arrays(g: EncoderGraph, within: np.ndarray) -> tuple[np.ndarray, ...]:
    """:attr:`EncoderGraph.arrays` of the subgraph :func:`induced_adjacency` gives."""
    rows = np.repeat(np.arange(len(g.names)), np.diff(g.indptr))
    keep = within[rows] & within[g.nbr]
    indptr = np.zeros(len(g.names) + 1, np.int64)
    indptr[1:] = np.cumsum(np.bincount(rows[keep], minlength=len(g.names)))
    return indptr, g.nbr[keep], g.eid[keep], g.host_indptr, g.host_eid


def steiner_sph_within(g: EncoderGraph, root: int, terminals: Iterable[int],
                       virtual: bytearray | None,
                       adj: Sequence[Sequence[tuple[int, int]]] | None,
                       budget: int | None) -> tuple[list[int], list[int]] | None:
    """:func:`steiner_sph` that gives up (returns None) as soon as the tree's weight
    (its number of weight-1 links) plus its certain stops reaches ``budget``.

    Certain stops, at any point of the growth:

    - a weight-0 link between two tree switches that is not a tree link can
      never join the tree (paths only add new switches), so it will be a stop
      label;
    - of the ``H`` weight-0 links between a tree switch and an outside one,
      only attachment links of later paths can join the tree: each later path
      has one (its other links have both ends new) and adds a terminal not in
      the tree yet, and an outside switch joins on one path, by one link to
      the tree; so at most ``min(left, D)`` of them join (``left`` terminals
      not in the tree, ``D`` distinct outside ends) and ``H - min(left, D)``
      are stops. (Every one of those links ends on the finished tree, so the
      ones that do not join are stop labels.)
    """
    n = len(g.names)
    virt = virtual if virtual is not None else bytearray(g.edge_count)
    dist = [_INF] * n
    pred = [-1] * n
    pedge = [-1] * n
    in_tree = bytearray(n)
    if adj is None:
        adj = g.adj
    remaining = sorted(set(terminals) - {root})
    edges: list[int] = []
    nodes = [root]
    weight = stops = 0
    in_tree[root] = 1
    sources = [root]
    # weight-0 links from the tree to each outside switch; their count and ends
    hang = [0] * n
    hanging = ends = 0
    for w, e in adj[root]:
        if virt[e] and w != root:
            hang[w] += 1
            hanging += 1
            ends += hang[w] == 1
    while True:
        # 0-1 BFS from the newly added tree nodes (distances only decrease)
        dq = deque(sources)
        for s in sources:
            dist[s] = 0
        pop, left, right = dq.popleft, dq.appendleft, dq.append
        while dq:
            u = pop()
            du = dist[u]
            du1 = du + 1
            for v, e in adj[u]:
                if virt[e]:
                    if du < dist[v]:
                        dist[v] = du
                        pred[v] = u
                        pedge[v] = e
                        left(v)
                elif du1 < dist[v]:
                    dist[v] = du1
                    pred[v] = u
                    pedge[v] = e
                    right(v)
        if not remaining:
            return edges, nodes
        best = remaining[0]
        bd = dist[best]
        for t in remaining:
            if dist[t] < bd:
                best, bd = t, dist[t]
        if bd >= _INF:
            raise ValueError(f"switch {g.names[best]} is not connected to the tree")
        weight += bd
        if budget is not None and (weight + stops + hanging - min(len(remaining), ends)
                                   >= budget):
            return None
        path = []
        v = best
        while not in_tree[v]:
            path.append(v)
            edges.append(pedge[v])
            v = pred[v]
        path.reverse()
        for v in path:
            ev = pedge[v]
            for w, e in adj[v]:
                if virt[e] and in_tree[w] and e != ev and e != pedge[w]:
                    stops += 1
            hanging -= hang[v]
            ends -= hang[v] > 0
            hang[v] = 0
            for w, e in adj[v]:
                if virt[e] and not in_tree[w] and w != v:
                    hang[w] += 1
                    hanging += 1
                    ends += hang[w] == 1
            in_tree[v] = 1
        remaining = [t for t in remaining if not in_tree[t]]
        if budget is not None and (weight + stops + hanging - min(len(remaining), ends)
                                   >= budget):
            return None
        nodes.extend(path)
        sources = path[::-1]  # terminal end first



def steiner_networkx(g: EncoderGraph, root: int, terminals: Iterable[int],
                     virtual: bytearray | None, method: str) -> tuple[list[int], list[int]]:
    """Kou / Mehlhorn Steiner tree from networkx on a 0/1-weighted copy of the graph."""
    virt = virtual if virtual is not None else bytearray(g.edge_count)
    terms = sorted(set(terminals) | {root})
    if len(terms) == 1:
        return [], [root]
    graph = nx.Graph()
    graph.add_nodes_from(range(len(g.names)))
    for e, pair in enumerate(g.ends):
        if pair is not None:
            graph.add_edge(pair[0], pair[1], weight=0 if virt[e] else 1, eid=e)
    tree = nx.algorithms.approximation.steiner_tree(graph, terms, weight="weight", method=method)
    # post-prune non-terminal leaves (the approximation may leave some)
    keep = set(terms)
    tree = nx.Graph(tree)
    leaves = [v for v in tree if tree.degree(v) <= 1 and v not in keep]
    while leaves:
        tree.remove_nodes_from(leaves)
        leaves = [v for v in tree if tree.degree(v) <= 1 and v not in keep]
    edges = sorted(graph.edges[u, v]["eid"] for u, v in tree.edges())
    nodes = [root] + sorted(set(tree.nodes) - {root})
    return edges, nodes


def compiled_available() -> bool:
    """Whether :func:`steiner_sph_counted` runs compiled (numba installed and enabled)."""
    return sph_kernel is not None


def steiner_sph_counted(g: EncoderGraph, root: int, remaining: np.ndarray,
                        virtual: bytearray, terminal_link: np.ndarray, budget: int | None,
                        out: tuple[np.ndarray, np.ndarray] | None = None,
                        arrays: tuple[np.ndarray, ...] | None = None
                        ) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """``steiner_sph_within(g, root, remaining, virtual, None, budget)`` (compiled),
    with the tree's weight and its stop-label count.

    Parameters
    ----------
    remaining : numpy.ndarray of int64
        The terminals other than ``root``, ascending, distinct.
    terminal_link : numpy.ndarray of uint8
        Per edge id: 1 for a host link of a terminal host (never a stop).
    budget : int, optional
        >= 0, or None.
    out : (numpy.ndarray, numpy.ndarray), optional
        Two int64 buffers at least as long as the number of switches, reused
        for the result (saves allocations over many calls).
    arrays : tuple of numpy.ndarray, optional
        The graph to use instead of ``g.arrays`` (:func:`induced_arrays`).

    Returns
    -------
    (edges, nodes, weight, stops) or None
        As :func:`steiner_sph_within` (as int64 arrays, views of ``out``
        when given), plus the number of weight-1 tree links
        and of stop labels (virtual links with an end on the tree that are
        not tree links, and virtual host links at tree switches to
        non-terminal hosts). None if the budget was reached.
    """
    if sph_kernel is None:
        raise RuntimeError("the compiled Steiner routine needs numba (pip install numba)")
    if out is None:
        out = (np.empty(len(g.names), np.int64), np.empty(len(g.names), np.int64))
    edges, nodes = out
    status, n_edges, n_nodes, weight, stops = sph_kernel(
        g.arrays if arrays is None else arrays, np.frombuffer(virtual, np.uint8),
        terminal_link, root, remaining,
        -1 if budget is None else budget, edges, nodes)
    if status == 1:
        return None
    if status == 3:
        raise RuntimeError("compiled Steiner routine: deque bound exceeded (a bug)")
    if status == 2:
        raise ValueError(f"switch {g.names[int(edges[0])]} is not connected to the tree")
    return edges[:n_edges], nodes[:n_nodes], weight, stops
