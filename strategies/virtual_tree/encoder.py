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
on a weighted copy of the switch graph (slow; for comparison). The routines
live in :mod:`strategies.virtual_tree.steiner`.

With numba installed and ``steiner="sph"``, :func:`encode_virtual_trees` runs
the whole greedy loop compiled (:mod:`strategies.virtual_tree.encoder_kernel`
over the flat :class:`~strategies.virtual_tree.encoder_tables.TreeTables` of
the installed VTs): the same encodings, label for label (property-tested
against :func:`encode_reference`, the pure-Python definition here, which also
runs without numba or with ``STACKCAST_NO_JIT=1``).

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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from strategies.virtual_tree.encoder_kernel import encode_kernel
from strategies.virtual_tree.encoder_tables import TreeTables, encode_arrays, tree_tables
from strategies.virtual_tree.steiner import (
    EncoderGraph,
    encoder_graph,
    steiner_networkx,
    steiner_sph,
    steiner_sph_within,
)
from topologies.model import Topology

__all__ = ["CompiledTree", "EncoderGraph", "EncoderOptions", "TreeTables", "VtEncoding",
           "compile_tree", "encode_reference", "encode_virtual_trees", "encoder_graph",
           "steiner_networkx", "steiner_sph", "steiner_sph_within", "tree_tables"]

EncoderMode = Literal["sorted_single_pass", "best_improvement"]
SteinerMethod = Literal["sph", "kou", "mehlhorn"]


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
        self.receiver_edges = [e for _, e in self.receiver_links]
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
        return len(self.receiver_edges) - sum(map(virtual.__getitem__, self.receiver_edges))

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


def encode_virtual_trees(topology: Topology, trees: Sequence[CompiledTree] | TreeTables,
                         publisher: str, receivers: frozenset[str],
                         options: EncoderOptions = EncoderOptions()) -> VtEncoding:
    """Run Algorithm 5.1 for one notification.

    Compiled (:func:`~strategies.virtual_tree.encoder_tables.encode_arrays`) when
    numba is available and ``options.steiner`` is ``"sph"``, else
    :func:`encode_reference`; both give the same encoding.

    Parameters
    ----------
    topology : Topology
    trees : sequence of CompiledTree, or TreeTables
        The installed VTs (``T_virt``); their :func:`tree_tables` saves
        rebuilding the flat form per call.
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
    if encode_kernel is None or options.steiner != "sph":
        listed = trees.trees if isinstance(trees, TreeTables) else trees
        return encode_reference(topology, listed, publisher, receivers, options)
    tables = trees if isinstance(trees, TreeTables) else tree_tables(trees)
    got = encode_arrays(topology, encoder_graph(topology), tables, publisher, receivers,
                        options)
    ids, cut = got.ids.tolist(), got.n_trees + got.n_stops
    return VtEncoding(trees=tuple(ids[:got.n_trees]), stops=tuple(ids[got.n_trees:cut]),
                      hops=tuple(ids[cut:]), delivery_edges=frozenset(got.delivery.tolist()))


def encode_reference(topology: Topology, trees: Sequence[CompiledTree], publisher: str,
                     receivers: frozenset[str], options: EncoderOptions) -> VtEncoding:
    """:func:`encode_virtual_trees` in pure Python: the definition the compiled loop is
    tested against."""
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
