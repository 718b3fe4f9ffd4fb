"""``pleroma-dz``: PLEROMA's dz flows on one spanning tree, with optional flow limits.

Control plane (seed 001 §2-§5):

1. Spatial indexing: every subscription and advertisement becomes a dz set
   (:func:`strategies.prefix_filter.dz.decompose`, at most ``max_dz`` dz each, on the
   indexed ``dims``); events carry the dz of length ``L`` in the IPv4
   (225.128.0.0/9, ``L <= 23``) or IPv6 (ff0e::/16) destination.
2. Routing: one spanning tree (:class:`strategies.content_filter.TreeRouting`).
   For each subscription, each publisher with an overlapping advertisement
   and each related pair ``(dz_sub, dz_adv)``, a flow with the longer dz is
   installed on every switch of the tree path, ingress = port towards the
   publisher, egress = next hop towards the subscriber (seed 004's explicit
   step 3).
3. Flow installation by Algorithm 1 (:meth:`PrefixTable.install`, each distinct
   hop of a subscription once: :mod:`strategies.prefix_filter.pleroma_install`); the
   logical (unlimited) flow set is kept as ground truth (digest A5.1).
4. Flow limits (``flow_limit`` > 0, one slot reserved by ``reserve_slot``):
   the local enforcer (``local``: ``baseline`` / ``min-space``) runs on every
   install that overflows a switch; the global optimizer (``global_cost``:
   ``traffic`` / ``history`` with sampling ``sampling``) rebuilds all switches
   from the unlimited flows in Alg. 3's order, once per install/update
   (``global_every = 0``) or after every ``global_every`` new subscriptions,
   or when the self-evaluation's false-positive rate exceeds ``self_eval``.
   Its result is deployed by Alg. 7 (:func:`deployment_plan`).
5. Unsubscribe: logical flows are removed; physical flows are trimmed to what
   the remaining unlimited flows need in the region each one serves (safe,
   no false negatives; merged flows stay merged until the next global run,
   digest A5.1).

Data plane: ``prefix_filter`` (LPM on the destination with the ingress port
exact); one multicast group per distinct egress set of two or more ports.

Deviations: control traffic (IP_fix) is not modelled; with no global run
the state after an update depends on the arrival order of subscriptions,
as with the thesis's local enforcers; traffic = ``window`` events per
publisher (publishers publish at equal rates); history windows are drawn
from the workload's event distribution at the current time.

References
----------
Seed 001 §2.2-2.3, §4.2 (Alg. 1), §5 (flow limits), §6 (evaluation);
seed 004 §2.3 (flow computation step 3); digest seed001-004 A1-A5, Part C.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sim.dataplanes.content_space import Event, Subscription
from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.event_header import (
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    PubsubLayout,
    host_ipv4,
    host_ipv6,
    ip_udp_pubsub,
)
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import Notification, Packet, group_mac, host_mac
from sim.dataplanes.prefix_filter.fast_path import DzKey, PrefixFamily
from sim.dataplanes.prefix_filter.reference import (
    KEY_PORT,
    KEY_V4,
    KEY_V6,
    TABLE_V4,
    TABLE_V6,
)
from sim.dataplanes.seeds import child_rng
from strategies.base import Encoding, register_strategy
from strategies.content_filter import ContentStrategy, GroupAllocator, LatencyParams, StateMap
from strategies.prefix_filter.dz import (
    IPV4_MAX_DZ,
    IPV6_MAX_DZ,
    bit_shifts,
    decompose,
    dz_to_ipv4,
    dz_to_ipv6,
    event_dz,
    max_length,
)
from strategies.prefix_filter.flow_enforcers import EnforcerStats, enforce_local
from strategies.prefix_filter.flow_limits import PrefixTable, normalize_flows
from strategies.prefix_filter.pleroma_arrival import shared_arrival
from strategies.prefix_filter.pleroma_global import (
    GlobalOptimizer,
    emulate_links,
    self_evaluate,
    switch_deployment_peak,
)
from strategies.prefix_filter.pleroma_install import (
    Enforcer,
    PathFlows,
    Record,
    install_batched,
)
from strategies.prefix_filter.pleroma_state import IncrementalStates
from strategies.table_cost import StateCost, TableSpec, state_cost
from topologies.model import Topology
from topologies.registry import check

Tables = dict[str, dict[int, PrefixTable]]


@dataclass(frozen=True, slots=True, kw_only=True)
class PleromaParams(LatencyParams):
    """``pleroma-dz`` parameters (plus the lookup latency model).

    Parameters
    ----------
    encoding : str
        ``ipv4`` (225.128.0.0/9) or ``ipv6`` (ff0e::/16).
    dz_bits : int
        Event dz length L (0 = the encoding's maximum, capped by the space).
    max_dz : int
        Cap on the dz per subscription/advertisement (0 = exact decomposition).
    dims : tuple of int
        Indexed attributes (empty = all; dimension selection).
    value_bits : int
        Width of each pubsub header value (0 = 16 or 32 from the space).
    flow_limit : int
        Flows per switch (0 = unlimited baseline).
    reserve_slot : bool
        Keep one slot free for deployment (effective limit = limit - 1).
    local : str
        Local enforcer: ``baseline`` (random leaf merge) or ``min-space``.
    global_cost : str
        ``none``, ``traffic`` (Alg. 5) or ``history`` (Alg. 6).
    global_every : int
        New subscriptions between global runs (0 = one run per install/update).
    global_candidates : str
        ``leaf`` or ``all`` merge points in the global greedy step.
    sampling : float
        History sampling factor s in (0, 1].
    window : int
        Events per publisher in the traffic/history window.
    self_eval : float
        Self-evaluated network FP rate that triggers a global run (0 = off).
    seed : int
        Root of the strategy's own random choices (baseline enforcer, windows).
    algorithm : str
        Shorthand for the evaluated combinations (seed 001 §6): ``baseline``
        (local baseline), ``min-space`` (local MS), ``traffic`` / ``history``
        (local MS plus the global optimizer); empty = use ``local`` and
        ``global_cost`` as given.
    """

    encoding: Literal["ipv4", "ipv6"] = "ipv4"
    dz_bits: int = 0
    max_dz: int = 8
    dims: tuple[int, ...] = ()
    value_bits: int = 0
    flow_limit: int = 0
    reserve_slot: bool = True
    local: Literal["baseline", "min-space"] = "min-space"
    global_cost: Literal["none", "traffic", "history"] = "none"
    global_every: int = 0
    global_candidates: Literal["leaf", "all"] = "leaf"
    sampling: float = 1.0
    window: int = 1000
    self_eval: float = 0.0
    seed: int = 1
    algorithm: Literal["", "baseline", "min-space", "traffic", "history"] = ""

    def __post_init__(self) -> None:
        LatencyParams.__post_init__(self)
        cap = IPV4_MAX_DZ if self.encoding == "ipv4" else IPV6_MAX_DZ
        check(0 <= self.dz_bits <= cap, f"dz_bits must be in [0, {cap}] for {self.encoding}")
        check(self.max_dz >= 0, "max_dz must be >= 0")
        check(self.value_bits in (0, 8, 16, 32, 64), "value_bits must be 0, 8, 16, 32 or 64")
        check(self.flow_limit == 0 or self.flow_limit >= 2, "flow_limit must be 0 or >= 2")
        check(self.global_every >= 0, "global_every must be >= 0")
        check(0 < self.sampling <= 1, "sampling must be in (0, 1]")
        check(self.window >= 1, "window must be >= 1")
        check(0 <= self.self_eval <= 1, "self_eval must be in [0, 1]")

    @property
    def local_mode(self) -> Literal["baseline", "min-space"]:
        return "baseline" if self.algorithm == "baseline" else (
            "min-space" if self.algorithm else self.local)

    @property
    def global_mode(self) -> Literal["none", "traffic", "history"]:
        if self.algorithm in ("traffic", "history"):
            return self.algorithm  # type: ignore[return-value]
        return "none" if self.algorithm else self.global_cost

    @property
    def effective_limit(self) -> int:
        if not self.flow_limit:
            return 0
        return self.flow_limit - 1 if self.reserve_slot else self.flow_limit


def unlimited_flows(logical: Mapping[str, Mapping[int, Mapping[str, Mapping[int, int]]]]
                    ) -> Tables:
    """The unlimited flow tables of logical flows (switch -> ingress -> dz -> egress
    counts): per (switch, ingress), the fixpoint of Algorithm 1 on the dz whose counts
    are not all gone (:func:`normalize_flows`; digest A5.1). The definition
    :meth:`PleromaModel.unlimited` keeps up to date."""
    return {sw: {port: normalize_flows({dz: c for dz, c in flows.items() if c})
                 for port, flows in per.items()}
            for sw, per in logical.items()}


#: per (switch, ingress): the (dz, egress) pairs counted since the last
#: :meth:`PleromaModel.unlimited`, or None where a pair's count went to zero
Dirty = dict[tuple[str, int], set[tuple[str, int]] | None]


def new_pairs(logical: Mapping[str, Mapping[int, Mapping[str, Mapping[int, int]]]],
              paths: Sequence[PathFlows]) -> dict[tuple[str, int], set[tuple[str, int]]]:
    """The (dz, egress) pairs, per (switch, ingress), that installing ``paths`` counts and
    the logical flows do not have yet (the only installs that change the unlimited
    flows: :func:`normalize_flows` reads which pairs have a count, not how many)."""
    out: dict[tuple[str, int], set[tuple[str, int]]] = {}
    none: Mapping[int, Mapping[str, Mapping[int, int]]] = {}
    seen: set[tuple[str, int, int, tuple[str, ...]]] = set()
    for flows, hops in paths:
        for sw, inp, egress in hops:
            if (sw, inp, egress, flows) in seen:
                continue
            seen.add((sw, inp, egress, flows))
            per = logical.get(sw, none).get(inp)
            pairs = [(dz, egress) for dz in flows
                     if per is None or egress not in per.get(dz, ())]
            if pairs or per is None:
                out.setdefault((sw, inp), set()).update(pairs)
    return out


def _add_pairs(table: PrefixTable, pairs: set[tuple[str, int]]) -> PrefixTable:
    """``normalize_flows`` of the logical flows ``table`` normalises plus ``pairs``: a
    copy of ``table`` with each pair installed by Algorithm 1 (whose fixpoint
    :func:`normalize_flows` is, seed 001 §4.2), its flows in key order as
    :func:`normalize_flows` leaves them."""
    out = table.copy()
    for dz, egress in sorted(pairs):
        out.install(dz, (egress,))
    flows = out.flows
    if list(flows) != out.keys:
        out.flows = {k: flows[k] for k in out.keys}
    return out


@dataclass
class PleromaModel:
    """The controller's memory between installs (mirrors one ControlState)."""

    length: int
    dims: tuple[int, ...] | None
    subs: dict[int, Subscription]
    sub_dz: dict[int, tuple[str, ...]]
    adv_dz: dict[str, tuple[str, ...]]
    #: switch -> ingress -> dz -> egress port -> (subscription, publisher) pairs needing it
    logical: dict[str, dict[int, dict[str, dict[int, int]]]]
    physical: Tables
    records: dict[int, list[Record]]
    since_global: int = 0
    peak: int = 0
    global_runs: int = 0
    unlimited_cache: Tables = field(default_factory=dict)
    #: (switch, ingress) whose logical (dz, egress) pairs changed since the last
    #: :meth:`unlimited`: the pairs added (:func:`new_pairs`), or None where one went
    #: away (:meth:`PleromaDz._remove`)
    dirty: Dirty = field(default_factory=dict)
    #: (switch, ingress) -> keys of physical flows made by merges (local or global)
    merged: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    #: True while :attr:`logical`, :attr:`physical` and :attr:`merged` are shared with
    #: other models (:func:`~strategies.prefix_filter.pleroma_arrival.shared_arrival`):
    #: :meth:`own` copies them before the model writes them
    shared: bool = False

    def own(self) -> None:
        """Copy the shared logical counters, physical tables and merged sets (a no-op
        unless :attr:`shared`), so that writes stay in this model."""
        if not self.shared:
            return
        self.logical = {sw: {inp: {dz: dict(c) for dz, c in per.items()}
                             for inp, per in ports.items()}
                        for sw, ports in self.logical.items()}
        self.physical = {sw: {inp: t.copy() for inp, t in per.items()}
                         for sw, per in self.physical.items()}
        self.merged = {key: set(nodes) for key, nodes in self.merged.items()}
        self.shared = False

    def unlimited(self) -> Tables:
        """The unlimited flow tables, :func:`unlimited_flows` of the logical flows.

        Incremental: only the (switch, ingress) in :attr:`dirty` change: their
        table is the old one with the added pairs installed (:func:`_add_pairs`),
        or normalised again where a pair went away; the other ports keep their
        tables. A switch with a port changed gets a new dict (ports in the
        logical flows' order) and the others keep theirs, so the references
        earlier states took (:meth:`PleromaDz.content_extras`) never change and
        an unchanged switch is the same object (the content fast path compiles
        it once).
        """
        if self.dirty:
            ports: dict[str, dict[int, set[tuple[str, int]] | None]] = {}
            for (sw, inp), pairs in self.dirty.items():
                ports.setdefault(sw, {})[inp] = pairs
            cache = self.unlimited_cache
            for sw in sorted(ports):
                again, old = ports[sw], cache.get(sw, {})
                per: dict[int, PrefixTable] = {}
                for port, flows in self.logical.get(sw, {}).items():
                    kept = old.get(port)
                    if port not in again and kept is not None:
                        per[port] = kept
                        continue
                    pairs = again.get(port)
                    per[port] = (_add_pairs(kept, pairs) if kept is not None and pairs is not None
                                 else normalize_flows({dz: c for dz, c in flows.items() if c}))
                cache[sw] = per
            self.dirty = {}
        return self.unlimited_cache

    def mark(self, changed: Mapping[tuple[str, int], set[tuple[str, int]] | None]) -> None:
        """Add ``changed`` (pairs added per (switch, ingress), None: renormalise) to
        :attr:`dirty`."""
        dirty = self.dirty
        for key, pairs in changed.items():
            if key not in dirty:
                dirty[key] = None if pairs is None else set(pairs)
            elif pairs is None:
                dirty[key] = None
            elif (have := dirty[key]) is not None:
                have |= pairs


@register_strategy
class PleromaDz(ContentStrategy):
    name = "pleroma-dz"
    dataplane = "prefix_filter"
    Params = PleromaParams
    summary = "PLEROMA dz flows (LPM on IP multicast addresses), optional flow limits"

    def __init__(self, params: PleromaParams | None = None) -> None:
        super().__init__(params)
        self.groups = GroupAllocator()
        self.stats = EnforcerStats()
        self._models = StateMap()  # state -> the controller's model it was built from
        self._rng = child_rng(self.params.seed, "pleroma-local")
        self._space: Any = None  # the event space and header layout of the last build
        self._layout_cache: PubsubLayout | None = None
        #: how a subscription's flows are installed (:func:`install_reference` is the
        #: definition, :func:`install_batched` the same result with less work)
        self.install_flows: Callable[[PleromaModel, Sequence[PathFlows], Enforcer],
                                     list[Record]] = install_batched
        #: how a state is built from the physical flows (:func:`state_reference` is the
        #: definition, :class:`IncrementalStates` rebuilds only the switches that changed)
        self.build_state: Callable[..., ControlState] = IncrementalStates().build
        #: a first install takes its arrival from the runner's caches
        #: (:func:`~strategies.prefix_filter.pleroma_arrival.shared_arrival`); False: the
        #: loop over :attr:`install_flows`, the definition
        self.share_arrivals = True

    # -- helpers -------------------------------------------------------------
    def _layout(self, view: Any) -> PubsubLayout:
        bits = self.params.value_bits or (16 if max(view.space.bits) <= 16 else 32)
        return PubsubLayout(view.space.d, bits)

    def _length(self, view: Any) -> int:
        cap = IPV4_MAX_DZ if self.params.encoding == "ipv4" else IPV6_MAX_DZ
        dims = self.params.dims or None
        return min(self.params.dz_bits or cap, cap, max_length(view.space, dims))

    def model_of(self, state: ControlState) -> PleromaModel:
        """The controller's model behind ``state`` (one object, updated in place by later
        builds: its dz length, dimensions and subscriptions are the latest's)."""
        return self._models.get(state)  # type: ignore[no-any-return]

    # -- control plane ---------------------------------------------------------
    def build(self, topology: Topology, view: Any, previous: ControlState | None
              ) -> ControlState:
        p = self.params
        routing = self.routing_for(topology)
        dims = tuple(p.dims) or None
        self._space = view.space
        self._layout_cache = self._layout(view)
        for a in p.dims:
            check(0 <= a < view.space.d, f"dims names attribute {a}, the space has {view.space.d}")
        model = None
        if previous is not None:
            try:
                model = self._models.get(previous)
            except LookupError:
                pass
        fresh = model is None
        if model is None:
            length = self._length(view)
            model = PleromaModel(length=length, dims=dims, subs={}, sub_dz={}, adv_dz={},
                                 logical={}, physical={}, records={})
        model.own()
        model.adv_dz = {pub: decompose(view.advertisements[pub], view.space, model.length,
                                       p.max_dz, dims) for pub in view.publishers}
        current = {s.sub_id: s for s in view.subscriptions}
        removed = [sid for sid in model.subs if sid not in current]
        touched: set[tuple[str, int]] = set()
        for sid in removed:
            touched |= self._remove(model, sid)
        if touched:
            self._trim(model, touched)
        optimizer = GlobalOptimizer(p, routing, view, child_rng(p.seed, "pleroma-global"))
        every = p.global_every and p.effective_limit and p.global_mode != "none"
        if fresh and self.share_arrivals and install_batched is self.install_flows \
                and type(self)._add is PleromaDz._add and not every:
            shared_arrival(self, model, topology, view)
        for sub in view.subscriptions:
            if sub.sub_id in model.subs:
                continue
            self._add(model, topology, view, sub)
            model.since_global += 1
            if every and model.since_global >= p.global_every:
                self._global(model, optimizer)
        if p.effective_limit and p.global_mode != "none" and not p.global_every:
            self._global(model, optimizer)
        elif p.effective_limit and p.self_eval > 0 and p.global_mode != "none":
            rate = self_evaluate(model.physical, model.unlimited(), routing, view, model.length,
                                 dims, p.window, p.sampling,
                                 child_rng(p.seed, "pleroma-selfeval", view.version))
            if rate > p.self_eval:
                self._global(model, optimizer)
        state = self._state(topology, model)
        self._models.put(state, model)
        return state

    def _flows_for(self, model: PleromaModel, pub: str, sub: Subscription) -> list[str]:
        out = set()
        for a in model.adv_dz[pub]:
            for s in model.sub_dz[sub.sub_id]:
                if s.startswith(a):
                    out.add(s)
                elif a.startswith(s):
                    out.add(a)
        return sorted(out)

    def _paths(self, model: PleromaModel, topology: Topology, view: Any,
               sub: Subscription) -> list[PathFlows]:
        """Record ``sub`` and its dz in ``model``; its flows and tree hops per publisher."""
        p = self.params
        routing = self.routing_for(topology)
        model.subs[sub.sub_id] = sub
        model.sub_dz[sub.sub_id] = decompose(sub.box, view.space, model.length, p.max_dz,
                                             model.dims)
        paths: list[PathFlows] = []
        for pub in view.publishers:
            if pub == sub.host:
                continue
            flows = self._flows_for(model, pub, sub)
            if flows:
                paths.append((tuple(flows), routing.hops(pub, sub.host)))
        return paths

    def _add(self, model: PleromaModel, topology: Topology, view: Any,
             sub: Subscription) -> None:
        p = self.params
        paths = self._paths(model, topology, view, sub)
        enforcer = Enforcer(p.effective_limit, p.local_mode, self._rng, self.stats)
        model.mark(new_pairs(model.logical, paths))
        model.records[sub.sub_id] = self.install_flows(model, paths, enforcer)

    def _remove(self, model: PleromaModel, sid: int) -> set[tuple[str, int]]:
        touched = set()
        for sw, inp, out, flows in model.records.pop(sid, []):
            per = model.logical[sw][inp]
            for dz in flows:
                c = per[dz]
                c[out] -= 1
                if c[out] <= 0:
                    del c[out]
                    model.mark({(sw, inp): None})  # a (dz, egress) pair is gone
                if not c:
                    del per[dz]
            touched.add((sw, inp))
        del model.subs[sid]
        model.sub_dz.pop(sid, None)
        return touched

    def _trim(self, model: PleromaModel, touched: set[tuple[str, int]]) -> None:
        """Rebuild physical flows from the remaining unlimited ones, keeping merges (A5.1).

        Unmerged flows become exactly the unlimited flows again; a merged flow
        stays (while any unlimited flow still needs its region) with the
        ports the unlimited flows in the region it serves need, and absorbs
        the unlimited flows inside it that had no flow of their own.
        """
        unl = model.unlimited()
        before = {sw: {i: t.copy() for i, t in model.physical.get(sw, {}).items()}
                  for sw in {sw for sw, _ in touched}}
        for sw, inp in sorted(touched):
            phys = model.physical[sw][inp]
            ref = unl.get(sw, {}).get(inp, PrefixTable())
            cand = sorted(m for m in model.merged.get((sw, inp), ()) if m in phys.flows)
            # unlimited flows keep a flow of their own unless a merged flow absorbed them
            need: dict[str, set[int]] = {
                u: set(ref.flows[u]) for u in ref.keys
                if u in phys.flows or u in cand
                or not any(u.startswith(m) and u != m for m in cand)}
            survivors = set(need) | set(cand)
            for m in cand:
                ports: set[int] = set()
                for a in ref.ancestors(m):
                    ports |= ref.flows[a]
                for u in ref.descendants(m):
                    if not any(u[:i] in survivors for i in range(len(m) + 1, len(u) + 1)):
                        ports |= ref.flows[u]  # u's region is served by m
                if ports:
                    need[m] = need.get(m, set()) | ports
            model.physical[sw][inp] = normalize_flows(need)
            model.merged[(sw, inp)] = {m for m in cand if m in need}
        # Restoring the unlimited flows no surviving merged flow absorbs can push a switch
        # over its limit: the local enforcer runs again before anything is deployed, and
        # the peak of the whole transition (Alg. 7 order from the tables before) is kept.
        limit = self.params.effective_limit
        for sw in sorted(before):
            tables = model.physical[sw]
            if limit and sum(len(t) for t in tables.values()) > limit:
                for port, node in enforce_local(tables, limit, self.params.local_mode,
                                                self._rng, self.stats):
                    model.merged.setdefault((sw, port), set()).add(node)
            model.peak = max(model.peak, switch_deployment_peak(before[sw], tables))

    def _global(self, model: PleromaModel, optimizer: GlobalOptimizer) -> None:
        unl = model.unlimited()
        new, peak = optimizer.run(model.physical, unl, model.length)
        model.physical = new
        model.merged = {}
        for sw, per in new.items():
            for inp, t in per.items():
                ref = unl.get(sw, {}).get(inp)
                made = {k for k in t.keys if ref is None or ref.flows.get(k) != t.flows[k]}
                if made:
                    model.merged[(sw, inp)] = made
        model.peak = max(model.peak, peak)
        model.since_global = 0
        model.global_runs += 1

    def _state(self, topology: Topology, model: PleromaModel) -> ControlState:
        return self.build_state(topology, model.physical, self.groups,
                                self.params.encoding == "ipv4", model.length)

    # -- publisher ---------------------------------------------------------------
    def event_address(self, state: ControlState, event: Event, view_space: Any) -> int:
        model = self.model_of(state)
        dz = event_dz(event, view_space, model.length, model.dims)
        return (dz_to_ipv4(dz) if self.params.encoding == "ipv4" else dz_to_ipv6(dz))[0]

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        event = notification.event
        if event is None:
            raise LookupError("pleroma-dz needs notifications with an event (content model)")
        view_space = self._space
        layout = self._layout_cache
        if layout is None:
            raise LookupError("pleroma-dz: encode before install")
        dst = self.event_address(state, event, view_space)
        hid = topology.host_id(notification.publisher)
        if self.params.encoding == "ipv4":
            header = ip_udp_pubsub(4, host_ipv4(hid), dst, layout.pack(event), len(payload))
            pkt = Packet(group_mac(dst & 0x7FFFFF), host_mac(topology, notification.publisher),
                         ETHERTYPE_IPV4, header, payload)
        else:
            header = ip_udp_pubsub(6, host_ipv6(hid), dst, layout.pack(event), len(payload))
            pkt = Packet(0x3333_0000_0000 | (dst & 0xFFFF_FFFF),
                         host_mac(topology, notification.publisher), ETHERTYPE_IPV6, header,
                         payload)
        return Encoding((pkt,))

    # -- metrics -----------------------------------------------------------------
    def state_cost(self, topology: Topology, state: ControlState) -> StateCost:
        v4 = self.params.encoding == "ipv4"
        spec = TableSpec(key_bits={KEY_PORT: 9, KEY_V4 if v4 else KEY_V6: 32 if v4 else 128},
                         action_bits=16)
        table = TABLE_V4 if v4 else TABLE_V6
        return state_cost(state, {table: spec}, lambda t: t == table, 1, memo=self.cost_memo)

    def network_links(self, topology: Topology, state: ControlState,
                      notification: Notification, receivers: frozenset[str]
                      ) -> set[tuple[str, str]] | None:
        model = self.model_of(state)
        dz = event_dz(notification.event, self._space, model.length, model.dims)
        return emulate_links(self.record_of(state).content.reference,
                             self.routing_for(topology), topology, notification.publisher, dz)

    def content_extras(self, topology: Topology, state: ControlState) -> dict[str, Any]:
        """The event's destination (dz plan) and the unlimited flows as they stand after
        this build (the reference of the network false positives, seed 001 §6.2)."""
        model = self.model_of(state)
        family = 4 if self.params.encoding == "ipv4" else 6
        return {"event_key": DzKey(family, model.length,
                                   bit_shifts(self._space, model.length, model.dims),
                                   self._space.d),
                "reference": dict(model.unlimited())}

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The content fast path (:mod:`sim.dataplanes.content_fast_path`) of the prefix
        filter; not for subclasses (they may change the encoding or the metrics)."""
        if type(self) is not PleromaDz:
            return None
        return self.content_fast_path(topology, delays, PrefixFamily())

    def flow_metrics(self, topology: Topology, state: ControlState) -> dict[str, float]:
        """Merge ratios, flows per switch and the deployment peak of a state just built
        (the peak since the previous build)."""
        model = self.model_of(state)
        unl = model.unlimited()
        ratios, limited = [], []
        flows_max = 0
        for sw in topology.switches:
            u = sum(len(t) for t in unl.get(sw, {}).values())
            f = sum(len(t) for t in model.physical.get(sw, {}).values())
            flows_max = max(flows_max, f)
            if u:
                ratios.append((u - f) / u)
                if self.params.effective_limit and u > self.params.effective_limit:
                    limited.append((u - f) / u)
        peak, model.peak = model.peak, 0
        return {"merge_ratio": sum(ratios) / len(ratios) if ratios else 0.0,
                "merge_ratio_limited": sum(limited) / len(limited) if limited else 0.0,
                "flow_limit": self.params.flow_limit, "flows_peak": peak,
                "flows_max": flows_max}

