"""Join/leave events over the groups of a :class:`~sim.workloads.tenant_plan.TenantPlan`.

Elmo's dynamic evaluation (Elmo SIGCOMM 2019 §5.1.2: one million join and
leave events) as Elmo-MCast/numerical-evals models it
(``simulation/dynamic.py`` ``_get_tenant_groups_to_event_count_map``,
``simulation/event.py`` ``Event.process``):

- a group receives events in proportion to its (initial) size: here each
  event picks its group with probability ``size / total size`` (numerical-evals
  gives group g ``int(size_g / total x events)`` events and runs them group
  after group; drawing the group per event gives the same expected counts as
  one interleaved stream whose every prefix is a sample of the whole);
- a group at ``min_group_size`` members gets a join, a group holding all
  its tenant's VMs a leave, any other a join with probability
  ``join_percent`` % (numerical-evals: a fair coin);
- a join adds a VM drawn uniformly from the tenant's VMs outside the group;
  it is a sender only (type P), a receiver only (S) or both (B) with
  probability 1/3 each (``event.py``: ``random.sample(['P', 'S', 'B'])``);
- a leave removes a member drawn uniformly. Deviation: never the group's
  sender (:meth:`TenantPlan.members` puts it first), which stays the
  group's publisher for the whole cell (the runners draw the publishers
  once, :mod:`sim.workloads.tenants`).

Only receivers (S, B and the initial members, which numerical-evals makes S
or B) are in the group's tree: a P join or leave changes the membership
(and the version) but not :attr:`Group.hosts <sim.dataplanes.groups.Group>`,
as in Elmo, where it only updates the sender's hypervisor switch.

Events are generated in order, on demand (:meth:`ChurnLog.extend`), from two
generators: ``child_rng(root, "churn-groups")`` (batches of group draws) and
``child_rng(root, "churn-events")`` (the rest), so the first k events do not
depend on how many are asked for later.
"""

from __future__ import annotations

from array import array

import numpy as np

from sim.dataplanes.seeds import child_rng
from sim.workloads.tenant_plan import TenantPlan
from topologies.registry import check

#: group draws per batch (a constant, so the stream does not depend on call sizes)
_BATCH = 4096
#: consecutive groups that can take no event before the stream gives up
_MAX_IDLE = 10_000
#: share of the tenant's VMs above which a join samples the complement directly
_DENSE = 0.75

JOIN, LEAVE = 1, -1


class _Members:
    """Current members of one touched group (sender first) and its sender-only VMs.

    The VMs are a numpy array (``size`` of its ``len`` in use), 2 bytes a
    member while tenants have fewer than 32,768 VMs: the touched groups of
    Elmo's 1M events stay within the members' total (~100 MB for WVE sizes).
    """

    __slots__ = ("vms", "size", "senders_only")

    def __init__(self, initial: np.ndarray, dtype: type) -> None:
        self.size = len(initial)
        self.vms: np.ndarray = np.empty(self.size + 4, dtype=dtype)
        self.vms[:self.size] = initial
        self.senders_only: set[int] = set()

    def __contains__(self, vm: int) -> bool:
        return bool((self.vms[:self.size] == vm).any())

    def add(self, vm: int, receiver: bool) -> None:
        if self.size == len(self.vms):
            self.vms = np.resize(self.vms, 2 * len(self.vms))
        self.vms[self.size] = vm
        self.size += 1
        if not receiver:
            self.senders_only.add(vm)

    def remove_at(self, i: int) -> tuple[int, bool]:
        vm = int(self.vms[i])
        self.size -= 1
        self.vms[i] = self.vms[self.size]
        receiver = vm not in self.senders_only
        self.senders_only.discard(vm)
        return vm, receiver


class ChurnLog:
    """The join/leave stream of one plan (see the module docstring).

    Event ``k`` (0-based) is ``(gid[k], vm[k], kind[k], receiver[k])``
    (compact ``array.array`` columns; ``receiver`` is 0 or 1); the membership
    at *version* k is the initial one with events ``0..k-1`` applied.
    """

    def __init__(self, plan: TenantPlan, join_percent: float) -> None:
        self.plan = plan
        self.join = join_percent / 100
        self._cum = np.cumsum(plan.group_size, dtype=np.int64)
        self._group_rng = child_rng(plan.root, "churn-groups")
        self._rng = child_rng(plan.root, "churn-events")
        self._picks: list[int] = []
        self._state: dict[int, _Members] = {}
        self._dtype = np.int16 if int(plan.vm_count.max()) <= np.iinfo(np.int16).max else np.int32
        self.gid = array("i")
        self.vm = array("i")
        self.kind = array("b")
        self.receiver = array("b")
        self.per_group: dict[int, array[int]] = {}

    def __len__(self) -> int:
        return len(self.gid)

    def _next_group(self) -> int:
        if not self._picks:
            u = self._group_rng.random(_BATCH) * int(self._cum[-1])
            self._picks = np.searchsorted(self._cum, u, side="right").tolist()[::-1]
        return int(self._picks.pop())

    def extend(self, count: int) -> None:
        """Generate events until there are at least ``count``."""
        while len(self.gid) < count:
            self._one()

    def _pick(self) -> tuple[int, _Members, int, int]:
        """The next group that can take an event: (gid, members, tenant VMs, kind)."""
        plan, rng = self.plan, self._rng
        for _ in range(_MAX_IDLE):
            gid = self._next_group()
            n = int(plan.vm_count[plan.group_tenant[gid]])
            st = self._state.get(gid)
            if st is None:
                st = self._state[gid] = _Members(plan.members(gid), self._dtype)
            size = st.size
            if size <= plan.params.min_group_size:
                kind = JOIN if size < n else 0
            elif size >= n:
                kind = LEAVE if size > 1 else 0
            else:
                kind = JOIN if rng.random() < self.join else LEAVE
            if kind:
                return gid, st, n, kind
        check(False, f"tenants churn: {_MAX_IDLE} groups in a row can take no join or "
                     "leave (every group is full and at min_group_size)")
        raise AssertionError  # unreachable: check raised

    def _one(self) -> None:
        rng = self._rng
        gid, st, n, kind = self._pick()
        if kind == JOIN:
            vm = self._outsider(st, n)
            receiver = int(rng.integers(3)) != 0  # P (sender only) with probability 1/3
            st.add(vm, receiver)
        else:
            vm, receiver = st.remove_at(1 + int(rng.integers(st.size - 1)))  # not the sender
        self.per_group.setdefault(gid, array("i")).append(len(self.gid))
        self.gid.append(gid)
        self.vm.append(vm)
        self.kind.append(kind)
        self.receiver.append(int(receiver))

    def _outsider(self, st: _Members, n: int) -> int:
        """A VM of the tenant outside the group, uniformly."""
        rng = self._rng
        if st.size > _DENSE * n:
            outside = np.setdiff1d(np.arange(n), st.vms[:st.size])
            return int(outside[int(rng.integers(len(outside)))])
        while True:
            vm = int(rng.integers(n))
            if vm not in st:
                return vm

    def receivers_at(self, gid: int, version: int) -> np.ndarray:
        """The group's receiving member VMs (tenant-local) at ``version``."""
        self.extend(version)
        initial = self.plan.members(gid)
        events = [k for k in self.per_group.get(gid, ()) if k < version]
        if not events:
            return initial
        current = dict.fromkeys(initial.tolist(), True)
        for k in events:
            if self.kind[k] == JOIN:
                current[self.vm[k]] = bool(self.receiver[k])
            else:
                del current[self.vm[k]]
        return np.fromiter((v for v, r in current.items() if r), dtype=np.int32)

    def members_at(self, gid: int, version: int) -> int:
        """Number of member VMs (receivers and sender-only) of the group at ``version``."""
        self.extend(version)
        joins = sum(self.kind[k] for k in self.per_group.get(gid, ()) if k < version)
        return int(self.plan.group_size[gid]) + joins

    def changed(self, old: int, new: int) -> np.ndarray:
        """Sorted gids with an event in versions ``old..new`` (membership changed)."""
        self.extend(max(old, new))
        lo, hi = sorted((old, new))
        return np.unique(np.asarray(self.gid[lo:hi], dtype=np.int64))
