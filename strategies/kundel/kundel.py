"""``kundel-id`` / ``kundel-bitmask``: seed 002's flat content table and header encodings.

One generic table per switch (data plane ``kundel``): a ternary match on
the valid-attribute bitmask selects the attributes a rule cares about, and
one range field per attribute slot holds the rule's bounds (unconstrained
slots span the whole 32-bit domain). The controller logic is not in the
paper (§III-D); as the digest recommends (C.1 S1, D3), each switch holds the
overlap closure of its base flows (advertisement ∩ subscription boxes with
the egress port towards the subscriber, on the same spanning tree as the
other content filters), each entry carrying the union of the ports of the
base flows containing it, priority = number of those base flows
(``priority="count"``; the other rules of :mod:`strategies.range_filter.range_boxes`
are offered). This entry set is also Camus's one-big-table baseline.

Header (after Ethernet, EtherType 0x9001): ``kundel-id`` = ``[ID][value]``
pairs, ``k`` = ``id_bits`` (8), 32-bit values, a 0 terminator:
``8 + 40 n`` bits; ``kundel-bitmask`` = an ``n_max``-bit mask then the values
in ascending ID order: ``n_max + 32 n`` bits. Attribute ``i`` has ID ``i``
(so attribute 0 doubles as the timestamp of Table I, encoded first).

Deviations: ``id_bits`` must be byte aligned on the wire (8/16/24; the
paper's k = 4 of Fig. 5 is covered by :func:`header_bits_model`); values
are 32-bit unsigned (D7); the egress drops a replica on its ingress port.

References
----------
Seed 002 §III (encodings, Listings 1-2), §IV (Fig. 5 overhead);
digest seed002-003 A.2-A.6, C.1 S1-S2, D1-D8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from sim.dataplanes.control_state import ControlState, Range, Ternary
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.kundel.fast_path import KundelFamily
from sim.dataplanes.kundel.reference import (
    ETHERTYPE_KUNDEL,
    FORWARD_GROUP,
    FORWARD_SINGLE,
    KEY_MASK,
    TABLE,
    KundelDataPlane,
    KundelFormat,
    value_slot,
)
from sim.dataplanes.packet import Notification, Packet, host_mac
from strategies.base import Encoding, register_strategy
from strategies.content_filter import (
    ContentStrategy,
    GroupAllocator,
    LatencyParams,
)
from strategies.range_filter.container_table import ContainerTable
from strategies.range_filter.range_boxes import Container, PriorityRule, base_flows
from strategies.table_cost import StateCost, TableSpec, state_cost
from topologies.model import Topology
from topologies.registry import check

GROUP_MAC = 0x01_00_5E_7F_FF_FB
VALUE_MAX = (1 << 32) - 1


def header_bits_model(encoding: str, n: int, k: int = 8, n_max: int = 32,
                      terminator: bool = False) -> int:
    """Seed 002's overhead model (§IV): ``k n`` (ID) or ``n_max`` (bitmask) plus ``32 n``.

    ``terminator=True`` adds the 0x00 end marker the model leaves out (D2).
    """
    if encoding == "bitmask":
        return n_max + 32 * n
    return k * (n + (1 if terminator else 0)) + 32 * n


@dataclass(frozen=True, slots=True, kw_only=True)
class KundelParams(LatencyParams):
    """Parameters of both Kundel strategies (plus the lookup latency model).

    Parameters
    ----------
    id_bits : int
        Attribute-ID width k on the wire (8, 16 or 24).
    n_max : int
        Bitmask width (32).
    slots : int
        Value slots in the table key (0 = one per attribute).
    priority : str
        Entry priority rule (``count``, ``volume``, ``inverse-volume`` or ``thesis``).
    ranges : str
        TCAM cost: ``native`` range (BMv2) or ``expand`` to prefixes (LPM/TCAM).
    """

    id_bits: int = 8
    n_max: int = 32
    slots: int = 0
    priority: PriorityRule = "count"
    ranges: Literal["native", "expand"] = "native"

    def __post_init__(self) -> None:
        LatencyParams.__post_init__(self)
        check(self.id_bits in (8, 16, 24), "id_bits must be 8, 16 or 24")
        check(self.n_max % 8 == 0 and 8 <= self.n_max <= 256, "n_max must be a multiple of 8")
        check(0 <= self.slots <= self.n_max, "slots must be in [0, n_max]")


class KundelBase(ContentStrategy):
    dataplane = "kundel"
    Params = KundelParams
    encoding: ClassVar[Literal["id", "bitmask"]] = "id"

    def __init__(self, params: KundelParams | None = None) -> None:
        super().__init__(params)
        self.fmt = KundelFormat(self.encoding, self.params.id_bits, self.params.n_max)
        self.groups = GroupAllocator()
        self.nslots = self.params.slots or 1
        self.containers: dict[str, Container] = {}
        self._table = ContainerTable(rule=self.params.priority, groups=self.groups, table=TABLE,
                                     forward=(FORWARD_SINGLE, "port"),
                                     multicast=(FORWARD_GROUP, "mcast_grp"),
                                     match=lambda box: self._entry_match(box.bounds))

    def model(self) -> KundelDataPlane:
        return KundelDataPlane(self.fmt, self.nslots, caches=self.caches)

    def build(self, topology: Topology, view: Any, previous: ControlState | None
              ) -> ControlState:
        check(view.space.d <= self.params.n_max, "more attributes than n_max")
        check(max(view.space.bits) <= 32, "seed 002 values are 32 bit")
        self.nslots = self.params.slots or view.space.d
        check(self.params.priority != "inverse-volume" or view.space.volume < 1 << 31,
              "priority=inverse-volume needs an event space of fewer than 2^31 points "
              "(P4Runtime priorities are int32); use priority=volume")
        check(view.space.d <= self.nslots, f"slots={self.nslots} < {view.space.d} attributes")
        self.maxima = view.space.maxima
        flows = base_flows(view, self.routing_for(topology))
        for sw in topology.switches:
            want = {(box, egress) for box, egress, _ in flows.get(sw, ())}
            c = self.containers.get(sw) or Container(redundancy_queue=False,
                                                     space_volume=view.space.volume)
            have = {v: k for k, v in c.bases.items()}
            for key, bid in list(have.items()):
                if key not in want:
                    c.remove(bid)
            for key in sorted(want - set(have), key=lambda kv: (kv[0].bounds, kv[1])):
                c.add(*key)
            self.containers[sw] = c
        return self._state(topology)

    def _entry_match(self, bounds: tuple[tuple[int, int], ...]) -> tuple[tuple[str, Any], ...]:
        mask = 0
        fields: list[tuple[str, Any]] = []
        for i in range(self.nslots):
            lo, hi = bounds[i] if i < len(bounds) else (0, VALUE_MAX)
            if i < len(bounds) and (lo, hi) != (0, self.maxima[i]):
                mask |= 1 << i
                fields.append((value_slot(i), Range(lo, hi)))
            else:
                fields.append((value_slot(i), Range(0, VALUE_MAX)))
        return ((KEY_MASK, Ternary(mask, mask)), *fields)

    def _state(self, topology: Topology) -> ControlState:
        return ControlState(switches={sw: self._table.config(sw, self.containers.get(sw))
                                      for sw in topology.switches})

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        if notification.event is None:
            raise LookupError(f"{self.name} needs notifications with an event (content model)")
        header = self.fmt.encode(dict(enumerate(notification.event)))
        return Encoding((Packet(GROUP_MAC, host_mac(topology, notification.publisher),
                                ETHERTYPE_KUNDEL, header, payload),),
                        header_entries=len(notification.event))

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The content fast path (:mod:`sim.dataplanes.content_fast_path`) of Kundel's
        table; not for subclasses (they may change the encoding or the metrics)."""
        if type(self) not in (KundelId, KundelBitmask):
            return None
        return self.content_fast_path(topology, delays, KundelFamily())

    def state_cost(self, topology: Topology, state: ControlState) -> StateCost:
        keys = {KEY_MASK: self.nslots, **{value_slot(i): 32 for i in range(self.nslots)}}
        spec = TableSpec(key_bits=keys, action_bits=16)
        return state_cost(state, {TABLE: spec}, lambda t: t == TABLE, 1, self.params.ranges,
                          memo=self.cost_memo)


@register_strategy
class KundelId(KundelBase):
    name = "kundel-id"
    encoding = "id"
    summary = "seed 002 flat table, [ID][value] header with 0 terminator"


@register_strategy
class KundelBitmask(KundelBase):
    name = "kundel-bitmask"
    encoding = "bitmask"
    summary = "seed 002 flat table, presence-bitmask header"
