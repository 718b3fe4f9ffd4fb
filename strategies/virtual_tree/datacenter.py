"""Virtual-tree installation strategies for the datacenter fabric (seed 000 §5.3).

All four need the ``fabric`` topology (``node_attrs`` ``role`` = spine /
fabric / tor, ``plane``, ``pod``) and run the greedy encoder of
:mod:`strategies.virtual_tree.encoder` over what they install. VTs include host links
(in ch. 5 hosts are tree nodes: Figs. 5.2-5.8).

``topo-based`` (§5.3.3, hierarchical trees)
    Small one-level stars: at every ToR a subset of its hosts, at every
    fabric switch a subset of its ToRs, at every spine a subset of its
    fabric switches ("a VT maps at least two branches onto a node").
    ``combinations="power_of_two"`` (default, digest A23): subsets of 2, 4,
    8, ... children, n = 1, 2, ... until memory or fan-out runs out, the
    centres interleaved round-robin within each size so memory is spread;
    ``"buddy"``: aligned blocks only ({1,2}, {3,4}, {1..4}, ...).
``vt-tree`` (§5.3.4, Algorithm 5.2)
    Per publisher, the broadcast tree of spine ``publisher id mod #spines``
    (the spine and all its downlinks, recursively) pruned to the publisher
    and its subscribers (:func:`prune_tree`); kept if it has more than ε
    = ``min_edges - 1`` links. ``shared=true``: one tree per broadcast tree,
    pruned to all publishers assigned to it and their subscribers.
``threshold`` (§5.3.6)
    Like ``vt-tree`` but only subscribers whose notification frequency is at
    least ``threshold`` percent (A24: ">=") stay in the base tree; then
    virtual paths while memory lasts (``paths=true``, §5.3.5). θ = 0 is
    ``vt-tree`` plus paths.
``path`` (§5.3.5)
    ``threshold`` with θ = 100 %: base trees of the permanent subscribers
    only (none, with frequencies drawn from U(1 %, 100 %)), then virtual
    paths host-ToR-fabric-spine (3 links), added round-robin over hosts and,
    per host, over the spines, planes first (digest §2.5 [R]).

Deviations from the thesis (all where it is silent): the subset order of
``topo-based``; the spine of each virtual path; ε = 1; installation in
publisher order with ``on_full="skip"``.

References
----------
Seed 000 §5.3.1-5.3.6 (Figs. 5.5-5.8, Algorithm 5.2), §5.4; digest ch. 5-7
§2.1-2.6, A20, A23, A24.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from strategies.base import Knowledge, register_strategy
from strategies.virtual_tree.installation import (
    Candidate,
    VirtualTreeStrategy,
    VtParams,
    switch_edges,
    validate_vt_params,
    workload_view,
)
from topologies.model import Topology, node_sort_key
from topologies.registry import SpecError, check

Combinations = Literal["power_of_two", "buddy"]


# -- fabric structure -------------------------------------------------------------


def role(topology: Topology, switch: str) -> str:
    return str(topology.node_attrs.get(switch, {}).get("role", ""))


def require_fabric(topology: Topology, strategy: str) -> None:
    """Raise unless ``topology`` is a fabric (switch roles spine / fabric / tor)."""
    roles = {role(topology, s) for s in topology.switches}
    if roles != {"spine", "fabric", "tor"}:
        raise SpecError(f"strategy {strategy!r} needs the datacenter fabric topology "
                        f"(fabric:pods=8,racks=4,hosts=2,planes=4,spines=4); "
                        f"{topology.name!r} has no spine/fabric/tor roles")


_BELOW = {"spine": "fabric", "fabric": "tor"}


def downlinks(topology: Topology, node: str) -> tuple[str, ...]:
    """Children one level down, in port order (spine -> fabric -> ToR -> hosts)."""
    if topology.is_host(node):
        return ()
    r = role(topology, node)
    if r == "tor":
        return topology.hosts_of(node)
    below = _BELOW.get(r)
    return tuple(p.neighbor for p in topology.ports(node).values()
                 if not topology.is_host(p.neighbor) and role(topology, p.neighbor) == below)


def spines(topology: Topology) -> tuple[str, ...]:
    return tuple(s for s in topology.switches if role(topology, s) == "spine")


def broadcast_tree(topology: Topology, spine: str) -> frozenset[tuple[str, str]]:
    """The spine and all its downlinks, recursively (§5.3.2), as (parent, child) pairs."""
    out = set()
    frontier = [spine]
    while frontier:
        node = frontier.pop()
        for child in downlinks(topology, node):
            if (node, child) not in out:
                out.add((node, child))
                frontier.append(child)
    return frozenset(out)


def prune_tree(edges: Iterable[tuple[str, str]], keep: Iterable[str], epsilon: int = 1
               ) -> frozenset[tuple[str, str]]:
    """Algorithm 5.2 (PRUNE_TREE): remove leaves not in ``keep`` until none is left.

    Returns the pruned edge set, or the empty set if it has ``epsilon`` edges
    or fewer. A leaf queue makes it O(|V|) (the pseudo-code rescans the
    leaves, O(|V| depth)); the result is the same.
    """
    keep = set(keep)
    adj: dict[str, set[str]] = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    queue = [n for n, nb in adj.items() if len(nb) <= 1 and n not in keep]
    while queue:
        n = queue.pop()
        if n not in adj or n in keep or len(adj[n]) > 1:
            continue
        for m in adj.pop(n):
            adj[m].discard(n)
            if len(adj[m]) <= 1 and m not in keep:
                queue.append(m)
    out = frozenset((a, b) for a, b in edges if a in adj and b in adj and b in adj[a])
    return out if len(out) > epsilon else frozenset()


def spine_of(topology: Topology, publisher: str) -> str:
    """The broadcast tree of a publisher: spine ``host id mod #spines`` (round-robin)."""
    sp = spines(topology)
    return sp[topology.host_id(publisher) % len(sp)]


def base_tree_candidates(topology: Topology, knowledge: Knowledge, threshold: float,
                         shared: bool, min_edges: int, strategy: str) -> list[Candidate]:
    """Pruned broadcast trees of the publishers (and their subscribers >= threshold %)."""
    view = workload_view(knowledge, strategy)
    order = sorted(view.publishers, key=topology.host_id)
    members: dict[str, set[str]] = {}
    groups: dict[str, list[str]] = {}
    for pub in order:
        subs = [h for h, f in view.subscriptions.get(pub, ()) if 100 * f >= threshold - 1e-9]
        key = spine_of(topology, pub) if shared else pub
        members.setdefault(key, set()).update([pub, *subs])
        groups.setdefault(key, []).append(pub)
    out = []
    for key, nodes in members.items():
        spine = spine_of(topology, groups[key][0])
        pruned = prune_tree(broadcast_tree(topology, spine), nodes, epsilon=min_edges - 1)
        if pruned:
            out.append(Candidate(switch_edges(topology, pruned), f"base:{key}", "base"))
    return out


def _combos(children: Sequence[str], mode: Combinations) -> list[list[tuple[str, ...]]]:
    """Per size 2, 4, 8, ...: the children subsets of that size."""
    out = []
    size = 2
    while size <= len(children):
        if mode == "buddy":
            out.append([tuple(children[i:i + size]) for i in range(0, len(children) - size + 1,
                                                                   size)])
        else:
            out.append(list(itertools.combinations(children, size)))
        size *= 2
    return out


def _round_robin(lists: Sequence[Sequence[Candidate]]) -> Iterator[Candidate]:
    for items in itertools.zip_longest(*lists):
        yield from (c for c in items if c is not None)


def virtual_paths(topology: Topology) -> Iterator[Candidate]:
    """Host-ToR-fabric-spine paths, round-robin over hosts, then over each host's spines."""
    sp = spines(topology)
    planes = sorted({topology.node_attrs[s]["plane"] for s in sp})
    per_plane = {p: [s for s in sp if topology.node_attrs[s]["plane"] == p] for p in planes}
    rounds = len(sp)
    for k in range(rounds):
        for h in topology.hosts:
            tor = topology.host_switch(h)
            hid = topology.host_id(h)
            plane = planes[(hid + k) % len(planes)]
            col = per_plane[plane]
            spine = col[(hid // len(planes) + k // len(planes)) % len(col)]
            fabric = [f for f in downlinks(topology, spine) if tor in downlinks(topology, f)]
            if not fabric:
                continue
            path = [(h, tor), (tor, fabric[0]), (fabric[0], spine)]
            yield Candidate(switch_edges(topology, path), f"path:{h}:{spine}", "path")


# -- strategies ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TopoBasedParams(VtParams):
    """Parameters of ``topo-based``: :class:`VtParams` plus

    Parameters
    ----------
    combinations : {"power_of_two", "buddy"}
        Which children subsets become VTs (digest A23).
    """

    combinations: Combinations = "power_of_two"

    def __post_init__(self) -> None:
        validate_vt_params(self)
        check(self.combinations in ("power_of_two", "buddy"),
              f"combinations must be power_of_two or buddy; got {self.combinations!r}")


@register_strategy
class TopoBased(VirtualTreeStrategy):
    """Hierarchical star VTs at ToR, fabric and spine switches (§5.3.3)."""

    name = "topo-based"
    vt_fast_path = True
    Params = TopoBasedParams
    summary = "hierarchical star VTs of 2, 4, 8, ... children per switch (ch. 5)"

    def check_applicable(self, topology: Topology, population: object) -> None:
        require_fabric(topology, self.name)

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        require_fabric(topology, self.name)
        per_centre = []
        for sw in topology.switches:
            kids = downlinks(topology, sw)
            per_centre.append([[Candidate(switch_edges(topology, [(sw, c) for c in combo]),
                                          f"star:{sw}:{','.join(combo)}")
                                for combo in level]
                               for level in _combos(kids, self.params.combinations)])
        depth = max((len(levels) for levels in per_centre), default=0)
        for n in range(depth):
            yield from _round_robin([levels[n] for levels in per_centre if n < len(levels)])


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeParams(VtParams):
    """Parameters of ``vt-tree``: :class:`VtParams` plus

    Parameters
    ----------
    shared : bool
        One tree per broadcast tree for all its publishers, instead of one
        per publisher (§5.3.4).
    """

    shared: bool = False

    def __post_init__(self) -> None:
        validate_vt_params(self)


@register_strategy
class PrunedTrees(VirtualTreeStrategy):
    """Broadcast trees pruned to publishers and subscribers (Algorithm 5.2)."""

    name = "vt-tree"
    vt_fast_path = True
    Params = TreeParams
    summary = "pruned broadcast tree per publisher (Algorithm 5.2; ch. 5)"

    def check_applicable(self, topology: Topology, population: object) -> None:
        require_fabric(topology, self.name)
        workload_view(Knowledge(population=population), self.name)

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        require_fabric(topology, self.name)
        p = self.params
        return iter(base_tree_candidates(topology, knowledge, 0.0, p.shared, p.min_edges,
                                         self.name))


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdParams(VtParams):
    """Parameters of ``threshold`` / ``path``: :class:`VtParams` plus

    Parameters
    ----------
    threshold : float
        Subscribers with a notification frequency of at least this many
        percent stay in the publisher's base tree (30; ``path``: 100).
    paths : bool
        Fill the remaining memory with virtual paths (§5.3.5; the §5.4.4
        "hops/tree" variant is ``paths=false``).
    shared : bool
        Shared base trees (see ``vt-tree``).
    """

    threshold: float = 30.0
    paths: bool = True
    shared: bool = False

    def __post_init__(self) -> None:
        validate_vt_params(self)
        check(0 <= self.threshold <= 100, f"threshold must be in [0, 100], got {self.threshold}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PathParams(ThresholdParams):
    """Parameters of ``path``: ``threshold`` with θ = 100 %."""

    threshold: float = 100.0

    def __post_init__(self) -> None:
        ThresholdParams.__post_init__(self)


@register_strategy
class Threshold(VirtualTreeStrategy):
    """Base trees of the frequent subscribers, then virtual paths (§5.3.5-5.3.6)."""

    name = "threshold"
    vt_fast_path = True
    Params = ThresholdParams
    summary = "base trees of subscribers >= threshold %, then virtual paths (ch. 5)"

    def check_applicable(self, topology: Topology, population: object) -> None:
        require_fabric(topology, self.name)
        workload_view(Knowledge(population=population), self.name)

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        require_fabric(topology, self.name)
        p = self.params
        yield from base_tree_candidates(topology, knowledge, p.threshold, p.shared, p.min_edges,
                                        self.name)
        if p.paths:
            yield from virtual_paths(topology)


@register_strategy
class VirtualPaths(Threshold):
    """``threshold`` at 100 %: virtual paths host-ToR-fabric-spine (§5.3.5)."""

    name = "path"
    vt_fast_path = True
    Params = PathParams
    summary = "virtual paths host-ToR-fabric-spine (threshold 100 %; ch. 5)"


def fabric_summary(topology: Topology) -> dict[str, int]:
    """Switch counts per role (a sanity helper for specs and tests)."""
    out: dict[str, int] = {}
    for s in sorted(topology.switches, key=node_sort_key):
        out[role(topology, s)] = out.get(role(topology, s), 0) + 1
    return out
