"""``tenants`` and ``tenants-churn``: Elmo's multi-tenant multicast workload.

The workload of Elmo's evaluation (Shahbaz et al., "Elmo: Source Routed
Multicast for Public Clouds", SIGCOMM 2019, §5.1; the authors' numerical
model Elmo-MCast/numerical-evals): tenants with exponentially distributed VM
counts placed on the hosts of a datacenter, and multicast groups drawn from
each tenant's VMs. :mod:`sim.workloads.tenant_plan` draws the datacenter
(every step and its source are listed there), :mod:`sim.workloads.tenant_churn`
the join/leave stream. Receiver models::

    tenants:groups=1000,tenants=3000,vms_min=10,vms_max=5000,max_vms_per_host=20,
            placement=pod-leaf,hosts_per_leaf=12,group_size=wve,min_group_size=5,
            part=0,parts=1
    tenants-churn:<the same>,events_per_step=10,join_percent=50

Every default is Elmo's except ``groups`` (Elmo: 1,000,000; the default
1,000 keeps a cell to seconds; the scale is the spec's). Of the settings
§5.1 evaluates, the defaults are the trace-based sizes (``group_size=wve``)
and the colocated placement (``placement=pod-leaf,hosts_per_leaf=12``,
Elmo's P = 12); ``group_size=uniform`` and ``hosts_per_leaf=1`` (P = 1) or
``placement=pod`` are the others. (numerical-evals' own default is
``uniform`` with ``colocate-uniform``.)

Notifications. Each group has one *sender*, a member VM drawn uniformly
(its host is the publisher); a notification is one group's packet: the
sender's host publishes and the receivers are the distinct hosts of the
group's receiving members except the sender's own host. Elmo's hypervisor
switch delivers to VMs on the sender's host itself (Elmo §3: the source
hypervisor switch encapsulates and replicates), so that host never receives
from the network, even when it holds other members. The runners draw the
publisher uniformly from :attr:`TenantsPopulation.publishers`, which holds
the sender host of every group of the cell's slice (a host once per group
it sends for), and :meth:`TenantsPopulation.draw` then picks one of that
host's groups uniformly: every group of the slice is equally likely.
Receivers can be empty (all other members on the sender's host). Without
churn the runners draw a cell's notifications in batches
(:meth:`TenantsPopulation.draw_runs`, compiled, the same numbers).

Slices. ``part`` / ``parts`` select the groups whose notifications the cell
sends: gids ``part, part + parts, ...`` (a strided slice, so every part is a
sample of the whole). The datacenter, the groups and :meth:`groups` do not
depend on the slice (:meth:`TenantsParams.workload_key` omits it, so every
part of a seed draws the same plan, and a runner partition that shares
:class:`~sim.dataplanes.caches.Caches` builds it once). A group-based
strategy (Elmo's s-rules are assigned across all groups under a per-switch
capacity) installs from all groups, whichever part the cell sends.

Group-based strategies read the population as a
:class:`~sim.dataplanes.groups.GroupSource` (``groups()``, ``version``),
plus :meth:`TenantsPopulation.group_of` (the gid of a drawn notification),
:meth:`TenantsPopulation.changed_groups` (gids changed between two
versions) and ``population.plan`` (the shared :class:`TenantPlan`;
``plan.key`` names it by value). Virtual-tree strategies get a
:class:`~strategies.virtual_tree.client_view.ControllerView`: each sender
host with, per receiver host, the share of its groups that reach it.

Churn (``tenants-churn``, a step model): notification ``run`` sees the
membership after ``run x events_per_step`` events of the stream; its row's
``control_writes`` counts the writes between the states of consecutive
steps. ``version`` is the number of events applied.

References
----------
Elmo SIGCOMM 2019 §3 (hypervisor switches), §5.1 (setup, placement P, group
sizes, 1M groups, 1M join/leave events); Elmo-MCast/numerical-evals
``simulation/tenants.py``, ``placement.py``, ``dynamic.py``, ``event.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import overload

import numpy as np

from sim.dataplanes import pcg64_draws
from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.groups import Group
from sim.dataplanes.seeds import RunStreams
from sim.workloads.receivers import (
    DrawnRuns,
    Population,
    PopulationBase,
    StepAxis,
    register_receiver_model,
)
from sim.workloads.tenant_churn import ChurnLog
from sim.workloads.tenant_plan import GroupSizes, Placement, PlanParams, TenantPlan
from topologies.model import Topology
from topologies.registry import check


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantsParams:
    """Parameters of the ``tenants`` receiver model (Elmo §5.1 defaults but ``groups``).

    Parameters
    ----------
    groups : int
        Multicast groups in the datacenter (Elmo: 1,000,000; default 1,000).
    tenants : int
        Tenants (3,000).
    vms_min, vms_max : int
        Smallest and largest VM count of a tenant (10 and 5,000).
    max_vms_per_host : int
        VMs a host holds at most (20).
    placement : {"pod", "pod-leaf"}
        VM placement (numerical-evals ``colocate-uniform`` and
        ``colocate-colocate-uniform``).
    hosts_per_leaf : int
        Hosts a tenant takes from a leaf per visit under ``pod-leaf``
        (Elmo's P; 12).
    group_size : {"uniform", "wve"}
        Group-size distribution.
    min_group_size : int
        Smallest group (5); at most ``vms_min``.
    part, parts : int
        The cell sends for groups ``part, part + parts, ...`` (0 and 1: all).
    """

    groups: int = 1000
    tenants: int = 3000
    vms_min: int = 10
    vms_max: int = 5000
    max_vms_per_host: int = 20
    placement: Placement = "pod-leaf"
    hosts_per_leaf: int = 12
    group_size: GroupSizes = "wve"
    min_group_size: int = 5
    part: int = 0
    parts: int = 1

    def __post_init__(self) -> None:
        check(self.groups >= 1, f"groups must be an integer >= 1; got {self.groups}")
        check(self.tenants >= 1, f"tenants must be an integer >= 1; got {self.tenants}")
        check(1 <= self.vms_min <= self.vms_max,
              f"vms_min and vms_max must satisfy 1 <= vms_min <= vms_max; got "
              f"{self.vms_min} and {self.vms_max}")
        check(self.max_vms_per_host >= 1,
              f"max_vms_per_host must be an integer >= 1; got {self.max_vms_per_host}")
        check(self.placement in ("pod", "pod-leaf"),
              f"placement must be pod or pod-leaf; got {self.placement!r}")
        check(self.hosts_per_leaf >= 1,
              f"hosts_per_leaf must be an integer >= 1; got {self.hosts_per_leaf}")
        check(self.group_size in ("uniform", "wve"),
              f"group_size must be uniform or wve; got {self.group_size!r}")
        check(1 <= self.min_group_size <= self.vms_min,
              f"min_group_size must be in 1..vms_min ({self.vms_min}); got {self.min_group_size}")
        check(self.parts >= 1, f"parts must be an integer >= 1; got {self.parts}")
        check(0 <= self.part < self.parts,
              f"part must be in 0..parts-1 ({self.parts - 1}); got {self.part}")

    def plan_params(self) -> PlanParams:
        """The parameters that fix the datacenter (not the slice, not the churn)."""
        return PlanParams(**{f.name: getattr(self, f.name) for f in fields(PlanParams)})

    def workload_key(self) -> str:
        """The spec of the datacenter alone: every part (and churn setting) of a
        seed draws the same plan (:meth:`experiments.cells.spec.Cell.workload_seed_for`)."""
        p = self.plan_params()
        return "tenants:" + ",".join(f"{f.name}={getattr(p, f.name)}" for f in fields(p))


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantChurnParams(TenantsParams):
    """``tenants-churn``: :class:`TenantsParams` plus the join/leave stream.

    Parameters
    ----------
    events_per_step : int
        Join/leave events between consecutive notifications (>= 1).
    join_percent : float
        Probability (percent) that an event of a group strictly between
        ``min_group_size`` and its tenant's size is a join (Elmo: 50).
    """

    events_per_step: int = 10
    join_percent: float = 50.0

    def __post_init__(self) -> None:
        TenantsParams.__post_init__(self)
        check(self.events_per_step >= 1,
              f"events_per_step must be an integer >= 1; got {self.events_per_step}")
        check(0 <= self.join_percent <= 100,
              f"join_percent must be in [0, 100]; got {self.join_percent}")


# -- groups --------------------------------------------------------------------


class GroupTable(Sequence[Group]):
    """The groups of a plan at one membership version, built per gid on demand.

    ``table[gid]`` is a :class:`~sim.dataplanes.groups.Group`;
    :meth:`host_indices` gives the same hosts as indices into
    ``topology.hosts`` (sorted; the host names ``h1..hM`` sort the same way).
    Nothing per group is stored beyond the plan's member cache.
    """

    def __init__(self, plan: TenantPlan, version: int = 0, log: ChurnLog | None = None) -> None:
        self.plan = plan
        self.version = version
        self.log = log

    def __len__(self) -> int:
        return self.plan.groups

    def receiving_vms(self, gid: int) -> np.ndarray:
        """The group's receiving member VMs (tenant-local indices)."""
        if self.log is None or not self.version:
            return self.plan.members(gid)
        return self.log.receivers_at(gid, self.version)

    def host_indices(self, gid: int) -> np.ndarray:
        """Sorted distinct host indices of the group's receiving members."""
        self._check(gid)
        return self.plan.hosts_of_vms(int(self.plan.group_tenant[gid]), self.receiving_vms(gid))

    def host_indices_of(self, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`host_indices` of distinct ``gids`` at once: ``(offsets, hosts)``, group
        ``gids[i]``'s at ``hosts[offsets[i]:offsets[i + 1]]`` (at version 0 the member
        draws run in one batch, :meth:`TenantPlan.member_hosts`)."""
        gids = np.asarray(gids, dtype=np.int64)
        if len(gids):
            self._check(int(gids.min()))
            self._check(int(gids.max()))
        if self.log is None or not self.version:
            return self.plan.member_hosts(gids)
        parts = [self.host_indices(g) for g in gids.tolist()]
        offsets = np.zeros(len(parts) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        return offsets, np.concatenate([np.zeros(0, np.int64), *parts]).astype(np.int64)

    def _check(self, gid: int) -> None:
        check(0 <= gid < self.plan.groups, f"gid must be in 0..{self.plan.groups - 1}, got {gid}")

    @overload
    def __getitem__(self, gid: int) -> Group: ...

    @overload
    def __getitem__(self, gid: slice) -> list[Group]: ...

    def __getitem__(self, gid: int | slice) -> Group | list[Group]:
        if isinstance(gid, slice):
            return [self[g] for g in range(*gid.indices(len(self)))]
        if gid < 0:
            gid += len(self)
        names = self.plan.topology.hosts
        return Group(gid, int(self.plan.group_tenant[gid]),
                     tuple(names[i] for i in self.host_indices(gid).tolist()))

    def __iter__(self) -> Iterator[Group]:
        return (self[g] for g in range(len(self)))


# -- the population -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Slice:
    """The groups one cell sends for, indexed by sender host."""

    gids: np.ndarray               # the slice's gids sorted by (sender host, gid)
    start: np.ndarray              # gids of host h: gids[start[h]:start[h + 1]]
    publishers: tuple[str, ...]    # the sender host of every gid of the slice, gid order
    senders: np.ndarray            # the same as host indices


def _slice(plan: TenantPlan, part: int, parts: int) -> _Slice:
    key = ("slice", part, parts)
    got = plan.shared.get(key)
    if got is None:
        gids = np.arange(part, plan.groups, parts, dtype=np.int64)
        check(len(gids) > 0, f"tenants: part {part} of {parts} holds no group "
                             f"({plan.groups} groups); lower parts")
        hosts = plan.sender_host[gids]
        order = np.argsort(hosts, kind="stable")
        start = np.searchsorted(hosts[order], np.arange(len(plan.topology.hosts) + 1))
        names = plan.topology.hosts
        got = plan.shared[key] = _Slice(gids[order], start,
                                        tuple(names[h] for h in hosts.tolist()), hosts)
    return got  # type: ignore[return-value]


class TenantsPopulation(PopulationBase):
    """Elmo's groups as a :class:`~sim.workloads.receivers.Population` and a
    :class:`~sim.dataplanes.groups.GroupSource` (see the module docstring).

    Attributes
    ----------
    plan : TenantPlan
        The datacenter (shared by every part and version of a seed).
    version : int
        Join/leave events applied (0 without churn).
    """

    def __init__(self, plan: TenantPlan, part: int = 0, parts: int = 1, *,
                 log: ChurnLog | None = None, events_per_step: int = 0, version: int = 0,
                 drawn: dict[tuple[str, frozenset[str]], int] | None = None) -> None:
        self.plan = plan
        self.part, self.parts = part, parts
        self.log = log
        self.events_per_step = events_per_step
        self.version: int = version  # type: ignore[assignment]  # narrower than the base's
        self._slice = _slice(plan, part, parts)
        self._drawn = {} if drawn is None else drawn  # (publisher, receivers) -> gid, all views
        self._batches: list[tuple[np.ndarray, np.ndarray]] = []  # draw_runs' (hosts, gids)
        self._view: TenantsPopulation | None = None
        self._table: GroupTable | None = None
        self._controller: object = None

    @property
    def publishers(self) -> tuple[str, ...]:  # type: ignore[override]
        return self._slice.publishers

    # -- GroupSource --------------------------------------------------------
    def groups(self) -> GroupTable:
        """Every group of the datacenter at this version (the same object per call;
        at version 0 the same object for every part of the plan)."""
        if self._table is None:
            if self.version == 0:
                got = self.plan.shared.get("table")
                if got is None:
                    got = self.plan.shared["table"] = GroupTable(self.plan)
                self._table = got  # type: ignore[assignment]
            else:
                self._table = GroupTable(self.plan, self.version, self.log)
        return self._table  # type: ignore[return-value]

    def group_of(self, publisher: str, receivers: frozenset[str]) -> int | None:
        """The gid of a notification drawn from this population (the last draw
        with these hosts), else the lowest gid of the slice that the publisher
        sends for whose other hosts are ``receivers``; None if there is none."""
        self._note_batches()
        gid = self._drawn.get((publisher, receivers))
        if gid is not None:
            return gid
        table = self.groups()
        for g in self._candidates(publisher).tolist():
            if self._receivers(table, g, publisher) == receivers:
                return int(g)
        return None

    def changed_groups(self, old_version: int, new_version: int) -> np.ndarray:
        """Sorted gids whose membership changed between two versions (none without churn)."""
        if self.log is None:
            return np.zeros(0, dtype=np.int64)
        return self.log.changed(old_version, new_version)

    # -- Population ---------------------------------------------------------
    def _candidates(self, publisher: str) -> np.ndarray:
        h = self.plan.topology.host_id(publisher)
        s = self._slice
        return s.gids[s.start[h]:s.start[h + 1]]

    def _receivers(self, table: GroupTable, gid: int, publisher: str) -> frozenset[str]:
        names = self.plan.topology.hosts
        h = self.plan.topology.host_id(publisher)
        return frozenset(names[i] for i in table.host_indices(gid).tolist() if i != h)

    def draw(self, publisher: str, run: int, rng: np.random.Generator
             ) -> tuple[None, frozenset[str]]:
        """One of ``publisher``'s groups, uniformly; its other receiving hosts."""
        candidates = self._candidates(publisher)
        check(len(candidates) > 0, f"{publisher} sends for no group of this tenants population "
                                   f"(part {self.part} of {self.parts})")
        gid = int(candidates[int(rng.integers(len(candidates)))])
        receivers = self._receivers(self.groups(), gid, publisher)
        self._note_batches()
        self._drawn[(publisher, receivers)] = gid
        return None, receivers

    def draw_runs(self, runs: RunStreams, publisher: str | None = None) -> DrawnRuns | None:
        """Every run's draws at once (:meth:`Population.draw_runs`) while the
        membership stays put (no churn) and the runs pick their publisher.

        Run ``r`` draws what :meth:`draw` draws after the runners' publisher
        draw: ``integers(len(publishers))``, then ``integers(len(candidates))``
        among that host's groups; its receivers are the group's
        (:meth:`TenantPlan.receiver_hosts`). Compiled
        (:data:`sim.dataplanes.pcg64_draws.publisher_and_index`) where it agrees
        with numpy, through numpy's generators otherwise: the same numbers.
        """
        if self.log is not None or publisher is not None:
            return None  # the per-run draws (and their errors) apply
        s, count = self._slice, runs.count
        ranges = np.diff(s.start)
        drawn, pick = np.empty(count, np.int64), np.empty(count, np.int64)
        if pcg64_draws.kernel_agrees() and pcg64_draws.publisher_and_index is not None:
            pcg64_draws.publisher_and_index(runs.words(), len(s.senders), s.senders, ranges,
                                            drawn, pick)
        else:
            for run, rng in enumerate(runs.generators()):
                drawn[run] = rng.integers(len(s.senders))
                pick[run] = rng.integers(ranges[s.senders[drawn[run]]])
        hosts = s.senders[drawn]
        gids = s.gids[s.start[hosts] + pick]
        self._batches.append((hosts, gids))
        distinct, which = np.unique(gids, return_inverse=True)
        starts, receivers = self.plan.receiver_hosts(distinct)
        sizes = np.diff(starts)[which]
        offsets = np.zeros(count + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        at = np.repeat(starts[which] - offsets[:-1], sizes) + np.arange(offsets[-1])
        return DrawnRuns(self.plan.topology.hosts, hosts, offsets, receivers[at])

    def _note_batches(self) -> None:
        """Enter the draws of :meth:`draw_runs` into the ``(publisher, receivers) -> gid``
        map of :meth:`group_of`, in draw order (on demand: only tests ask)."""
        if not self._batches:
            return
        table, names = self.groups(), self.plan.topology.hosts
        for hosts, gids in self._batches:
            for h, gid in zip(hosts.tolist(), gids.tolist(), strict=True):
                self._drawn[(names[h], self._receivers(table, gid, names[h]))] = gid
        self._batches.clear()

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        return self.draw(publisher, self.version, rng)[1]

    def at(self, run: int) -> Population:
        """The population after ``run x events_per_step`` events (itself without churn)."""
        version = run * self.events_per_step
        if version == self.version:
            return self
        view = self._view
        if view is None or view.version != version:
            view = self._view = TenantsPopulation(
                self.plan, self.part, self.parts, log=self.log,
                events_per_step=self.events_per_step, version=version, drawn=self._drawn)
        return view

    def controller_view(self) -> object:
        """Sender hosts and, per receiver host, the share of their groups reaching it
        (what virtual-tree strategies install from)."""
        if self._controller is None:
            from strategies.virtual_tree.client_view import ControllerView  # on demand

            table, names = self.groups(), self.plan.topology.hosts
            subs: dict[str, tuple[tuple[str, float], ...]] = {}
            s = self._slice
            for h in np.flatnonzero(np.diff(s.start)).tolist():
                gids = s.gids[s.start[h]:s.start[h + 1]]
                reached = np.concatenate([table.host_indices(int(g)) for g in gids])
                hosts, counts = np.unique(reached[reached != h], return_counts=True)
                subs[names[h]] = tuple((names[i], c / len(gids))
                                       for i, c in zip(hosts.tolist(), counts.tolist(),
                                                       strict=True))
            self._controller = ControllerView(publishers=tuple(subs), subscriptions=subs)
        return self._controller


# -- registration ----------------------------------------------------------------


def tenant_plan(params: TenantsParams, topology: Topology, rng: np.random.Generator,
                caches: Caches | None = None) -> TenantPlan:
    """The datacenter of ``params`` drawn from ``rng`` (one draw: the plan's root).

    Plans are kept in ``caches.workload_plans`` (the store of workload plans)
    under ``("tenants", Identity(topology), workload key, root)``, so the
    parts and churn settings of one seed that share ``caches`` share one plan.
    """
    root = int(rng.integers(2**63))
    if caches is None:
        return TenantPlan(topology, params.plan_params(), root)
    key = ("tenants", Identity(topology), params.workload_key(), root)
    return caches.workload_plans.get_or_make(  # type: ignore[no-any-return]
        key, lambda: TenantPlan(topology, params.plan_params(), root))


@register_receiver_model(
    "tenants", TenantsParams,
    "Elmo's tenants: expon VM counts, pod/leaf placement, groups per tenant by VMs, "
    "uniform or WVE sizes; one notification = one group's packet (Elmo §5.1)",
    takes_caches=True)
def _tenants(params: TenantsParams, topology: Topology, rng: np.random.Generator,
             caches: Caches | None = None) -> Population:
    return TenantsPopulation(tenant_plan(params, topology, rng, caches), params.part,
                             params.parts)


def _churn_log(plan: TenantPlan, join_percent: float) -> ChurnLog:
    key = ("churn", join_percent)
    got = plan.shared.get(key)
    if got is None:
        got = plan.shared[key] = ChurnLog(plan, join_percent)
    return got  # type: ignore[return-value]


@register_receiver_model(
    "tenants-churn", TenantChurnParams,
    "Elmo's tenants with a join/leave stream: events_per_step events before each "
    "notification (Elmo §5.1, numerical-evals dynamic.py)",
    steps=StepAxis("join/leave events", "events",
                   lambda params, run: float(run * params.events_per_step)),
    takes_caches=True)
def _tenants_churn(params: TenantChurnParams, topology: Topology, rng: np.random.Generator,
                   caches: Caches | None = None) -> Population:
    plan = tenant_plan(params, topology, rng, caches)
    return TenantsPopulation(plan, params.part, params.parts,
                             log=_churn_log(plan, params.join_percent),
                             events_per_step=params.events_per_step)

