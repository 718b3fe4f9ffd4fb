"""``range-boxes``: seed 004's exact range boxes with overlap closure and priorities.

Control plane (seed 004 §3-4): for every subscription, publisher with an
overlapping advertisement and switch on the tree path between them, the
controller sends a *base flow* (box = advertisement ∩ subscription, egress
port towards the subscriber) to the switch's :class:`Container`, the
controller's mirror of the switch table:

- an entry is a box; its ports are the union of the ports of all active
  base flows containing it; the entry set is closed under intersection
  (every overlap of two entries is an entry, seed 004's overlap entries), so
  the highest-priority matching entry carries exactly the union of the
  ports of the base flows containing the event: zero false positives by
  construction;
- priorities (``priority``): ``volume`` (default, the digest's
  recommendation: rank by box volume, smaller volume = higher priority,
  strictly increasing along containment), ``inverse-volume`` (space volume
  minus box volume plus 1: the same order, but a function of the box alone,
  so churn does not rewrite the other entries' priorities; needs a space of
  at most 2^31 points, P4Runtime priorities being int32), ``count`` (number of base flows
  containing the box, seed 002's construction) or ``thesis`` (1 + the
  number of containing entries with base flows; a pure overlap gets 1 + the
  highest priority of the entries containing it, a superset of its causes);
- the redundancy queue (``redundancy_queue``): a base flow contained in
  another active base flow with the same port waits in a queue instead of
  being installed, and re-enters when its cover goes away.

Data plane ``range_filter``: one range table over the pubsub values; one
multicast group per entry with two or more ports. Table growth is reported
(entries per switch, :data:`flows_max`); ``capacity`` is reported as the
row's ``flow_limit`` and not enforced.

Deviations: deleting a base flow drops the entries that are no longer the
intersection of the base flows containing them instead of following cause
lists (the same entry set: the closure of the remaining base flows);
the egress check drops a replica on its ingress port, which keeps the
single-tree forwarding exact without an ingress-port key (seed 004 had one
publisher).

References
----------
Seed 004 §3.2 (Configurator, base flows), §4.2 (P4 table, multicast),
§4.3 (Container: relations, overlap, priorities, delete, redundancy);
digest seed001-004 B1-B6.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from sim.dataplanes.content_space import Box, Event
from sim.dataplanes.control_state import ControlState, Range, StateBuilder, TableEntry
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.event_header import ETHERTYPE_IPV4, PubsubLayout, host_ipv4, ip_udp_pubsub
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import Notification, Packet, host_mac
from sim.dataplanes.range_filter.fast_path import RangeFamily
from sim.dataplanes.range_filter.reference import (
    FORWARD,
    MULTICAST,
    TABLE,
    RangeFilterDataPlane,
    value_key,
)
from strategies.base import Encoding, register_strategy
from strategies.content_filter import (
    ContentStrategy,
    GroupAllocator,
    LatencyParams,
)
from strategies.range_filter.container_table import ContainerTable
from strategies.table_cost import StateCost, TableSpec, state_cost
from topologies.model import Topology
from topologies.registry import check

PriorityRule = Literal["volume", "inverse-volume", "count", "thesis"]
GROUP_MAC = 0x01_00_5E_7F_FF_FA  # all range-filter events use one group MAC


@dataclass
class BoxEntry:
    """One installed entry of a Container: its box and the ports of the base flows
    containing it (with multiplicity, so deletions are exact)."""

    box: Box
    port_count: dict[int, int] = field(default_factory=dict)
    bases: int = 0  # active base flows whose box equals this entry's box

    @property
    def ports(self) -> frozenset[int]:
        return frozenset(self.port_count)  # counts are kept > 0

    @property
    def covering(self) -> int:
        """Active base flows containing the entry."""
        return sum(self.port_count.values())


def _bounds_arrays(boxes: list[Box], d: int = 0) -> tuple[np.ndarray, np.ndarray]:
    d = len(boxes[0].bounds) if boxes else d
    b = np.asarray([x.bounds for x in boxes], dtype=np.int64).reshape(len(boxes), d, 2)
    return b[:, :, 0], b[:, :, 1]


def _holders(blo: np.ndarray, bhi: np.ndarray, qlo: np.ndarray, qhi: np.ndarray
             ) -> np.ndarray:
    """``out[q, b]``: base box ``b`` (rows of ``blo``/``bhi``) contains query box ``q``."""
    out = np.empty((len(qlo), len(blo)), dtype=bool)
    step = max(1, _CHUNK // max(1, blo.size))  # bounded temporaries
    for s in range(0, len(qlo), step):
        out[s:s + step] = np.all((blo[None] <= qlo[s:s + step, None])
                                 & (bhi[None] >= qhi[s:s + step, None]), axis=2)
    return out


_CHUNK = 1 << 21  # elements of the (queries x bases x dims) temporaries


class Container:
    """The controller's mirror of one switch's range table (seed 004 §4.3).

    Base flows are registered with :meth:`add` / :meth:`remove`. The entries
    are the intersection closure of the active base flows (every overlap of
    two entries is an entry). Adding follows seed 004's procedure (an
    equivalent box extends its entry; otherwise the box and its overlaps
    with every entry become entries); removing drops exactly the entries that
    are no longer the intersection of the base flows containing them, which
    leaves the closure of the remaining base flows.
    """

    def __init__(self, redundancy_queue: bool = True, space_volume: int = 1 << 30) -> None:
        self.redundancy_queue = redundancy_queue
        self.space_volume = space_volume  # points of the event space (inverse-volume rule)
        self.bases: dict[int, tuple[Box, int]] = {}   # id -> (box, port), all registered
        self.active: set[int] = set()
        self.queue: set[int] = set()
        self.entries: dict[Box, BoxEntry] = {}
        self.version = 0  # bumped on every change of the entries or their ports
        self._next = 0
        self._arrays: tuple[list[Box], np.ndarray, np.ndarray] | None = None
        #: boxes whose entry appeared, went or changed since the reader last took the set
        #: (None: not recorded; :class:`~strategies.range_filter.container_table.ContainerTable`
        #: turns it on)
        self.touched: set[Box] | None = None

    # -- base flows ----------------------------------------------------------
    def add(self, box: Box, port: int) -> int:
        """Register base flow ``(box -> port)``; returns its id."""
        bid = self._next
        self._next += 1
        self.bases[bid] = (box, port)
        if self.redundancy_queue and self._covered(bid):
            self.queue.add(bid)
            return bid
        if self.redundancy_queue:
            for other in sorted(o for o in self.active if self._covers(bid, o)):
                self._deactivate(other)
                self.queue.add(other)
        self._activate(bid)
        return bid

    def remove(self, bid: int) -> None:
        """Delete base flow ``bid``; queued flows no longer covered re-enter."""
        if bid in self.queue:
            self.queue.discard(bid)
            del self.bases[bid]
            return
        self._deactivate(bid)
        del self.bases[bid]
        for b in sorted(self.queue):
            if not self._covered(b):
                self.queue.discard(b)
                self._activate(b)

    def _covers(self, a: int, b: int) -> bool:
        (ba, pa), (bb, pb) = self.bases[a], self.bases[b]
        return a != b and pa == pb and ba.covers(bb)

    def _covered(self, bid: int) -> bool:
        return any(self._covers(o, bid) for o in self.active)

    def _entry_arrays(self) -> tuple[list[Box], np.ndarray, np.ndarray]:
        if self._arrays is None:
            boxes = list(self.entries)
            self._arrays = (boxes, *_bounds_arrays(boxes))
        return self._arrays

    def _base_arrays(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ids = sorted(self.active)
        lo, hi = _bounds_arrays([self.bases[i][0] for i in ids], d)
        return lo, hi, np.asarray([self.bases[i][1] for i in ids], dtype=np.int64)

    def _touch(self, boxes: Iterable[Box]) -> None:
        if self.touched is not None:
            self.touched.update(boxes)

    def _activate(self, bid: int) -> None:
        box, port = self.bases[bid]
        self.active.add(bid)
        self.version += 1
        lo, hi = _bounds_arrays([box])
        boxes, elo, ehi = self._entry_arrays()
        fresh: list[Box] = []
        if box in self.entries:  # an equivalent entry: extend it, no new areas
            self.entries[box].bases += 1
            self._touch((box,))
        else:
            fresh.append(box)
            if boxes:
                ilo, ihi = np.maximum(elo, lo), np.minimum(ehi, hi)
                rows = np.flatnonzero(np.all(ilo <= ihi, axis=1))
                for i, los, his in zip(rows.tolist(), ilo[rows].tolist(), ihi[rows].tolist(),
                                       strict=True):
                    o = Box(tuple(zip(los, his, strict=True)))
                    if o != box and o != boxes[i] and o not in self.entries:
                        fresh.append(o)  # an overlap entry
        if boxes:  # existing entries inside the new base flow gain its port
            inside = np.flatnonzero(np.all((elo >= lo) & (ehi <= hi), axis=1)).tolist()
            for i in inside:
                pc = self.entries[boxes[i]].port_count
                pc[port] = pc.get(port, 0) + 1
            self._touch(boxes[i] for i in inside)
        if fresh:
            new = list(dict.fromkeys(fresh))
            blo, bhi, bports = self._base_arrays(len(box.bounds))
            flo, fhi = _bounds_arrays(new)
            for o, holders in zip(new, _holders(blo, bhi, flo, fhi), strict=True):
                counts: dict[int, int] = {}
                for q in bports[holders].tolist():
                    counts[q] = counts.get(q, 0) + 1
                self.entries[o] = BoxEntry(o, counts, 1 if o == box else 0)
            self._touch(new)
            # the new entries come last in ``entries``: extend the arrays in that order
            self._arrays = (boxes + new, np.concatenate([elo, flo]), np.concatenate([ehi, fhi])) \
                if boxes else (new, flo, fhi)

    def _deactivate(self, bid: int) -> None:
        box, port = self.bases[bid]
        self.active.discard(bid)
        self.version += 1
        if box in self.entries:
            self.entries[box].bases -= 1
            self._touch((box,))
        boxes, elo, ehi = self._entry_arrays()
        if not boxes:
            return
        lo, hi = _bounds_arrays([box])
        inside = np.flatnonzero(np.all((elo >= lo) & (ehi <= hi), axis=1))
        if not len(inside):
            return
        blo, bhi, _ = self._base_arrays(len(box.bounds))
        qlo, qhi = elo[inside], ehi[inside]
        holders = _holders(blo, bhi, qlo, qhi)
        # kept: still the intersection of the base flows holding it
        low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        top = np.where(holders[:, :, None], blo[None], low).max(axis=1, initial=low)
        bottom = np.where(holders[:, :, None], bhi[None], high).min(axis=1, initial=high)
        keep = holders.any(axis=1) & np.all(top == qlo, axis=1) & np.all(bottom == qhi, axis=1)
        dropped: list[int] = []
        for i, k in zip(inside.tolist(), keep.tolist(), strict=True):
            e = self.entries[boxes[i]]
            e.port_count[port] -= 1
            if not e.port_count[port]:
                del e.port_count[port]
            if not k:
                del self.entries[boxes[i]]
                dropped.append(i)
        self._touch(boxes[i] for i in inside.tolist())
        if dropped:  # drop their rows, keeping the order of ``entries``
            mask = np.ones(len(boxes), dtype=bool)
            mask[dropped] = False
            self._arrays = ([b for b, m in zip(boxes, mask.tolist(), strict=True) if m],
                            elo[mask], ehi[mask])

    # -- table ---------------------------------------------------------------
    def priorities(self, rule: PriorityRule) -> dict[Box, int]:
        """Entry priorities (higher wins) under ``rule``."""
        boxes = list(self.entries)
        if rule == "volume":
            vols = sorted({b.volume for b in boxes}, reverse=True)
            rank = {v: i + 1 for i, v in enumerate(vols)}
            return {b: rank[b.volume] for b in boxes}
        if rule in ("count", "inverse-volume"):  # the entry alone decides
            return {b: self.priority(b, rule) for b in boxes}
        out: dict[Box, int] = {}
        with_bases = [b for b in boxes if self.entries[b].bases]
        for b in sorted(boxes, key=lambda x: -x.volume):  # containers before contents
            if self.entries[b].bases:
                out[b] = 1 + sum(1 for o in with_bases if o != b and o.covers(b))
            else:
                out[b] = 1 + max((out[o] for o in out if o != b and o.covers(b)), default=0)
        return out

    def priority(self, box: Box, rule: PriorityRule) -> int:
        """Priority of entry ``box`` under a rule that depends on the entry alone
        (``count``, ``inverse-volume``)."""
        if rule == "count":
            return self.entries[box].covering
        if rule != "inverse-volume":
            raise ValueError(f"priority rule {rule!r} depends on the other entries")
        inv = self.space_volume - box.volume + 1  # a function of the box alone: churn-stable
        if inv >= 1 << 31:
            raise ValueError("inverse-volume priorities need a space of at most 2^31 points "
                             "(P4Runtime priorities are int32); use priority=volume")
        return inv

    def lookup(self, event: Event, rule: PriorityRule = "volume") -> frozenset[int]:
        """Ports of the highest-priority entry containing ``event`` (ties: smallest volume)."""
        prio = self.priorities(rule)
        hits = [b for b in self.entries if b.contains(event)]
        if not hits:
            return frozenset()
        best = max(hits, key=lambda b: (prio[b], -b.volume))
        return self.entries[best].ports

    def wanted(self, event: Event) -> frozenset[int]:
        """Ground truth: ports of all registered base flows containing ``event``."""
        return frozenset(p for b, p in self.bases.values() if b.contains(event))


def fill_container_table(builder: StateBuilder, sw: str, c: Container | None, *,
                         rule: PriorityRule, groups: GroupAllocator,
                         made: dict[str, dict[Any, TableEntry]], table: str,
                         forward: tuple[str, str], multicast: tuple[str, str],
                         match: Callable[[Box], tuple[tuple[str, Any], ...]]) -> None:
    """Write switch ``sw``'s container as one table plus its multicast groups.

    One entry per container box with ports, highest priority first (equal
    priorities, possible under the ``thesis`` rule only, go smallest box
    first: the order :meth:`Container.lookup` resolves ties in, kept by the
    stable lookup sort); a single port becomes ``forward`` = (action, port
    parameter), two or more the multicast group of that port set
    (``multicast`` = (action, group parameter)), numbered by ``groups``.
    ``made`` (switch -> key -> entry) carries the entries of the previous
    fill, so unchanged entries are the same objects and cheap to diff.

    Parameters
    ----------
    builder : StateBuilder
        Receives the groups and entries.
    sw : str
        The switch.
    c : Container or None
        Its container (None or empty: no entries, its groups released).
    rule : {"volume", "inverse-volume", "count", "thesis"}
        Priority rule (:meth:`Container.priorities`).
    groups : GroupAllocator
        Multicast group ids per switch.
    made : dict
        Entries of the previous fill per switch, replaced by this one's.
    table : str
        The table's P4Info name.
    forward, multicast : tuple of (str, str)
        Action and parameter names for one port and for a port set.
    match : callable
        The entry's match fields for a box.

    References
    ----------
    Seed 004 §4.2 (P4 table, multicast groups), §4.3 (priorities); seed 002
    §III-D; digest seed001-004 B3-B5, seed002-003 C.1 S1.
    """
    if c is None or not c.entries:
        groups.assign(sw, ())
        return
    prio = c.priorities(rule)
    sets = {tuple(sorted(e.ports)) for e in c.entries.values() if len(e.ports) > 1}
    ids = groups.assign(sw, sets)
    for ports, gid in sorted(ids.items(), key=lambda kv: kv[1]):
        builder.add_group(sw, gid, ports)
    old = made.get(sw, {})
    now = made[sw] = {}
    for box in sorted(c.entries, key=lambda b: (-prio[b], b.volume, b.bounds)):
        ports = tuple(sorted(c.entries[box].ports))
        if not ports:
            continue
        action, param = ((forward[0], (forward[1], ports[0])) if len(ports) == 1
                         else (multicast[0], (multicast[1], ids[ports])))
        key = (box, action, param, prio[box])
        entry = old.get(key)
        if entry is None:
            entry = TableEntry(table=table, match=match(box), action=action, params=(param,),
                               priority=prio[box])
        now[key] = entry
        builder.add_entry(sw, entry)


def _range_match(box: Box) -> tuple[tuple[str, Any], ...]:
    """One range per pubsub value (the ``range_filter`` table's key)."""
    return tuple((value_key(i), Range(lo, hi)) for i, (lo, hi) in enumerate(box.bounds))


def closure_entries(bases: Iterable[tuple[Box, int]], redundancy_queue: bool = False
                    ) -> Container:
    """A container holding ``bases`` (batch use: seed 002's flat table)."""
    c = Container(redundancy_queue)
    for box, port in bases:
        c.add(box, port)
    return c


@dataclass(frozen=True, slots=True, kw_only=True)
class RangeBoxesParams(LatencyParams):
    """``range-boxes`` parameters (plus the lookup latency model).

    Parameters
    ----------
    value_bits : int
        Width of each pubsub value (16 in seed 004; 0 = 16 or 32 from the space).
    priority : str
        ``volume``, ``count`` or ``thesis`` (see the module docstring).
    redundancy_queue : bool
        Queue base flows contained in another base flow with the same port.
    ranges : str
        TCAM cost: ``native`` range match (1 entry) or ``expand`` to prefixes.
    capacity : int
        Entries per switch reported as ``flow_limit`` (0 = none; not enforced).
    """

    value_bits: int = 0
    priority: PriorityRule = "volume"
    redundancy_queue: bool = True
    ranges: Literal["native", "expand"] = "native"
    capacity: int = 0

    def __post_init__(self) -> None:
        LatencyParams.__post_init__(self)
        check(self.value_bits in (0, 8, 16, 32), "value_bits must be 0, 8, 16 or 32")
        check(self.capacity >= 0, "capacity must be >= 0")


def base_flows(view: Any, routing: Any) -> dict[str, list[tuple[Box, int, int]]]:
    """Switch -> base flows ``(box, egress port, ingress port)`` in subscription order."""
    out: dict[str, list[tuple[Box, int, int]]] = {}
    for sub in view.subscriptions:
        for pub in view.publishers:
            if pub == sub.host:
                continue
            box = view.advertisements[pub].intersect(sub.box)
            if box is None:
                continue
            for sw, inp, egress in routing.hops(pub, sub.host):
                out.setdefault(sw, []).append((box, egress, inp))
    return out


@register_strategy
class RangeBoxes(ContentStrategy):
    name = "range-boxes"
    dataplane = "range_filter"
    Params = RangeBoxesParams
    summary = "exact range boxes with overlap closure and priorities (seed 004), zero FP"

    def __init__(self, params: RangeBoxesParams | None = None) -> None:
        super().__init__(params)
        self.groups = GroupAllocator()
        self.layout: PubsubLayout | None = None
        self.containers: dict[str, Container] = {}
        self._table = ContainerTable(rule=self.params.priority, groups=self.groups, table=TABLE,
                                     forward=(FORWARD, "port"), multicast=(MULTICAST, "group"),
                                     match=_range_match)

    def model(self) -> RangeFilterDataPlane:
        return RangeFilterDataPlane(self.layout or PubsubLayout(1, 16), caches=self.caches)

    def build(self, topology: Topology, view: Any, previous: ControlState | None
              ) -> ControlState:
        p = self.params
        bits = p.value_bits or (16 if max(view.space.bits) <= 16 else 32)
        check(max(view.space.bits) <= bits, f"value_bits={bits} is narrower than the space")
        self.layout = PubsubLayout(view.space.d, bits)
        routing = self.routing_for(topology)
        check(self.params.priority != "inverse-volume" or view.space.volume < 1 << 31,
              "priority=inverse-volume needs an event space of fewer than 2^31 points "
              "(P4Runtime priorities are int32); use priority=volume")
        flows = base_flows(view, routing)
        # incremental: keep each switch's container, add/remove the differing base flows
        for sw in topology.switches:
            want: dict[tuple[Box, int], int] = {}
            for box, egress, _ in flows.get(sw, ()):
                want[(box, egress)] = want.get((box, egress), 0) + 1
            c = self.containers.get(sw) or Container(p.redundancy_queue, view.space.volume)
            have = {v: k for k, v in c.bases.items()}  # one base per (box, port)
            for key, bid in list(have.items()):
                if key not in want:
                    c.remove(bid)
            for key in want:
                if key not in have:
                    c.add(*key)
            self.containers[sw] = c
        return self._state(topology, self.containers)

    def _state(self, topology: Topology, containers: Mapping[str, Container]) -> ControlState:
        return ControlState(switches={sw: self._table.config(sw, containers.get(sw))
                                      for sw in topology.switches})

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        if notification.event is None or self.layout is None:
            raise LookupError("range-boxes needs notifications with an event (content model)")
        hid = topology.host_id(notification.publisher)
        header = ip_udp_pubsub(4, host_ipv4(hid), 0xE000_0001, self.layout.pack(notification.event),
                               len(payload))
        return Encoding((Packet(GROUP_MAC, host_mac(topology, notification.publisher),
                                ETHERTYPE_IPV4, header, payload),))

    def state_cost(self, topology: Topology, state: ControlState) -> StateCost:
        bits = self.layout.value_bits if self.layout else 16
        d = self.layout.dims if self.layout else 1
        spec = TableSpec(key_bits={value_key(i): bits for i in range(d)}, action_bits=16)
        return state_cost(state, {TABLE: spec}, lambda t: t == TABLE, 1, self.params.ranges,
                          memo=self.cost_memo)

    def flow_metrics(self, topology: Topology, state: ControlState) -> dict[str, float]:
        return {"flow_limit": self.params.capacity}

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The content fast path (:mod:`sim.dataplanes.content_fast_path`) of the range
        filter; not for subclasses (they may change the encoding or the metrics)."""
        if type(self) is not RangeBoxes:
            return None
        return self.content_fast_path(topology, delays, RangeFamily())
