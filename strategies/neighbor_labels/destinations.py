"""``destinations``: subscriber-id labels over preinstalled paths (seed 000 §4.2.2).

The header lists only the subscriber ids. Every switch holds one rule per
host of the network ("a single flow rule per subscriber ID"): DEST label ->
the port of the next hop towards that host, so the network holds
n_switches x n_hosts rules (256^2 = 65,536 for 256 switches with one host
each). A switch looks every id up, makes one clone per port (served-ports
bitmask) and strips from each clone the ids of other ports, on the
``neighbor_labels`` data plane. It is the analogue of Xcast.

Deviations and choices:

- Paths are BFS shortest paths towards each host (ties to the lowest name),
  the same next hops as ``unicast``; the union of the paths from one
  publisher need not be a tree, so a switch may receive two copies for
  different subscribers (each copy carries only its own ids, so no host gets
  a duplicate).
- Update-free under subscription change (the rules depend on the topology
  only), following §4.4.2 ("eliminating the need for updates"); §4.2.2's
  contrary sentence is the [BUG] of digest §3.7/§7.19.
- Labels are 16 bit (2-bit type ``10`` + 14-bit host id).
- ``on_oversize="split"`` sends one packet per output port of the
  publisher's switch (one per root subtree).

References
----------
Seed 000 §4.2.2 (Fig. 4.2), §4.4.2 (Fig. 4.6, n^2 rules); digest ch. 1-4 §3.7,
§7.19.
"""

from __future__ import annotations

from sim.dataplanes.control_state import ControlState, StateBuilder, SwitchConfig
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.neighbor_labels.codec import dest_label
from sim.dataplanes.neighbor_labels.destinations_walk import destinations_fast_path
from sim.dataplanes.neighbor_labels.reference import (
    CHECK_DEST,
    dest_entry,
    install_clone_sessions,
)
from sim.dataplanes.trees import next_hop_port, shortest_path_tables
from sim.dataplanes.virtual_tree.codec import LabelFormat
from strategies.base import Knowledge, register_strategy
from strategies.frame_size import frame_limit
from strategies.neighbor_labels.label_strategy import NeighborLabelStrategy, Stacks
from strategies.virtual_tree.labels import label_format
from topologies.model import Topology


@register_strategy
class Destinations(NeighborLabelStrategy):
    """Subscriber-id labels; one path rule per host on every switch (n^2 rules)."""

    name = "destinations"
    summary = "subscriber ids in the header; one path rule per host on every switch"

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The walk over the per-host paths of
        :mod:`sim.dataplanes.neighbor_labels.destinations_walk` (seed 000 §4.2.2); None
        for subclasses, which may change ``encode``, ``host_receive`` or
        ``extra_metrics``, and where host ids or ports do not fit the labels."""
        if type(self) is not Destinations:
            return None
        return destinations_fast_path(topology, delays, self.encode,
                                      fmt=label_format(self.params),
                                      frame_limit=frame_limit(self.params.mtu_bytes,
                                                              self.params.on_oversize))

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """One ``check_dest`` rule per (switch, host) and one clone session per port."""
        fmt = label_format(self.params)
        hosts, home = topology.hosts, topology.host_switch
        tables = shortest_path_tables(  # S x H rules sharing one entry per (host, port)
            topology, [(home(h), topology.port_to(home(h), h)) for h in hosts],
            lambda k, port: dest_entry(fmt, topology, hosts[k], port))
        builder = StateBuilder()
        for sw in topology.switches:
            install_clone_sessions(builder, topology, sw, fmt)
        sessions = builder.build(topology.switches)
        return ControlState(switches={
            sw: SwitchConfig(tables={CHECK_DEST: t} if t else {},
                             clone_sessions=sessions.config(sw).clone_sessions)
            for sw, t in zip(topology.switches, tables, strict=True)})

    def stacks(self, topology: Topology, fmt: LabelFormat, publisher: str,
               receivers: frozenset[str]) -> Stacks:
        """The receivers' ids by host id; split: one stack per output port of the root."""
        order = sorted(receivers, key=topology.host_id)
        labels = [dest_label(fmt, topology, h) for h in order]
        root = topology.host_switch(publisher)

        def split() -> list[list[int]]:
            groups: dict[int, list[int]] = {}
            for h in order:
                groups.setdefault(next_hop_port(topology, root, h), []).append(
                    dest_label(fmt, topology, h))
            return [groups[p] for p in sorted(groups)]

        return labels, split
