"""The ``replacement`` receiver model (seed 000 §4.4.3, Fig. 4.8)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sim.workloads.replacement  # noqa: F401  (registers "replacement")
from sim.dataplanes.control_state import diff
from sim.workloads.receivers import receiver_model
from sim.workloads.replacement import ReplacementPopulation, replacement_plan
from strategies.virtual_tree.hybrid_churn import churn_updates, stored_tree_state
from topologies.registry import SpecError
from topologies.specs import load_topology

TOPO = "jellyfish:switches=40,degree=4,hosts=1,seed=2"


def setup(seed: int, share: float = 0.3):
    topo = load_topology(TOPO)
    rng = np.random.default_rng(seed)
    pub = topo.hosts[int(rng.integers(len(topo.hosts)))]
    others = [h for h in topo.hosts if h != pub]
    k = round(share * len(topo.hosts))
    subs = frozenset(others[int(i)] for i in rng.choice(len(others), size=k, replace=False))
    return topo, pub, subs


@pytest.mark.parametrize("policy", ["HEAD", "RULE", "RAND"])
@pytest.mark.parametrize("seed", [1, 2])
def test_same_sequence_as_churn_updates(policy, seed):
    """Same generator -> same replacements as strategies.virtual_tree.hybrid_churn.churn_updates."""
    topo, pub, subs = setup(seed)
    curve = churn_updates(topo, pub, subs, policy=policy, rng=np.random.default_rng(seed + 10))
    plan = replacement_plan(topo, pub, subs, policy=policy, rng=np.random.default_rng(seed + 10))
    initial = previous = stored_tree_state(topo, pub, plan.stable)
    per_step, writes = [], 0
    for k in range(1, len(plan.replacements) + 1):
        state = stored_tree_state(topo, pub, plan.after(k)[1])
        writes += len(diff(previous, state))
        previous = state
        per_step.append((k, len(diff(initial, state)), writes))
    got = {k: (u, w) for k, u, w in per_step}
    got[0] = (0, 0)
    assert tuple(got[k][0] for k in curve.replaced) == curve.updates
    assert tuple(got[k][1] for k in curve.replaced) == curve.writes


@given(st.integers(0, 2**32 - 1), st.sampled_from(["HEAD", "RULE", "RAND"]))
def test_replacements_keep_size_roles_and_exclude_the_publisher(seed, policy):
    topo, pub, subs = setup(seed % 1000)
    plan = replacement_plan(topo, pub, subs, policy=policy, rng=np.random.default_rng(seed))
    n = len(subs)
    assert len(plan.replacements) == n
    assert {r.victim for r in plan.replacements} == set(subs)  # each original once
    assert len(plan.stable) == (7 * n + 5) // 10  # round_half_up(70% x n)
    for k in range(n + 1):
        current, stable = plan.after(k)
        assert len(current) == n and pub not in current
        assert stable <= current and len(stable) == len(plan.stable)
    dynamic_first = [r.stable for r in plan.replacements]
    n_dyn = n - len(plan.stable)
    if policy == "HEAD":
        assert dynamic_first == [False] * n_dyn + [True] * len(plan.stable)
    elif policy == "RULE":
        assert dynamic_first == [True] * len(plan.stable) + [False] * n_dyn


def test_population_steps_are_nested_and_stable_follows():
    model = receiver_model("replacement:percent=30,ratio_dynamic=30,policy=HEAD,step=10")
    topo = load_topology(TOPO)
    pop = model.population(topo, np.random.default_rng(5))
    assert isinstance(pop, ReplacementPopulation) and len(pop.publishers) == 1
    pub = pop.publishers[0]
    n = len(pop.plan.subscribers)
    assert n == 12  # 30 % of 40 hosts
    rng = np.random.default_rng(0)
    seen = [pop.receivers(pub, rng) for _ in range(12)]  # runs 0..11 by call count
    assert seen[0] == frozenset(pop.plan.subscribers)
    assert [pop.replaced_at(r) for r in range(12)] == [0, 1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 12]
    for run, current in enumerate(seen):
        assert current == pop.plan.after(pop.replaced_at(run))[0]
        assert pop.stable(pub, run) == pop.plan.after(pop.replaced_at(run))[1]
    # HEAD: the stable set does not change while dynamic subscribers are replaced (30 % of 12)
    assert all(pop.stable(pub, r) == pop.plan.stable for r in range(4))
    assert pop.stable(pub, 5) != pop.plan.stable
    assert pop.receivers(pub, rng, run=3) == seen[3]
    with pytest.raises(SpecError, match="publisher"):
        pop.receivers("h999", rng)


@pytest.mark.parametrize("bad", ["policy=LIFO", "step=7", "percent=0", "ratio_dynamic=120"])
def test_bad_parameters_name_the_field(bad):
    with pytest.raises(SpecError, match=bad.split("=")[0]):
        receiver_model(f"replacement:{bad}")


def test_hybrid_rule_updates_per_step_head_knee_rule_from_the_start():
    """Fig. 4.8 shape on a small network: HEAD writes nothing up to 30 % replaced."""
    from experiments.cells.pipeline import cell_rows
    from experiments.cells.spec import Cell

    def curve(policy):
        cell = Cell(experiment="t", topology=TOPO, strategy="hybrid",
                    params=(("ratio", "30:70"),),
                    receivers=f"replacement:policy={policy},percent=30,ratio_dynamic=30,step=10",
                    payload_bytes=50, seed=3, notifications=11)
        rows = cell_rows(cell)
        assert all(r["false_negatives"] == r["false_positives"] == r["duplicates"] == 0
                   for r in rows)
        return [r["control_writes"] for r in rows]

    head, rule = curve("HEAD"), curve("RULE")
    assert head[:4] == [0, 0, 0, 0] and sum(head) > 0
    assert rule[1] > 0
    assert sum(rule[:4]) > sum(head[:4])
