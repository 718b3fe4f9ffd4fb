"""``camus-bdd``: Camus's routing on subscriptions compiled to BDD pipelines (seed 003).

Routing (§4): every switch ``s`` gets a filter set per port: a down port
gets the filters of the hosts below it; the logical *up* port (all upward
ports, one chosen per packet by ECMP; a packet that came down never goes up
again) gets ``{true}`` under the memory-reducing policy ``MR`` or, under the
traffic-reducing policy ``TR``, the filters of every host *not* below ``s``
(the digest's D11 correction: Algorithm 1 as printed unions only the first
parent's siblings and misses other pods). Filters on ports not directly
attached to a host are discretised to multiples of ``alpha`` (widened, so
completeness holds; host ports stay exact, D12).

Layers: on a fat-tree (switch roles core/aggregation/edge in the topology)
up = the ports to the next layer up; otherwise the spanning tree of
:class:`~strategies.content_filter.TreeRouting` (up = towards its root).

Compilation (§5.2): each switch's rules ``filter : fwd(port)`` (the up port
is label 0) go through :func:`strategies.camus.bdd.compile_bdd` (``table="bdd"``)
or the one-big-table baseline (``table="one-big-table"``: the overlap
closure of :mod:`strategies.range_filter.range_boxes`, priority = covering count). A
switch is recompiled whenever its filter set changes (Camus is not
incremental, D20: the pipeline is the one a compilation from scratch gives,
:class:`strategies.camus.bdd_memo.BddCompiler` only remembers the value
partitions of residual functions it has seen); switches whose filter set is
unchanged keep their state, so the control writes and the controller time
measure the recompilation.

Data plane ``camus``: the header carries the event values (``value_bits``
each) after Ethernet; see :mod:`sim.dataplanes.camus.reference`.

Deviations: stateful predicates and deep parsing are not modelled; the
event's attributes are the query fields (``a0``, ``a1``, ...); filters are
the subscriptions' boxes (Camus has no advertisements).

References
----------
Seed 003 §4 (Algorithm 1, MR/TR, alpha), §5 (compiler), §7.4-7.5 (Fig. 12,
Fig. 13); digest seed002-003 B.3-B.9, C.1 S3-S4, D9-D13, D20.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from sim.dataplanes.camus.fast_path import CamusFamily
from sim.dataplanes.camus.reference import (
    ACTIONS,
    ETHERTYPE_CAMUS,
    FLAT,
    KEY_BUCKET,
    KEY_PORT,
    KEY_STATE,
    MARK_UP,
    PORT_ROLE,
    SET_MGID,
    SET_PORT,
    SET_STATE,
    SET_UP_PORT,
    UP_ECMP,
    CamusDataPlane,
    field_key,
    field_table,
)
from sim.dataplanes.content_space import Box
from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    Range,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    count_writes,
    mark_writes,
)
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.event_header import PubsubLayout
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import Notification, Packet, host_mac
from strategies.base import Encoding, register_strategy
from strategies.camus.bdd import Conj, Pipeline, compile_bdd, round_alpha
from strategies.camus.bdd_memo import BddCompiler
from strategies.content_filter import (
    ContentStrategy,
    GroupAllocator,
    LatencyParams,
    SwitchConfigCache,
    TreeRouting,
)
from strategies.range_filter.range_boxes import Container
from strategies.table_cost import StateCost, TableSpec, state_cost
from topologies.model import Topology
from topologies.registry import check

GROUP_MAC = 0x01_00_5E_7F_FF_FC
UP = 0  # label of the logical up port


@dataclass(frozen=True, slots=True, kw_only=True)
class CamusParams(LatencyParams):
    """``camus-bdd`` parameters (plus the lookup latency model).

    Parameters
    ----------
    policy : str
        ``MR`` (memory reduction: up = true) or ``TR`` (traffic reduction).
    alpha : int
        Discretisation of filter constants on non-host ports (1 = exact).
    order : str
        BDD variable order: ``annotation`` or ``constants``.
    table : str
        ``bdd`` (Camus) or ``one-big-table`` (the Fig. 12 baseline).
    value_bits : int
        Header width of each value (8/16/32/64).
    ranges : str
        TCAM cost of range entries: ``native`` or ``expand`` to prefixes.
    max_entries : int
        Capacity of one switch's one-big-table (its closure explodes): the
        overflow policy is to stop admitting filters once the table holds
        more entries (the rest are dropped, so deliveries show the false
        negatives); ``flow_limit`` reports the capacity.
    """

    policy: Literal["MR", "TR"] = "TR"
    alpha: int = 1
    order: Literal["annotation", "constants"] = "annotation"
    table: Literal["bdd", "one-big-table"] = "bdd"
    value_bits: int = 32
    ranges: Literal["native", "expand"] = "native"
    max_entries: int = 200_000

    def __post_init__(self) -> None:
        LatencyParams.__post_init__(self)
        check(self.alpha >= 1, "alpha must be >= 1")
        check(self.value_bits in (8, 16, 32, 64), "value_bits must be 8, 16, 32 or 64")
        check(self.max_entries >= 1, "max_entries must be >= 1")


@dataclass(frozen=True)
class SwitchLayer:
    """A switch's up ports and, per down port, the hosts below it."""

    up: tuple[int, ...]
    down: dict[int, frozenset[str]]


def layers(topology: Topology, routing: TreeRouting) -> dict[str, SwitchLayer]:
    """Up/down structure: fat-tree roles if present, else the spanning tree."""
    roles = {s: str(topology.node_attrs.get(s, {}).get("role")) for s in topology.switches}
    rank = {"core": 0, "aggregation": 1, "edge": 2}
    out: dict[str, SwitchLayer] = {}
    if all(r in rank for r in roles.values()):
        below: dict[str, set[str]] = {s: set(topology.hosts_of(s)) for s in topology.switches}
        for layer in ("edge", "aggregation", "core"):
            for s in topology.switches:
                if roles[s] != layer:
                    continue
                up: list[int] = []
                down: dict[int, frozenset[str]] = {}
                for port, info in topology.ports(s).items():
                    nb = info.neighbor
                    if topology.is_host(nb):
                        down[port] = frozenset({nb})
                    elif rank[roles[nb]] < rank[layer]:
                        up.append(port)
                    else:
                        down[port] = frozenset(below[nb])
                        below[s] |= below[nb]
                out[s] = SwitchLayer(tuple(sorted(up)), down)
        return out
    hosts_below: dict[str, set[str]] = {}
    for node in sorted(routing.depth, key=lambda n: -routing.depth[n]):
        acc = {node} if topology.is_host(node) else set()
        for c in routing.children.get(node, ()):
            acc |= hosts_below[c]
        hosts_below[node] = acc
    for s in topology.switches:
        par = routing.parent.get(s)
        out[s] = SwitchLayer(
            (topology.port_to(s, par),) if par is not None else (),
            {topology.port_to(s, c): frozenset(hosts_below[c])
             for c in routing.children.get(s, ())})
    return out


@register_strategy
class CamusBdd(ContentStrategy):
    name = "camus-bdd"
    dataplane = "camus"
    Params = CamusParams
    summary = "Camus: MR/TR routing on subscriptions, BDD tables per field (seed 003)"
    tree_routed: ClassVar[bool] = False

    def __init__(self, params: CamusParams | None = None) -> None:
        super().__init__(params)
        self.groups = GroupAllocator()
        self._cache = SwitchConfigCache()
        self.fields: tuple[tuple[str, int], ...] = (("a0", 32),)
        #: BDD field order per switch (they differ under order="constants")
        self.orders: dict[str, tuple[str, ...]] = {}
        self.layout = PubsubLayout(1, self.params.value_bits)
        self.compiled: dict[str, Pipeline | int] = {}
        self.overflowed: set[str] = set()
        #: the BDD compiler that remembers partitions across updates (None: the reference
        #: :func:`~strategies.camus.bdd.compile_bdd` from scratch; same pipelines)
        self.compiler: BddCompiler | None = BddCompiler()
        #: per switch: its last BDD tables as plain values (table -> (state, lo, hi) -> next
        #: state or leaf action), and the configuration they were installed in
        self._plain: dict[str, dict[str, dict[tuple[int, int, int], Any]]] = {}
        self._installed: dict[str, SwitchConfig] = {}

    def model(self) -> CamusDataPlane:
        names = tuple(n for n, _ in self.fields)
        return CamusDataPlane(names, names, self.layout, switch_fields={
            sw: o for sw, o in self.orders.items() if o != names}, caches=self.caches)

    def rules_for(self, topology: Topology, view: Any, sw: str, layer: SwitchLayer
                  ) -> list[tuple[Conj, frozenset[int]]]:
        """The switch's labelled filters (port label; 0 = the up port)."""
        p = self.params
        tops = view.space.maxima
        subs: dict[str, list[Conj]] = {}
        for s in view.subscriptions:
            subs.setdefault(s.host, []).append(s.box.bounds)
        merged: dict[Conj, set[int]] = {}
        for port, hosts in sorted(layer.down.items()):
            direct = len(hosts) == 1 and topology.ports(sw)[port].neighbor in hosts
            for h in sorted(hosts):
                for c in subs.get(h, ()):
                    key = c if direct else round_alpha(c, p.alpha, tops)
                    merged.setdefault(key, set()).add(port)
        if layer.up:
            if p.policy == "MR":
                merged.setdefault(tuple((0, t) for t in tops), set()).add(UP)
            else:
                below = frozenset().union(*layer.down.values()) if layer.down else frozenset()
                for h in sorted(set(subs) - below):
                    for c in subs[h]:
                        merged.setdefault(round_alpha(c, p.alpha, tops), set()).add(UP)
        return sorted((c, frozenset(v)) for c, v in merged.items())

    def build(self, topology: Topology, view: Any, previous: ControlState | None
              ) -> ControlState:
        p = self.params
        check(max(view.space.bits) <= p.value_bits, "value_bits narrower than the space")
        self.fields = tuple((f"a{i}", b) for i, b in enumerate(view.space.bits))
        self.layout = PubsubLayout(view.space.d, p.value_bits)
        routing = self.routing_for(topology)
        lay = layers(topology, routing)
        if self.compiler is not None:
            self.compiler.next_round()
        configs = {}
        for sw in topology.switches:
            rules = self.rules_for(topology, view, sw, lay[sw])
            key = (tuple(rules), lay[sw].up)
            before, old = self._plain.get(sw), self._installed.get(sw)
            cfg = configs[sw] = self._cache.config(
                sw, key, lambda b, sw=sw, rules=rules, up=lay[sw].up: self._fill(
                    b, sw, rules, up))
            after = self._plain.get(sw)
            if cfg is not old and old is not None and before is not None \
                    and after is not None and after is not before:
                mark_writes(cfg, old, plain_writes(before, after, old, cfg))
            self._installed[sw] = cfg
        return ControlState(switches=configs)

    def _leaf_action(self, sw: str, label: frozenset[int], ids: dict[tuple[int, ...], int]
                     ) -> tuple[str, tuple[tuple[str, int], ...]]:
        down = tuple(sorted(label - {UP}))
        if len(down) == 1 and UP not in label:
            return SET_PORT, (("port", down[0]),)
        return SET_MGID, (("mgid", ids[down] if down else 0), ("up", int(UP in label)))

    def _fill(self, builder: StateBuilder, sw: str, rules: list[tuple[Conj, frozenset[int]]],
              up: tuple[int, ...]) -> None:
        p = self.params
        for i, port in enumerate(up):
            builder.add_entry(sw, TableEntry(PORT_ROLE, ((KEY_PORT, Exact(port)),), MARK_UP))
            builder.add_entry(sw, TableEntry(UP_ECMP, ((KEY_BUCKET, Exact(i)),), SET_UP_PORT,
                                             (("port", port),)))
            # p4/camus.p4 sends the up copy as an I2E clone to session <port>
            builder.add_clone_session(sw, port, port)
        self._plain.pop(sw, None)
        if not rules:
            self.groups.assign(sw, ())
            self.compiled[sw] = 0
            self.orders.pop(sw, None)
            return
        if p.table == "one-big-table":
            c = Container(redundancy_queue=False)
            for conj, label in rules:
                if len(c.entries) > p.max_entries:
                    self.overflowed.add(sw)  # overflow policy: later filters are dropped
                    break
                for port in sorted(label):
                    c.add(Box(conj), port)
            prio = c.priorities("count")
            labels = {b: e.ports for b, e in c.entries.items()}
            self.compiled[sw] = len(labels)
            sets = {tuple(sorted(lab - {UP})) for lab in labels.values()
                    if len(lab - {UP}) > 1 or (lab - {UP} and UP in lab)}
            ids = self.groups.assign(sw, sets)
            for ports, gid in sorted(ids.items(), key=lambda kv: kv[1]):
                builder.add_group(sw, gid, ports)
            for box in sorted(labels, key=lambda b: (-prio[b], b.bounds)):
                action, params = self._leaf_action(sw, labels[box], ids)
                builder.add_entry(sw, TableEntry(
                    FLAT, tuple((field_key(n), Range(lo, hi))
                                for (n, _), (lo, hi) in zip(self.fields, box.bounds, strict=True)),
                    action, params, priority=prio[box]))
            self.orders.pop(sw, None)
            return
        pipe = (compile_bdd(rules, self.fields, p.order) if self.compiler is None
                else self.compiler.compile(rules, self.fields, p.order))
        self.compiled[sw] = pipe
        self.orders[sw] = tuple(n for n, _ in pipe.fields)
        sets = {tuple(sorted(lab - {UP})) for lab in pipe.leaf.values()
                if len(lab - {UP}) > 1 or (lab - {UP} and UP in lab)}
        ids = self.groups.assign(sw, sets)
        for ports, gid in sorted(ids.items(), key=lambda kv: kv[1]):
            builder.add_group(sw, gid, ports)
        plain: dict[str, dict[tuple[int, int, int], Any]] = {}
        for (name, _), table in zip(pipe.fields, pipe.tables, strict=True):
            for e in table:
                plain.setdefault(field_table(name, e.kind), {})[(e.state, e.lo, e.hi)] = e.next
                st = (KEY_STATE, Exact(e.state))
                if e.kind == "miss":
                    match: tuple[Any, ...] = (st,)
                elif e.kind == "exact":
                    match = (st, (field_key(name), Exact(e.lo)))
                else:
                    match = (st, (field_key(name), Range(e.lo, e.hi)))
                builder.add_entry(sw, TableEntry(field_table(name, e.kind), match, SET_STATE,
                                                 (("state", e.next),),
                                                 priority=1 if e.kind == "range" else 0))
        for state, label in sorted(pipe.leaf.items()):
            action, params = self._leaf_action(sw, label, ids)
            plain.setdefault(ACTIONS, {})[(state, 0, 0)] = (action, params)
            builder.add_entry(sw, TableEntry(ACTIONS, ((KEY_STATE, Exact(state)),), action,
                                             params))
        self._plain[sw] = plain

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        if notification.event is None:
            raise LookupError("camus-bdd needs notifications with an event (content model)")
        return Encoding((Packet(GROUP_MAC, host_mac(topology, notification.publisher),
                                ETHERTYPE_CAMUS, self.layout.pack(notification.event),
                                payload),))

    def state_cost(self, topology: Topology, state: ControlState) -> StateCost:
        pipes = [pp for pp in self.compiled.values() if isinstance(pp, Pipeline)]
        sbits = max((pp.state_bits for pp in pipes), default=1)
        specs = {ACTIONS: TableSpec(key_bits={KEY_STATE: sbits}, action_bits=17),
                 PORT_ROLE: TableSpec(key_bits={KEY_PORT: 9}),
                 UP_ECMP: TableSpec(key_bits={KEY_BUCKET: 8}, action_bits=9),
                 FLAT: TableSpec(key_bits={field_key(n): w for n, w in self.fields},
                                 action_bits=17)}
        for n, w in self.fields:
            for kind in ("exact", "range"):
                specs[field_table(n, kind)] = TableSpec(
                    key_bits={KEY_STATE: sbits, field_key(n): w}, action_bits=sbits)
            specs[field_table(n, "miss")] = TableSpec(key_bits={KEY_STATE: sbits},
                                                      action_bits=sbits)
        stages = 1 if self.params.table == "one-big-table" else len(self.fields) + 1
        return state_cost(state, specs, lambda t: "query_" in t, stages, self.params.ranges,
                          memo=self.cost_memo)

    def flow_metrics(self, topology: Topology, state: ControlState) -> dict[str, float]:
        return {"flow_limit": self.params.max_entries if self.params.table == "one-big-table"
                else 0}

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The content fast path (:mod:`sim.dataplanes.content_fast_path`) of Camus's
        pipeline; not for subclasses (they may change the encoding or the metrics)."""
        if type(self) is not CamusBdd:
            return None
        return self.content_fast_path(topology, delays, CamusFamily())


_MISS = object()


def plain_writes(before: dict[str, dict[tuple[int, int, int], Any]],
                 after: dict[str, dict[tuple[int, int, int], Any]],
                 old: SwitchConfig, new: SwitchConfig) -> int:
    """The writes from ``old`` to ``new`` (:func:`~sim.dataplanes.control_state.count_writes`)
    of two BDD configurations, their BDD tables compared as plain values.

    ``before`` / ``after``: the BDD field and leaf tables of ``old`` / ``new`` as
    ``table -> (state, lo, hi) -> next state or (action, params)``; that key is the
    entry's P4Runtime key within its table (a miss entry is ``(state, 0, 0)``, an exact
    one ``(state, v, v)``) and the value what else the entry holds, so equal plain
    entries are equal entries. The other tables, groups and sessions are compared as
    :func:`~sim.dataplanes.control_state.count_writes` does.
    """
    count = 0
    for table in before.keys() | after.keys():
        b, a = before.get(table, {}), after.get(table, {})
        count += sum(1 for k, v in a.items() if b.get(k, _MISS) != v)
        count += sum(1 for k in b if k not in a)

    def rest(cfg: SwitchConfig) -> ControlState:
        return ControlState(switches={"": SwitchConfig(
            tables={t: es for t, es in cfg.tables.items() if t not in before and t not in after},
            multicast_groups=cfg.multicast_groups, clone_sessions=cfg.clone_sessions)})

    return count + count_writes(rest(old), rest(new))
