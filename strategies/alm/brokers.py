"""Application-layer multicast (ALM): the three broker-overlay baselines.

Seed 000 §3.5.4 evaluates three broker-based variants against P4-Pub/Sub:

``alm-all``
    "ALM on all nodes": every switch on the notification's tree hands the
    message to its dedicated broker, which sends one unicast copy per next
    hop back over the broker-switch link.
``alm-fork``
    "ALM on fork nodes": brokers only where the tree branches; elsewhere the
    message is "tunneled" by the switches without broker interaction.
``alm-mcgroup``
    "ALM with mc-groups": brokers at fork nodes only, and the broker sends
    **one** packet back; its switch replicates it with a local multicast
    group "corresponding to a permutation of neighbor nodes".

Model (digest §3.1 (i), §7.16, §7.17):

- The delivery tree is the shortest-path tree from the publisher's switch
  (:func:`sim.dataplanes.trees.shortest_path_tree`). A switch is a *fork node* if its
  out-degree in that tree, counting local subscribers, is at least 2. In
  ``alm-all`` every tree switch uses its broker; in the fork variants the
  publisher's first switch uses its broker only if it is a fork node.
- Brokers are not topology nodes: each switch has one broker on its next
  free port (``degree + 1``), and the static engine counts the frames and
  bytes on both directions of that link (:class:`sim.engines.static.BrokerHost`).
  The engine charges ``broker_s`` (2 ms) of software processing and then
  ``feed_in_s`` (0.1 ms) per copy the broker sends, one after another.
- Overlay messages are plain Ethernet frames (no extra header bytes, as for
  unicast and OFM) addressed to the next overlay node: a broker (its own MAC)
  or a subscribing host. The switches carry them with SDN flows, one exact
  L2 rule per destination MAC (seed 000 §3.5.4 "This and following ALM
  variants rely on SDN flows"): ``alm-all`` only needs rules towards the
  local broker, the local hosts and the adjacent brokers; the fork variants
  install rules towards every broker and every host along BFS shortest
  paths (ties to the lowest name, as unicast), so a tunneled message takes a
  shortest path, which is as long as its path in the tree.
- ``alm-mcgroup`` installs, per receiver set the controller knows, one
  multicast group per (fork switch, set of next overlay nodes) whose replicas
  carry a replication id; the egress table ``MyEgress.replica_dst`` of the
  ``alm`` data plane rewrites each replica's destination MAC to its overlay
  node (``sim/dataplanes/alm/reference.py``). The groups are installed only for the
  combinations in use (reduction 1 of seed 000 §3.3.3), not for every
  permutation.
- Matching at a broker is abstracted away: the broker is told the
  notification's receivers, which stands in for matching the event against
  its subscriptions.

References
----------
Seed 000 §1 (Fig. 1.1 switch-broker pair), §2.3 (i) (ALM drawbacks),
§3.5.4 (the three variants, delay constants, Figs. 3.13-3.15);
shared/notes/seed000-ch1-4.md §3.1 (i), §5.2, §7.16, §7.17.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import ClassVar

from sim.dataplanes.alm.fast_path import alm_fast_path
from sim.dataplanes.alm.reference import EGRESS_TABLE, FORWARD, GROUP_TABLE, MULTICAST, SET_DST
from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    MulticastGroup,
    StateBuilder,
    SwitchConfig,
    TableEntry,
)
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import Notification, Packet, group_mac, host_mac
from sim.dataplanes.trees import bfs_parents, shortest_path_tree
from strategies.base import Encoding, Knowledge, Strategy, register_strategy
from strategies.l2.rules import ETHERTYPE_EVENT, l2_entry, shortest_path_flows
from topologies.model import Topology

#: Locally administered unicast block for broker MACs (hosts use 02:00:...).
BROKER_MAC_BASE = 0x02_B0_00_00_00_00

# -- addressing ---------------------------------------------------------------


def broker_port(topology: Topology, switch: str) -> int:
    """The port of ``switch`` its broker is attached to: the next free one."""
    return topology.degree(switch) + 1


def broker_mac(topology: Topology, switch: str) -> int:
    """MAC address of the broker attached to ``switch`` (02:b0:00:00:00:01 for s1)."""
    return BROKER_MAC_BASE + topology.switch_id(switch) + 1


def overlay_mac(topology: Topology, node: str) -> int:
    """MAC of an overlay node: a subscribing host, or a switch's broker."""
    return host_mac(topology, node) if topology.is_host(node) else broker_mac(topology, node)


def overlay_rid(topology: Topology, node: str) -> int:
    """Replication id naming an overlay node in ``MyEgress.replica_dst``.

    Hosts are 1..H, brokers H+1..H+N (16-bit ``egress_rid``).
    """
    if topology.is_host(node):
        return topology.host_id(node) + 1
    return len(topology.hosts) + topology.switch_id(node) + 1


def flow_port(topology: Topology, switch: str, node: str) -> int:
    """The port the SDN flows of ``switch`` use towards overlay node ``node``.

    A local host or the switch's own broker are direct ports; anything else
    is the next hop on the BFS shortest path towards the node's switch.
    """
    if topology.is_host(node):
        home = topology.host_switch(node)
        if home == switch:
            return topology.port_to(switch, node)
    else:
        home = node
        if home == switch:
            return broker_port(topology, switch)
    return topology.port_to(switch, bfs_parents(topology, home)[switch])


# -- the overlay ---------------------------------------------------------------


@dataclass(frozen=True)
class OverlayPlan:
    """Who talks to whom in the broker overlay for one notification.

    Attributes
    ----------
    entry : str or None
        The overlay node the publisher addresses: a switch (meaning its
        broker) or a host; None when there is nobody to notify.
    targets : mapping
        Broker switch -> the next overlay nodes it sends to, in sending
        order (the tree's port order). Every switch in it uses its broker.
    """

    entry: str | None
    targets: Mapping[str, tuple[str, ...]]

    @property
    def brokers(self) -> tuple[str, ...]:
        return tuple(self.targets)


@lru_cache(maxsize=32)
def overlay_plan(topology: Topology, publisher: str, receivers: frozenset[str],
                 forks_only: bool) -> OverlayPlan:
    """The overlay of ALM on all tree nodes (``forks_only=False``) or on fork nodes.

    References
    ----------
    Seed 000 §3.5.4; digest §7.17 (fork node = out-degree >= 2 counting the
    local subscriber; the first switch uses a broker only if it is one).
    """
    if not receivers:
        return OverlayPlan(entry=None, targets=MappingProxyType({}))
    tree = shortest_path_tree(topology, topology.host_switch(publisher), receivers)

    def uses_broker(switch: str) -> bool:
        return not forks_only or len(tree.children.get(switch, ())) >= 2

    def next_node(node: str) -> str:
        # Walk down through tunneling switches (exactly one child each).
        while not topology.is_host(node) and not uses_broker(node):
            (node,) = tree.children[node]
        return node

    targets = {sw: tuple(next_node(c) for c in tree.children[sw])
               for sw in tree.switches(topology) if uses_broker(sw)}
    return OverlayPlan(entry=next_node(tree.root), targets=MappingProxyType(targets))


@lru_cache(maxsize=8)
def flow_state(topology: Topology, adjacent_only: bool) -> ControlState:
    """The SDN flows that carry overlay messages (one exact rule per destination MAC).

    ``adjacent_only`` installs only what ALM on all nodes needs: the local
    hosts, the local broker and the brokers of adjacent switches.
    """
    if not adjacent_only:  # towards every host and every broker, on every switch
        home = topology.host_switch
        return shortest_path_flows(topology, [
            *((overlay_mac(topology, h), home(h), topology.port_to(home(h), h))
              for h in topology.hosts),
            *((overlay_mac(topology, sw), sw, broker_port(topology, sw))
              for sw in topology.switches)])
    builder = StateBuilder()
    for sw in topology.switches:
        if adjacent_only:
            nodes = [*topology.hosts_of(sw), sw,
                     *(p.neighbor for p in topology.ports(sw).values()
                       if not topology.is_host(p.neighbor))]
        else:
            nodes = [*topology.hosts, *topology.switches]
        for node in nodes:
            builder.add_entry(sw, l2_entry(overlay_mac(topology, node), FORWARD,
                                           flow_port(topology, sw, node)))
    return builder.build(topology.switches)


def group_key(targets: tuple[str, ...]) -> str:
    """Key of a broker's multicast group in ``publisher_info["broker_groups"]``."""
    return ",".join(targets)


def _group_entry(gid: int) -> TableEntry:
    return TableEntry(table=GROUP_TABLE, match=(("hdr.ethernet.dstAddr", Exact(group_mac(gid))),),
                      action=MULTICAST, params=(("group", gid),))


def _replica_entry(topology: Topology, node: str) -> TableEntry:
    return TableEntry(table=EGRESS_TABLE,
                      match=(("standard_metadata.egress_rid", Exact(overlay_rid(topology, node))),),
                      action=SET_DST, params=(("mac", overlay_mac(topology, node)),))


def install_broker_groups(topology: Topology, base: ControlState,
                          plans: list[OverlayPlan]) -> ControlState:
    """``base`` plus one multicast group per (fork switch, next-node set) in ``plans``.

    Each group's replicas are (flow port towards the node, the node's rid);
    the switch maps the group MAC to the group (``MyIngress.broker_group``)
    and every used rid to the node's MAC (``MyEgress.replica_dst``).
    Switches without groups keep ``base``'s configuration object, and the
    others share its flow table.
    """
    groups: dict[str, dict[str, int]] = {}
    group_entries: dict[str, list[TableEntry]] = {}
    extra_egress: dict[str, dict[int, TableEntry]] = {}
    replicas: dict[str, dict[int, tuple[tuple[int, int], ...]]] = {}
    for plan in plans:
        for sw, targets in plan.targets.items():
            if len(targets) < 2:
                continue
            key = group_key(targets)
            mine = groups.setdefault(sw, {})
            if key in mine:
                continue
            gid = mine[key] = len(mine) + 1
            replicas.setdefault(sw, {})[gid] = tuple(
                (flow_port(topology, sw, t), overlay_rid(topology, t)) for t in targets)
            group_entries.setdefault(sw, []).append(_group_entry(gid))
            egress = extra_egress.setdefault(sw, {})
            for t in targets:
                egress.setdefault(overlay_rid(topology, t), _replica_entry(topology, t))
    switches = dict(base.switches)
    for sw, entries in group_entries.items():
        old = base.config(sw)
        tables = dict(old.tables)  # the flows' tuple is shared with ``base``
        tables[GROUP_TABLE] = tuple(entries)
        tables[EGRESS_TABLE] = tuple(extra_egress[sw][rid] for rid in sorted(extra_egress[sw]))
        switches[sw] = SwitchConfig(
            tables=tables,
            multicast_groups={gid: MulticastGroup(gid, reps)
                              for gid, reps in replicas[sw].items()},
            clone_sessions=old.clone_sessions)
    return ControlState(switches=switches, publisher_info={"broker_groups": groups})


# -- strategies ----------------------------------------------------------------


class _AlmBase(Strategy):
    """Shared behaviour: encoding to the first overlay node and brokers on every switch."""

    dataplane = "alm"
    forks_only: ClassVar[bool] = True
    adjacent_flows: ClassVar[bool] = False

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        return flow_state(topology, self.adjacent_flows)

    def plan(self, topology: Topology, publisher: str, receivers: frozenset[str]
             ) -> OverlayPlan:
        return overlay_plan(topology, publisher, frozenset(receivers), self.forks_only)

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        plan = self.plan(topology, notification.publisher, receivers)
        if plan.entry is None:
            return Encoding(())
        return Encoding((Packet(overlay_mac(topology, plan.entry),
                                host_mac(topology, notification.publisher),
                                ETHERTYPE_EVENT, b"", payload),))

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The overlay walk of :mod:`sim.dataplanes.alm.fast_path` for the three
        variants themselves; not for subclasses (they may change plans or brokers)."""
        walk = {AlmAll: "alm-all", AlmFork: "alm-fork", AlmMcGroup: "alm-mcgroup"}.get(type(self))
        if walk is None:
            return None
        return alm_fast_path(topology, delays, self.encode, walk, caches=self.caches)

    # -- sim.engines.static.BrokerHost ------------------------------------------------
    def broker_ports(self, topology: Topology, state: ControlState) -> Mapping[str, int]:
        """Every switch has a broker on its next free port (used or not)."""
        return _broker_ports(topology)

    def broker_receive(self, topology: Topology, state: ControlState, switch: str,
                       packet: Packet, notification: Notification,
                       receivers: frozenset[str]) -> tuple[Packet, ...]:
        """One unicast copy per next overlay node, in the tree's port order."""
        targets = self.plan(topology, notification.publisher, receivers).targets.get(switch, ())
        src = broker_mac(topology, switch)
        return tuple(Packet(overlay_mac(topology, t), src, packet.ethertype, packet.header,
                            packet.payload) for t in targets)


@lru_cache(maxsize=8)
def _broker_ports(topology: Topology) -> Mapping[str, int]:
    return MappingProxyType({sw: broker_port(topology, sw) for sw in topology.switches})


@register_strategy
class AlmAll(_AlmBase):
    """ALM on all nodes (seed 000 §3.5.4, variant 1)."""

    name = "alm-all"
    scope = "topology"
    forks_only = False
    adjacent_flows = True
    summary = "broker overlay, a broker at every tree switch, one unicast copy per next hop"


@register_strategy
class AlmFork(_AlmBase):
    """ALM on fork nodes (seed 000 §3.5.4, variant 2)."""

    name = "alm-fork"
    scope = "topology"
    summary = "broker overlay, brokers only at fork nodes, tunneled elsewhere (SDN flows)"


@register_strategy
class AlmMcGroup(_AlmBase):
    """ALM with mc-groups (seed 000 §3.5.4, variant 3)."""

    name = "alm-mcgroup"
    scope = "receivers"
    summary = "brokers at fork nodes send one packet; their switch replicates it (mc-groups)"

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        plans = [self.plan(topology, pub, receivers)
                 for pub in knowledge.publishers
                 for receivers in sorted(knowledge.receiver_sets[pub], key=sorted)]
        return install_broker_groups(topology, flow_state(topology, False), plans)

    def broker_receive(self, topology: Topology, state: ControlState, switch: str,
                       packet: Packet, notification: Notification,
                       receivers: frozenset[str]) -> tuple[Packet, ...]:
        """One packet back to the switch: to the local group of the next overlay nodes."""
        targets = self.plan(topology, notification.publisher, receivers).targets.get(switch, ())
        if len(targets) < 2:
            return super().broker_receive(topology, state, switch, packet, notification,
                                          receivers)
        try:
            gid = state.publisher_info["broker_groups"][switch][group_key(targets)]
        except KeyError:
            raise LookupError(f"no multicast group for {group_key(targets)} on {switch}") from None
        return (Packet(group_mac(gid), broker_mac(topology, switch), packet.ethertype,
                       packet.header, packet.payload),)
