"""Virtual-tree strategies for arbitrary topologies from the topology alone (seed 000 §6.2-6.3).

Every VT is a set of switch links; ``host_links="include"`` adds the host
links of its terminal switches (the nodes it was built for), ``"exclude"``
(default, digest A4: a ch. 6 vertex is a switch with one host) leaves them
out, so every receiver's host link is one hop label for every strategy
alike. Steiner trees are the encoder's shortest-path heuristic
(:func:`strategies.virtual_tree.installation.steiner_links`).

``vt-broadcast`` (§6.2.1)
    One spanning tree, BFS from the highest-degree switch (ties: lowest
    index; A26), one rule per switch.
``vt-random`` (§6.2.2)
    Repeat: k ~ U{``terminals_min`` .. ``terminals_max``} random switches,
    their Steiner tree; install it while every switch has room. The thesis
    stops at the first VT that does not fit (``on_full="stop"``, default);
    ``skip`` tries again until ``max_failures`` consecutive misses.
``vt-random-variant`` (§6.2.2, Fig. 6.4)
    Rounds of nested halving of one random permutation of the switches:
    level 0 is a Steiner tree over all switches, level j splits the
    permutation into 2^j chunks, one VT each, while chunks hold at least 2
    switches and VTs at least ``min_edges`` links; new permutations round
    after round (``max_rounds``) until memory is full.
``vt-cycles`` (§6.3.1)
    One ring VT per cycle of a minimum cycle basis (Horton's candidates,
    greedy independence over GF(2): deterministic;
    :mod:`strategies.virtual_tree.cycle_basis`), then unions of 2, 3, ...
    basis cycles whose union is connected (up to ``max_combination``), while
    memory lasts. ``ring=false`` drops each ring's highest-id link (the
    digest's ``cycle_vt_as_path``). Rings are fine for the encoder: stops cut
    every VT link next to the delivery tree.
``vt-partitions`` (§6.3.2)
    Greedy-modularity communities (Clauset-Newman-Moore, networkx), hub =
    highest degree (ties: lowest index). Backbone VTs first: Steiner trees
    over all hubs, then hub subsets by decreasing size (``backbone_max``);
    then partition-internal VTs: Steiner trees inside the partition over the
    hub and the whole partition, its halves, quarters, ... (chunks of the
    members in DFS preorder of the partition's BFS tree from the hub, so a
    chunk is a region), round-robin across partitions.

Deviations (where the thesis is silent, digest §3.1-3.4, A9-A13, A26): the
spanning tree, the distributions of the random strategies, the cycle basis
and combination order, the subsets and their order in partitions.

References
----------
Seed 000 §6.2.1-6.3.2 (Figs. 6.1-6.6), [31] Clauset, Newman, Moore 2004;
digest ch. 5-7 §3.1-3.4.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx
import numpy as np

from sim.dataplanes.seeds import child_rng
from sim.dataplanes.trees import bfs_parents
from strategies.base import Knowledge, register_strategy
from strategies.virtual_tree.cycle_basis import cycle_basis_fast
from strategies.virtual_tree.encoder import encoder_graph, steiner_sph
from strategies.virtual_tree.installation import (
    Candidate,
    VirtualTreeStrategy,
    VtParams,
    host_links,
    link_ends,
    steiner_links,
    switch_edges,
    validate_vt_params,
)
from strategies.virtual_tree.steiner import induced_arrays
from topologies.model import Topology
from topologies.registry import check

HostLinks = Literal["exclude", "include"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ArbitraryParams(VtParams):
    """:class:`VtParams` plus

    Parameters
    ----------
    host_links : {"exclude", "include"}
        Whether VTs contain the host links of their terminal switches.
    """

    host_links: HostLinks = "exclude"

    def __post_init__(self) -> None:
        validate_arbitrary(self)


def validate_arbitrary(p: ArbitraryParams) -> None:
    validate_vt_params(p)
    check(p.host_links in ("exclude", "include"),
          f"host_links must be exclude or include; got {p.host_links!r}")


def make_candidate(topology: Topology, terminals: Iterable[str], edges: frozenset[int],
                   mode: HostLinks, name: str, group: str = "") -> Candidate:
    """A candidate of ``edges``, plus the terminals' host links in ``include`` mode."""
    if mode == "include":
        edges = edges | host_links(topology, terminals)
    return Candidate(edges, name, group)


def steiner_candidate(topology: Topology, terminals: Sequence[str], mode: HostLinks,
                      name: str, group: str = "") -> Candidate:
    return make_candidate(topology, terminals, steiner_links(topology, terminals), mode, name,
                          group)


def max_degree_switch(topology: Topology, nodes: Iterable[str] | None = None) -> str:
    """Highest switch-graph degree, ties to the lowest index."""
    sg = topology.switch_graph
    pool = topology.switches if nodes is None else tuple(nodes)
    return min(pool, key=lambda s: (-sg.degree(s), topology.switch_id(s)))


#: A subgraph for :func:`induced_steiner`: its switch flags and its arrays.
Region = tuple[np.ndarray, tuple[np.ndarray, ...]]


def induced_steiner(topology: Topology, terminals: Sequence[str], within: Iterable[str],
                    region: Region | None = None) -> frozenset[int]:
    """Steiner tree over ``terminals`` inside the subgraph induced by ``within``;
    the whole graph if they are not connected there.

    ``region``: :func:`region_of` ``within``, when the caller asks for many trees
    inside one subgraph (a region's chunks in :func:`hub_region_candidates`): the
    same trees, the subgraph laid out once.
    """
    g = encoder_graph(topology)
    keep, induced = region if region is not None else region_of(topology, within)
    idx = sorted({g.index[t] for t in terminals})
    if len(idx) < 2:
        return frozenset()
    try:
        edges, _ = steiner_sph(g, idx[0], idx, within=keep, induced=induced)
    except ValueError:
        return steiner_links(topology, terminals)
    return frozenset(edges)


def region_of(topology: Topology, within: Iterable[str]) -> Region:
    """The switches ``within`` as :func:`induced_steiner` reads them: a flag per switch
    and the induced subgraph's arrays (:func:`~strategies.virtual_tree.steiner.induced_arrays`)."""
    g = encoder_graph(topology)
    keep = np.zeros(len(g.names), np.bool_)
    for s in within:
        keep[g.index[s]] = True
    return keep, induced_arrays(g, keep)


def halving_chunks(items: Sequence[str], min_size: int = 1) -> Iterator[list[tuple[str, ...]]]:
    """The whole sequence, then its halves, quarters, ... (chunks of >= ``min_size``)."""
    parts = 1
    while len(items) / parts >= min_size and parts <= max(1, len(items)):
        bounds = [round(i * len(items) / parts) for i in range(parts + 1)]
        yield [tuple(items[bounds[i]:bounds[i + 1]]) for i in range(parts)]
        parts *= 2


def dfs_order(topology: Topology, root: str, within: Iterable[str]) -> list[str]:
    """Preorder of the BFS tree from ``root`` inside ``within`` (children in port order)."""
    keep = set(within)
    parent = {root: ""}
    queue = deque([root])
    kids: dict[str, list[str]] = {}
    while queue:
        u = queue.popleft()
        for p in topology.ports(u).values():
            v = p.neighbor
            if v in keep and v not in parent:
                parent[v] = u
                kids.setdefault(u, []).append(v)
                queue.append(v)
    out: list[str] = []
    stack = [root]
    while stack:
        u = stack.pop()
        out.append(u)
        stack.extend(reversed(kids.get(u, ())))
    rest = sorted(keep - set(out), key=topology.switch_id)  # unreachable inside: append
    return out + rest


def round_robin(streams: Sequence[Iterable[Candidate]]) -> Iterator[Candidate]:
    """One candidate from each stream in turn until all are exhausted."""
    its = [iter(s) for s in streams]
    while its:
        alive = []
        for it in its:
            item = next(it, None)
            if item is not None:
                yield item
                alive.append(it)
        its = alive


def hub_region_candidates(topology: Topology, regions: Sequence[Sequence[str]], mode: HostLinks,
                          backbone_max: int, prefix: str, group: str = ""
                          ) -> Iterator[Candidate]:
    """Backbone VTs over the region hubs, then region-internal VTs (partitions, clusters)."""
    regions = [sorted(r, key=topology.switch_id) for r in regions if len(r) >= 1]
    hubs = [max_degree_switch(topology, r) for r in regions]
    if len(hubs) >= 2:
        order = dfs_order(topology, max_degree_switch(topology, hubs), topology.switches)
        ranked = sorted(hubs, key=order.index)
        count = 0
        for size in range(len(ranked), 1, -1):
            for combo in itertools.combinations(ranked, size):
                if count >= backbone_max:
                    break
                count += 1
                yield steiner_candidate(topology, combo, mode, f"{prefix}:backbone:"
                                        + ",".join(combo), group)

    def internal(hub: str, members: Sequence[str]) -> Iterator[Candidate]:
        others = [s for s in dfs_order(topology, hub, members) if s != hub]
        region = region_of(topology, members)  # one subgraph for every chunk
        for level, chunks in enumerate(halving_chunks(others, 1)):
            for i, chunk in enumerate(chunks):
                terms = (hub, *chunk)
                edges = induced_steiner(topology, terms, members, region)
                yield make_candidate(topology, terms, edges, mode,
                                     f"{prefix}:{hub}:L{level}.{i}", group)

    yield from round_robin([internal(h, r) for h, r in zip(hubs, regions, strict=True)
                            if len(r) >= 2])


# -- broadcast ----------------------------------------------------------------


@register_strategy
class Broadcast(VirtualTreeStrategy):
    """One BFS spanning tree from the highest-degree switch (§6.2.1)."""

    name = "vt-broadcast"
    vt_fast_path = True
    reads_workload = False  # the topology alone
    Params = ArbitraryParams
    summary = "one spanning VT (BFS from the highest-degree switch), pruned by stops (ch. 6)"

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        root = max_degree_switch(topology)
        pairs = bfs_parents(topology, root).items()
        yield make_candidate(topology, topology.switches, switch_edges(topology, pairs),
                             self.params.host_links, f"broadcast:{root}")


# -- random -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RandomParams(ArbitraryParams):
    """:class:`ArbitraryParams` plus

    Parameters
    ----------
    terminals_min, terminals_max : int
        Range of the number of random terminals per VT (max: none = all).
    max_vts : int, optional
        Stop after this many VTs (none: until memory stops it).
    max_failures : int
        With ``on_full="skip"``: consecutive misses before giving up.
    max_attempts : int
        Hard cap on drawn candidates.
    """

    on_full: Literal["stop", "skip"] = "stop"
    terminals_min: int = 2
    terminals_max: int | None = None
    max_vts: int | None = None
    max_failures: int = 20
    max_attempts: int = 5000

    def __post_init__(self) -> None:
        validate_arbitrary(self)
        check(self.terminals_min >= 2, f"terminals_min must be >= 2, got {self.terminals_min}")
        check(self.terminals_max is None or self.terminals_max >= self.terminals_min,
              "terminals_max must be >= terminals_min")
        check(self.max_vts is None or self.max_vts >= 0, "max_vts must be >= 0")
        check(self.max_failures >= 1, "max_failures must be >= 1")


@register_strategy
class RandomTrees(VirtualTreeStrategy):
    """Steiner trees over random switch subsets until a switch is full (§6.2.2)."""

    name = "vt-random"
    vt_fast_path = True
    Params = RandomParams
    summary = "Steiner VTs over random switch subsets until memory is full (ch. 6)"

    def install_limits(self) -> dict[str, Any]:
        p = self.params
        return {"max_trees": p.max_vts, "max_failures": p.max_failures}

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        p = self.params
        rng = child_rng(knowledge.seed, "vt-random")
        sw = topology.switches
        hi = min(p.terminals_max or len(sw), len(sw))
        lo = min(p.terminals_min, hi)
        for i in range(p.max_attempts):
            k = int(rng.integers(lo, hi + 1))
            terms = [sw[int(j)] for j in sorted(rng.choice(len(sw), size=k, replace=False))]
            yield steiner_candidate(topology, terms, p.host_links, f"random:{i}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RandomVariantParams(ArbitraryParams):
    """:class:`ArbitraryParams` plus

    Parameters
    ----------
    max_rounds : int
        Permutations (rounds of nested halving) drawn at most.
    min_terminals : int
        Smallest chunk of terminals that still gets a VT.
    """

    max_rounds: int = 16
    min_terminals: int = 2

    def __post_init__(self) -> None:
        validate_arbitrary(self)
        check(self.max_rounds >= 1, f"max_rounds must be >= 1, got {self.max_rounds}")
        check(self.min_terminals >= 2, f"min_terminals must be >= 2, got {self.min_terminals}")


@register_strategy
class RandomVariant(VirtualTreeStrategy):
    """Nested halving: 1 spanning VT, 2 halves, 4 quarters, ... per round (Fig. 6.4)."""

    name = "vt-random-variant"
    vt_fast_path = True
    Params = RandomVariantParams
    summary = "random nested halving: 2^j VTs over |V|/2^j random switches (ch. 6)"

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        p = self.params
        rng = child_rng(knowledge.seed, "vt-random-variant")
        sw = topology.switches
        for r in range(p.max_rounds):
            perm = [sw[int(j)] for j in rng.permutation(len(sw))]
            for level, chunks in enumerate(halving_chunks(perm, p.min_terminals)):
                for i, chunk in enumerate(chunks):
                    yield steiner_candidate(topology, chunk, p.host_links,
                                            f"variant:{r}:L{level}.{i}")


# -- cycles -------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CyclesParams(ArbitraryParams):
    """:class:`ArbitraryParams` plus

    Parameters
    ----------
    max_combination : int
        Largest number of basis cycles united into one VT.
    ring : bool
        Keep rings (true) or drop each one's highest-id link (false).
    max_failures : int
        Consecutive misses before giving up (memory full).
    """

    max_combination: int = 3
    ring: bool = True
    max_failures: int = 200

    def __post_init__(self) -> None:
        validate_arbitrary(self)
        check(self.max_combination >= 1, "max_combination must be >= 1")
        check(self.max_failures >= 1, "max_failures must be >= 1")


@register_strategy
class Cycles(VirtualTreeStrategy):
    """Ring VTs of basis cycles, then of connected unions of them (§6.3.1)."""

    name = "vt-cycles"
    vt_fast_path = True
    reads_workload = False  # the topology alone
    Params = CyclesParams
    summary = "ring VTs of a minimum cycle basis and their connected unions (ch. 6)"

    def install_limits(self) -> dict[str, Any]:
        return {"max_failures": self.params.max_failures}

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        p = self.params
        basis = cycle_basis_fast(topology)
        masks = []
        for c in basis:
            m = 0
            for e in c:
                a, b = link_ends(topology, e)
                m |= (1 << topology.switch_id(a)) | (1 << topology.switch_id(b))
            masks.append(m)
        for size in range(1, min(p.max_combination, len(basis)) + 1):
            for combo in itertools.combinations(range(len(basis)), size):
                if size > 1 and not _connected_masks([masks[i] for i in combo]):
                    continue
                edges = frozenset().union(*(basis[i] for i in combo))
                if not p.ring:
                    edges = edges - {max(edges)}
                nodes = {n for e in edges for n in link_ends(topology, e)}
                yield make_candidate(topology, nodes, edges, p.host_links,
                                     "cycles:" + "+".join(map(str, combo)))


def _connected_masks(masks: list[int]) -> bool:
    comp = masks[0]
    rest = masks[1:]
    changed = True
    while rest and changed:
        changed = False
        for m in list(rest):
            if m & comp:
                comp |= m
                rest.remove(m)
                changed = True
    return not rest


# -- partitions ---------------------------------------------------------------


def modularity_partitions(topology: Topology) -> list[list[str]]:
    """Clauset-Newman-Moore greedy-modularity communities of the switch graph.

    Run on integer node labels (switch indices) so the result does not depend
    on string hashing; communities sorted by size (descending), then by
    their lowest switch index.
    """
    g = nx.Graph()
    g.add_nodes_from(range(len(topology.switches)))
    g.add_edges_from((topology.switch_id(a), topology.switch_id(b))
                     for a, b in topology.switch_graph.edges())
    comms = nx.algorithms.community.greedy_modularity_communities(g)
    ordered = sorted((sorted(c) for c in comms), key=lambda c: (-len(c), c[0]))
    return [[topology.switches[i] for i in c] for c in ordered]


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsParams(ArbitraryParams):
    """:class:`ArbitraryParams` plus

    Parameters
    ----------
    backbone_max : int
        Backbone VTs (hub subsets) at most.
    """

    backbone_max: int = 32

    def __post_init__(self) -> None:
        validate_arbitrary(self)
        check(self.backbone_max >= 0, "backbone_max must be >= 0")


@register_strategy
class Partitions(VirtualTreeStrategy):
    """Hub-and-spoke VTs over greedy-modularity communities (§6.3.2)."""

    name = "vt-partitions"
    vt_fast_path = True
    reads_workload = False  # the topology alone
    Params = PartitionsParams
    summary = "backbone VTs between community hubs + VTs inside communities (ch. 6)"

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        p = self.params
        return hub_region_candidates(topology, modularity_partitions(topology), p.host_links,
                                     p.backbone_max, "partitions")
