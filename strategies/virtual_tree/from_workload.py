"""Virtual-tree strategies for arbitrary topologies from workload knowledge (seed 000 §6.4).

They read the controller's view of the clients (``Knowledge.population``,
see :func:`strategies.virtual_tree.installation.workload_view`): publishers, their
subscriptions with notification frequencies, and the dense client clusters
of the ch. 6 generator (:mod:`sim.workloads.clustered`). With churn the view
is the layout the trees were built from (0 % unless the population rebuilds).
Host links as in :mod:`strategies.virtual_tree.arbitrary` (``host_links``).

``vt-relation`` (§6.4.2, Fig. 6.7a)
    One VT per publisher: the Steiner tree of its switch and its subscribers'
    switches, publishers in host order.
``vt-freq-relation`` (§6.4.2, Fig. 6.7b)
    The same with only the subscribers whose frequency meets or exceeds
    ``threshold`` percent (30 %).
``vt-clusters`` (§6.4.1)
    Partitions (:func:`strategies.virtual_tree.arbitrary.hub_region_candidates`) over
    the dense clusters only: backbone VTs between the cluster hubs (highest
    degree), then VTs inside each cluster; sparse regions get none (A14).
    Without clusters in the view it draws them with the generator's defaults
    (k = 4, 60 % dense) from the knowledge seed.
``vt-hybrid`` (§6.5.3 (e), §6.6.2 (g))
    freq-relation and clusters VTs installed alternately (round-robin);
    ``split="budget"`` (default) gives each half of every switch's rules
    (ceil / floor), ``"interleave"`` only alternates.

Deviations (digest A14, A16, §3.5-3.7): which clusters (all generator dense
sets, also under *distant*), the hub choice, the alternative memory split.

References
----------
Seed 000 §6.4.1-6.4.2 (Fig. 6.7), §6.5.3, §6.6.2; digest ch. 5-7 §3.5-3.7.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from sim.dataplanes.seeds import child_rng
from sim.dataplanes.switch_clusters import client_clusters
from strategies.base import Knowledge, register_strategy
from strategies.virtual_tree.arbitrary import (
    ArbitraryParams,
    PartitionsParams,
    hub_region_candidates,
    round_robin,
    steiner_candidate,
    validate_arbitrary,
)
from strategies.virtual_tree.client_view import ControllerView
from strategies.virtual_tree.installation import Candidate, VirtualTreeStrategy, workload_view
from topologies.model import Topology
from topologies.registry import check


def relation_candidates(topology: Topology, view: ControllerView, threshold: float,
                        mode: str, group: str = "") -> Iterator[Candidate]:
    """Per publisher: Steiner tree over it and its subscribers with frequency >= threshold %."""
    for pub in sorted(view.publishers, key=topology.host_id):
        subs = [h for h, f in view.subscriptions.get(pub, ()) if 100 * f >= threshold - 1e-9]
        terms = [topology.host_switch(pub)] + [topology.host_switch(h) for h in subs]
        terms = sorted(set(terms), key=topology.switch_id)
        yield steiner_candidate(topology, terms, mode, f"relation:{pub}", group)  # type: ignore[arg-type]


def cluster_regions(topology: Topology, view: ControllerView | None, seed: int
                    ) -> list[tuple[str, ...]]:
    """The dense clusters of the view, or freshly drawn ones (k = 4, 60 % dense)."""
    if view is not None and view.clusters:
        return [tuple(c) for c in view.clusters]
    return list(client_clusters(topology, 4, 60.0, child_rng(seed, "vt-clusters")).dense)


@dataclass(frozen=True, slots=True, kw_only=True)
class RelationParams(ArbitraryParams):
    """:class:`ArbitraryParams` plus

    Parameters
    ----------
    threshold : float
        Smallest notification frequency (percent) of a subscriber in the
        publisher's VT (``vt-relation``: 0, ``vt-freq-relation``: 30).
    """

    threshold: float = 0.0

    def __post_init__(self) -> None:
        validate_arbitrary(self)
        check(0 <= self.threshold <= 100, f"threshold must be in [0, 100], got {self.threshold}")


@dataclass(frozen=True, slots=True, kw_only=True)
class FreqRelationParams(RelationParams):
    threshold: float = 30.0

    def __post_init__(self) -> None:
        RelationParams.__post_init__(self)


@register_strategy
class Relation(VirtualTreeStrategy):
    """One Steiner VT per publisher over its subscribers (§6.4.2)."""

    name = "vt-relation"
    vt_fast_path = True
    Params = RelationParams
    summary = "one Steiner VT per publisher and its subscribers (ch. 6)"

    def check_applicable(self, topology: Topology, population: Any) -> None:
        workload_view(Knowledge(population=population), self.name)

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        p = self.params
        return relation_candidates(topology, workload_view(knowledge, self.name), p.threshold,
                                   p.host_links)


@register_strategy
class FreqRelation(Relation):
    """Relation VTs of the subscribers with frequency >= threshold (§6.4.2)."""

    name = "vt-freq-relation"
    vt_fast_path = True
    Params = FreqRelationParams
    summary = "one Steiner VT per publisher and its subscribers >= 30 % frequency (ch. 6)"


# Clusters take the same knobs as partitions (hub subsets on a backbone).
ClustersParams = PartitionsParams


def _view_or_none(knowledge: Knowledge, name: str) -> ControllerView | None:
    if knowledge.population is None:
        return None
    try:
        return workload_view(knowledge, name)
    except ValueError:
        return None


@register_strategy
class Clusters(VirtualTreeStrategy):
    """Partitions restricted to the dense client clusters (§6.4.1)."""

    name = "vt-clusters"
    vt_fast_path = True
    Params = ClustersParams
    summary = "backbone + internal VTs of the dense client clusters (ch. 6)"

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        p = self.params
        regions = cluster_regions(topology, _view_or_none(knowledge, self.name), knowledge.seed)
        return hub_region_candidates(topology, regions, p.host_links, p.backbone_max, "clusters")


@dataclass(frozen=True, slots=True, kw_only=True)
class HybridParams(ArbitraryParams):
    """:class:`ArbitraryParams` plus

    Parameters
    ----------
    threshold : float
        freq-relation threshold in percent (30).
    backbone_max : int
        Backbone VTs of the clusters half at most.
    split : {"budget", "interleave"}
        Halve every switch's rules between the two kinds, or only alternate.
    """

    threshold: float = 30.0
    backbone_max: int = 32
    split: Literal["budget", "interleave"] = "budget"

    def __post_init__(self) -> None:
        validate_arbitrary(self)
        check(0 <= self.threshold <= 100, f"threshold must be in [0, 100], got {self.threshold}")
        check(self.split in ("budget", "interleave"),
              f"split must be budget or interleave; got {self.split!r}")


@register_strategy
class Hybrid(VirtualTreeStrategy):
    """freq-relation and clusters VTs alternately, memory split in half (§6.5.3)."""

    name = "vt-hybrid"
    vt_fast_path = True
    Params = HybridParams
    summary = "freq-relation + clusters VTs round-robin, half the rules each (ch. 6)"

    def install_limits(self) -> dict[str, Any]:
        p = self.params
        if p.split == "interleave":
            return {}
        return {"group_limits": {"freq": (p.max_rules + 1) // 2, "clusters": p.max_rules // 2}}

    def check_applicable(self, topology: Topology, population: Any) -> None:
        workload_view(Knowledge(population=population), self.name)

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        p = self.params
        view = workload_view(knowledge, self.name)
        freq = relation_candidates(topology, view, p.threshold, p.host_links, "freq")
        regions = cluster_regions(topology, view, knowledge.seed)
        clusters = hub_region_candidates(topology, regions, p.host_links, p.backbone_max,
                                         "clusters", "clusters")
        return round_robin([freq, clusters])
