"""The explicit cache object (:class:`sim.dataplanes.caches.Caches`) never changes a result.

Population plans (``clustered``), virtual-tree installs and compiled trees,
virtual-tree lookup memos and vectorised table indexes live in one
``Caches`` object that callers pass down; runners share one across the cells
of a partition, so the cells of one seed at other churn levels reuse the plan
and the install (seed 000 §6.6.2). Results computed with one shared,
warm ``Caches`` must equal those computed with a fresh one per cell, and a
fresh one must share nothing.
"""

from __future__ import annotations

import pytest

from experiments.cells.spec import Cell
from sim.dataplanes.caches import Caches, Identity, Store
from sim.dataplanes.delivery import row_metrics
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.installation import published_trees
from topologies.specs import load_topology


def cells(strategy: str) -> list[Cell]:
    return [Cell(experiment="cache-test", topology="zoo:Litnet", strategy=strategy,
                 params=(("max_rules", 40),) if strategy != "source-routed" else (),
                 receivers=f"clustered:scenario={scenario},churn={churn}", payload_bytes=50,
                 seed=seed, notifications=6)
            for scenario in ("nearby", "distant") for seed in (1, 2)
            for churn in (0, 30, 100)]


def static_results(cell: Cell, caches: Caches) -> list[dict]:
    """What the static rows of ``cell`` hold, through the layers that take ``caches``."""
    topo = load_topology(cell.topology)
    strategy = make_strategy(cell.strategy, dict(cell.params))
    strategy.use_caches(caches)  # type: ignore[attr-defined]
    model = receiver_model(cell.receivers)
    seed = cell.workload_seed_for(model)
    pop = model.population(topo, child_rng(seed, "population"), caches=caches)
    state = strategy.install(topo, Knowledge(population=pop, seed=seed, caches=caches))
    rng = child_rng(seed, "test-notifications")
    out = []
    for run in range(cell.notifications):
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        note = Notification(run, pub)
        recv = pop.receivers(pub, rng)
        d = run_notification(topo, strategy, state, note, recv,
                             payload_for(note, cell.payload_bytes))
        out.append(row_metrics(d))
    return out


@pytest.mark.parametrize("strategy", ["vt-clusters", "vt-random-variant", "vt-cycles",
                                      "source-routed"])
def test_one_shared_caches_gives_the_results_of_fresh_ones(strategy):
    todo = cells(strategy)
    shared = Caches()
    warm = [static_results(c, shared) for c in todo]  # later churn levels hit the caches
    fresh = [static_results(c, Caches()) for c in todo]
    assert warm == fresh
    assert shared.workload_plans.hits == 2 * 2 * 2  # churn 30, 100
    # a strategy that reads the workload installs once per plan; one that reads only the
    # topology once for every cell
    reads = make_strategy(strategy, {}).reads_workload  # type: ignore[attr-defined]
    assert shared.vt_installs.hits == (2 * 2 * 2 if reads else len(todo) - 1)
    assert shared.vt_lookups.hits > 0


def test_churn_levels_of_one_seed_share_plan_and_install_only_through_one_caches():
    topo = load_topology("zoo:Litnet")
    strat = make_strategy("vt-clusters", {"max_rules": 40})

    def level(c: Cell, caches: Caches):
        model = receiver_model(c.receivers)
        seed = c.workload_seed_for(model)
        pop = model.population(topo, child_rng(seed, "population"), caches=caches)
        return pop, strat.install(topo, Knowledge(population=pop, seed=seed, caches=caches))

    shared = Caches()
    (p0, s0), (p30, s30), (p100, s100) = (level(c, shared) for c in cells("vt-clusters")[:3])
    assert [p.churn for p in (p0, p30, p100)] == [0, 30, 100]
    assert p0.controller_view() is p100.controller_view()
    assert s0 is s30 is s100
    (q0, t0), (q30, t30) = (level(c, Caches()) for c in cells("vt-clusters")[:2])
    assert q0.controller_view() is not q30.controller_view()  # nothing shared ...
    assert t0 is not t30
    assert published_trees(t0) == published_trees(t30) == published_trees(s0)  # ... same VTs
    # no caches at all: the population is drawn afresh, the same as with caches
    alone = receiver_model(cells("vt-clusters")[1].receivers)
    seed = cells("vt-clusters")[1].workload_seed_for(alone)
    p = alone.population(topo, child_rng(seed, "population"))
    assert p.controller_view() == p30.controller_view()


def test_stores_are_bounded_lru_maps_keyed_by_value_or_identity():
    store: Store[int, str] = Store("test", 2)
    store.put(1, "a")
    store.put(2, "b")
    assert store.get(1) == "a"  # 1 is now the most recent
    store.put(3, "c")
    assert store.keys() == (1, 3) and store.get(2) is None
    assert (store.hits, store.misses) == (1, 1)
    with pytest.raises(ValueError, match="limit"):
        Store("bad", 0)
    a, b = [1], [1]  # equal, not identical
    assert Identity(a) == Identity(a) and Identity(a) != Identity(b)
    assert len({Identity(a), Identity(a), Identity(b)}) == 2
    caches = Caches()
    caches.vt_installs.put(("k",), "state")
    caches.clear()
    assert all(len(s) == 0 for s in caches.stores())


def test_knowledge_gets_a_fresh_caches_by_default():
    k1, k2 = Knowledge(), Knowledge()
    assert k1.caches is not k2.caches and k1 == k2  # not part of equality


def test_pipeline_rows_with_shared_caches_equal_cold_rows():
    """The cell pipeline with the runner's shared ``caches``: warm rows = cold rows."""
    from experiments.cells.pipeline import cell_rows

    todo = cells("vt-clusters")[:3]
    shared = Caches()
    warm = [cell_rows(c, caches=shared) for c in todo]
    assert warm == [cell_rows(c, caches=Caches()) for c in todo]
    assert shared.vt_installs.hits == 2
