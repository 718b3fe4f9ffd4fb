"""Elmo under join/leave churn: re-planning only the changed groups equals a full recompute.

A membership version changes a few groups; the strategy re-plans those
(:meth:`strategies.elmo.assignment.Controller.update`) and moves at most one
other group per changed queue across a switch's s-rule capacity. These
properties draw small Clos networks, tight limits (a few s-rules per switch,
so queues overflow and default p-rules appear), random groups and random
join/leave sequences, and compare every version with the definition
(:func:`strategies.elmo.prules.plan_groups` over all groups) and with a fresh
install: the same switch configurations, the same published headers, the
same control writes between versions.

References
----------
Elmo SIGCOMM 2019 §3.2 (s-rules under a capacity, default p-rule), §4
(controller), §5.1 (join/leave events); Elmo-MCast/numerical-evals
``simulation/dynamic.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.caches import Caches
from sim.dataplanes.control_state import count_writes
from sim.dataplanes.elmo.headers import INFO_GIDS, INFO_GROUPS, pack_group
from sim.dataplanes.groups import Group
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from topologies.model import Topology, node_sort_key
from topologies.specs import load_topology


class ChurnPopulation:
    """A GroupSource whose versions are given membership tables (a test double of
    ``tenants-churn``: ``plan``, ``log``, ``version``, ``changed_groups``)."""

    def __init__(self, versions: list[list[tuple[str, ...]]], version: int = 0,
                 extra: Sequence[int] = (), plan: object = None) -> None:
        self.versions = versions
        self.version = version
        self.plan = plan if plan is not None else object()
        self.log = "test churn"
        self.extra = tuple(extra)  # unchanged gids reported as changed (must not matter)
        self._table = [Group(g, 0, hosts) for g, hosts in enumerate(versions[version])]

    def groups(self) -> list[Group]:
        return self._table

    def at(self, version: int, extra: Sequence[int] = ()) -> ChurnPopulation:
        return ChurnPopulation(self.versions, version, extra, self.plan)

    def changed_groups(self, old: int, new: int) -> list[int]:
        a, b = self.versions[old], self.versions[new]
        diff = {g for g in range(len(a)) if a[g] != b[g]}
        return sorted(diff | {g for g in self.extra if g < len(a)})


@st.composite
def clos(draw) -> Topology:
    return load_topology(
        f"elmo:pods={draw(st.integers(1, 3))},leaves={draw(st.integers(1, 5))},"
        f"hosts={draw(st.integers(1, 4))},spines={draw(st.integers(1, 2))},cores=2")


def tight_params() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({
        "redundancy": st.sampled_from([0, 1, 3]),
        "spine_redundancy": st.sampled_from([0, 2]),
        "leaf_prules": st.integers(0, 3),
        "spine_prules": st.integers(0, 2),
        "switches_per_prule": st.integers(1, 3),
        "leaf_srules": st.integers(0, 3),
        "spine_srules": st.integers(0, 2),
        "default_prule": st.booleans()})


@st.composite
def membership(draw, topo: Topology) -> list[list[tuple[str, ...]]]:
    """An initial membership and the versions after each join/leave step (a step joins
    or leaves one to three hosts in one to three groups)."""
    hosts = list(topo.hosts)
    groups = draw(st.integers(1, 10))
    now = [draw(st.sets(st.sampled_from(hosts), min_size=1, max_size=len(hosts)))
           for _ in range(groups)]
    versions = [now]
    for _ in range(draw(st.integers(1, 8))):
        now = [set(g) for g in now]
        for gid in draw(st.lists(st.integers(0, groups - 1), min_size=1, max_size=3)):
            for h in draw(st.lists(st.sampled_from(hosts), min_size=1, max_size=3)):
                if h in now[gid] and len(now[gid]) > 1:
                    now[gid].discard(h)  # a leave (a group keeps one host: its sender)
                else:
                    now[gid].add(h)  # a join
        versions.append(now)
    return [[tuple(sorted(g, key=node_sort_key)) for g in v] for v in versions]


@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_churn_steps_equal_the_full_recompute(data):
    topo = data.draw(clos())
    raw = data.draw(tight_params())
    versions = data.draw(membership(topo))
    # the versions visited: forwards, sometimes back or skipping (changed_groups is symmetric)
    path = data.draw(st.lists(st.integers(0, len(versions) - 1), min_size=1, max_size=10))
    root = ChurnPopulation(versions)
    strategy = make_strategy("elmo", raw)
    strategy.use_caches(Caches())
    first = strategy.install(topo, Knowledge(population=root, seed=1, caches=strategy.caches))
    previous, previous_fresh = first, first
    layout = strategy.layout(topo)
    index = {h: i for i, h in enumerate(topo.hosts)}
    for version in path:
        n = len(versions[version])
        extra = data.draw(st.lists(st.integers(0, n - 1), max_size=2))
        pop = root.at(version, extra)
        state = strategy.install(topo, Knowledge(population=pop, seed=1,
                                                 caches=strategy.caches))
        fresh = make_strategy("elmo", raw).install(
            topo, Knowledge(population=ChurnPopulation(versions, version), seed=1))
        assert state.switches == fresh.switches
        assert state.publisher_info[INFO_GROUPS] == fresh.publisher_info[INFO_GROUPS]
        assert state.publisher_info[INFO_GIDS] == fresh.publisher_info[INFO_GIDS]
        # the definition: every group's published header is plan_groups' over all groups
        plans = strategy.plan(topo, list(enumerate(versions[version])))
        published = state.publisher_info[INFO_GROUPS]
        assert [published[g] for g in range(n)] == [pack_group(p.rules, layout, index)
                                                    for p in plans]
        assert count_writes(previous, state) == count_writes(previous_fresh, fresh)
        previous, previous_fresh = state, fresh
        if version:  # the step re-planned the changed groups, it did not install afresh
            assert strategy._last.owned and strategy._last.version == version
    # the cached version-0 install was not changed by the steps
    again = make_strategy("elmo", raw)
    again.use_caches(strategy.caches)
    assert again.install(topo, Knowledge(population=root, seed=1,
                                         caches=strategy.caches)) is first
    assert first.switches == make_strategy("elmo", raw).install(
        topo, Knowledge(population=ChurnPopulation(versions), seed=1)).switches


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), steps=st.integers(2, 12), events=st.integers(1, 30),
       params=tight_params())
def test_tenants_churn_steps_equal_fresh_installs(seed, steps, events, params):
    """The real stream (``tenants-churn``): states, published headers and control
    writes of the incremental installs equal those of a fresh install per version."""
    topo = load_topology("elmo:pods=2,leaves=4,hosts=4,spines=2,cores=2")
    spec = f"tenants-churn:groups=40,tenants=8,vms_max=40,events_per_step={events}"
    pop = receiver_model(spec).population(topo, child_rng(seed, "pop"))
    strategy = make_strategy("elmo", params)
    previous = previous_fresh = None
    for run in range(steps):
        view = pop.at(run)
        state = strategy.install(topo, Knowledge(population=view, seed=seed))
        fresh = make_strategy("elmo", params).install(
            topo, Knowledge(population=view, seed=seed))
        assert state.switches == fresh.switches
        assert state.publisher_info == fresh.publisher_info
        if previous is not None:
            assert count_writes(previous, state) == count_writes(previous_fresh, fresh)
        previous, previous_fresh = state, fresh
