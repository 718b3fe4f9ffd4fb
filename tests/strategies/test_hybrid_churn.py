"""Fig. 4.8 (seed 000 §4.4.3): T' rule updates of a 30:70 hybrid under subscriber churn."""

from __future__ import annotations

import numpy as np
import pytest

from sim.dataplanes.control_state import diff
from strategies.virtual_tree.hybrid_churn import churn_updates, stored_tree_state
from topologies.registry import SpecError
from topologies.specs import load_topology

TOPO = load_topology("jellyfish:switches=64,degree=4,seed=1")
PUB = "h1"
SEEDS = range(8)


def subscribers(seed: int, n: int = 20) -> list[str]:
    others = [h for h in TOPO.hosts if h != PUB]
    picks = np.random.default_rng(1000 + seed).choice(len(others), n, replace=False)
    return [others[int(i)] for i in picks]


def curve(policy: str, seed: int, **kw):
    return churn_updates(TOPO, PUB, subscribers(seed), policy=policy,
                         rng=np.random.default_rng(seed), **kw)


def mean(policy: str, **kw) -> np.ndarray:
    return np.mean([curve(policy, s, **kw).updates for s in SEEDS], axis=0)


def test_steps_are_0_to_100_percent_in_10_percent_steps():
    c = curve("HEAD", 0)
    assert c.percent == tuple(range(0, 101, 10))
    assert c.replaced == (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20)
    assert c.updates[0] == c.writes[0] == 0
    assert all(w >= u for u, w in zip(c.updates, c.writes, strict=True))


@pytest.mark.parametrize("seed", SEEDS)
def test_head_needs_no_tree_update_until_the_dynamic_share_is_replaced(seed):
    c = curve("HEAD", seed)  # 30% of 20 subscribers = 6 dynamic ones
    assert c.updates[:4] == (0, 0, 0, 0) and c.writes[:4] == (0, 0, 0, 0)
    assert c.updates[4] > 0  # from 40% on stable subscribers go, and T' changes


@pytest.mark.parametrize("seed", SEEDS)
def test_rule_updates_the_tree_from_the_first_step(seed):
    c = curve("RULE", seed)
    assert all(u > 0 for u in c.updates[1:])
    assert list(c.writes) == sorted(c.writes)
    # after the 14 stable subscribers (70%) only dynamic ones are left: no more writes
    assert c.writes[7:] == (c.writes[7],) * 4


def test_policies_order_at_low_churn_and_converge_at_full_churn():
    head, rule = mean("HEAD"), mean("RULE")
    rand, uniform = mean("RAND"), mean("RAND", rand_mode="uniform")
    for k in (1, 2, 3):  # 10-30%: best case HEAD, worst case RULE, RAND in between
        assert head[k] == 0 < rand[k] < rule[k]
        assert head[k] < uniform[k] < rule[k]
    # the gap is largest at low churn and closes: all converge at 100%
    assert rule[3] - head[3] > rule[10] - head[10]
    for other in (head, rand, uniform):
        assert abs(other[10] - rule[10]) <= 0.15 * rule[10]


@pytest.mark.parametrize(("policy", "mode", "share"), [
    ("HEAD", "coin", 0.0), ("RULE", "coin", 1.0), ("RAND", "coin", 0.5), ("RAND", "uniform", 0.7)])
def test_which_subscribers_go_first(policy, mode, share):
    # up to 30%, dynamic ones are left under every policy: the stable share is the policy's
    got = np.mean([curve(policy, s, rand_mode=mode).stable_replaced[3] / 6 for s in range(40)])
    assert abs(got - share) <= 0.1


def test_same_generator_seed_gives_the_same_curve():
    assert curve("RAND", 3) == curve("RAND", 3)


def test_update_count_is_the_diff_of_tree_states():
    subs = subscribers(0)
    a = stored_tree_state(TOPO, PUB, subs[:10])
    b = stored_tree_state(TOPO, PUB, subs[1:11])
    assert len(diff(a, a)) == 0 and len(diff(a, b)) > 0
    assert all(w.entity.table == "MyIngress.check_tree" for w in diff(a, b))


def test_bad_arguments_name_the_problem():
    with pytest.raises(SpecError, match="policy"):
        curve("LIFO", 0)
    with pytest.raises(SpecError, match="publisher"):
        churn_updates(TOPO, PUB, [PUB, "h2"], policy="HEAD", rng=np.random.default_rng(0))
    with pytest.raises(SpecError, match="non-subscriber"):
        churn_updates(TOPO, PUB, [h for h in TOPO.hosts if h != PUB], policy="HEAD",
                      rng=np.random.default_rng(0))
