"""Ch. 6 VT strategies (seed 000 §6.2-6.4): Figs. 6.2, 6.4, 6.5, 6.7, capacity, exact delivery."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import topologies

import sim.workloads.clustered  # noqa: F401  (registers "clustered")
import strategies.virtual_tree.arbitrary as arbitrary
from experiments.cells.pipeline import cell_rows
from experiments.cells.spec import Cell
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.arbitrary import halving_chunks, modularity_partitions
from strategies.virtual_tree.client_view import ControllerView
from strategies.virtual_tree.cycle_basis import minimum_cycle_basis
from strategies.virtual_tree.installation import (
    link_ends,
    published_trees,
    steiner_links,
    tree_ports,
    tree_rule_counts,
)
from strategies.virtual_tree.steiner import encoder_graph, steiner_sph
from topologies.model import build_topology
from topologies.specs import load_topology

CH6 = ["source-routed", "vt-broadcast", "vt-random", "vt-random-variant", "vt-cycles",
       "vt-partitions", "vt-clusters", "vt-relation", "vt-freq-relation", "vt-hybrid"]

# Fig. 6.2: a star, the publisher in the centre and four subscribers on the leaves
STAR = build_topology("star", [(1, 2), (1, 3), (1, 4), (1, 5)], range(1, 6), 1)


def entries(strategy, topo, pub, recv, knowledge=None):
    state = strategy.install(topo, knowledge or Knowledge())
    note = Notification(1, pub)
    d = run_notification(topo, strategy, state, note, frozenset(recv), payload_for(note, 10))
    assert d.delivered == dict.fromkeys(recv, 1)
    return d.encoding.header_entries


def test_fig_6_2_hops_win_for_two_of_four_the_broadcast_tree_for_three():
    vt = make_strategy("vt-broadcast")
    # switch-level labels + one hop per receiver host link (host_links=exclude)
    assert entries(vt, STAR, "h1", {"h2", "h3"}) == 2 + 2  # 2 hops beat 1 tree + 2 stops
    assert entries(vt, STAR, "h1", {"h2", "h3", "h4"}) == 2 + 3  # 1 tree + 1 stop beat 3 hops
    assert entries(vt, STAR, "h1", {"h2", "h3", "h4", "h5"}) == 1 + 4  # best case: 1 tree


def test_fig_6_7_freq_relation_drops_rare_subscribers():
    # P at s1 on a path s1-s2-s3-s4-s5; S1 (26 %) at s5, S2 at s2, S3 at s3, S4 (29 %) at s4
    topo = build_topology("path", [(1, 2), (2, 3), (3, 4), (4, 5)], range(1, 6), 1)
    view = ControllerView(publishers=("h1",), subscriptions={
        "h1": (("h5", 0.26), ("h2", 0.9), ("h3", 0.5), ("h4", 0.29))})
    know = Knowledge(population=view)
    rel = published_trees(make_strategy("vt-relation").install(topo, know))
    frel = published_trees(make_strategy("vt-freq-relation").install(topo, know))
    nodes = lambda t: {n for e in t.edges for n in link_ends(topo, e)}  # noqa: E731
    assert [nodes(t) for t in rel] == [{"s1", "s2", "s3", "s4", "s5"}]
    assert [nodes(t) for t in frel] == [{"s1", "s2", "s3"}]
    inc = published_trees(make_strategy("vt-freq-relation", {"host_links": "include"})
                          .install(topo, know))
    assert nodes(inc[0]) == {"s1", "s2", "s3", "h1", "h2", "h3"}


def test_fig_6_4_random_variant_halves_the_terminals():
    chunks = list(halving_chunks(list("abcdefgh"), 2))
    assert [len(level) for level in chunks] == [1, 2, 4]
    assert chunks[1] == [tuple("abcd"), tuple("efgh")]
    topo = load_topology("zoo:Litnet")
    state = make_strategy("vt-random-variant", {"max_rules": 3, "max_rounds": 1}).install(
        topo, Knowledge(seed=5))
    levels = {t.name.split(":")[2].split(".")[0] for t in published_trees(state)}
    assert "L0" in levels and "L1" in levels


def test_random_stops_at_the_first_full_switch():
    topo = load_topology("zoo:Dfn")
    state = make_strategy("vt-random", {"max_rules": 2}).install(topo, Knowledge(seed=1))
    assert state.publisher_info["rejected_trees"] == 1  # on_full=stop: one miss ends it
    again = make_strategy("vt-random", {"max_rules": 2}).install(topo, Knowledge(seed=1))
    assert published_trees(again) == published_trees(state)  # seeded, deterministic
    skip = make_strategy("vt-random", {"max_rules": 2, "on_full": "skip"}).install(
        topo, Knowledge(seed=1))
    assert len(published_trees(skip)) >= len(published_trees(state))


def test_fig_6_5_cycle_basis_and_ring_vts():
    # Fig. 6.5: cycles (a,b,e,c), (b,d,e), (c,e,f)
    a, b, c, d, e, f = range(1, 7)
    topo = build_topology("fig6.5", [(a, b), (a, c), (b, e), (c, e), (b, d), (d, e), (c, f),
                                     (e, f)], range(1, 7), 1)
    basis = minimum_cycle_basis(topo)
    assert sorted(len(x) for x in basis) == [3, 3, 4]
    state = make_strategy("vt-cycles", {"max_rules": 10}).install(topo, Knowledge())
    assert len(published_trees(state)) == 7  # 2^3 - 1 connected unions
    assert entries(make_strategy("vt-cycles", {"max_rules": 10}), topo, "h1",
                   {"h4", "h5", "h6"}) >= 3


def test_partitions_and_clusters_place_hub_backbones_first():
    topo = load_topology("zoo:Litnet")
    parts = modularity_partitions(topo)
    assert sorted(s for p in parts for s in p) == sorted(topo.switches)
    state = make_strategy("vt-partitions", {"max_rules": 40}).install(topo, Knowledge())
    trees = published_trees(state)
    assert "backbone" in trees[0].name
    pop = receiver_model("clustered").population(topo, child_rng(1, "population"))
    cl = published_trees(make_strategy("vt-clusters").install(topo, Knowledge(population=pop)))
    dense = set(pop.clusters.dense_nodes)
    internal = [t for t in cl if "backbone" not in t.name]
    assert internal and all(set(tree_ports(topo, t.edges)) <= dense for t in internal)


def test_hybrid_splits_every_switch_in_half():
    topo = load_topology("zoo:Dfn")
    pop = receiver_model("clustered").population(topo, child_rng(1, "population"))
    state = make_strategy("vt-hybrid", {"max_rules": 5}).install(topo, Knowledge(population=pop))
    per: dict[tuple[str, str], int] = {}
    for t in published_trees(state):
        for s in tree_ports(topo, t.edges):
            per[(t.group, s)] = per.get((t.group, s), 0) + 1
    assert max(v for (g, _), v in per.items() if g == "freq") <= 3
    assert max(v for (g, _), v in per.items() if g == "clusters") <= 2
    assert {g for g, _ in per} == {"freq", "clusters"}


@pytest.mark.parametrize("topo", ["zoo:Litnet", "zoo:VtlWavenet2008"])
@pytest.mark.parametrize("strategy", CH6)
def test_every_ch6_strategy_delivers_exactly_within_capacity(topo, strategy):
    cell = Cell(experiment="t", topology=topo, strategy=strategy, params=(("max_rules", 6),),
                receivers="clustered:scenario=distant,churn=50", payload_bytes=50, seed=1,
                notifications=3)
    rows = cell_rows(cell)
    assert all(r["false_positives"] == r["false_negatives"] == r["duplicates"] == 0
               for r in rows)
    t = load_topology(topo)
    pop = receiver_model("clustered").population(t, child_rng(1, "population"))
    state = make_strategy(strategy, {"max_rules": 6}).install(t, Knowledge(population=pop))
    assert max(tree_rule_counts(state).values()) <= 6


def test_rebuilding_after_churn_costs_writes_and_fresh_ids():
    topo = load_topology("zoo:Dfn")
    model = receiver_model("clustered:scenario=distant,churn=100")
    pop = model.population(topo, child_rng(1, "population"))
    strategy = make_strategy("vt-freq-relation", {"max_rules": 40})
    old = strategy.install(topo, Knowledge(population=pop.view_at(0)))
    plan = strategy.plan_update(topo, old, Knowledge(population=pop.view_at(100)))
    actions = [a for a, _ in plan.steps]
    assert actions[:4] == ["old", "install", "inform", "delete"]
    kinds = [w.type for w in plan.writes]
    assert "INSERT" in kinds and "DELETE" in kinds
    old_ids = {t.tree_id for t in published_trees(old)}
    new_ids = {t.tree_id for t in published_trees(plan.final)}
    assert min(new_ids - old_ids) > max(old_ids)


def induced_steiner_reference(topo, terminals, within):
    """``induced_steiner`` as it was: the subgraph's flags and arrays made per call."""
    g = encoder_graph(topo)
    keep = np.zeros(len(g.names), np.bool_)
    for s in within:
        keep[g.index[s]] = True
    idx = sorted({g.index[t] for t in terminals})
    if len(idx) < 2:
        return frozenset()
    try:
        edges, _ = steiner_sph(g, idx[0], idx, within=keep)
    except ValueError:
        return steiner_links(topo, terminals)
    return frozenset(edges)


@settings(max_examples=60, deadline=None)
@given(topo=topologies(2, 16), data=st.data())
def test_one_region_serves_every_tree_inside_it(topo, data):
    """``hub_region_candidates`` lays a region's subgraph out once (``region_of``) for
    all its chunks: every tree equals ``induced_steiner`` laying it out per call, and
    the candidates equal those made that way (regions from random switch subsets)."""
    switches = list(topo.switches)
    within = data.draw(st.lists(st.sampled_from(switches), min_size=1, unique=True))
    region = arbitrary.region_of(topo, within)
    for _ in range(data.draw(st.integers(1, 6))):
        terms = data.draw(st.lists(st.sampled_from(switches), min_size=1, max_size=6))
        assert arbitrary.induced_steiner(topo, terms, within, region) == \
            induced_steiner_reference(topo, terms, within)
    regions = data.draw(st.lists(st.lists(st.sampled_from(switches), min_size=1, unique=True),
                                 min_size=1, max_size=4))
    mode = data.draw(st.sampled_from(["exclude", "include"]))
    got = list(arbitrary.hub_region_candidates(topo, regions, mode, 3, "t"))
    with pytest.MonkeyPatch.context() as mp:  # the reference: the subgraph per call
        mp.setattr(arbitrary, "induced_steiner",
                   lambda t, terms, w, region=None: induced_steiner_reference(t, terms, w))
        assert got == list(arbitrary.hub_region_candidates(topo, regions, mode, 3, "t"))
