"""Flow limits: seed 001's merge, cost and deployment examples, and their invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies.prefix_filter.flow_enforcers import enforce_local, process_switch, switch_order
from strategies.prefix_filter.flow_limits import (
    PathInfo,
    PrefixTable,
    cell_representatives,
    deployment_plan,
    history_cost,
    min_space_cost,
    normalize_flows,
    plan_is_safe,
    traffic_cost,
)

F = frozenset


def test_seed001_imperfect_merge_example() -> None:
    # (1->0000->2,3) + (1->0011->3) -> (1->00->2,3)
    t = PrefixTable({"0000": {2, 3}, "0011": {3}})
    assert t.leaf_merge_points() == ["00"]
    ports, removed = t.merge("00")
    assert ports == F({2, 3}) and sorted(removed) == ["0000", "0011"]
    assert t.flows == {"00": F({2, 3})}


def test_seed001_merge_tree_example_merges_at_000() -> None:
    t = PrefixTable({"00001011": {2}, "000111": {4}})
    assert t.leaf_merge_points() == ["000"]
    t.merge("000")
    assert t.flows == {"000": F({2, 4})}


def test_seed001_false_positive_example() -> None:
    # (1->000->2,3) + (1->011->3) merged to (1->0->2,3)
    before = PrefixTable({"000": {2, 3}, "011": {3}})
    after = before.copy()
    after.merge("0")
    fp = {e: len(after.lpm(e) - before.lpm(e)) for e in ("0010", "0000", "0110")}
    assert fp == {"0010": 2, "0000": 0, "0110": 1}  # event1, event2, event3


def test_leaf_merge_points_have_cardinality_two_or_three() -> None:
    t = PrefixTable({"0": {1}, "00": {1, 2}, "001": {1, 2, 3}, "1": {4}, "10": {4, 5},
                     "11": {4, 6}})
    assert t.leaf_merge_points() == ["00", "1"]
    assert len(t.block("1")) == 3


def test_min_space_cost_counts_total_expansion_per_port() -> None:
    small = PrefixTable({"000000": {1}, "000001": {1}, "00001": {2}})
    # merging at "0000" sends port 1 over 0000 (4/64 of which 2/64 new)...
    assert min_space_cost(small, "00000") == 0.0  # a perfect merge
    assert min_space_cost(small, "0000") == pytest.approx(2 / 64 + 2 / 64)


def test_min_space_cost_ignores_ports_the_covering_flow_already_sends() -> None:
    t = PrefixTable({"0": {7}, "000": {7, 1}, "011": {7, 2}})
    # port 7 is in every flow of the block and the region: it adds no expansion;
    # region(0) = 1/2, port 1 covers 1/8, port 2 covers 1/8 -> (1/2 - 1/8) x 2
    assert min_space_cost(t, "0") == pytest.approx(0.75)
    nested = PrefixTable({"": {7}, "000": {7, 1}, "001": {7, 1}})
    assert min_space_cost(nested, "00") == 0.0  # the covering "" already sends 7


def test_seed001_traffic_cost_worked_example_is_475() -> None:
    table = PrefixTable({"0000": {2, 3}, "0011": {2}})
    paths = [PathInfo(("0000", "0011"), ("00",), 1000.0),
             PathInfo(("00",), ("0",), 200.0)]
    assert traffic_cost(table, "00", paths, {2: 3, 3: 1}) == pytest.approx(475.0)


def test_seed001_history_cost_example_is_100() -> None:
    table = PrefixTable({"0000": {2}, "0001": {2, 3}})
    events = tuple(sorted(["0001" + format(i % 16, "04b") for i in range(400)]
                          + ["0000" + format(i % 16, "04b") for i in range(100)]))
    path = PathInfo(("000",), ("000",), 500.0, events, 1.0)
    assert history_cost(table, "000", [path], {2: 1, 3: 1}) == pytest.approx(100.0)
    half = PathInfo(("000",), ("000",), 500.0, events[::2], 0.5)
    assert history_cost(table, "000", [half], {2: 1, 3: 1}) == pytest.approx(100.0)


def _flow_sets(max_len: int = 5):
    key = st.text(alphabet="01", max_size=max_len)
    return st.dictionaries(key, st.frozensets(st.integers(1, 4), min_size=1, max_size=3),
                           min_size=1, max_size=12)


def _require(table, logical) -> bool:
    ref = normalize_flows(logical)
    reps = cell_representatives(sorted(set(table.flows) | set(ref.flows)))
    return all(table.lpm(r) >= ref.lpm(r) for r in reps)


@given(_flow_sets(), st.randoms(use_true_random=False))
def test_algorithm1_in_any_order_equals_the_normalised_flow_set(logical, rnd) -> None:
    items = sorted(logical.items())
    rnd.shuffle(items)
    t = PrefixTable()
    for dz, ports in items:
        for p in sorted(ports):
            t.install(dz, (p,))
    assert t.flows == normalize_flows(logical).flows
    # invariant: a flow's ports contain those of every flow covering it
    for k in t.keys:
        for a in t.ancestors(k, strict=True):
            assert t.flows[k] >= t.flows[a]


@given(_flow_sets(6), st.integers(1, 5), st.sampled_from(["baseline", "min-space"]),
       st.integers(0, 3))
def test_local_enforcer_respects_the_limit_without_false_negatives(logical, limit, mode,
                                                                    seed) -> None:
    tables = {1: PrefixTable(), 2: PrefixTable()}
    split = {1: {k: v for i, (k, v) in enumerate(sorted(logical.items())) if i % 2 == 0},
             2: {k: v for i, (k, v) in enumerate(sorted(logical.items())) if i % 2 == 1}}
    rng = np.random.default_rng(seed)
    for port in (1, 2):
        for dz, ports in sorted(split[port].items()):
            tables[port].install(dz, ports)
            if sum(len(t) for t in tables.values()) > limit + 1:
                enforce_local(tables, limit + 1, mode, rng)
    total = sum(len(t) for t in tables.values())
    # only an ingress table with a single flow cannot shrink further
    assert total <= max(limit + 1, sum(1 for t in tables.values() if len(t)))
    for port in (1, 2):
        assert _require(tables[port], split[port])


@given(_flow_sets(6), st.integers(1, 6))
def test_global_greedy_reaches_the_limit_and_alg7_never_opens_a_fn_window(logical,
                                                                           limit) -> None:
    unlimited = normalize_flows(logical)
    cur = unlimited.copy()
    if len(cur) > limit + 1:  # a local enforcer's result as the current state
        enforce_local({1: cur}, limit + 1, "baseline", np.random.default_rng(1))
    new = unlimited.copy()
    process_switch({1: new}, limit, lambda port, t, node, block: min_space_cost(t, node, block))
    assert len(new) <= max(limit, 1)
    assert _require(new, logical)
    plan = deployment_plan(cur.flows, new.flows)
    assert plan_is_safe(cur.flows, plan, unlimited.flows)
    assert plan.peak <= max(len(cur), len(new)) + 1


def test_switch_order_follows_hop_groups_then_upstream_count() -> None:
    upstream = {"s1": {"p": []}, "s2": {"p": ["s1"]}, "s3": {"p": ["s1"], "q": []},
                "s4": {"p": ["s1", "s2"]}}
    assert switch_order(["s1", "s2", "s3", "s4"], upstream) == ["s1", "s3", "s2", "s4"]
