"""Elmo's tenant workload (``tenants``, ``tenants-churn``): distributions, groups, churn.

Distribution checks compare against the formulas of Elmo-MCast/numerical-evals
``simulation/tenants.py`` (expected values worked out from them, not copied
results); placement checks against ``simulation/placement.py``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes import pcg64_draws
from sim.dataplanes.caches import Caches
from sim.dataplanes.groups import Group, GroupSource
from sim.dataplanes.seeds import RunStreams, child_rng, child_rngs
from sim.workloads.receivers import receiver_model, step_model_names, step_x
from sim.workloads.tenant_churn import JOIN, LEAVE, ChurnLog
from sim.workloads.tenant_plan import (
    VM_EXPON_RATE,
    VM_UNIFORM_SHARE,
    WVE_LARGE_SHARE,
    PlanParams,
    TenantPlan,
    draw_group_sizes,
    draw_vm_counts,
    fitting_vm_counts,
    groups_per_tenant,
)
from sim.workloads.tenants import TenantsParams, TenantsPopulation
from topologies.model import node_sort_key
from topologies.registry import SpecError
from topologies.specs import load_topology

SMALL = "elmo:pods=3,leaves=4,hosts=4,spines=2,cores=2"  # 48 hosts, 960 VM slots
SMALL_TENANTS = "tenants:tenants=12,vms_min=6,vms_max=80,groups=60"


def plan_params(**kw: object) -> PlanParams:
    base = TenantsParams(**kw)  # type: ignore[arg-type]
    return base.plan_params()


def population(spec: str = SMALL_TENANTS, topo: str = SMALL, seed: int = 1,
               caches: Caches | None = None) -> TenantsPopulation:
    pop = receiver_model(spec).population(load_topology(topo), child_rng(seed, "population"),
                                          caches=caches)
    assert isinstance(pop, TenantsPopulation)
    return pop


# -- distributions (numerical-evals tenants.py) ------------------------------------


def test_vm_counts_follow_the_expon_mix() -> None:
    """2 % uniform in [10, 5000], else floor(Exp(4.05) / 10 x 4990) + 10."""
    p = plan_params(tenants=200_000)
    counts = draw_vm_counts(p, child_rng(3, "vm"))
    assert counts.min() >= 10 and counts.max() <= 5000
    span = 4990
    expon_mean = span / (10 * VM_EXPON_RATE) - 0.5 + 10  # E[floor(X)] ~ E[X] - 1/2
    expected = (1 - VM_UNIFORM_SHARE) * expon_mean + VM_UNIFORM_SHARE * (10 + 5000) / 2
    assert counts.mean() == pytest.approx(expected, rel=0.02)
    # above the exponential's bulk only the uniform share (P(expon part > 2500) ~ e^-20)
    assert np.mean(counts > 2500) == pytest.approx(VM_UNIFORM_SHARE / 2, abs=0.002)


def test_groups_per_tenant_are_proportional_and_sum_exactly() -> None:
    counts = draw_vm_counts(plan_params(tenants=3000), child_rng(4, "vm"))
    for groups in (1, 1000, 1_000_000):
        per = groups_per_tenant(counts, groups)
        assert per.sum() == groups
        assert np.all(np.abs(per - counts / counts.sum() * groups) < 1)


@pytest.mark.parametrize("dist", ["uniform", "wve"])
def test_group_sizes_stay_in_range(dist: str) -> None:
    p = plan_params(group_size=dist)
    vms = child_rng(5, "v").integers(10, 5001, size=50_000)
    sizes = draw_group_sizes(vms, p, child_rng(5, dist))
    assert np.all(sizes >= 5) and np.all(sizes <= vms)


def test_uniform_sizes_average_the_middle_of_the_range() -> None:
    vms = np.full(100_000, 1000)
    sizes = draw_group_sizes(vms, plan_params(group_size="uniform"), child_rng(6, "u"))
    assert sizes.mean() == pytest.approx((5 + 1000) / 2, rel=0.01)


def test_wve_sizes_are_small_but_two_percent_near_the_tenant() -> None:
    """WVE: 2 % of groups within 1 - Gamma(2, 0.1)/15 of the tenant, the rest
    Gamma(2, 0.2) x v / 15 + min - 1 (mean 0.4 v / 15 + 4.5)."""
    v = 1500
    sizes = draw_group_sizes(np.full(200_000, v), plan_params(group_size="wve"),
                             child_rng(7, "w"))
    large = sizes > v / 2
    assert large.mean() == pytest.approx(WVE_LARGE_SHARE, abs=0.003)
    assert sizes[~large].mean() == pytest.approx(0.4 * v / 15 + 4.5, rel=0.02)
    assert np.median(sizes) < v / 20


# -- placement (numerical-evals placement.py) ---------------------------------------


@pytest.mark.parametrize("placement", ["pod", "pod-leaf"])
def test_placement_respects_host_capacity(placement: str) -> None:
    pop = population(f"tenants:tenants=8,vms_min=6,vms_max=20,groups=20,placement={placement},"
                     "max_vms_per_host=3")
    plan = pop.plan
    assert len(plan.vm_host) == plan.vm_count.sum()
    assert np.bincount(plan.vm_host, minlength=48).max() <= 3


def test_first_tenant_stays_in_one_pod_and_takes_p_hosts_per_leaf_visit() -> None:
    """An empty datacenter: tenant 0 fits in its first pod; with P = 4 its 16
    VMs come from 4 leaf visits of 4 distinct hosts each, so at most 4 leaves."""
    topo = load_topology("elmo:pods=2,leaves=8,hosts=8,spines=1,cores=1")
    for seed in range(20):
        p = plan_params(tenants=1, vms_min=16, vms_max=16, groups=1, min_group_size=5,
                        hosts_per_leaf=4)
        plan = TenantPlan(topo, p, seed)
        leaves = [topo.host_switch(topo.hosts[h]) for h in plan.vm_host.tolist()]
        assert len({topo.node_attrs[s]["pod"] for s in leaves}) == 1
        assert len(set(leaves)) <= 4


def test_pod_placement_spreads_a_tenant_over_distinct_hosts_of_one_pod() -> None:
    topo = load_topology("elmo:pods=2,leaves=8,hosts=8,spines=1,cores=1")
    p = plan_params(tenants=1, vms_min=40, vms_max=40, groups=1, placement="pod")
    plan = TenantPlan(topo, p, 9)
    hosts = plan.vm_host.tolist()
    assert len(set(hosts)) == 40
    assert len({topo.node_attrs[topo.host_switch(topo.hosts[h])]["pod"] for h in hosts}) == 1


def test_vm_counts_are_redrawn_until_they_fit_else_a_clear_error() -> None:
    """Elmo's defaults fill ~98 % of 27,648 x 20 slots; ~28 % of draws overflow."""
    p, slots = plan_params(), 27_648 * 20
    overflowed = 0
    for seed in range(12):
        first = int(draw_vm_counts(p, child_rng(seed, "vm")).sum())
        fitted = fitting_vm_counts(p, 27_648, child_rng(seed, "vm"))
        assert fitted.sum() <= slots
        if first > slots:
            overflowed += 1
        else:  # the first draw is kept when it fits
            assert fitted.sum() == first
    assert overflowed >= 1
    with pytest.raises(SpecError, match=r"max_vms_per_host=1.*lower tenants or vms_max"):
        population("tenants:tenants=20,vms_min=10,vms_max=20,groups=20,max_vms_per_host=1",
                   topo="elmo:pods=2,leaves=4,hosts=8,spines=1,cores=1")


# -- groups --------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["uniform", "wve"]),
       st.sampled_from(["pod", "pod-leaf"]))
def test_group_invariants(seed: int, dist: str, placement: str) -> None:
    pop = population(f"{SMALL_TENANTS},group_size={dist},placement={placement}", seed=seed)
    plan, table = pop.plan, pop.groups()
    topo = plan.topology
    assert isinstance(pop, GroupSource)
    assert len(table) == 60 == len(plan.group_size)
    assert list(plan.group_tenant) == sorted(plan.group_tenant)  # numbered tenant by tenant
    for gid, group in enumerate(table):
        assert isinstance(group, Group) and group.gid == gid
        t = group.tenant
        members = plan.members(gid)
        assert len(set(members.tolist())) == len(members) == plan.group_size[gid]
        assert members[0] == plan.sender_vm[gid]
        assert 0 <= members.min() and members.max() < plan.vm_count[t]
        assert 5 <= len(members) <= plan.vm_count[t]
        tenant_hosts = {topo.hosts[h] for h in
                        plan.vm_host[plan.vm_offset[t]:plan.vm_offset[t + 1]].tolist()}
        assert set(group.hosts) <= tenant_hosts
        assert list(group.hosts) == sorted(set(group.hosts), key=node_sort_key)
        assert group.hosts == tuple(topo.hosts[h] for h in table.host_indices(gid).tolist())
        assert topo.hosts[plan.sender_host[gid]] in group.hosts
    assert table[-1] == table[len(table) - 1]
    assert [g.gid for g in table[2:5]] == [2, 3, 4]


def test_notifications_are_one_group_sent_by_its_sender() -> None:
    pop = population()
    table, names = pop.groups(), pop.plan.topology.hosts
    rng = child_rng(2, "draws")
    counts: Counter[int] = Counter()
    for run in range(6000):
        publisher = pop.publishers[int(rng.integers(len(pop.publishers)))]
        event, receivers = pop.at(run).draw(publisher, run, rng)
        gid = pop.group_of(publisher, receivers)
        assert event is None and gid is not None
        assert names[pop.plan.sender_host[gid]] == publisher
        assert receivers == set(table[gid].hosts) - {publisher}
        counts[gid] += 1
    # the runners' draw (uniform over publishers, one entry per group) is uniform over groups
    assert set(counts) == set(range(60))
    assert max(counts.values()) < 2 * 6000 / 60 and min(counts.values()) > 6000 / 60 / 2


def per_run_draws(pop: TenantsPopulation, root: int, count: int, start: int
                  ) -> list[tuple[str, frozenset[str]]]:
    """The runners' per-run draws (experiments.cells.workload.draw_notifications)."""
    out = []
    for run, rng in enumerate(child_rngs(root, "notification", count, start)):
        publisher = pop.publishers[int(rng.integers(len(pop.publishers)))]
        out.append((publisher, pop.at(start + run).draw(publisher, start + run, rng)[1]))
    return out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(1, 10**6), groups=st.integers(1, 90), parts=st.integers(1, 4),
       root=st.integers(0, 2**63 - 1), start=st.integers(0, 10**5), compiled=st.booleans(),
       data=st.data())
def test_batched_draws_are_the_per_run_draws(seed, groups, parts, root, start, compiled, data):
    """draw_runs gives every run's publisher and receivers as the per-run draws do,
    compiled and through numpy (the fallback where the kernels disagree or are absent)."""
    part = data.draw(st.integers(0, min(parts, groups) - 1))
    spec = f"tenants:tenants=12,vms_min=6,vms_max=80,groups={groups},part={part},parts={parts}"
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(pcg64_draws, "kernel_agrees", lambda: False)
        batched = population(spec, seed=seed).draw_runs(RunStreams(root, "notification", 40,
                                                                   start))
    assert batched is not None
    got = [(batched.publisher(r), batched.receiver_set(r)) for r in range(len(batched))]
    assert got == per_run_draws(population(spec, seed=seed), root, 40, start)
    for r in range(len(batched)):  # sorted, distinct, never the publisher's own host
        hosts = batched.receivers[batched.offsets[r]:batched.offsets[r + 1]].tolist()
        assert hosts == sorted(set(hosts)) and batched.publishers[r] not in hosts


def test_a_batch_draws_what_the_kernel_is_checked_against() -> None:
    """Without this the test above would compare the fallback with itself."""
    assert pcg64_draws.kernel_agrees() == (pcg64_draws.samples is not None)


def test_group_of_knows_the_groups_of_batched_draws() -> None:
    pop = population()
    batched = pop.draw_runs(RunStreams(9, "notification", 300))
    assert batched is not None
    table = pop.groups()
    for r in range(len(batched)):
        publisher, receivers = batched.publisher(r), batched.receiver_set(r)
        gid = pop.group_of(publisher, receivers)
        assert gid is not None and pop.plan.topology.hosts[pop.plan.sender_host[gid]] == publisher
        assert receivers == set(table[gid].hosts) - {publisher}


def test_group_of_after_batched_draws_names_the_last_drawn_group() -> None:
    """Few hosts and many groups: groups of one sender often share their receivers,
    so "the last draw with these hosts" differs from the lowest such gid."""
    spec = "tenants:tenants=3,vms_min=6,vms_max=12,groups=80"
    batched, per_run = population(spec), population(spec)
    drawn = batched.draw_runs(RunStreams(4, "notification", 400))
    assert drawn is not None
    per_run_draws(per_run, 4, 400, 0)
    keys = {(drawn.publisher(r), drawn.receiver_set(r)) for r in range(len(drawn))}
    lowest = [k for k in keys if per_run.group_of(*k) != min(
        int(g) for g in per_run._candidates(k[0])
        if per_run._receivers(per_run.groups(), int(g), k[0]) == k[1])]
    assert lowest  # the case this test is about occurs
    assert all(batched.group_of(*k) == per_run.group_of(*k) for k in keys)


def test_no_batch_under_churn_or_for_one_forced_publisher() -> None:
    assert population(CHURN).draw_runs(RunStreams(1, "notification", 5)) is None
    pop = population()
    assert pop.draw_runs(RunStreams(1, "notification", 5), pop.publishers[0]) is None


def test_parts_split_the_groups_and_share_the_datacenter() -> None:
    caches = Caches()
    parts = [population(f"{SMALL_TENANTS},part={k},parts=4", caches=caches) for k in range(4)]
    assert len({id(p.plan) for p in parts}) == 1  # one plan per seed in a shared Caches
    assert len({id(p.groups()) for p in parts}) == 1
    names = parts[0].plan.topology.hosts
    for k, pop in enumerate(parts):
        gids = range(k, 60, 4)
        assert pop.publishers == tuple(names[pop.plan.sender_host[g]] for g in gids)
    keys = {receiver_model(f"{SMALL_TENANTS},part={k},parts=4").params.workload_key()
            for k in range(4)}
    assert len(keys) == 1
    with pytest.raises(SpecError, match=r"part 63 of 70 holds no group"):
        population(f"{SMALL_TENANTS},part=63,parts=70")


def test_same_seed_same_groups_other_seed_other_groups() -> None:
    a, b, c = population(seed=1), population(seed=1), population(seed=2)
    assert a.plan is not b.plan
    assert list(a.groups()) == list(b.groups())
    assert np.array_equal(a.plan.vm_host, b.plan.vm_host)
    assert list(a.groups()) != list(c.groups())
    assert a.plan.key == b.plan.key != c.plan.key


def test_controller_view_gives_each_sender_its_hosts_with_their_share() -> None:
    pop = population()
    view = pop.controller_view()
    table, names = pop.groups(), pop.plan.topology.hosts
    for publisher, subs in view.subscriptions.items():  # type: ignore[attr-defined]
        gids = [g for g in range(60) if names[pop.plan.sender_host[g]] == publisher]
        for host, share in subs:
            assert host != publisher
            assert share == pytest.approx(sum(host in table[g].hosts for g in gids) / len(gids))


# -- churn --------------------------------------------------------------------------


CHURN = "tenants-churn:tenants=12,vms_min=6,vms_max=80,groups=60,events_per_step=7"


def replay(log: ChurnLog, version: int) -> dict[int, dict[int, bool]]:
    """Members (VM -> receives) of every touched group after ``version`` events,
    checking each event on the way."""
    plan = log.plan
    log.extend(version)
    members: dict[int, dict[int, bool]] = {}
    for k in range(version):
        gid, vm, kind = log.gid[k], log.vm[k], log.kind[k]
        cur = members.setdefault(gid, dict.fromkeys(plan.members(gid).tolist(), True))
        n = int(plan.vm_count[plan.group_tenant[gid]])
        if kind == JOIN:
            assert vm not in cur and 0 <= vm < n
            cur[vm] = log.receiver[k]
        else:
            assert kind == LEAVE and vm in cur
            assert vm != plan.sender_vm[gid]
            assert cur.pop(vm) == log.receiver[k]
        assert plan.params.min_group_size <= len(cur) <= n
    return members


def test_churn_stream_invariants_and_versions() -> None:
    pop = population(CHURN)
    log = pop.log
    assert log is not None
    view = pop.at(30)
    assert view.version == 210 and pop.at(30) is view and pop.at(0) is pop
    members = replay(log, 210)
    table = view.groups()  # type: ignore[attr-defined]
    plan = pop.plan
    for gid in range(60):
        cur = members.get(gid, dict.fromkeys(plan.members(gid).tolist(), True))
        assert set(table.receiving_vms(gid).tolist()) == {v for v, r in cur.items() if r}
        assert log.members_at(gid, 210) == len(cur)
        if gid not in members:  # untouched: the initial group
            assert table[gid] == pop.groups()[gid]
    changed = view.changed_groups(0, 210)  # type: ignore[attr-defined]
    assert changed.tolist() == sorted(set(log.gid[:210]))
    assert set(changed.tolist()) == set(members)


def test_churn_prefix_does_not_depend_on_how_far_it_was_generated() -> None:
    a = population(CHURN).log
    b = population(CHURN).log
    assert a is not None and b is not None
    a.extend(50)
    a.extend(400)
    b.extend(400)
    assert (a.gid, a.vm, a.kind, a.receiver) == (b.gid, b.vm, b.kind, b.receiver)


def test_churn_picks_groups_by_size_joins_half_and_one_third_sender_only() -> None:
    """numerical-evals dynamic.py: events per group proportional to its size;
    event.py: fair join/leave coin off the bounds, joins P/S/B one third each."""
    pop = population("tenants-churn:tenants=30,vms_min=40,vms_max=80,groups=40,"
                     "group_size=uniform,min_group_size=5",
                     topo="elmo:pods=2,leaves=8,hosts=8,spines=1,cores=1")
    log = pop.log
    assert log is not None
    log.extend(20_000)
    sizes = pop.plan.group_size.astype(float)
    share = np.bincount(np.asarray(log.gid), minlength=40) / 20_000
    assert np.abs(share - sizes / sizes.sum()).max() < 0.01
    kinds = np.asarray(log.kind)
    assert np.mean(kinds == JOIN) == pytest.approx(0.5, abs=0.02)
    joins = np.asarray(log.receiver, dtype=bool)[kinds == JOIN]
    assert np.mean(~joins) == pytest.approx(1 / 3, abs=0.02)


def test_sender_only_joins_leave_the_tree_unchanged() -> None:
    """A P join (sender only) changes the membership, not the receiving hosts."""
    pop = population(CHURN)
    log = pop.log
    assert log is not None
    log.extend(300)
    sender_only = [k for k in range(300) if log.kind[k] == JOIN and not log.receiver[k]]
    assert sender_only
    for k in sender_only:
        g = log.gid[k]
        assert log.members_at(g, k + 1) == log.members_at(g, k) + 1
        assert set(log.receivers_at(g, k + 1).tolist()) == set(log.receivers_at(g, k).tolist())


def test_tenants_churn_is_a_step_model() -> None:
    assert {"tenants-churn"} <= step_model_names()
    assert "tenants" not in step_model_names()
    assert step_x(CHURN, 4) == 28.0


def test_churn_cell_rows_count_writes_per_step() -> None:
    """A churn cell through the one cell pipeline: a workload-aware strategy
    (vt-relation installs from the controller view) updates at every step."""
    from experiments.cells.pipeline import cell_rows
    from experiments.cells.spec import Cell

    churn = ("tenants-churn:tenants=4,vms_min=5,vms_max=30,groups=8,events_per_step=3")
    cell = Cell(experiment="t", topology="elmo:pods=2,leaves=6,hosts=1,spines=2,cores=2",
                strategy="vt-relation", params=(), receivers=churn, payload_bytes=50, seed=1,
                notifications=8)
    rows = cell_rows(cell)
    assert [r["run"] for r in rows] == list(range(8))
    assert rows[0]["control_writes"] == 0
    assert sum(r["control_writes"] > 0 for r in rows) >= 3
    # the same datacenter without churn: one install, no writes
    static = cell_rows(replace(cell, receivers=churn.replace("tenants-churn", "tenants")
                               .replace(",events_per_step=3", "")))
    assert [r["control_writes"] for r in static] == [0] * 8
    assert rows[0]["publisher"] == static[0]["publisher"]


# -- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "match"), [
    ("tenants:groups=0", r"groups must be an integer >= 1; got 0"),
    ("tenants:tenants=0", r"tenants must be an integer >= 1"),
    ("tenants:vms_min=50,vms_max=10", r"vms_min and vms_max must satisfy"),
    ("tenants:max_vms_per_host=0", r"max_vms_per_host must be an integer >= 1"),
    ("tenants:placement=rack", r"parameter 'placement' must be one of pod, pod-leaf"),
    ("tenants:hosts_per_leaf=0", r"hosts_per_leaf must be an integer >= 1"),
    ("tenants:group_size=zipf", r"parameter 'group_size' must be one of uniform, wve"),
    ("tenants:min_group_size=11", r"min_group_size must be in 1..vms_min \(10\); got 11"),
    ("tenants:part=2,parts=2", r"part must be in 0..parts-1 \(1\); got 2"),
    ("tenants:parts=0", r"parts must be an integer >= 1"),
    ("tenants:group=5", r"unknown parameter 'group' \(allowed: group_size, groups,"),
    ("tenants-churn:events_per_step=0", r"events_per_step must be an integer >= 1"),
    ("tenants-churn:join_percent=120", r"join_percent must be in \[0, 100\]"),
    ("tenants:events_per_step=3", r"unknown parameter 'events_per_step'"),
])
def test_bad_parameters_name_the_field(spec: str, match: str) -> None:
    with pytest.raises(SpecError, match=match) as info:
        receiver_model(spec)
    assert "\n" not in str(info.value)


def test_a_host_that_sends_for_no_group_is_refused() -> None:
    pop = population()
    idle = next(h for h in pop.plan.topology.hosts if h not in set(pop.publishers))
    with pytest.raises(SpecError, match=rf"{idle} sends for no group"):
        pop.draw(idle, 0, child_rng(1, "x"))


# -- Elmo scale -----------------------------------------------------------------------


@pytest.mark.slow
def test_a_million_groups_fit_in_a_few_megabytes() -> None:
    """Elmo §5.1 scale: 27,648 hosts, 3,000 tenants, 1M groups. The plan keeps
    four int32 per group and per VM; members are rebuilt per gid."""
    pop = population("tenants:groups=1000000", topo="elmo")
    plan = pop.plan
    assert plan.groups == 1_000_000 and len(pop.publishers) == 1_000_000
    assert plan.memory_bytes() < 40e6
    assert plan.vm_count.sum() <= 27_648 * 20
    assert math.isclose(plan.vm_count.mean(), 180, rel_tol=0.1)
    table = pop.groups()
    for gid in (0, 499_999, 999_999):
        assert len(table[gid].hosts) >= 1


@pytest.mark.parametrize(("name", "notifications"), [("elmo.toml", 300),
                                                     ("elmo-1m.toml", 10_000)])
def test_shipped_elmo_specs_validate(name: str, notifications: int) -> None:
    """The shipped specs parse and every cell's strategy accepts the Elmo topology
    and the workload; the 1M study's slices cover every group exactly once."""
    from experiments.cells.spec import SPEC_DIR, load_spec

    spec = load_spec(SPEC_DIR / name)
    assert {c.notifications for c in spec.cells()} == {notifications}
    models = {receiver_model(c.receivers).params for c in spec.cells()}
    assert len({m.workload_key() for m in models if m.group_size == "wve"}) == 1
    if name == "elmo-1m.toml":
        assert {m.groups for m in models} == {1_000_000}
        parts = {m.parts for m in models}
        assert len(parts) == 1
        assert sorted(m.part for m in models) == list(range(parts.pop()))
        assert len({c.workload_seed_for(receiver_model(c.receivers)) for c in spec.cells()}) == 1


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(1, 10**6), groups=st.integers(1, 90), compiled=st.booleans(),
       churn=st.booleans(), data=st.data())
def test_host_indices_of_many_groups_are_those_of_each(seed, groups, compiled, churn, data):
    """host_indices_of (member draws in one batch) gives each group's host_indices,
    compiled and through numpy, at version 0 and after churn."""
    spec = (f"tenants-churn:tenants=12,vms_min=6,vms_max=80,groups={groups},events_per_step=9"
            if churn else f"tenants:tenants=12,vms_min=6,vms_max=80,groups={groups}")
    pop = population(spec, seed=seed) if not churn else receiver_model(spec).population(
        load_topology(SMALL), child_rng(seed, "population"))
    if churn:
        pop = pop.at(data.draw(st.integers(0, 4)))
    table = pop.groups()
    gids = data.draw(st.lists(st.integers(0, groups - 1), unique=True, max_size=30))
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(pcg64_draws, "kernel_agrees", lambda: False)
        offsets, hosts = table.host_indices_of(np.array(gids, np.int64))
    assert [hosts[offsets[i]:offsets[i + 1]].tolist() for i in range(len(gids))] == \
        [table.host_indices(g).tolist() for g in gids]
