"""Synthetic topology generators: Jellyfish, fat-tree, Facebook fabric, leaf-spine.

Each generator registers a spec kind with a frozen parameter dataclass:

- ``jellyfish:switches=255,degree=4,hosts=1,seed=1`` -- the random regular
  switch graph of seed 000 ch. 3-4 (255 switches, one host each; the degree
  is unstated there, the default 4 follows the digest's recommendation).
- ``fattree:k=4`` -- the classic three-tier k-ary fat-tree.
- ``fabric:pods=8,racks=4,hosts=2,planes=4,spines=4`` -- the Facebook
  datacenter fabric of seed 000 ch. 5 (80 switches, 64 hosts, 320 links).
- ``leafspine:leaves=8,spines=4,hosts=4`` -- a full bipartite leaf-spine.

Switch order (which fixes the names ``s1..sN`` and the numeric switch ids) is
top-down and documented per generator; hosts ``h1..hM`` follow the switch
order. Randomness comes only from an explicit ``numpy.random.Generator``
(PCG64) seeded by the ``seed`` parameter, so a spec string names exactly one
topology on any machine and any networkx version.

References
----------
Seed 000 §3.5.1 (Jellyfish, 255 switches, one host per switch), §4.5 (256
switches), §5.3.1 and §5.4.1 (Facebook fabric: 8 pods, 4 racks per pod, 2
machines per rack, 4 planes of 4 spines); shared/notes/seed000-ch1-4.md §5.1
and §5.5, shared/notes/seed000-ch5-7.md §2.1. Jellyfish construction:
Singla et al., "Jellyfish: Networking Data Centers Randomly", NSDI 2012, §3.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from topologies.model import LinkDefaults, Topology, TopologyError, build_topology
from topologies.registry import check
from topologies.specs import TopologySize, register_topology

#: Attempts at drawing a connected Jellyfish graph before giving up.
JELLYFISH_MAX_ATTEMPTS = 100
#: Random pair draws per step before falling back to enumerating the free pairs.
_RANDOM_PAIR_TRIES = 8


# -- Jellyfish ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JellyfishParams:
    """Parameters of ``jellyfish:switches=255,degree=4,hosts=1,seed=1``.

    Parameters
    ----------
    switches : int
        Number of switches N (>= 2).
    degree : int
        Switch-to-switch ports r per switch (1 <= r < N; r >= 2 unless N = 2,
        since a 1-regular graph on more than two switches is disconnected).
        When N * r is odd one switch keeps one port free.
    hosts : int
        Hosts attached to every switch (>= 0).
    seed : int
        Seed of the PCG64 generator that draws the random matching (>= 0).
    """

    switches: int
    degree: int = 4
    hosts: int = 1
    seed: int = 1

    def __post_init__(self) -> None:
        check(self.switches >= 2, f"switches must be an integer >= 2; got {self.switches}")
        check(1 <= self.degree < self.switches,
              f"degree must be an integer with 1 <= degree < switches ({self.switches}); "
              f"got {self.degree}")
        check(self.degree >= 2 or self.switches == 2,
              f"degree must be >= 2 for more than 2 switches (degree 1 is disconnected); "
              f"got {self.degree}")
        check(self.hosts >= 0, f"hosts must be an integer >= 0; got {self.hosts}")
        check(self.seed >= 0, f"seed must be an integer >= 0; got {self.seed}")


class _Matching:
    """Mutable state of one Jellyfish random-matching attempt."""

    def __init__(self, switches: int, degree: int) -> None:
        self.free = np.full(switches, degree, dtype=np.int64)
        self.adj: list[set[int]] = [set() for _ in range(switches)]
        self.edges: list[tuple[int, int]] = []

    def link(self, u: int, v: int) -> None:
        self.adj[u].add(v)
        self.adj[v].add(u)
        self.free[u] -= 1
        self.free[v] -= 1
        self.edges.append((u, v) if u < v else (v, u))

    def unlink(self, index: int) -> tuple[int, int]:
        u, v = self.edges.pop(index)
        self.adj[u].discard(v)
        self.adj[v].discard(u)
        self.free[u] += 1
        self.free[v] += 1
        return u, v


def _pick_free_pair(m: _Matching, open_: np.ndarray,
                    rng: np.random.Generator) -> tuple[int, int] | None:
    """A uniformly random unlinked pair of switches with free ports, or None."""
    if len(open_) < 2:
        return None
    for _ in range(_RANDOM_PAIR_TRIES):
        u, v = (int(x) for x in rng.choice(open_, size=2, replace=False))
        if v not in m.adj[u]:
            return u, v
    pairs = [(int(u), int(v)) for i, u in enumerate(open_) for v in open_[i + 1:]
             if int(v) not in m.adj[int(u)]]
    if not pairs:
        return None
    return pairs[int(rng.integers(len(pairs)))]


def _unstick(m: _Matching, open_: np.ndarray, rng: np.random.Generator) -> bool:
    """Free the matching when no free pair is left; False if that is impossible.

    A switch p with two free ports takes over a random link (x, y) not
    incident to or adjacent to it: the link becomes x-p and p-y (Jellyfish
    §3). Two switches p, q with one free port each (already linked to each
    other) take over a link (x, y) as p-x and q-y.
    """
    big = open_[m.free[open_] >= 2]
    if len(big):
        p = int(big[int(rng.integers(len(big)))])
        cands = [i for i, (x, y) in enumerate(m.edges)
                 if p not in (x, y) and x not in m.adj[p] and y not in m.adj[p]]
        if not cands:
            return False
        x, y = m.unlink(cands[int(rng.integers(len(cands)))])
        m.link(p, x)
        m.link(p, y)
        return True
    if len(open_) < 2:
        return False
    p, q = (int(s) for s in rng.choice(open_, size=2, replace=False))
    swaps = [(i, x, y) for i, (a, b) in enumerate(m.edges) for x, y in ((a, b), (b, a))
             if {x, y}.isdisjoint((p, q)) and x not in m.adj[p] and y not in m.adj[q]]
    if not swaps:
        return False
    i, x, y = swaps[int(rng.integers(len(swaps)))]
    m.unlink(i)
    m.link(p, x)
    m.link(q, y)
    return True


def jellyfish_edges(switches: int, degree: int,
                    rng: np.random.Generator) -> list[tuple[int, int]] | None:
    """One Jellyfish random-matching attempt on switches ``0..switches-1``.

    Repeatedly links two random switches that both have a free port and are
    not yet linked; when stuck, breaks a random link to use the remaining
    ports (see :func:`_unstick`). Every switch ends with ``degree`` links,
    except one switch with one free port when ``switches * degree`` is odd.

    Parameters
    ----------
    switches, degree : int
        Size and switch-to-switch degree.
    rng : numpy.random.Generator
        Source of every random choice.

    Returns
    -------
    list of (int, int) or None
        Sorted links ``(u, v)`` with ``u < v``; None if the attempt got stuck
        for good (tiny or near-complete graphs), so the caller retries.
        Connectivity is not checked here.
    """
    m = _Matching(switches, degree)
    while True:
        open_ = np.flatnonzero(m.free > 0)
        if len(open_) == 0 or (len(open_) == 1 and m.free[open_[0]] == 1):
            return sorted(m.edges)
        pair = _pick_free_pair(m, open_, rng)
        if pair is not None:
            m.link(*pair)
        elif not _unstick(m, open_, rng):
            return None


def _jellyfish_size(p: JellyfishParams) -> TopologySize:
    hosts = p.switches * p.hosts
    return TopologySize(p.switches, hosts, p.switches * p.degree // 2 + hosts)


@register_topology("jellyfish", JellyfishParams,
                   "random regular switch graph (Jellyfish); seed 000 §3.5.1",
                   estimate=_jellyfish_size)
def build_jellyfish(params: JellyfishParams, defaults: LinkDefaults, spec: str) -> Topology:
    """Build a connected Jellyfish topology, retrying with the same generator.

    Switches are in label order 0..N-1 (``s1..sN``); each has ``hosts`` hosts.

    Raises
    ------
    TopologyError
        If no connected graph came out of :data:`JELLYFISH_MAX_ATTEMPTS` attempts.
    """
    rng = np.random.Generator(np.random.PCG64(params.seed))
    n, r = params.switches, params.degree
    for _ in range(JELLYFISH_MAX_ATTEMPTS):
        edges = jellyfish_edges(n, r, rng)
        if edges is None:
            continue
        g = nx.Graph(edges)
        g.add_nodes_from(range(n))
        if nx.is_connected(g):
            return build_topology(name=spec, switch_edges=edges, switch_order=range(n),
                                  hosts_per_switch=params.hosts, defaults=defaults)
    raise TopologyError(
        f"{spec}: no connected {r}-regular graph on {n} switches after "
        f"{JELLYFISH_MAX_ATTEMPTS} attempts; raise degree or change seed")


# -- fat-tree ----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FatTreeParams:
    """Parameters of ``fattree:k=4``.

    Parameters
    ----------
    k : int
        Switch radix, even and >= 2: k pods of k/2 aggregation and k/2 edge
        switches, (k/2)^2 core switches, k/2 hosts per edge switch.
    """

    k: int = 4

    def __post_init__(self) -> None:
        check(self.k >= 2 and self.k % 2 == 0, f"k must be an even integer >= 2; got {self.k}")


def _fattree_size(p: FatTreeParams) -> TopologySize:
    hosts = p.k ** 3 // 4
    return TopologySize(5 * p.k * p.k // 4, hosts, 2 * (p.k ** 3 // 4) + hosts)


@register_topology("fattree", FatTreeParams, "k-ary three-tier fat-tree (k^3/4 hosts)",
                   estimate=_fattree_size)
def build_fattree(params: FatTreeParams, defaults: LinkDefaults, spec: str) -> Topology:
    """Build a k-ary fat-tree.

    Switch order: the (k/2)^2 core switches (core ``c`` = group ``c // (k/2)``),
    then per pod its k/2 aggregation switches followed by its k/2 edge
    switches. Aggregation switch ``j`` of every pod links to the k/2 core
    switches of group ``j``; every aggregation switch links to every edge
    switch of its pod. ``node_attrs``: ``role`` (core/aggregation/edge),
    ``pod`` (aggregation and edge only) and ``index`` (within the pod or the
    core layer).
    """
    half = params.k // 2
    order: list[tuple] = []
    attrs: dict[tuple, dict[str, object]] = {}
    edges: list[tuple[tuple, tuple]] = []
    hosts: dict[tuple, int] = {}
    for c in range(half * half):
        node = ("core", c)
        order.append(node)
        attrs[node] = {"role": "core", "index": c}
    for pod in range(params.k):
        aggs = [("agg", pod, j) for j in range(half)]
        tors = [("edge", pod, j) for j in range(half)]
        for j, agg in enumerate(aggs):
            order.append(agg)
            attrs[agg] = {"role": "aggregation", "pod": pod, "index": j}
            edges.extend((("core", j * half + i), agg) for i in range(half))
            edges.extend((agg, t) for t in tors)
        for j, tor in enumerate(tors):
            order.append(tor)
            attrs[tor] = {"role": "edge", "pod": pod, "index": j}
            hosts[tor] = half
    return build_topology(name=spec, switch_edges=edges, switch_order=order,
                          hosts_per_switch=hosts, defaults=defaults, node_attrs=attrs)


# -- Facebook fabric ---------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FabricParams:
    """Parameters of ``fabric:pods=8,racks=4,hosts=2,planes=4,spines=4``.

    Parameters
    ----------
    pods : int
        Server pods n (>= 1).
    racks : int
        Racks (ToR switches) per pod m (>= 1).
    hosts : int
        Machines per rack l (>= 0).
    planes : int
        Spine planes; also the fabric switches per pod, one per plane (>= 1).
    spines : int
        Spine switches per plane k (>= 1).
    """

    pods: int = 8
    racks: int = 4
    hosts: int = 2
    planes: int = 4
    spines: int = 4

    def __post_init__(self) -> None:
        for name in ("pods", "racks", "planes", "spines"):
            value = getattr(self, name)
            check(value >= 1, f"{name} must be an integer >= 1; got {value}")
        check(self.hosts >= 0, f"hosts must be an integer >= 0; got {self.hosts}")


def _fabric_size(p: FabricParams) -> TopologySize:
    hosts = p.pods * p.racks * p.hosts
    return TopologySize(p.planes * p.spines + p.pods * (p.planes + p.racks), hosts,
                        p.pods * p.planes * (p.spines + p.racks) + hosts)


@register_topology("fabric", FabricParams,
                   "Facebook datacenter fabric (pods, planes, spines); seed 000 §5.3.1",
                   estimate=_fabric_size)
def build_fabric(params: FabricParams, defaults: LinkDefaults, spec: str) -> Topology:
    """Build the Facebook datacenter fabric of seed 000 §5.3.1.

    Every ToR links to all fabric switches of its pod; fabric switch ``j``
    of every pod links to all spines of plane ``j``; every ToR has ``hosts``
    hosts. The defaults give 80 switches (16 spines, 32 fabric, 32 ToR), 64
    hosts and 320 links.

    Switch order: the spines plane by plane (plane 0 spines 0..k-1, plane 1,
    ...), then per pod its fabric switches (plane 0..planes-1) followed by
    its ToRs (rack 0..racks-1). ``node_attrs``: ``role`` (spine/fabric/tor),
    ``plane`` (spine, fabric), ``pod`` (fabric, tor), ``rack`` (tor) and
    ``index`` (spine number within its plane).
    """
    order: list[tuple] = []
    attrs: dict[tuple, dict[str, object]] = {}
    edges: list[tuple[tuple, tuple]] = []
    for plane in range(params.planes):
        for i in range(params.spines):
            node = ("spine", plane, i)
            order.append(node)
            attrs[node] = {"role": "spine", "plane": plane, "index": i}
    for pod in range(params.pods):
        fabric = [("fabric", pod, plane) for plane in range(params.planes)]
        for plane, node in enumerate(fabric):
            order.append(node)
            attrs[node] = {"role": "fabric", "pod": pod, "plane": plane}
            edges.extend((("spine", plane, i), node) for i in range(params.spines))
        for rack in range(params.racks):
            node = ("tor", pod, rack)
            order.append(node)
            attrs[node] = {"role": "tor", "pod": pod, "rack": rack}
            edges.extend((f, node) for f in fabric)
    hosts = {node: params.hosts for node in order if node[0] == "tor"}
    return build_topology(name=spec, switch_edges=edges, switch_order=order,
                          hosts_per_switch=hosts, defaults=defaults, node_attrs=attrs)


# -- leaf-spine --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LeafSpineParams:
    """Parameters of ``leafspine:leaves=8,spines=4,hosts=4``.

    Parameters
    ----------
    leaves : int
        Leaf switches (>= 1).
    spines : int
        Spine switches, each linked to every leaf (>= 1).
    hosts : int
        Hosts per leaf (>= 0).
    """

    leaves: int = 8
    spines: int = 4
    hosts: int = 4

    def __post_init__(self) -> None:
        check(self.leaves >= 1, f"leaves must be an integer >= 1; got {self.leaves}")
        check(self.spines >= 1, f"spines must be an integer >= 1; got {self.spines}")
        check(self.hosts >= 0, f"hosts must be an integer >= 0; got {self.hosts}")


def _leafspine_size(p: LeafSpineParams) -> TopologySize:
    hosts = p.leaves * p.hosts
    return TopologySize(p.leaves + p.spines, hosts, p.leaves * p.spines + hosts)


@register_topology("leafspine", LeafSpineParams, "two-tier leaf-spine (full bipartite)",
                   estimate=_leafspine_size)
def build_leafspine(params: LeafSpineParams, defaults: LinkDefaults, spec: str) -> Topology:
    """Build a leaf-spine: switch order spines then leaves; hosts on leaves.

    ``node_attrs``: ``role`` (spine/leaf) and ``index`` within the layer.
    """
    spines = [("spine", i) for i in range(params.spines)]
    leaves = [("leaf", i) for i in range(params.leaves)]
    attrs = {node: {"role": node[0], "index": node[1]} for node in (*spines, *leaves)}
    edges = [(s, leaf) for leaf in leaves for s in spines]
    return build_topology(name=spec, switch_edges=edges, switch_order=[*spines, *leaves],
                          hosts_per_switch={leaf: params.hosts for leaf in leaves},
                          defaults=defaults, node_attrs=attrs)
