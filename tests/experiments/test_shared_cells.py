"""Cells of one workload share their draws and, on one state, their fast-path metrics.

:func:`experiments.cells.workload.shared_workload` and ``shared_draws`` keep a
cell's population and drawn notifications in ``Caches.cell_draws`` for the
other cells of the same topology, receiver spec and workload seed;
:func:`experiments.cells.pipeline.shared_fast_metrics` keeps a cell's fast-path
metrics in ``Caches.fast_metrics`` for cells that run the same notifications
on the same state object with equal encoder keys
(:meth:`strategies.base.Strategy.encoder_key`: a virtual-tree strategy's class
and parameters but ``max_rules``). The definition is every cell run alone
(a fresh ``Caches``, nothing shared): a family of cells run one after another
with one shared ``Caches`` (as a runner's task runs them) gives the same rows.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.cells.pipeline import run_cell
from experiments.cells.spec import Cell
from experiments.cells.workload import (
    cell_workload,
    draw_notifications,
    shared_draws,
    shared_workload,
)
from sim.dataplanes.caches import Caches
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from topologies.specs import load_topology

VT = ("vt-broadcast", "vt-random", "vt-random-variant", "vt-cycles", "vt-partitions",
      "vt-clusters", "vt-relation", "vt-freq-relation", "vt-hybrid")
RECEIVERS = ("clustered:scenario=nearby,churn=0", "clustered:scenario=distant,churn=100",
             "clustered:scenario=uniform,churn=30,subscribers=15")


def cell(strategy: str, budget: int | None, receivers: str, seed: int, count: int,
         topology: str = "zoo:Litnet") -> Cell:
    params = (("max_rules", budget),) if budget is not None else ()
    return Cell(experiment="shared-test", topology=topology, strategy=strategy, params=params,
                receivers=receivers, payload_bytes=50, seed=seed, notifications=count)


@settings(max_examples=8, deadline=None)
@given(strategies=st.lists(st.sampled_from((*VT, "source-routed", "tree")), min_size=1,
                           max_size=2, unique=True),
       budgets=st.lists(st.sampled_from([1, 2, 5, 10, 40]), min_size=1, max_size=3,
                        unique=True),
       receivers=st.sampled_from(RECEIVERS), seed=st.integers(1, 10_000),
       count=st.integers(1, 6))
def test_a_family_with_one_caches_gives_the_rows_of_cells_run_alone(
        strategies, budgets, receivers, seed, count):
    family = [cell(s, None if s in ("source-routed", "tree") else b, receivers, seed, count)
              for s in strategies for b in budgets]
    shared = Caches()
    together = [run_cell(c, caches=shared).to_pylist() for c in family]
    alone = [run_cell(c, caches=Caches()).to_pylist() for c in family]
    assert together == alone
    # one workload: drawn once (the population and the notifications)
    assert shared.cell_draws.hits == 2 * (len(family) - 1)


def test_budgets_that_install_one_state_walk_once():
    """vt-clusters on Dfn: the largest budgets select the same VTs (one state)."""
    family = [cell("vt-clusters", b, RECEIVERS[0], 1, 12, "zoo:Dfn") for b in (30, 35, 40)]
    shared = Caches()
    together = [run_cell(c, caches=shared).to_pylist() for c in family]
    assert shared.fast_metrics.hits == 2 and shared.vt_states.hits == 2
    assert shared.cell_draws.hits == 4
    assert together == [run_cell(c, caches=Caches()).to_pylist() for c in family]
    # another receiver spec: other draws, nothing shared with the first workload
    other = cell("vt-clusters", 40, RECEIVERS[1], 1, 12, "zoo:Dfn")
    assert run_cell(other, caches=shared).to_pylist() == \
        run_cell(other, caches=Caches()).to_pylist()
    assert shared.fast_metrics.hits == 2 and shared.cell_draws.hits == 4


@settings(max_examples=10, deadline=None)
@given(receivers=st.sampled_from(RECEIVERS), seed=st.integers(1, 10_000),
       count=st.integers(0, 12))
def test_shared_draws_are_the_draws(receivers, seed, count):
    c = cell("vt-clusters", 40, receivers, seed, count)
    topo = load_topology(c.topology)
    caches = Caches()
    workload = shared_workload(c, topo, caches)
    drawn = shared_draws(c, workload, caches)
    lazily = list(draw_notifications(cell_workload(c, topo, Caches()), count))
    assert drawn is not None and len(drawn) == len(lazily) == count
    for got, want in zip(drawn, lazily, strict=True):
        assert (got.notification, got.receivers, got.stable) == \
            (want.notification, want.receivers, want.stable)
    other = dataclasses.replace(c, strategy="vt-random")
    assert shared_workload(other, topo, caches) is workload
    assert shared_draws(other, workload, caches) is drawn
    assert shared_workload(dataclasses.replace(c, seed=seed + 1), topo, caches) is not workload


@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(VT), budgets=st.lists(st.integers(0, 40), min_size=2, max_size=2),
       receivers=st.sampled_from(RECEIVERS), seed=st.integers(1, 10_000),
       runs=st.integers(1, 6))
def test_the_encoder_reads_no_rule_budget(name, budgets, receivers, seed, runs):
    """What ``encoder_key`` claims: strategies that differ in ``max_rules`` only encode
    every notification on a given state alike."""
    topo = load_topology("zoo:Litnet")
    first, second = (make_strategy(name, {"max_rules": b}) for b in budgets)
    assert first.encoder_key() == second.encoder_key()
    assert first.encoder_key() != make_strategy(name, {"max_rules": 40, "prune_unused": True}
                                                ).encoder_key()
    model = receiver_model(receivers)
    pop = model.population(topo, child_rng(seed, "population"))
    state = first.install(topo, Knowledge(population=pop, seed=seed))
    rng = child_rng(seed, "test-encodings")
    for run in range(runs):
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        note = Notification(run, pub)
        recv = pop.receivers(pub, rng)
        payload = payload_for(note, 50)
        assert first.encode(topo, state, note, recv, payload) == \
            second.encode(topo, state, note, recv, payload)


def test_churn_levels_of_one_seed_draw_their_own_notifications():
    """Churn levels share the workload seed (and the population's plan) but not the
    draws: the receiver spec is part of the key."""
    family = [cell("vt-clusters", 40, f"clustered:scenario=nearby,churn={level}", 3, 10)
              for level in (0, 30, 100)]
    shared = Caches()
    together = [run_cell(c, caches=shared).to_pylist() for c in family]
    assert together == [run_cell(c, caches=Caches()).to_pylist() for c in family]
    assert shared.workload_plans.hits == 2 and shared.cell_draws.hits == 0
