"""The memoised local enforcer equals its reference (every candidate and cost recomputed).

PLEROMA's local enforcers (seed 001 §5.3) pick a leaf merge point after
every install that overflows a switch. The memo (:func:`min_space_costs`,
:func:`cheapest_leaf_merge`, :func:`cheapest_merge`) reuses the candidates
and MS costs of tables no write touched; these tests drive random installs,
merges and enforcer runs on copies of the same tables, one memoised and one
on the reference, and require the same picks and the same tables after
every step.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from strategies.prefix_filter.flow_enforcers import (
    cheapest_merge,
    cheapest_merge_reference,
    enforce_local,
)
from strategies.prefix_filter.flow_limits import (
    PrefixTable,
    cheapest_leaf_merge,
    min_space_cost,
    min_space_costs,
)

DZ = st.text(alphabet="01", min_size=0, max_size=5)
PORTS = st.frozensets(st.integers(1, 12), min_size=1, max_size=4)
INSTALL = st.tuples(st.just("install"), st.integers(1, 3), DZ, PORTS)
ENFORCE = st.tuples(st.just("enforce"), st.integers(1, 3), st.integers(0, 12),
                    st.sampled_from(["baseline", "min-space"]))
MERGE = st.tuples(st.just("merge"), st.integers(1, 3), st.integers(0, 50), st.none())
OPS = st.lists(st.one_of(INSTALL, INSTALL, ENFORCE, MERGE), min_size=1, max_size=60)


def _snapshot(tables: dict[int, PrefixTable]) -> dict[int, dict[str, frozenset[int]]]:
    return {p: dict(t.flows) for p, t in tables.items()}


def _check_memo(tables: dict[int, PrefixTable]) -> None:
    for t in tables.values():
        ref = t.compute_leaf_merge_points()
        assert t.leaf_merge_points() == ref
        costs = {m: min_space_cost(t, m) for m in ref}
        assert min_space_costs(t) == costs
        assert cheapest_leaf_merge(t) == min(((c, m) for m, c in costs.items()), default=None)
    assert cheapest_merge(tables) == cheapest_merge_reference(tables)


@settings(max_examples=150)
@given(OPS)
def test_memoised_enforcer_equals_reference(ops: list[tuple]) -> None:
    memo = {p: PrefixTable() for p in (1, 2, 3)}
    ref = {p: PrefixTable() for p in (1, 2, 3)}
    rng_memo, rng_ref = np.random.default_rng(7), np.random.default_rng(7)
    for kind, port, a, b in ops:
        if kind == "install":
            assert memo[port].install(a, b) == ref[port].install(a, b)
        elif kind == "merge":
            points = ref[port].compute_leaf_merge_points()
            if points:
                node = points[a % len(points)]
                assert memo[port].merge(node) == ref[port].merge(node)
        else:
            limit = max(sum(len(t) for t in ref.values()) - a, 0)
            got = enforce_local(memo, limit, b, rng_memo)
            want = enforce_local(ref, limit, b, rng_ref, reference=True)
            assert got == want
        assert _snapshot(memo) == _snapshot(ref)
        _check_memo(memo)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(["set", "delete", "read"]), DZ, PORTS), max_size=80))
def test_incremental_leaf_points_and_costs_equal_the_full_computation(
        ops: list[tuple[str, str, frozenset[int]]]) -> None:
    t = PrefixTable({"": {1}})
    min_space_costs(t)
    for kind, dz, ports in ops + [("read", "", frozenset())]:
        if kind == "set":
            t.set(dz, ports)
        elif kind == "delete" and dz in t.flows:
            t.delete(dz)
        elif kind == "read":
            points = t.compute_leaf_merge_points()
            assert t.leaf_merge_points() == points
            assert min_space_costs(t) == {m: min_space_cost(t, m) for m in points}


def test_a_write_drops_the_memo() -> None:
    t = PrefixTable({"0000": {2}, "0001": {3}, "11": {2}})
    assert t.leaf_merge_points() == ["000"]
    assert cheapest_leaf_merge(t) == (min_space_cost(t, "000"), "000")
    t.install("10", {2})  # "1" becomes a leaf merge point with a cost of 0
    assert t.leaf_merge_points() == ["000", "1"]
    assert cheapest_leaf_merge(t) == (0.0, "1")


def test_deleting_a_covering_flow_costs_the_nodes_below_it_again() -> None:
    t = PrefixTable({"": {1}, "0": {2}, "000": {2, 3}, "001": {4}})
    assert min_space_costs(t) == {"00": min_space_cost(t, "00")}
    t.delete("0")  # "00"'s covering flow is now "" (port 2 is no longer covered)
    assert min_space_costs(t) == {"00": min_space_cost(t, "00")}
