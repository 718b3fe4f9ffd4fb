"""The greedy virtual-tree encoder (seed 000 Algorithm 5.1) and its Steiner heuristic.

Given the installed virtual trees (VTs) and a notification's terminals (the
publisher and its receivers), the encoder picks VTs, hop edges and stop
edges such that the tree/hop/stop label program delivers exactly to the
receivers:

1. ``E+`` is a Steiner tree of the terminals with every edge at weight 1;
   its cost ``C = |E+|`` is the source-routed header.
2. For each candidate VT ``t`` (in ``sort(T_virt)`` order) the edges of the
   selected VTs plus ``t`` get weight 0 and the Steiner tree ``E_dist`` is
   recomputed; ``E+ = E_dist`` minus the virtual edges (hop labels),
   ``E- =`` VT edges outside ``E_dist`` that share an endpoint with it (stop
   labels), and ``C' = |E+| + |E-| + |T'|``; ``t`` is kept iff ``C' < C``.
3. The header is ``[tree labels] + [stop labels] + [hop labels]`` (trees in
   selection order, stops by edge id, hops grouped by switch in depth-first
   order of the delivery tree from the publisher).

Exactness: every switch on the delivery tree applies every selected VT's
label and clones on all of that VT's ports but the ingress one; every such
port outside the delivery tree is cut by a stop label (it shares an endpoint
with ``E_dist``), and stop labels follow the tree labels so every tree clone
sees them. VT switches off the delivery tree never receive the packet. So the
copies follow ``E_dist`` exactly, whose leaves are terminals: each receiver
gets one copy, nobody else gets one. This holds for any VT edge set, rings
included (``vt-cycles``).

Hosts are leaves: the switch-level Steiner tree connects the terminals'
switches and every receiver's host link is added (a hop label unless it is
an edge of a selected VT). The publisher's own host link carries the packet
into the network and is never a label.

Steiner heuristic (``steiner="sph"``, default): the shortest-path heuristic
(Takahashi-Matsuyama; the DDMC family of [103]) on the 0/1-weighted switch
graph: grow from the publisher's switch, repeatedly attaching the terminal
at the smallest 0/1 distance to the current tree along its shortest path
(ties: lowest switch index; paths: the first found by a deterministic 0-1
BFS). Distances are maintained incrementally (0-1 BFS from each newly added
path), integer-indexed, with no graph copies. ``steiner="kou"`` /
``"mehlhorn"`` call :func:`networkx.algorithms.approximation.steiner_tree`
on a weighted copy of the switch graph (slow; for comparison).

Deviations from the literal pseudo-code (digest ch. 5-7 §1.6, A1-A3):

- Line 7 (``E_dist ∩ E_phys``) is read as ``E_dist`` minus the virtual
  edges, and virtual edges weigh 0 (A1).
- ``sort(T_virt)`` is unspecified: key = overlap with the initial ``E+``
  (descending), then VT size (descending), then tree id (A2).
- ``mode="best_improvement"`` implements the prose (L2189): each round adds
  the VT with the largest gain until none improves.
- ``patience``: stop the single pass after that many consecutive
  non-improving candidates (the thesis allows an early exit).
- ``prefilter`` (off by default): only VTs sharing a switch with the
  initial delivery tree are candidates.
- ``prune_unused`` (off by default): drop selected VTs that carry no
  delivery-tree edge after the pass (their label and stops are wasted).
- A candidate whose lower bound ``|T'| + (pieces - 1) + host hops`` cannot
  beat ``C`` is skipped without a Steiner computation (pieces = VT
  components holding a terminal plus terminals outside every VT); this is
  exact and does not change the result.

References
----------
Seed 000 §5.2.4-5.2.7 (labels, Algorithm 5.1), [103] Shaikh & Shin
(destination-driven multicast); digest ch. 5-7 §1.5.4, §1.6, A1-A3, A6.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import networkx as nx

from topologies.model import Topology

EncoderMode = Literal["sorted_single_pass", "best_improvement"]
SteinerMethod = Literal["sph", "kou", "mehlhorn"]

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
    """

    names: tuple[str, ...]
    index: dict[str, int]
    adj: tuple[tuple[tuple[int, int], ...], ...]
    ends: tuple[tuple[int, int] | None, ...]
    host_link: dict[str, tuple[int, int]]
    edge_count: int


@lru_cache(maxsize=64)
def encoder_graph(topology: Topology) -> EncoderGraph:
    """The :class:`EncoderGraph` of ``topology`` (cached per topology)."""
    index = {s: i for i, s in enumerate(topology.switches)}
    edge_count = max((lk.edge_id for lk in topology.links), default=0) + 1
    ends: list[tuple[int, int] | None] = [None] * edge_count
    adj: list[list[tuple[int, int]]] = [[] for _ in index]
    host_link: dict[str, tuple[int, int]] = {}
    for sw, i in index.items():
        for info in topology.ports(sw).values():
            j = index.get(info.neighbor)
            if j is None:
                host_link[info.neighbor] = (i, info.link.edge_id)
                continue
            adj[i].append((j, info.link.edge_id))
            ends[info.link.edge_id] = (min(i, j), max(i, j))
    return EncoderGraph(names=tuple(topology.switches), index=index,
                        adj=tuple(tuple(a) for a in adj), ends=tuple(ends),
                        host_link=host_link, edge_count=edge_count)


# -- Steiner heuristics ---------------------------------------------------------


def steiner_sph(g: EncoderGraph, root: int, terminals: Iterable[int],
                virtual: bytearray | None = None,
                adj: Sequence[Sequence[tuple[int, int]]] | None = None
                ) -> tuple[list[int], list[int]]:
    """Shortest-path Steiner heuristic on the 0/1-weighted switch graph.

    Parameters
    ----------
    g : EncoderGraph
    root : int
        Switch index the tree grows from.
    terminals : iterable of int
        Switch indices to connect (the root may be among them).
    virtual : bytearray, optional
        Per edge id: 1 if the edge weighs 0 (a virtual-tree edge).
    adj : sequence, optional
        Adjacency to use instead of ``g.adj`` (e.g. an induced subgraph's);
        the terminals must be connected in it.

    Returns
    -------
    edges : list of int
        Edge ids of the tree, each path in the order it was attached
        (terminal end first).
    nodes : list of int
        Switch indices of the tree (root first).
    """
    result = steiner_sph_within(g, root, terminals, virtual, adj, None)
    assert result is not None  # no budget: always a tree
    return result


def steiner_sph_within(g: EncoderGraph, root: int, terminals: Iterable[int],
                       virtual: bytearray | None,
                       adj: Sequence[Sequence[tuple[int, int]]] | None,
                       budget: int | None) -> tuple[list[int], list[int]] | None:
    """:func:`steiner_sph` that gives up (returns None) as soon as the tree's weight
    (its number of weight-1 links) plus its certain stops reaches ``budget``.

    A weight-0 link between two tree switches that is not a tree link can never
    join the tree (paths only add new switches), so it will be a stop label.
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
        if budget is not None and weight + stops >= budget:
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
            in_tree[v] = 1
        if budget is not None and weight + stops >= budget:
            return None
        nodes.extend(path)
        remaining = [t for t in remaining if not in_tree[t]]
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


# -- compiled virtual trees -----------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledTree:
    """One installed VT in the encoder's integer form.

    Attributes
    ----------
    tree_id : int
    edges : frozenset of int
        All edge ids (switch and host links).
    switch_edges : tuple
        ``(edge id, a, b)`` of its switch links (switch indices).
    host_edges : tuple
        ``(edge id, switch index, host)`` of its host links.
    mask : int
        Bitmask of the switch indices it touches.
    """

    tree_id: int
    edges: frozenset[int]
    switch_edges: tuple[tuple[int, int, int], ...]
    host_edges: tuple[tuple[int, int, str], ...]
    mask: int


def compile_tree(topology: Topology, g: EncoderGraph, tree_id: int, edge_ids: Iterable[int]
                 ) -> CompiledTree:
    """Compile a VT given by its edge ids."""
    sw_edges = []
    host_edges = []
    mask = 0
    for e in sorted(set(edge_ids)):
        pair = g.ends[e] if 0 < e < g.edge_count else None
        if pair is not None:
            sw_edges.append((e, pair[0], pair[1]))
            mask |= (1 << pair[0]) | (1 << pair[1])
            continue
        link = topology.links[e - 1]
        host, sw = (link.a, link.b) if topology.is_host(link.a) else (link.b, link.a)
        i = g.index[sw]
        host_edges.append((e, i, host))
        mask |= 1 << i
    return CompiledTree(tree_id, frozenset(edge_ids), tuple(sw_edges), tuple(host_edges), mask)


# -- the encoder ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EncoderOptions:
    """How Algorithm 5.1 runs (see the module docstring)."""

    mode: EncoderMode = "sorted_single_pass"
    patience: int | None = None
    steiner: SteinerMethod = "sph"
    prefilter: bool = False
    prune_unused: bool = False


@dataclass(frozen=True, slots=True)
class VtEncoding:
    """The encoder's result: selected tree ids, stop and hop edge ids, delivery edges."""

    trees: tuple[int, ...]
    stops: tuple[int, ...]
    hops: tuple[int, ...]
    delivery_edges: frozenset[int]

    @property
    def entries(self) -> int:
        return len(self.trees) + len(self.stops) + len(self.hops)


@dataclass(slots=True)
class _Eval:
    cost: int
    edges: list[int]
    nodes: list[int]
    stops: set[int]


class _Problem:
    """One notification: terminals, host links and the Steiner routine."""

    def __init__(self, topology: Topology, g: EncoderGraph, publisher: str,
                 receivers: frozenset[str], options: EncoderOptions) -> None:
        self.g = g
        self.root = g.host_link[publisher][0]
        hosts = sorted(receivers, key=topology.host_id)
        self.terminal_hosts = frozenset(hosts) | {publisher}
        self.receiver_links = [g.host_link[h] for h in hosts]
        self.terms = sorted({s for s, _ in self.receiver_links} | {self.root})
        self.term_mask = 0
        for t in self.terms:
            self.term_mask |= 1 << t
        self.options = options

    def steiner(self, virtual: bytearray, budget: int | None = None
                ) -> tuple[list[int], list[int]] | None:
        if self.options.steiner == "sph":
            return steiner_sph_within(self.g, self.root, self.terms, virtual, None, budget)
        return steiner_networkx(self.g, self.root, self.terms, virtual, self.options.steiner)

    def host_hops(self, virtual: bytearray) -> int:
        return sum(1 for _, e in self.receiver_links if not virtual[e])

    def evaluate(self, trees: Sequence[CompiledTree], virtual: bytearray,
                 bound: int | None = None) -> _Eval | None:
        """Cost and tree with ``trees`` selected; None if it cannot be below ``bound``."""
        host = self.host_hops(virtual)
        budget = None if bound is None else bound - host - len(trees)
        if budget is not None and budget <= 0:
            return None
        found = self.steiner(virtual, budget)
        if found is None:
            return None
        edges, nodes = found
        cost = sum(1 for e in edges if not virtual[e]) + host + len(trees)
        if bound is not None and cost >= bound:
            return None
        stops = self.stops(trees, edges, nodes)
        return _Eval(cost + len(stops), edges, nodes, stops)

    def stops(self, trees: Sequence[CompiledTree], edges: list[int], nodes: list[int]
              ) -> set[int]:
        in_dt = bytearray(len(self.g.names))
        for v in nodes:
            in_dt[v] = 1
        dt = set(edges)
        out: set[int] = set()
        terminal_hosts = self.terminal_hosts
        for t in trees:
            for e, a, b in t.switch_edges:
                if (in_dt[a] or in_dt[b]) and e not in dt:
                    out.add(e)
            for e, s, h in t.host_edges:
                if in_dt[s] and h not in terminal_hosts:
                    out.add(e)
        return out

    def lower_bound(self, components: list[int], extra: CompiledTree, n_trees: int,
                    virtual: bytearray) -> int:
        """``|T'| + (pieces - 1) + host hops``: no Steiner tree can cost less."""
        merged = extra.mask
        rest = []
        for c in components:
            if c & merged:
                merged |= c
            else:
                rest.append(c)
        rest.append(merged)
        union = 0
        pieces = 0
        for c in rest:
            union |= c
            if c & self.term_mask:
                pieces += 1
        pieces += (self.term_mask & ~union).bit_count()
        return n_trees + max(0, pieces - 1) + self.host_hops(virtual)


def _merge_component(components: list[int], mask: int) -> list[int]:
    out = []
    for c in components:
        if c & mask:
            mask |= c
        else:
            out.append(c)
    out.append(mask)
    return out


def encode_virtual_trees(topology: Topology, trees: Sequence[CompiledTree], publisher: str,
                         receivers: frozenset[str], options: EncoderOptions = EncoderOptions()
                         ) -> VtEncoding:
    """Run Algorithm 5.1 for one notification.

    Parameters
    ----------
    topology : Topology
    trees : sequence of CompiledTree
        The installed VTs (``T_virt``).
    publisher : str
        Publishing host.
    receivers : frozenset of str
        Receiving hosts (never the publisher).
    options : EncoderOptions

    Returns
    -------
    VtEncoding
        Tree ids in selection order, stop edge ids (ascending), hop edge ids
        grouped by switch in depth-first order of the delivery tree.
    """
    g = encoder_graph(topology)
    prob = _Problem(topology, g, publisher, receivers, options)
    empty = bytearray(g.edge_count)
    best = prob.evaluate((), empty)
    assert best is not None
    initial = set(best.edges) | {e for _, e in prob.receiver_links}
    dt_mask = 0
    for v in best.nodes:
        dt_mask |= 1 << v
    cands = [t for t in trees
             if not options.prefilter or t.mask & (dt_mask | prob.term_mask)]
    cands.sort(key=lambda t: (-len(t.edges & initial), -len(t.edges), t.tree_id))
    chosen: list[CompiledTree] = []
    virtual = empty
    components: list[int] = []
    if options.mode == "best_improvement":
        best, chosen, virtual = _best_improvement(prob, cands, best)
    else:
        idle = 0
        for t in cands:
            if options.patience is not None and idle >= options.patience:
                break
            trial = bytearray(virtual)
            for e in t.edges:
                trial[e] = 1
            if prob.lower_bound(components, t, len(chosen) + 1, trial) >= best.cost:
                idle += 1
                continue
            ev = prob.evaluate([*chosen, t], trial, best.cost)
            if ev is not None and ev.cost < best.cost:
                best, virtual = ev, trial
                chosen.append(t)
                components = _merge_component(components, t.mask)
                idle = 0
            else:
                idle += 1
    if options.prune_unused and chosen:
        used = set(best.edges) | {e for _, e in prob.receiver_links}
        chosen = [t for t in chosen if t.edges & used]
        best = _Eval(best.cost, best.edges, best.nodes, prob.stops(chosen, best.edges, best.nodes))
        virtual = bytearray(g.edge_count)
        for t in chosen:
            for e in t.edges:
                virtual[e] = 1
    hops = _preorder_hops(g, prob, best.edges, virtual)
    return VtEncoding(trees=tuple(t.tree_id for t in chosen), stops=tuple(sorted(best.stops)),
                      hops=tuple(hops),
                      delivery_edges=frozenset(best.edges) | {e for _, e in prob.receiver_links})


def _best_improvement(prob: _Problem, cands: list[CompiledTree], best: _Eval
                      ) -> tuple[_Eval, list[CompiledTree], bytearray]:
    chosen: list[CompiledTree] = []
    virtual = bytearray(prob.g.edge_count)
    components: list[int] = []
    pool = list(cands)
    while pool:
        round_best: tuple[_Eval, int, bytearray] | None = None
        for i, t in enumerate(pool):
            trial = bytearray(virtual)
            for e in t.edges:
                trial[e] = 1
            bound = round_best[0].cost if round_best else best.cost
            if prob.lower_bound(components, t, len(chosen) + 1, trial) >= bound:
                continue
            ev = prob.evaluate([*chosen, t], trial, bound)
            if ev is not None and ev.cost < bound:
                round_best = (ev, i, trial)
        if round_best is None:
            break
        best, i, virtual = round_best
        t = pool.pop(i)
        chosen.append(t)
        components = _merge_component(components, t.mask)
    return best, chosen, virtual


def _preorder_hops(g: EncoderGraph, prob: _Problem, edges: list[int], virtual: bytearray
                   ) -> list[int]:
    """Physical (non-virtual) delivery edges, grouped by switch (its host links, then its
    child links) in depth-first order from the root."""
    nbrs: dict[int, list[tuple[int, int]]] = {}
    for e in edges:
        a, b = g.ends[e]  # type: ignore[misc]
        nbrs.setdefault(a, []).append((b, e))
        nbrs.setdefault(b, []).append((a, e))
    host_at: dict[int, list[int]] = {}
    for s, e in prob.receiver_links:
        host_at.setdefault(s, []).append(e)
    out: list[int] = []
    stack = [(prob.root, -1)]
    while stack:
        v, parent = stack.pop()
        for e in host_at.get(v, ()):
            if not virtual[e]:
                out.append(e)
        kids = sorted((w, e) for w, e in nbrs.get(v, ()) if w != parent)
        for w, _e in reversed(kids):
            stack.append((w, v))
        for _w, e in kids:
            if not virtual[e]:
                out.append(e)
    return out
