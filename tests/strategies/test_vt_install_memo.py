"""Virtual-tree installs through the runner's caches equal installs without them.

A partition's cells share one :class:`~sim.dataplanes.caches.Caches`: the
candidates of an install are drawn once and replayed to the installs with
other rule budgets (``vt_candidates``), VT ports are remembered per topology
(``vt_ports``), and a strategy that reads only the topology
(``reads_workload = False``) shares one install across seeds and receiver
models (:mod:`strategies.virtual_tree.install_memo`). Property-tested on
random topologies, populations and budgets against a fresh ``Caches`` per
install.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.workloads.clustered  # noqa: F401  (registers "clustered")
from sim.dataplanes.caches import Caches
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.install_memo import CandidateTape, TreePorts, is_connected, tree_ports
from tests.support.random_topologies import random_topology

CH6 = ["source-routed", "vt-broadcast", "vt-random", "vt-random-variant", "vt-cycles",
       "vt-partitions", "vt-clusters", "vt-relation", "vt-freq-relation", "vt-hybrid"]


def knowledge(topology, spec: str, seed: int, caches: Caches) -> Knowledge:
    population = receiver_model(spec).population(topology, child_rng(seed, "population"),
                                                 caches=caches)
    return Knowledge(population=population, seed=seed, caches=caches)


@st.composite
def installs(draw: st.DrawFn):
    n = draw(st.integers(6, 16))
    topology = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)))
    strategy = draw(st.sampled_from(CH6))
    budgets = draw(st.lists(st.integers(0, 12), min_size=2, max_size=5))
    workloads = draw(st.lists(st.tuples(
        st.sampled_from(["clustered:scenario=nearby,churn=0",
                         "clustered:scenario=uniform,churn=0,subscribers=15",
                         "clustered:scenario=distant,churn=0,subscribers=45"]),
        st.integers(1, 10**6)), min_size=1, max_size=3))
    on_full = draw(st.sampled_from(["stop", "skip"]))
    return topology, strategy, budgets, workloads, on_full


@settings(max_examples=60, deadline=None)
@given(installs())
def test_installs_through_shared_caches_equal_fresh_ones(case):
    """Budgets and workloads in turn through one Caches (candidate tapes replayed, VT
    ports remembered, workload-free installs shared) give the states of fresh ones."""
    topology, name, budgets, workloads, on_full = case
    shared = Caches()
    for i, budget in enumerate(budgets):
        spec, seed = workloads[i % len(workloads)]
        params = {"max_rules": budget} if name != "source-routed" else {}
        if name != "source-routed" and name != "vt-hybrid":
            params["on_full"] = on_full
        strategy = make_strategy(name, params)
        got = strategy.install(topology, knowledge(topology, spec, seed, shared))
        fresh = Caches()
        want = strategy.install(topology, knowledge(topology, spec, seed, fresh))
        assert got == want
    assert len(shared.vt_candidates) <= len(budgets)


def test_a_workload_free_strategy_shares_one_install_and_tapes_span_budgets():
    topology = random_topology(12, 6, 5)
    shared = Caches()
    cycles = make_strategy("vt-cycles", {"max_rules": 3})
    a = cycles.install(topology, knowledge(topology, "clustered:scenario=nearby", 1, shared))
    b = cycles.install(topology, knowledge(topology, "clustered:scenario=distant", 2, shared))
    assert a is b  # the topology alone decides it
    relation = [make_strategy("vt-relation", {"max_rules": m}) for m in (1, 4)]
    k = knowledge(topology, "clustered:scenario=nearby", 1, shared)
    states = [s.install(topology, k) for s in relation]
    assert states[0] != states[1]
    assert shared.vt_candidates.hits == 1  # budget 4 replayed budget 1's candidates
    other = knowledge(topology, "clustered:scenario=nearby", 2, shared)
    assert relation[1].install(topology, other) is not states[1]  # another seed: not shared


def test_candidate_tape_replays_draws_lazily_and_interleaves():
    drawn = []

    def source():
        for i in range(5):
            drawn.append(i)
            yield i

    tape = CandidateTape(source())
    first = iter(tape)
    assert [next(first), next(first)] == [0, 1] and drawn == [0, 1]  # no more than asked
    assert list(tape) == [0, 1, 2, 3, 4]  # a second iteration draws the rest
    assert list(first) == [2, 3, 4] and drawn == [0, 1, 2, 3, 4]  # drawn once
    assert list(tape) == [0, 1, 2, 3, 4] and len(tape) == 5


def test_candidate_tape_raises_its_source_error_again():
    def source():
        yield 1
        raise ValueError("not connected")

    tape = CandidateTape(source())
    for _ in range(2):
        with pytest.raises(ValueError, match="not connected"):
            list(tape)


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 14), st.integers(0, 8), st.integers(0, 2**16), st.data())
def test_tree_ports_memo_answers_as_the_functions(n, extra, seed, data):
    topology = random_topology(n, extra, seed)
    memo = TreePorts(topology)
    ids = range(1, len(topology.links) + 1)
    for _ in range(3):
        edges = frozenset(data.draw(st.sets(st.sampled_from(ids), max_size=8)))
        assert memo.ports(edges) == tree_ports(topology, edges)
        assert memo.connected(edges) == is_connected(topology, edges)


def test_installs_share_a_state_only_when_everything_it_holds_is_equal():
    """vt-random at budget 0 (stops at its first candidate: no VT, one rejected) and
    source-routed (no candidates: no VT, none rejected) select the same VTs but tell the
    publishers different counts: two states. Budgets that fit every candidate share one."""
    topology = random_topology(10, 4, 3)
    shared = Caches()
    k = knowledge(topology, "clustered:scenario=nearby", 1, shared)
    none = make_strategy("vt-random", {"max_rules": 0}).install(topology, k)
    plain = make_strategy("source-routed").install(topology, k)
    assert none.publisher_info["rejected_trees"] == 1
    assert plain.publisher_info["rejected_trees"] == 0 and plain is not none
    broadcast = [make_strategy("vt-broadcast", {"max_rules": m}).install(topology, k)
                 for m in (1, 5)]
    assert broadcast[0] is broadcast[1]  # one spanning tree fits either budget
