"""Helpers shared by the L2 baselines (unicast, broadcast, IP multicast).

They all run on the ``l2`` data plane (``sim/dataplanes/l2/reference.py``): one table
``MyIngress.l2_forward`` keyed by (destination MAC exact, source MAC ternary).
The publisher sends plain event frames without a stack, one per destination
MAC of :meth:`L2Strategy.destinations`.

References
----------
Seed 000 §2.3, §3.5.4 (unicast, broadcast and multicast baselines); digest
ch. 1-4 §7.18.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    Ternary,
)
from sim.dataplanes.l2.reference import FORWARD, MULTICAST, TABLE
from sim.dataplanes.packet import Notification, Packet, host_mac
from sim.dataplanes.trees import Tree, shortest_path_tables
from strategies.base import Encoding, Strategy
from topologies.model import Topology

ETHERTYPE_EVENT = 0x88B5  # IEEE 802 local experimental EtherType 1
ALL_ONES_MAC = 0xFFFF_FFFF_FFFF


def l2_entry(dst_mac: int, action: str, value: int, src_mac: int | None = None) -> TableEntry:
    """An ``l2_forward`` entry; ``src_mac=None`` matches any source."""
    src = Ternary(0, 0) if src_mac is None else Ternary(src_mac, ALL_ONES_MAC)
    param = "port" if action == FORWARD else "group"
    return TableEntry(
        table=TABLE,
        match=(("hdr.ethernet.dstAddr", Exact(dst_mac)), ("hdr.ethernet.srcAddr", src)),
        action=action,
        params=((param, value),),
        priority=1 if src_mac is None else 2,
    )


def shortest_path_flows(topology: Topology, destinations: Sequence[tuple[int, str, int]]
                        ) -> ControlState:
    """One exact ``l2_forward`` rule per destination MAC on every switch (any source).

    ``destinations``: (MAC, home switch, port of the home switch towards it)
    in table order; every other switch forwards along the BFS shortest path
    towards the home switch (:func:`sim.dataplanes.trees.shortest_path_tables`,
    which shares one entry object per (MAC, port) among the switches):
    unicast's rules, and the SDN flows of the ALM brokers. Equal to adding
    ``l2_entry(mac, FORWARD, port)`` per destination and switch to a
    :class:`StateBuilder`.
    """
    macs = [mac for mac, _, _ in destinations]
    if len(set(macs)) != len(macs):
        raise ValueError("shortest_path_flows: a destination MAC appears twice")
    tables = shortest_path_tables(topology, [(home, port) for _, home, port in destinations],
                                  lambda k, port: l2_entry(macs[k], FORWARD, port))
    return ControlState(switches={sw: SwitchConfig(tables={TABLE: t} if t else {})
                                  for sw, t in zip(topology.switches, tables, strict=True)})


def install_tree_groups(builder: StateBuilder, topology: Topology, tree: Tree, group: int,
                        dst_mac: int, src_mac: int | None = None) -> None:
    """Install ``tree`` as one multicast group per tree switch, keyed by ``dst_mac``."""
    for sw in tree.switches(topology):
        ports = [topology.port_to(sw, c) for c in tree.children.get(sw, ())]
        if not ports:
            continue
        builder.add_group(sw, group, ports)
        builder.add_entry(sw, l2_entry(dst_mac, MULTICAST, group, src_mac))


def event_packet(dst_mac: int, src_mac: int, payload: bytes) -> Packet:
    return Packet(dst_mac=dst_mac, src_mac=src_mac, ethertype=ETHERTYPE_EVENT, payload=payload)


class L2Strategy(Strategy):
    """Base of the L2 baselines: one event frame per :meth:`destinations` MAC, in order.

    Subclasses set ``name`` and implement ``install`` and :meth:`destinations`.
    """

    dataplane = "l2"

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        """The publisher's frames, sent one after another (no header bytes)."""
        src = host_mac(topology, notification.publisher)
        return Encoding(tuple(event_packet(dst, src, payload) for dst in
                              self.destinations(topology, state, notification, receivers)))

    def destinations(self, topology: Topology, state: ControlState, notification: Notification,
                     receivers: frozenset[str]) -> tuple[int, ...]:
        """The destination MAC of each frame the publisher sends."""
        raise NotImplementedError
