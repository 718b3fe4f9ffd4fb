"""pleroma-dz's per-update work, incremental, equals the full recomputation (seed 001 §4.2, §5).

- :meth:`PleromaModel.unlimited` renormalises only the (switch, ingress) whose
  logical (dz, egress) pairs changed (installing the new pairs by Algorithm 1
  into a copy of the old table) and equals :func:`unlimited_flows` of the
  logical flows after random installs and removals;
- :class:`IncrementalStates` rebuilds only the switches (and ports) whose
  physical flows changed and builds the states :func:`state_reference` builds,
  with the same group ids and the same write counts;
- end to end, pleroma-dz's states, records and reference flows through churn
  are those of the reference paths.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import ControlState, _config_writes, count_writes
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.content_filter import GroupAllocator
from strategies.prefix_filter.flow_enforcers import EnforcerStats
from strategies.prefix_filter.flow_limits import PrefixTable, normalize_flows
from strategies.prefix_filter.pleroma import (
    PleromaDz,
    PleromaModel,
    _add_pairs,
    new_pairs,
    unlimited_flows,
)
from strategies.prefix_filter.pleroma_install import Enforcer, install_batched
from strategies.prefix_filter.pleroma_state import IncrementalStates, state_reference
from topologies.specs import load_topology

DZ = st.text(alphabet="01", min_size=0, max_size=5)
FLOWS = st.lists(DZ, min_size=1, max_size=4, unique=True).map(lambda f: tuple(sorted(f)))
HOP = st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.integers(1, 3), st.integers(1, 4))
PATH = st.tuples(FLOWS, st.lists(HOP, min_size=1, max_size=4, unique_by=lambda h: h[0]))
#: ("add", paths) installs a subscription; ("remove", k) removes the k-th one still there;
#: ("read", 0) takes the unlimited flows in between
OPS = st.lists(st.one_of(st.tuples(st.just("add"), st.lists(PATH, min_size=1, max_size=4)),
                         st.tuples(st.just("remove"), st.integers(0, 20)),
                         st.tuples(st.just("read"), st.just(0))), min_size=1, max_size=14)


def _tables(tables: dict) -> dict:
    """Flow tables as plain values, the order of ports, flows and keys included."""
    return {sw: [(port, list(t.flows.items()), list(t.keys)) for port, t in per.items()]
            for sw, per in tables.items()}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(DZ, st.frozensets(st.integers(1, 4), min_size=1, max_size=3),
                       max_size=8),
       st.sets(st.tuples(DZ, st.integers(1, 4)), min_size=1, max_size=6))
def test_adding_pairs_equals_normalising_again(logical: dict, pairs: set) -> None:
    more = {dz: set(ports) for dz, ports in logical.items()}
    for dz, port in pairs:
        more.setdefault(dz, set()).add(port)
    got = _add_pairs(normalize_flows(logical), pairs)
    want = normalize_flows(more)
    assert (list(got.flows.items()), got.keys) == (list(want.flows.items()), want.keys)


@settings(max_examples=200, deadline=None)
@given(OPS, st.integers(0, 8), st.sampled_from(["baseline", "min-space"]))
def test_unlimited_equals_the_full_normalisation(ops: list, limit: int, mode: str) -> None:
    strategy = make_strategy("pleroma-dz")
    assert isinstance(strategy, PleromaDz)
    model = PleromaModel(length=5, dims=None, subs={}, sub_dz={}, adv_dz={}, logical={},
                         physical={}, records={})
    enforcer = Enforcer(limit, mode, np.random.default_rng(3), EnforcerStats())  # type: ignore[arg-type]
    taken = []  # every table a read returned, with its contents then
    for sid, (op, arg) in enumerate(ops):
        if op == "add":
            model.mark(new_pairs(model.logical, arg))
            model.subs[sid] = None  # type: ignore[assignment]
            model.records[sid] = install_batched(model, arg, enforcer)
        elif op == "remove" and model.subs:
            strategy._remove(model, sorted(model.subs)[arg % len(model.subs)])
        else:
            got = model.unlimited()
            assert _tables(got) == _tables(unlimited_flows(model.logical))
            taken.append((dict(got), _tables(got)))
    assert _tables(model.unlimited()) == _tables(unlimited_flows(model.logical))
    for got, then in taken:  # tables handed out earlier never change
        assert _tables(got) == then


SWITCHES = ["s1", "s2", "s3", "s4"]
#: one step: (switch, ingress) tables set to random flows (empty: the port goes away)
STEP = st.dictionaries(st.tuples(st.sampled_from(SWITCHES), st.integers(1, 3)),
                       st.dictionaries(DZ, st.frozensets(st.integers(1, 4), min_size=1,
                                                         max_size=3), max_size=5),
                       max_size=4)


class _Topology:
    switches = SWITCHES


def _apply(physical: dict, step: dict, keep_empty: bool) -> None:
    for (sw, inp), flows in step.items():
        per = physical.setdefault(sw, {})
        if flows or keep_empty:
            per[inp] = PrefixTable(flows)
        else:
            per.pop(inp, None)


@settings(max_examples=200, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=8), st.booleans(), st.booleans())
def test_incremental_states_equal_the_reference(steps: list, v4: bool, keep_empty: bool
                                                ) -> None:
    topology = _Topology()
    physical: dict = {}
    fast, ref = IncrementalStates(), GroupAllocator()
    fast_groups = GroupAllocator()
    before: tuple[ControlState, ControlState] | None = None
    for step in steps:
        _apply(physical, step, keep_empty)
        got = fast.build(topology, physical, fast_groups, v4, 5)  # type: ignore[arg-type]
        want = state_reference(topology, physical, ref, v4, 5)  # type: ignore[arg-type]
        assert got == want
        assert fast_groups._ids == ref._ids
        if before is not None:  # the counts marked on the new configurations are the compared
            compared = sum(_config_writes(before[0].config(sw), got.config(sw))
                           for sw in SWITCHES)
            assert count_writes(before[0], got) == compared == count_writes(before[1], want)
        before = (got, want)


def _churn(fast: bool, params: dict, seed: int, runs: int) -> list:
    topology = load_topology("regulartree:depth=2,fanout=3,hosts=2")
    pop = receiver_model("content:subs=25,publishers=3,dims=2,bits=8,width=0.3,dist=mixed,"
                         "churn=4").population(topology, child_rng(seed, "population"))
    strategy = make_strategy("pleroma-dz", {"max_dz": 5, **params})
    assert isinstance(strategy, PleromaDz)
    incremental = PleromaModel.unlimited
    if not fast:  # the reference paths: every state and unlimited table made again
        strategy.build_state = state_reference
        PleromaModel.unlimited = lambda self: unlimited_flows(self.logical)  # type: ignore[method-assign]
    states, refs, writes = [], [], []
    state = None
    try:
        for run in range(runs):
            k = Knowledge(population=pop.at(run), seed=1)
            new = strategy.install(topology, k) if state is None else strategy.update(
                topology, state, k)
            if state is not None:
                writes.append(count_writes(state, new))
            state = new
            states.append(state)
            refs.append(_tables(strategy.record_of(state).content.reference))
    finally:
        PleromaModel.unlimited = incremental  # type: ignore[method-assign]
    model = strategy.model_of(state)
    # the fast path reads every state's reference flows after the cell's builds
    refs_after = [_tables(strategy.record_of(s).content.reference) for s in states]
    return [states, refs, refs_after, writes, model.records, _tables(model.physical),
            strategy.stats.merges, strategy.record_of(state).extra]


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([{}, {"flow_limit": 6, "local": "baseline"},
                        {"flow_limit": 8, "local": "min-space"},
                        {"flow_limit": 8, "algorithm": "history", "window": 40},
                        {"flow_limit": 8, "algorithm": "traffic", "global_every": 6}]),
       st.integers(1, 50))
def test_pleroma_through_churn_equals_the_reference_paths(params: dict, seed: int) -> None:
    assert _churn(True, params, seed, 5) == _churn(False, params, seed, 5)
