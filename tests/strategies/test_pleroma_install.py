"""Batched flow installation equals the flow-by-flow reference (pleroma-dz, seed 001 §4.2).

:func:`install_batched` installs each distinct (switch, ingress, egress,
flows) of a subscription once and skips installs :meth:`PrefixTable.carries`
shows fully covered; :func:`install_reference` installs every (publisher,
hop, dz) by Algorithm 1. These tests drive both on copies of the same
models (random hops with repeats, random flows, flow limits, both local
enforcers) and require the same logical and physical flows, merges, peak,
records, enforcer statistics and random stream; end to end, the same
control states through churn.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.prefix_filter.flow_enforcers import EnforcerStats
from strategies.prefix_filter.flow_limits import PrefixTable
from strategies.prefix_filter.pleroma import PleromaDz, PleromaModel
from strategies.prefix_filter.pleroma_install import (
    Enforcer,
    install_batched,
    install_reference,
)
from topologies.specs import load_topology

DZ = st.text(alphabet="01", min_size=0, max_size=5)
FLOWS = st.lists(DZ, min_size=1, max_size=4, unique=True).map(lambda f: tuple(sorted(f)))
HOP = st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.integers(1, 3), st.integers(1, 4))
PATH = st.tuples(FLOWS, st.lists(HOP, min_size=1, max_size=4, unique_by=lambda h: h[0]))
# a few flow sets and hop lists, reused so that repeated (switch, ingress, egress, flows) occur
SUBS = st.lists(st.lists(PATH, min_size=1, max_size=5), min_size=1, max_size=6)


def _model() -> PleromaModel:
    return PleromaModel(length=5, dims=None, subs={}, sub_dz={}, adv_dz={}, logical={},
                        physical={}, records={})


def _snapshot(model: PleromaModel) -> tuple:
    return (model.logical,
            {sw: {i: dict(t.flows) for i, t in per.items()} for sw, per in model.physical.items()},
            model.merged, model.peak)


@settings(max_examples=200, deadline=None)
@given(SUBS, st.integers(0, 8), st.sampled_from(["baseline", "min-space"]), st.booleans())
def test_batched_install_equals_the_reference(subs: list, limit: int, mode: str,
                                              repeat: bool) -> None:
    models = {"ref": _model(), "fast": _model()}
    rngs = {k: np.random.default_rng(5) for k in models}
    stats = {k: EnforcerStats() for k in models}
    for paths in subs:
        if repeat:  # every path twice: the second is the repeat a batch skips
            paths = paths + paths
        got = {}
        for name, fn in (("ref", install_reference), ("fast", install_batched)):
            enforcer = Enforcer(limit, mode, rngs[name], stats[name])  # type: ignore[arg-type]
            got[name] = fn(models[name], paths, enforcer)
        assert got["fast"] == got["ref"]
        assert _snapshot(models["fast"]) == _snapshot(models["ref"])
        assert (stats["fast"].calls, stats["fast"].merges) == (stats["ref"].calls,
                                                               stats["ref"].merges)
    assert rngs["fast"].integers(1 << 30) == rngs["ref"].integers(1 << 30)


OPS = st.lists(st.tuples(st.sampled_from(["install", "install", "merge", "set", "delete"]), DZ,
                         st.frozensets(st.integers(1, 4), min_size=1, max_size=3), DZ,
                         st.integers(1, 4)), max_size=25)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_carries_means_an_install_changes_nothing(ops: list) -> None:
    """Probed after every write, so the index of carrying keys is built early and kept."""
    t = PrefixTable()
    for kind, key, ports, dz, port in ops:
        if kind == "install":
            t.install(key, ports)
        elif kind == "merge":
            points = t.compute_leaf_merge_points()
            if points:
                t.merge(points[len(key) % len(points)])
        elif kind == "set":
            t.set(key, ports)
        elif key in t.flows:
            t.delete(key)
        prefixes = frozenset(dz[:i] for i in range(len(dz) + 1))
        probe = t.copy()
        assert t.carries(prefixes, port) == (not probe.install(dz, (port,)))


def _states(install_flows, params: dict, seed: int, runs: int) -> list:
    topology = load_topology("regulartree:depth=2,fanout=3,hosts=2")
    pop = receiver_model("content:subs=25,publishers=3,dims=2,bits=8,width=0.3,dist=mixed,"
                         "churn=4").population(topology, child_rng(seed, "population"))
    strategy = make_strategy("pleroma-dz", {"max_dz": 5, **params})
    assert isinstance(strategy, PleromaDz)
    strategy.install_flows = install_flows
    state = strategy.install(topology, Knowledge(population=pop.at(0), seed=1))
    out = [state]
    for run in range(1, runs):
        state = strategy.update(topology, state, Knowledge(population=pop.at(run), seed=1))
        out.append(state)
    model = strategy.model_of(state)
    return [out, _snapshot(model), model.records, strategy.stats.merges]


@settings(max_examples=12, deadline=None)
@given(st.sampled_from([{}, {"flow_limit": 6, "local": "baseline"},
                        {"flow_limit": 8, "local": "min-space"},
                        {"flow_limit": 8, "algorithm": "history", "window": 40}]),
       st.integers(1, 50))
def test_pleroma_states_through_churn_equal_with_the_reference_install(params: dict,
                                                                      seed: int) -> None:
    assert _states(install_batched, params, seed, 4) == _states(install_reference, params,
                                                                  seed, 4)


def _nonempty(logical: dict) -> dict:
    return {sw: {i: flows for i, flows in per.items() if flows}
            for sw, per in logical.items() if any(per.values())}


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 50))
def test_removing_subscriptions_leaves_the_logical_flows_of_the_others(seed: int) -> None:
    """:meth:`PleromaDz._remove` takes back exactly what the records say was counted."""
    topology = load_topology("regulartree:depth=2,fanout=3,hosts=2")
    pop = receiver_model("content:subs=25,publishers=3,dims=2,bits=8,width=0.3,dist=mixed,"
                         "churn=4").population(topology, child_rng(seed, "population"))
    strategy = make_strategy("pleroma-dz", {"max_dz": 5})
    assert isinstance(strategy, PleromaDz)
    state = strategy.install(topology, Knowledge(population=pop.at(0), seed=1))
    for run in range(1, 4):
        state = strategy.update(topology, state, Knowledge(population=pop.at(run), seed=1))
        fresh = make_strategy("pleroma-dz", {"max_dz": 5})
        assert isinstance(fresh, PleromaDz)
        again = fresh.install(topology, Knowledge(population=pop.at(run), seed=1))
        assert _nonempty(strategy.model_of(state).logical) == _nonempty(
            fresh.model_of(again).logical)
