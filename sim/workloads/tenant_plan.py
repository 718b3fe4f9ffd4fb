"""The datacenter of Elmo's evaluation: tenants, VM placement, multicast groups.

A :class:`TenantPlan` is drawn once per workload seed and never changes; the
``tenants`` receiver model (:mod:`sim.workloads.tenants`) and its churn
stream (:mod:`sim.workloads.tenant_churn`) read it. Every draw comes from
``child_rng(root, component)`` (:mod:`sim.dataplanes.seeds`), so a component
added later never shifts another one's stream.

The steps, each after Elmo-MCast/numerical-evals (the authors' numerical
model of Elmo SIGCOMM 2019 §5.1; file names below are in that repository):

1. **VM counts** (``simulation/tenants.py`` ``_get_tenant_to_vm_count_map``,
   ``vm_dist='expon'``): per tenant, with probability 0.02 uniform in
   ``[vms_min, vms_max]``, else ``int(X / 10 * (vms_max - vms_min)) %
   (vms_max - vms_min) + vms_min`` with X ~ Exp(rate 4.05). The paper's
   defaults (3,000 tenants, 10..5,000 VMs, at most 20 VMs per host) fill
   about 98 % of the 552,960 VM slots of 27,648 hosts, and about 28 % of
   draws do not fit at all (numerical-evals then fails in placement); the
   counts are therefore redrawn until they fit (the distribution
   conditioned on fitting, at most :data:`FIT_ATTEMPTS` draws).
2. **Placement** (``simulation/placement.py``), tenant by tenant, at most
   ``max_vms_per_host`` VMs per host:

   - ``pod`` (numerical-evals ``colocate-uniform``): pick a pod with free
     hosts uniformly; take ``min(free hosts, VMs left)`` distinct free hosts
     of it uniformly, one VM each; repeat until the tenant is placed;
   - ``pod-leaf`` (``colocate-colocate-uniform``): pick a pod with free hosts
     uniformly; inside it, repeatedly pick a leaf with free hosts uniformly
     and take ``min(hosts_per_leaf, free hosts of the leaf, VMs left)``
     distinct free hosts of it, until the tenant is placed or the pod is
     full (then the next pod). ``hosts_per_leaf`` is the host-per-leaf
     allocation parameter (numerical-evals ``allocate_num_hosts_per_leaf``,
     ``fab_cloud.sh`` sweeps 12, 24 and 48; in the last commit of
     ``placement.py`` the loop takes the whole leaf, i.e. 48; the earlier
     ``colocate_num_hosts_per_leaf`` of the ``pre-pod-sim`` branch caps the
     hosts per leaf visit as here). Elmo's placement parameter P (VMs of a
     tenant per rack, P = 12 colocated, P = 1 spread) is this cap.

   A pod is a switch's ``pod`` attribute (``elmo`` and ``fattree``
   topologies); on topologies without pods every host-bearing switch is a
   leaf of one pod.
3. **Groups per tenant** (``_get_tenant_to_group_count_map``): proportional
   to the tenant's VMs. numerical-evals floors the quotas (1,000,000 asked
   gives about 998,500); here the largest remainders are rounded up, so the
   groups add up to ``groups`` exactly. Groups are numbered tenant by
   tenant (gid 0 is tenant 0's first group).
4. **Group sizes** (``_get_tenant_groups_to_sizes_map``), for a tenant of
   v VMs: ``uniform`` in ``[min_group_size, v]``; ``wve`` (the WVE trace
   mix of Li et al., CoNEXT 2013, as numerical-evals models it): with
   probability 0.02 ``v - int(G1 * v / 15) % v``, else ``int(G2 * v / 15 +
   min_group_size - 1) % v + 1``, with G1 ~ Gamma(2, scale 0.1), G2 ~
   Gamma(2, scale 0.2); at least ``min_group_size``.
5. **Members** (``_get_tenant_groups_to_vms_map``): a uniform sample of the
   tenant's VMs without replacement. Here it is drawn as one uniform VM, the
   group's *sender* (drawn for all groups at once), plus a uniform sample of
   the others from ``child_rng(root, "members", gid)``, which is the same
   distribution and lets any group be rebuilt alone (:meth:`TenantPlan.members`);
   nothing per member is stored.

References
----------
Elmo SIGCOMM 2019 §5.1 (3,000 tenants, 1M groups, group sizes uniform and
WVE, minimum 5, at most 20 VMs per host, placement P); Elmo-MCast/numerical-evals
``simulation/tenants.py``, ``simulation/placement.py``, ``simulation/cloud.py``,
``fab_cloud.py`` (defaults), ``fab_cloud.sh`` (placements swept).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sim.dataplanes import pcg64_draws
from sim.dataplanes.seeds import child_rng, seed_words_of
from topologies.model import Topology
from topologies.registry import check

Placement = Literal["pod", "pod-leaf"]
GroupSizes = Literal["uniform", "wve"]

#: numerical-evals tenants.py: share of tenants with a uniform VM count, and the
#: rate of the exponential the others follow
VM_UNIFORM_SHARE = 0.02
VM_EXPON_RATE = 4.05
#: numerical-evals tenants.py (wve): share of near-whole-tenant groups, gamma shape and scales
WVE_LARGE_SHARE = 0.02
WVE_SHAPE = 2.0
WVE_SCALE_LARGE = 0.1
WVE_SCALE_SMALL = 0.2
WVE_DIVISOR = 15
#: VM-count draws before giving up on fitting the tenants into the hosts
FIT_ATTEMPTS = 100
#: member arrays kept per plan (elements, int32), so a cell re-reads groups cheaply
MEMBER_CACHE_ELEMENTS = 8_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanParams:
    """What fixes a :class:`TenantPlan` (see :class:`sim.workloads.tenants.TenantsParams`)."""

    groups: int
    tenants: int
    vms_min: int
    vms_max: int
    max_vms_per_host: int
    placement: Placement
    hosts_per_leaf: int
    group_size: GroupSizes
    min_group_size: int


# -- 1. VM counts ---------------------------------------------------------------


def draw_vm_counts(p: PlanParams, rng: np.random.Generator) -> np.ndarray:
    """VM count of each tenant (numerical-evals ``vm_dist='expon'``)."""
    span = p.vms_max - p.vms_min
    u = rng.random(p.tenants)
    uniform = rng.integers(p.vms_min, p.vms_max + 1, size=p.tenants)
    x = rng.exponential(1 / VM_EXPON_RATE, size=p.tenants)
    if span == 0:
        return np.full(p.tenants, p.vms_min, dtype=np.int64)
    expon = (x / 10 * span).astype(np.int64) % span + p.vms_min
    return np.where(u < VM_UNIFORM_SHARE, uniform, expon).astype(np.int64)


def fitting_vm_counts(p: PlanParams, hosts: int, rng: np.random.Generator) -> np.ndarray:
    """VM counts that fit ``hosts x max_vms_per_host`` slots (redrawn until they do)."""
    capacity = hosts * p.max_vms_per_host
    total = 0
    for _ in range(FIT_ATTEMPTS):
        counts = draw_vm_counts(p, rng)
        total = int(counts.sum())
        if total <= capacity:
            return counts
    check(False, f"tenants: {p.tenants} tenants of {p.vms_min}..{p.vms_max} VMs need about "
                 f"{total:,} VMs, more than the {capacity:,} slots of {hosts:,} hosts x "
                 f"max_vms_per_host={p.max_vms_per_host} in {FIT_ATTEMPTS} draws; lower "
                 "tenants or vms_max, or raise max_vms_per_host")
    raise AssertionError  # unreachable: check raised


# -- 2. placement -------------------------------------------------------------------


def pods_and_leaves(topology: Topology) -> list[list[np.ndarray]]:
    """Per pod (sorted by pod number), the host indices of each of its leaves."""
    pods: dict[int, list[np.ndarray]] = {}
    for s in topology.switches:
        hosts = topology.hosts_of(s)
        if hosts:
            pod = int(topology.node_attrs.get(s, {}).get("pod", 0))
            ids = np.array(sorted(topology.host_id(h) for h in hosts), dtype=np.int64)
            pods.setdefault(pod, []).append(ids)
    return [pods[k] for k in sorted(pods)]


class _Free:
    """Free hosts (fewer than ``cap`` VMs) of a pod, per leaf, and the VM count per host."""

    def __init__(self, pods: list[list[np.ndarray]], hosts: int, cap: int) -> None:
        self.cap = cap
        self.count = np.zeros(hosts, dtype=np.int64)
        self.leaves = [[leaf.copy() for leaf in pod] for pod in pods]
        self.pods = [np.concatenate(pod) for pod in pods]
        self.open = list(range(len(pods)))  # pods with a free host

    def take(self, hosts: np.ndarray) -> None:
        self.count[hosts] += 1

    def prune(self, free: np.ndarray) -> np.ndarray:
        return free[self.count[free] < self.cap]


def place_vms(topology: Topology, counts: np.ndarray, p: PlanParams,
              rng: np.random.Generator) -> np.ndarray:
    """Host index of every VM, tenant by tenant (module docstring, step 2)."""
    free = _Free(pods_and_leaves(topology), len(topology.hosts), p.max_vms_per_host)
    out = np.empty(int(counts.sum()), dtype=np.int32)
    at = 0
    for need in counts.tolist():
        while need:
            i = int(rng.integers(len(free.open)))
            pod = free.open[i]
            if p.placement == "pod":
                hosts = free.pods[pod]
                pick = rng.choice(hosts, size=min(len(hosts), need), replace=False)
                free.take(pick)
                out[at:at + len(pick)] = pick
                at += len(pick)
                need -= len(pick)
                free.pods[pod] = free.prune(hosts)
                pod_full = not len(free.pods[pod])
            else:
                leaves = free.leaves[pod]
                while need and leaves:
                    j = int(rng.integers(len(leaves)))
                    hosts = leaves[j]
                    pick = rng.choice(hosts, size=min(p.hosts_per_leaf, len(hosts), need),
                                      replace=False)
                    free.take(pick)
                    out[at:at + len(pick)] = pick
                    at += len(pick)
                    need -= len(pick)
                    leaves[j] = free.prune(hosts)
                    if not len(leaves[j]):
                        leaves.pop(j)
                pod_full = not leaves
            if pod_full:
                free.open.pop(i)
    return out


# -- 3.-4. groups ----------------------------------------------------------------------


def groups_per_tenant(counts: np.ndarray, groups: int) -> np.ndarray:
    """Groups of each tenant, proportional to its VMs, summing to ``groups``."""
    quota = counts / counts.sum() * groups
    base = np.floor(quota).astype(np.int64)
    short = groups - int(base.sum())
    if short:
        order = np.argsort(-(quota - base), kind="stable")  # largest remainders, low index first
        base[order[:short]] += 1
    return base


def draw_group_sizes(vms: np.ndarray, p: PlanParams, rng: np.random.Generator) -> np.ndarray:
    """Size of each group, given its tenant's VM count (module docstring, step 4)."""
    n = len(vms)
    if p.group_size == "uniform":
        return rng.integers(p.min_group_size, vms + 1, size=n).astype(np.int32)
    u = rng.random(n)
    large = vms - (rng.gamma(WVE_SHAPE, WVE_SCALE_LARGE, n) * vms / WVE_DIVISOR
                   ).astype(np.int64) % vms
    small = (rng.gamma(WVE_SHAPE, WVE_SCALE_SMALL, n) * vms / WVE_DIVISOR
             + p.min_group_size - 1).astype(np.int64) % vms + 1
    return np.maximum(np.where(u < WVE_LARGE_SHARE, large, small),
                      p.min_group_size).astype(np.int32)


# -- the plan ------------------------------------------------------------------------------


class TenantPlan:
    """Tenants, VM placement and groups of one workload seed (immutable once drawn).

    Attributes
    ----------
    topology : Topology
    params : PlanParams
    root : int
        Root of every draw (``child_rng(root, component)``).
    vm_count, vm_offset : numpy.ndarray
        VMs of each tenant; tenant t's VMs are ``vm_offset[t]:vm_offset[t + 1]``.
    vm_host : numpy.ndarray
        Host index (into ``topology.hosts``) of every VM.
    group_tenant, group_size : numpy.ndarray
        Tenant and size (member VMs) of every group, by gid.
    sender_vm, sender_host : numpy.ndarray
        Each group's sender: a member VM (tenant-local index) and its host.
    """

    def __init__(self, topology: Topology, params: PlanParams, root: int) -> None:
        check(len(topology.hosts) > 0, "tenants needs a topology with hosts")
        self.topology = topology
        self.params = params
        self.root = root
        self.vm_count = fitting_vm_counts(params, len(topology.hosts),
                                          child_rng(root, "vm-counts"))
        self.vm_offset = np.concatenate(([0], np.cumsum(self.vm_count)))
        self.vm_host = place_vms(topology, self.vm_count, params, child_rng(root, "placement"))
        per_tenant = groups_per_tenant(self.vm_count, params.groups)
        self.group_tenant = np.repeat(np.arange(params.tenants, dtype=np.int32), per_tenant)
        vms = self.vm_count[self.group_tenant]
        self.group_size = draw_group_sizes(vms, params, child_rng(root, "group-sizes"))
        self.sender_vm = child_rng(root, "senders").integers(0, vms).astype(np.int32)
        self.sender_host = self.vm_host[self.vm_offset[self.group_tenant] + self.sender_vm]
        self._members: OrderedDict[int, np.ndarray] = OrderedDict()
        self._cached = 0
        #: shared by the populations of this plan (slices, versions): see tenants.py
        self.shared: dict[object, object] = {}

    @property
    def groups(self) -> int:
        return len(self.group_tenant)

    @property
    def key(self) -> tuple[object, ...]:
        """A value naming the plan: topology spec, datacenter parameters, root
        (equal keys, equal plans; for caches keyed by value)."""
        p = self.params
        return (self.topology.name, tuple(getattr(p, f) for f in p.__slots__), self.root)

    def members(self, gid: int) -> np.ndarray:
        """The group's member VMs (tenant-local indices), its sender first.

        Rebuilt from ``child_rng(root, "members", gid)`` (the same array on
        every call; recent ones are kept up to :data:`MEMBER_CACHE_ELEMENTS`).
        """
        got = self._members.get(gid)
        if got is not None:
            self._members.move_to_end(gid)
            return got
        check(0 <= gid < self.groups, f"gid must be in 0..{self.groups - 1}, got {gid}")
        n = int(self.vm_count[self.group_tenant[gid]])
        sender = int(self.sender_vm[gid])
        others = child_rng(self.root, "members", gid).choice(
            n - 1, size=int(self.group_size[gid]) - 1, replace=False)
        others += others >= sender  # skip the sender's index
        got = np.concatenate(([sender], others)).astype(np.int32)
        got.setflags(write=False)
        self._members[gid] = got
        self._cached += len(got)
        while self._cached > MEMBER_CACHE_ELEMENTS and len(self._members) > 1:
            self._cached -= len(self._members.popitem(last=False)[1])
        return got

    def _member_draws(self, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The non-sender members of distinct ``gids`` as (position in ``gids``, host),
        group by group in draw order: :meth:`members` ``[1:]``, drawn in one compiled
        batch (:data:`sim.dataplanes.pcg64_draws.samples`, the same numbers) where it
        agrees with numpy, else group by group."""
        tenant = self.group_tenant[gids]
        if pcg64_draws.kernel_agrees() and pcg64_draws.samples is not None:
            ks = self.group_size[gids].astype(np.int64) - 1  # the sender is not drawn
            starts = np.zeros(len(gids) + 1, np.int64)
            np.cumsum(ks, out=starts[1:])
            others = np.empty(starts[-1], np.int64)
            pcg64_draws.samples(seed_words_of(self.root, "members", gids),
                                self.vm_count[tenant].astype(np.int64) - 1, ks, starts, others)
            others += others >= np.repeat(self.sender_vm[gids], ks)  # skip the sender's index
            group = np.repeat(np.arange(len(gids)), ks)
            host = self.vm_host[np.repeat(self.vm_offset[tenant], ks) + others]
        else:
            members = [self.members(int(g))[1:] for g in gids.tolist()]
            group = np.repeat(np.arange(len(gids)), [len(m) for m in members])
            host = self.vm_host[np.repeat(self.vm_offset[tenant], [len(m) for m in members])
                                + np.concatenate([np.zeros(0, np.int64), *members])]
        return group, host

    def receiver_hosts(self, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each group's receiving hosts when its sender publishes, for distinct ``gids``.

        Returns ``(offsets, hosts)``: group ``gids[i]``'s are
        ``hosts[offsets[i]:offsets[i + 1]]``, sorted: the distinct hosts of its
        members (:meth:`members`) but the sender's host. The member draws of
        all groups run in one compiled batch (:meth:`_member_draws`).
        """
        gids = np.asarray(gids, dtype=np.int64)
        group, host = self._member_draws(gids)
        keep = host != self.sender_host[gids][group]  # the sender's host never receives
        return _distinct_by_group(len(gids), group[keep], host[keep])

    def member_hosts(self, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each group's member hosts (the sender's included), for distinct ``gids``.

        Returns ``(offsets, hosts)``: group ``gids[i]``'s are
        ``hosts[offsets[i]:offsets[i + 1]]``, the same as
        ``hosts_of_vms(group_tenant[g], members(g))`` (sorted, distinct), with
        the member draws in one compiled batch (:meth:`_member_draws`).
        """
        gids = np.asarray(gids, dtype=np.int64)
        group, host = self._member_draws(gids)
        group = np.concatenate((np.arange(len(gids)), group))
        host = np.concatenate((self.sender_host[gids].astype(host.dtype), host))
        return _distinct_by_group(len(gids), group, host)

    def hosts_of_vms(self, tenant: int, vms: np.ndarray) -> np.ndarray:
        """Sorted distinct host indices of tenant ``tenant``'s VMs ``vms``."""
        return np.unique(self.vm_host[int(self.vm_offset[tenant]) + vms])

    def memory_bytes(self) -> int:
        """Bytes held by the plan's arrays (member cache included)."""
        arrays = (self.vm_count, self.vm_offset, self.vm_host, self.group_tenant,
                  self.group_size, self.sender_vm, self.sender_host)
        return sum(a.nbytes for a in arrays) + 4 * self._cached


def _distinct_by_group(groups: int, group: np.ndarray, host: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, hosts)`` of (group position, host) pairs: each group's distinct hosts,
    sorted, at ``hosts[offsets[i]:offsets[i + 1]]``."""
    order = np.lexsort((host, group))
    group, host = group[order], host[order]
    first = np.ones(len(host), bool)
    first[1:] = (host[1:] != host[:-1]) | (group[1:] != group[:-1])
    group, host = group[first], host[first]
    return np.searchsorted(group, np.arange(groups + 1)).astype(np.int64), \
        host.astype(np.int64)
