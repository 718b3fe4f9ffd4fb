"""``elmo``: source-routed multicast with p-rules in the header and s-rules in group tables.

Elmo (Shahbaz et al., "Elmo: Source Routed Multicast for Public Clouds",
SIGCOMM 2019) on a three-tier Clos (``elmo:...`` or ``fattree:k=K``,
:mod:`sim.dataplanes.elmo.fabric`). The controller (:mod:`strategies.elmo.prules`)
clusters each group's member leaves and pods into at most H_max shared
p-rules per downstream layer, each naming up to K_max switches with at most R
redundant ports; the switches left over get s-rules (group-table entries)
while their table has room, else the default p-rule. The sender's hypervisor
pushes the group's p-rules plus upstream p-rules for its own position
(:func:`sim.dataplanes.elmo.headers.sender_header`); switches run
:mod:`sim.dataplanes.elmo.reference`.

Groups. If ``Knowledge.population`` is a
:class:`~sim.dataplanes.groups.GroupSource` (the ``tenants`` workloads),
every group of the population is installed, in gid order, sharing the
s-rule capacity of each switch (:class:`~strategies.elmo.assignment.Controller`:
per switch the groups that want an s-rule there, in gid order). What the
senders are told is one compact table for all groups
(:mod:`sim.dataplanes.elmo.published`: a byte arena and integer arrays,
~250 B per group of Elmo's WVE sizes), and a group's hosts are read as
host indices (the table's ``host_indices`` where it has them), so a
million groups install in well under 1 GB. The install of membership
version 0 (or of a population without versions) is remembered in
``Knowledge.caches.vt_installs`` (the store of strategy installs) under the
strategy, its parameters, the topology and the population's group table
(one object per membership version), so the cells of one plan share it.
The strategy object keeps its last install, so every notification of a
version gets the same state. A later version of the same population (same
``plan`` and churn ``log``, with ``changed_groups``: ``tenants-churn``)
re-plans only the groups ``changed_groups`` lists, and the groups one of
them pushes across a switch's s-rule capacity
(:meth:`~strategies.elmo.assignment.Controller.update`): the state equals a
full recompute's (property-tested), and so do the writes the runner counts
between versions (join/leave churn as control writes). Switches whose
s-rules did not change keep their configuration objects (no writes,
nothing compared). Otherwise every distinct receiver set of
``Knowledge.receiver_sets`` is one group (gids in sorted order of the
sets), so ``elmo`` runs on any workload.

State. Every switch: one ``MyIngress.elmo_switch`` rule (tier, Elmo id,
header widths) and multicast group 1 over all its ports (instance = bit),
the base every install shares. Per s-rule: one ``MyIngress.elmo_srule`` entry
(group id -> multicast group) and its multicast group (a leaf's host ports or
a spine's leaf ports, every spine of the pod). s-rule multicast group ids
are 16-bit (2..65535): the id of group ``g`` on a switch is the first free
one from ``2 + crc32(g) mod 65534`` on, in gid order, so a group keeps its id
across membership versions (churn writes only what changed).

Parameters (defaults: Elmo's evaluation as its authors ran it,
Elmo-MCast/numerical-evals ``fab_optimizer_with_data.sh``, which sweeps the
leaf layer over 10/20/30 p-rules, 3 switches per p-rule, R = 0/6/12 and
10,000 or 64,000 rules per leaf, on the pod layer computed by
``optimizer.*random-fuzzy-match_2_3_6_64000_2_3_pods``: 2 p-rules, 3
switches per p-rule, R = 6, 64,000 rules. The defaults take 30 leaf p-rules
(the paper's 325 B maximum header: 30 x 82 bits of leaf p-rules plus the
rest, §5), R = 12 and 10,000 leaf entries; ``redundancy=0`` and
``leaf_srules=64000`` are the sweep's other ends).

References
----------
Elmo SIGCOMM 2019 §3 (header, p-rules, s-rules, default p-rule), §4
(controller), §5 (evaluation settings); Elmo-MCast/numerical-evals,
Elmo-MCast/p4-programs.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from sim.dataplanes.caches import Identity
from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    MulticastGroup,
    SwitchConfig,
    TableEntry,
)
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.elmo.codec import ETHERTYPE_ELMO, ElmoLayout, encode_header
from sim.dataplanes.elmo.fabric import TIER_CODE, ElmoFabric, elmo_fabric
from sim.dataplanes.elmo.fast_path import ElmoFastPath
from sim.dataplanes.elmo.headers import (
    INFO_GIDS,
    INFO_GROUPS,
    group_for,
    sender_header,
    unpack_group,
)
from sim.dataplanes.elmo.reference import (
    ALL_PORTS_GROUP,
    KEY_ETHERTYPE,
    KEY_GROUP,
    SET_SWITCH,
    SRULE_FORWARD,
    SRULE_GROUPS,
    SRULE_TABLE,
    SWITCH_TABLE,
)
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.groups import Group, GroupSource
from sim.dataplanes.packet import Notification, Packet, group_mac, host_mac
from strategies.base import Encoding, Knowledge, Strategy, register_strategy
from strategies.elmo.assignment import Controller
from strategies.elmo.prules import ClusterLimits, GroupPlan, plan_groups
from topologies.model import Topology
from topologies.registry import SpecError, check

_SRULE_SLOTS = len(SRULE_GROUPS)

#: Groups whose host indices an install reads at once (``host_indices_of``).
_BATCH = 1 << 15


@dataclass(frozen=True, slots=True, kw_only=True)
class ElmoParams:
    """Parameters of ``elmo`` (Elmo's names in brackets; module docstring for the sources).

    Parameters
    ----------
    redundancy : int
        Extra ports a shared leaf p-rule may add over the leaves it names (R), >= 0.
    spine_redundancy : int
        The same for the spine layer (pods), >= 0.
    leaf_prules : int
        Shared p-rules for the downstream leaf layer in a header (H_max), 0..255.
    spine_prules : int
        The same for the downstream spine layer, 0..255.
    switches_per_prule : int
        Switches one p-rule may name (K_max), 1..16.
    leaf_srules : int
        Group-table entries (s-rules) per leaf, 0..65534 (16-bit multicast group ids).
    spine_srules : int
        Group-table entries per spine, 0..65534.
    default_prule : bool
        Whether switches with neither p-rule nor s-rule use the layer's default
        p-rule (the OR of their bitmaps); off, they get nothing (misses).
    header_bytes_max : int
        Largest header a group may need, bytes (0: only H_max limits it);
        leaf, then spine p-rules beyond it become s-rules or default p-rules.
    """

    redundancy: int = 12
    spine_redundancy: int = 6
    leaf_prules: int = 30
    spine_prules: int = 2
    switches_per_prule: int = 3
    leaf_srules: int = 10000
    spine_srules: int = 64000
    default_prule: bool = True
    header_bytes_max: int = 0

    def __post_init__(self) -> None:
        for name in ("redundancy", "spine_redundancy", "header_bytes_max"):
            check(getattr(self, name) >= 0, f"{name} must be >= 0; got {getattr(self, name)}")
        for name in ("leaf_prules", "spine_prules"):
            check(0 <= getattr(self, name) <= 255,
                  f"{name} must be in 0..255 (an 8-bit count); got {getattr(self, name)}")
        check(1 <= self.switches_per_prule <= 16,
              f"switches_per_prule must be in 1..16; got {self.switches_per_prule}")
        for name in ("leaf_srules", "spine_srules"):
            check(0 <= getattr(self, name) <= _SRULE_SLOTS,
                  f"{name} must be in 0..{_SRULE_SLOTS} (16-bit multicast group ids); "
                  f"got {getattr(self, name)}")

    @property
    def limits(self) -> ClusterLimits:
        return ClusterLimits(leaf_prules=self.leaf_prules, spine_prules=self.spine_prules,
                             max_ids=self.switches_per_prule, leaf_redundancy=self.redundancy,
                             spine_redundancy=self.spine_redundancy,
                             leaf_srules=self.leaf_srules, spine_srules=self.spine_srules,
                             default_prule=self.default_prule,
                             header_bytes_max=self.header_bytes_max)


def layout_of(fabric: ElmoFabric, max_ids: int) -> ElmoLayout:
    """The header widths of ``fabric`` (its tiers' port counts and id widths)."""
    return ElmoLayout(leaf_down=fabric.down_bits["leaf"], leaf_up=fabric.up_bits["leaf"],
                      spine_down=fabric.down_bits["spine"], spine_up=fabric.up_bits["spine"],
                      core_down=fabric.down_bits["core"], leaf_id=fabric.leaf_id_bits,
                      pod_id=fabric.pod_id_bits, max_ids=max_ids)


def srule_slots(gids: Iterable[int]) -> dict[int, int]:
    """Multicast group id of each s-rule on one switch (module docstring), in gid order."""
    used: dict[int, int] = {}
    taken: set[int] = set()
    start = SRULE_GROUPS.start
    for gid in gids:
        slot = zlib.crc32(gid.to_bytes(8, "big")) % _SRULE_SLOTS
        while start + slot in taken:
            slot = (slot + 1) % _SRULE_SLOTS
        taken.add(start + slot)
        used[gid] = start + slot
    return used


def _bit_ports(bitmap: int, ports: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(port, bit) replicas of the set bits of ``bitmap`` that name a port."""
    return tuple((p, i) for i, p in enumerate(ports) if (bitmap >> i) & 1)


@register_strategy
class Elmo(Strategy):
    name = "elmo"
    dataplane = "elmo"
    Params = ElmoParams
    summary = ("Elmo: p-rules per layer in the header (shared with redundancy R), s-rules "
               "in group tables, default p-rule; three-tier Clos")
    scope = "receivers"
    workload_install = True  # all groups of a GroupSource, once per plan (module docstring)
    #: The last GroupSource install (see :class:`_Last`).
    _last: _Last | None = None

    # -- topology ---------------------------------------------------------------
    def fabric(self, topology: Topology) -> ElmoFabric:
        """The topology as Elmo's tiers; SpecError (naming this strategy) otherwise."""
        try:
            return elmo_fabric(topology)
        except SpecError as exc:
            raise SpecError(f"strategy {self.name!r}: {exc}") from None

    def layout(self, topology: Topology) -> ElmoLayout:
        return layout_of(self.fabric(topology), self.params.switches_per_prule)

    def check_applicable(self, topology: Topology, population: Any) -> None:
        self.fabric(topology)

    # -- control plane ------------------------------------------------------------
    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        fabric = self.fabric(topology)
        pop = knowledge.population
        if isinstance(pop, GroupSource):
            table = pop.groups()
            last = self._last
            if last is not None and last.topology is topology and last.table is table:
                return last.state
            lineage = _lineage(pop)
            version = pop.version or 0
            if (version and last is not None and last.topology is topology
                    and lineage is not None and last.lineage == lineage):
                return self._step(fabric, pop, table, lineage)
            key = (type(self), self.params, Identity(topology), Identity(table))
            got = knowledge.caches.vt_installs.get(key)
            owned = got is None
            if got is None:
                got = self._install_table(fabric, table, topology)
                if not version:  # later versions: one notification each, keep the last
                    knowledge.caches.vt_installs.put(key, got)
            self._last = _Last(topology, table, got[0], got[1], lineage, version,
                               owned and bool(version))
            return got[0]
        index = _host_index(topology)
        sets = sorted({tuple(sorted(index[h] for h in rs))
                       for sets_ in knowledge.receiver_sets.values() for rs in sets_ if rs})
        return self._install(fabric, enumerate(sets))[0]

    def plan(self, topology: Topology, groups: Iterable[tuple[int, tuple[str, ...]]]
             ) -> list[GroupPlan]:
        """The controller's outcome for ``groups`` ((gid, hosts) in gid order): the
        definition (:func:`~strategies.elmo.prules.plan_groups`) that installs follow."""
        fabric = self.fabric(topology)
        return plan_groups(fabric, layout_of(fabric, self.params.switches_per_prule), groups,
                           self.params.limits)

    def controller(self, topology: Topology) -> Controller:
        """An empty :class:`~strategies.elmo.assignment.Controller` of this strategy."""
        fabric = self.fabric(topology)
        return Controller(fabric, layout_of(fabric, self.params.switches_per_prule),
                          self.params.limits)

    def _install(self, fabric: ElmoFabric, groups: Iterable[tuple[int, Sequence[int]]] = (),
                 batches: Iterable[tuple[int, np.ndarray, np.ndarray]] | None = None
                 ) -> tuple[ControlState, Controller]:
        """All ``groups`` ((gid, host indices ascending), gids 0..n-1) planned afresh (or
        the same given as ``batches``, :meth:`Controller.build_batches`)."""
        ctl = self.controller(fabric.topology)
        if batches is None:
            ctl.build(groups)
        else:
            ctl.build_batches(batches)
        switches = dict(self._base(fabric).switches)
        switches.update(self._srule_configs(fabric, ctl, ctl.leaf.switches(),
                                            ctl.pod.switches()))
        return ControlState(switches=switches, publisher_info=_info(ctl)), ctl

    def _install_table(self, fabric: ElmoFabric, table: Sequence[Group], topology: Topology
                       ) -> tuple[ControlState, Controller]:
        """:meth:`_install` of every group of ``table``: in batches of
        :data:`_BATCH` gids when the table gives many groups' host indices at once
        (``host_indices_of``), else group by group."""
        batch = getattr(table, "host_indices_of", None)
        if batch is None:
            return self._install(fabric, _table_hosts(table, topology))
        n = len(table)
        return self._install(fabric, batches=(
            (start, *batch(np.arange(start, min(start + _BATCH, n), dtype=np.int64)))
            for start in range(0, n, _BATCH)))

    def _step(self, fabric: ElmoFabric, pop: Any, table: Sequence[Group], lineage: object
              ) -> ControlState:
        """The state of ``pop``'s version from the last one: only the groups changed
        in between are planned again (:meth:`Controller.update`)."""
        last = self._last
        assert last is not None
        ctl = last.controller if last.owned else last.controller.copy()
        version = pop.version or 0
        changed = pop.changed_groups(last.version, version)
        leaves, pods = ctl.update((gid, _hosts_of(table, gid, fabric.topology))
                                  for gid in map(int, changed))
        state = last.state
        if leaves or pods or ctl.published is not _info_groups(state):
            switches = dict(state.switches)
            switches.update(self._srule_configs(fabric, ctl, leaves, pods))
            state = ControlState(switches=switches, publisher_info=_info(ctl))
        self._last = _Last(last.topology, table, state, ctl, lineage, version, True)
        return state

    def _srule_configs(self, fabric: ElmoFabric, ctl: Controller, leaves: Iterable[int],
                       pods: Iterable[int]) -> dict[str, SwitchConfig]:
        """The configurations of the switches of ``leaves`` (leaf ids) and ``pods`` (every
        spine of the pod) from their s-rules (the base configuration if none)."""
        base = self._base(fabric)
        built = self._configs(fabric)  # (s-rules, config) per switch of the last installs
        targets = [(fabric.leaves[leaf], ctl.leaf.holders(leaf)) for leaf in leaves]
        for pod in pods:
            content = ctl.pod.holders(pod)
            targets += [(spine, content) for spine in fabric.pod_spines[pod]]
        out = {}
        for switch, content in targets:
            if not content:
                out[switch] = base.config(switch)
                continue
            got = built.get(switch)
            if got is None or got[0] != content:  # unchanged s-rules: the same object
                got = built[switch] = (content, _with_srules(
                    base.config(switch), content, fabric.switches[switch].down))
            out[switch] = got[1]
        return out

    def _configs(self, fabric: ElmoFabric) -> dict[str, tuple[tuple[tuple[int, int], ...],
                                                             SwitchConfig]]:
        """Per switch the last s-rules installed and the configuration built for them: a
        switch whose s-rules did not change keeps its configuration object, so the
        writes between two versions (:func:`~sim.dataplanes.control_state.count_writes`)
        skip it. A memo of a pure function (content -> configuration)."""
        key = ("elmo configs", type(self), self.params, Identity(fabric.topology))
        memo = self.caches.vt_installs.get(key)
        if memo is None:
            memo = self.caches.vt_installs.put(key, {})
        return memo  # type: ignore[no-any-return]

    def _base(self, fabric: ElmoFabric) -> ControlState:
        """Every switch's ``elmo_switch`` rule and all-ports group (cached per topology)."""
        key = (type(self), self.params, Identity(fabric.topology))
        base = self.caches.base_states.get(key)
        if base is None:
            layout = layout_of(fabric, self.params.switches_per_prule).params
            configs = {}
            for sw, ports in fabric.switches.items():
                width = {"leaf": fabric.down_bits["leaf"], "spine": fabric.down_bits["spine"],
                         "core": fabric.down_bits["core"]}[ports.tier]
                entry = TableEntry(SWITCH_TABLE, ((KEY_ETHERTYPE, Exact(ETHERTYPE_ELMO)),),
                                   SET_SWITCH, (("role", TIER_CODE[ports.tier]),
                                                ("switch_id", ports.elmo_id), *layout))
                replicas = tuple(sorted([*((p, i) for i, p in enumerate(ports.down)),
                                         *((p, width + i) for i, p in enumerate(ports.up))]))
                configs[sw] = SwitchConfig(
                    tables={SWITCH_TABLE: (entry,)},
                    multicast_groups={ALL_PORTS_GROUP: MulticastGroup(ALL_PORTS_GROUP, replicas)})
            base = self.caches.base_states.put(key, ControlState(switches=configs))
        return base  # type: ignore[no-any-return]

    # -- publisher --------------------------------------------------------------
    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        """The packet the sender's hypervisor pushes (none without receivers)."""
        if not receivers:
            return Encoding(())
        fabric = self.fabric(topology)
        pub = notification.publisher
        layout = layout_of(fabric, self.params.switches_per_prule)
        packed = group_for(state.publisher_info, pub, receivers, _host_index(topology))
        rules = unpack_group(packed, layout, topology.hosts)
        header = sender_header(fabric, rules, pub)
        if header is None:
            return Encoding(())
        packet = Packet(group_mac(rules.gid & 0x7F_FFFF), host_mac(topology, pub), ETHERTYPE_ELMO,
                        encode_header(header, layout), payload)
        return Encoding((packet,), header.entries)

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The header-structure walk of :mod:`sim.dataplanes.elmo.fast_path` (not for
        subclasses; None off a three-tier Clos)."""
        if type(self) is not Elmo:
            return None
        try:
            fabric = elmo_fabric(topology)
        except SpecError:
            return None
        return ElmoFastPath(fabric, layout_of(fabric, self.params.switches_per_prule), delays,
                            self.encode)


class _Last(NamedTuple):
    """The last GroupSource install of a strategy object: the state of ``table`` and the
    controller it came from (``owned``: not shared with a cached install, so the next
    membership version may update it in place)."""

    topology: Topology
    table: object
    state: ControlState
    controller: Controller
    lineage: object
    version: int
    owned: bool


def _lineage(pop: Any) -> tuple[Identity, Identity] | None:
    """What ties the membership versions of ``pop`` together: its plan and its churn log
    (``pop.changed_groups`` between two versions of one lineage lists every group that
    changed); None when it offers no ``changed_groups`` (every version planned afresh)."""
    plan = getattr(pop, "plan", None)
    if plan is None or not callable(getattr(pop, "changed_groups", None)):
        return None
    return Identity(plan), Identity(getattr(pop, "log", None))


def _table_hosts(table: Sequence[Group], topology: Topology
                 ) -> Iterator[tuple[int, list[int]]]:
    """(gid, host indices ascending) of every group of ``table``, in gid order."""
    for gid in range(len(table)):
        yield gid, _hosts_of(table, gid, topology)


def _hosts_of(table: Sequence[Group], gid: int, topology: Topology) -> list[int]:
    """The hosts of group ``gid`` as ascending indices in ``topology.hosts`` (a table's
    ``host_indices`` when it has them: the same hosts without their names)."""
    indices = getattr(table, "host_indices", None)
    if indices is not None:
        return indices(gid).tolist()  # type: ignore[no-any-return]
    group = table[gid]
    if group.gid != gid:
        raise ValueError(f"elmo: group at position {gid} has gid {group.gid} (gids must be "
                         "0..n-1 in table order)")
    return sorted(map(topology.host_id, group.hosts))


def _info(ctl: Controller) -> dict[str, Any]:
    """``publisher_info`` of a controller's published groups."""
    return {INFO_GIDS: ctl.published.by_hosts, INFO_GROUPS: ctl.published}


def _info_groups(state: ControlState) -> object:
    return state.publisher_info.get(INFO_GROUPS)


@lru_cache(maxsize=16)
def _host_index(topology: Topology) -> dict[str, int]:
    """Host -> its index in ``topology.hosts``."""
    return {h: i for i, h in enumerate(topology.hosts)}


def _with_srules(base: SwitchConfig, rules: tuple[tuple[int, int], ...],
                 ports: tuple[int, ...]) -> SwitchConfig:
    """``base`` plus one s-rule (entry and multicast group) per (gid, bitmap)."""
    slots = srule_slots(gid for gid, _ in rules)
    entries = tuple(TableEntry(SRULE_TABLE, ((KEY_GROUP, Exact(gid)),), SRULE_FORWARD,
                               (("mcast_grp", slots[gid]),)) for gid, _ in rules)
    groups = dict(base.multicast_groups)
    for gid, bitmap in rules:
        groups[slots[gid]] = MulticastGroup(slots[gid], _bit_ports(bitmap, ports))
    return SwitchConfig(tables={**base.tables, SRULE_TABLE: entries}, multicast_groups=groups)
