"""Per-process caches shared by cells (issue 9) never change a row.

Population plans (``clustered``), virtual-tree installs and memoised table
lookups are reused by the cells of one seed at other churn levels. Rows of
cells run one after the other with warm caches must equal the rows of the
same cells each run from cold caches, column for column.
"""

from __future__ import annotations

import pytest

from experiments.cells.pipeline import cell_rows
from experiments.cells.spec import Cell
from sim.dataplanes.seeds import child_rng
from sim.dataplanes.virtual_tree.reference import clear_lookup_memo
from sim.workloads.clustered import clear_plan_cache
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.installation import clear_install_cache
from topologies.specs import load_topology


def cold() -> None:
    clear_plan_cache()
    clear_install_cache()
    clear_lookup_memo()


def cells(strategy: str) -> list[Cell]:
    return [Cell(experiment="cache-test", topology="zoo:Litnet", strategy=strategy,
                 params=(("max_rules", 40),) if strategy != "source-routed" else (),
                 receivers=f"clustered:scenario={scenario},churn={churn}", payload_bytes=50,
                 seed=seed, notifications=6)
            for scenario in ("nearby", "distant") for seed in (1, 2)
            for churn in (0, 30, 100)]


@pytest.mark.parametrize("strategy", ["vt-clusters", "vt-random-variant", "vt-cycles",
                                      "source-routed"])
def test_warm_caches_give_the_rows_of_cold_runs(strategy):
    todo = cells(strategy)
    cold()
    warm = [cell_rows(c) for c in todo]  # in order: later churn levels hit the caches
    fresh = []
    for c in todo:
        cold()
        fresh.append(cell_rows(c))
    assert warm == fresh
    assert sum(len(r) for r in warm) == 6 * len(todo)


def test_churn_levels_of_one_seed_share_plan_and_install():
    """The caches are hit: one plan, one view and one installed state per seed."""
    topo = load_topology("zoo:Litnet")
    strat = make_strategy("vt-clusters", {"max_rules": 40})
    cold()
    pops, states = [], []
    for c in cells("vt-clusters")[:3]:  # churn 0, 30, 100 of one seed
        model = receiver_model(c.receivers)
        seed = c.workload_seed_for(model)
        pops.append(model.population(topo, child_rng(seed, "population")))
        states.append(strat.install(topo, Knowledge(population=pops[-1], seed=seed)))
    assert [p.churn for p in pops] == [0, 30, 100]
    assert pops[0].controller_view() is pops[2].controller_view()
    assert states[0] is states[1] is states[2]
