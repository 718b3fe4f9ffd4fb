"""Camus: a BDD pipeline of one table per field plus an action table, with a logical up port.

Reference model of ``p4/camus.p4`` (the tables the Camus compiler
generates, seed 003 §5 and the repository), pass by pass:

1. Parser: Ethernet (EtherType 0x88B6) -> ``camus`` header, one value of
   ``value_bits`` per query field, in field order.
2. Ingress: ``MyIngress.port_role`` (``standard_metadata.ingress_port``
   exact -> ``mark_up``) tells whether the packet came down from an up
   port; ``meta.state`` starts at 0; for every field ``f`` in BDD order:
   ``query_<f>_exact`` (state exact, field exact), on a miss
   ``query_<f>_range`` (state exact, field range), on a miss
   ``query_<f>_miss`` (state exact); a hit runs ``set_state(s)``, a miss
   keeps the state (``NoAction``). Then ``MyIngress.query_actions`` (state
   exact): ``set_egress_port(port)`` or ``set_mgid(mgid, up)``; a miss
   drops. The one-big-table baseline instead applies
   ``MyIngress.query_flat`` (every field range, priorities) with the same
   actions.
3. ``up`` = 1 sends one copy to the logical up port unless the packet came
   from an up port: the physical port is ``MyIngress.up_ecmp`` (bucket =
   CRC32 of the header mod the number of up ports). Replicas on the ingress
   port are dropped.

One pass; the lookups count every table applied.

References
----------
Seed 003 §4 (routing, logical up port, never up again), §5.1-5.2 (generated
tables), repository camus-compiler (exact/range/miss split, ``query_actions``,
``set_mgid``); digest seed002-003 B.3-B.5.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from sim.dataplanes.caches import Caches
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.event_header import PubsubLayout
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, Emit, PipelineResult
from sim.dataplanes.table_index import lookup as fast_lookup

ETHERTYPE_CAMUS = 0x88B6
PORT_ROLE = "MyIngress.port_role"
UP_ECMP = "MyIngress.up_ecmp"
ACTIONS = "MyIngress.query_actions"
FLAT = "MyIngress.query_flat"
KEY_STATE = "meta.state"
KEY_PORT = "standard_metadata.ingress_port"
KEY_BUCKET = "meta.up_bucket"
SET_STATE = "MyIngress.set_state"
SET_PORT = "MyIngress.set_egress_port"
SET_MGID = "MyIngress.set_mgid"
MARK_UP = "MyIngress.mark_up"
SET_UP_PORT = "MyIngress.set_up_port"


def field_table(name: str, kind: str) -> str:
    return f"MyIngress.query_{name}_{kind}"


def field_key(name: str) -> str:
    return f"hdr.camus.{name}"


@dataclass(frozen=True)
class CamusDataPlane:
    """The Camus program for given query fields (in BDD order) and header layout."""

    fields: tuple[str, ...] = ("a0",)
    header_fields: tuple[str, ...] = ("a0",)
    layout: PubsubLayout = PubsubLayout(1, 32)
    name: str = "camus"
    #: BDD field order of the switches whose order differs from ``fields``
    #: (``order="constants"`` compiles one order per switch)
    switch_fields: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: vectorised table indexes (:mod:`sim.dataplanes.table_index`), kept between
    #: packets; pass the cell's :class:`Caches` to share them, else a fresh one
    caches: Caches = field(default_factory=Caches, compare=False, repr=False)

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        if packet.ethertype != ETHERTYPE_CAMUS or len(packet.header) < self.layout.size:
            return PipelineResult(passes=1, recirculations=0, lookups=0, emitted=(), dropped=1)
        values = dict(zip(self.header_fields, self.layout.unpack(packet.header), strict=True))
        lookups = 1
        came_down = config.lookup(PORT_ROLE, in_port) is not None
        if FLAT in config.tables:
            leaf = fast_lookup(config, FLAT, *(values[f] for f in self.header_fields),
                               caches=self.caches)
            lookups += 1
        else:
            state = 0
            for f in self.switch_fields.get(switch, self.fields):
                v = values[f]
                hit = None
                for kind in ("exact", "range", "miss"):
                    lookups += 1
                    key = (state,) if kind == "miss" else (state, v)
                    hit = config.lookup(field_table(f, kind), *key)
                    if hit is not None:
                        break
                if hit is not None:
                    state = hit.param("state")
            leaf = config.lookup(ACTIONS, state)
            lookups += 1
        if leaf is None:
            return PipelineResult(passes=1, recirculations=0, lookups=lookups, emitted=(),
                                  dropped=1)
        ports: list[int] = []
        if leaf.action == SET_PORT:
            ports.append(leaf.param("port"))
        else:
            gid = leaf.param("mgid")
            if gid:
                group = config.multicast_groups.get(gid)
                if group is None:
                    raise LookupError(f"{switch}: multicast group {gid} not installed")
                ports.extend(group.ports)
            if leaf.param("up") and not came_down:
                n = len(config.tables.get(UP_ECMP, ()))
                if n:
                    bucket = zlib.crc32(packet.header) % n
                    hit = config.lookup(UP_ECMP, bucket)
                    lookups += 1
                    if hit is not None:
                        ports.append(hit.param("port"))
        emitted = tuple(Emit(p, packet) for p in ports if p != in_port)
        return PipelineResult(passes=1, recirculations=0, lookups=lookups, emitted=emitted,
                              dropped=0 if emitted else 1)


DATAPLANES.add("camus", CamusDataPlane())
