"""What one notification did in the network, and the analytic delay model.

:class:`Delivery` is what the static engine (:func:`sim.engines.static.run_notification`)
and every fast path (:mod:`sim.dataplanes.fast_path`) produce for one
notification: deliveries and copies, first arrival times, frames and bytes
per directed link (broker links named by :func:`broker_node`), and
passes/recirculations/lookups per switch. :func:`row_metrics` turns it into
the per-notification metrics of a result row (:data:`METRIC_KEYS`).

Delay model (seed 000 §3.5.4, digest §7.16): the publisher feeds packets in
one after another (``feed_in_s`` each); a switch adds ``switch_s`` plus
``pass_s`` per recirculation the copy waited for; a broker adds
``broker_s`` plus sequential feed-in; links add their propagation delay.
Worst-case delay = the latest first arrival at any intended receiver.

References
----------
Seed 000 §3.5.4; digest ch. 1-4 §7.16.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.link_waste import wasted_link_frames
from sim.dataplanes.packet import Encoding
from topologies.model import Topology
from topologies.registry import check


@dataclass(frozen=True, slots=True, kw_only=True)
class DelayModel:
    """Analytic delay constants of seed 000 §3.5.4 (seconds)."""

    feed_in_s: float = 1e-4
    switch_s: float = 1e-4
    broker_s: float = 2e-3
    pass_s: float = 1e-5

    def __post_init__(self) -> None:
        for name in ("feed_in_s", "switch_s", "broker_s", "pass_s"):
            check(getattr(self, name) >= 0, f"delay model: {name} must be >= 0")


def broker_node(switch: str) -> str:
    """Name of the broker attached to ``switch`` in :attr:`Delivery.links`."""
    return "b:" + switch



@dataclass(slots=True)
class SwitchCount:
    passes: int = 0
    recirculations: int = 0
    lookups: int = 0
    circulations_simplified: int = 0


@dataclass(kw_only=True)
class Delivery:
    """Everything measured for one notification."""

    publisher: str
    receivers: frozenset[str]
    encoding: Encoding
    delivered: dict[str, int] = field(default_factory=dict)
    first_arrival_s: dict[str, float] = field(default_factory=dict)
    links: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    switches: dict[str, SwitchCount] = field(default_factory=dict)
    drops: int = 0

    @property
    def false_positives(self) -> int:
        """Hosts outside the receiver set that got the notification."""
        return sum(1 for h in self.delivered if h not in self.receivers)

    @property
    def false_negatives(self) -> int:
        return sum(1 for h in self.receivers if h not in self.delivered)

    @property
    def duplicates(self) -> int:
        """Copies beyond the first at any host."""
        return sum(c - 1 for c in self.delivered.values())

    @property
    def frames(self) -> int:
        return sum(f for f, _ in self.links.values())

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.links.values())

    def total(self, attr: str) -> int:
        return sum(getattr(c, attr) for c in self.switches.values())

    @property
    def delay_worst_s(self) -> float:
        times = [self.first_arrival_s[h] for h in self.receivers if h in self.first_arrival_s]
        return max(times) if times else 0.0

    def to_json(self, topology: Topology, strategy: str, state: ControlState) -> dict[str, Any]:
        """The ``stackcast deliver --json`` contract."""
        enc = self.encoding
        return {
            "strategy": strategy,
            "topology": topology.name,
            "publisher": self.publisher,
            "receivers": sorted(self.receivers, key=topology.host_id),
            "header": {
                "entries": enc.header_entries,
                "bytes": enc.header_bytes,
                "hex": " ".join(p.header.hex() for p in enc.packets if p.header),
            },
            "delivered": {h: self.delivered[h]
                          for h in sorted(self.delivered, key=topology.host_id)},
            "false_positives": self.false_positives,
            "false_negatives": self.false_negatives,
            "duplicates": self.duplicates,
            "links": [
                {"src": s, "dst": d, "frames": f, "bytes": b}
                for (s, d), (f, b) in sorted(self.links.items())
            ],
            "frames": self.frames,
            "bytes": self.bytes,
            "switches": {
                s: {"passes": c.passes, "recirculations": c.recirculations, "lookups": c.lookups}
                for s, c in sorted(self.switches.items(), key=lambda kv: topology.switch_id(kv[0]))
            },
            "state": {
                "entries": state.entries,
                "multicast_groups": state.multicast_groups,
                "per_switch": state.per_switch(),
            },
            "delay_ms": {"worst": self.delay_worst_s * 1e3},
        }



#: The per-notification metrics the cell rows use, in row order.
METRIC_KEYS = ("delivered", "false_positives", "false_negatives", "duplicates",
               "header_entries", "header_bytes", "packets_sent", "frames", "bytes", "passes",
               "recirculations", "lookups", "circulations_simplified", "max_switch_passes",
               "delay_worst_ms", "link_false_positives")


# -- per-topology tables: the shortest-path tree from every root ---------------


class _Tables:
    """Spanning shortest-path trees (switches and every host) from each root switch.

    Nodes are numbered globally (switches ``0..S-1`` in topology order, then
    hosts). Per root, the ``N = S + H`` nodes are laid out in preorder of the
    tree with children in port order (the order of the stacks, seed 000 §3.2),
    so a subtree is the range ``[i, end[i])``. Arrays are ``(S, N)``, indexed
    ``[root, preorder number]`` unless noted; a root's row is filled the first
    time a notification uses it (:meth:`ensure`).

    Attributes
    ----------
    node : global node index; parent : preorder number of the parent (root:
    -1); end : preorder number after the subtree; depth : hops from the root;
    delay : delay of the link parent -> node (s); is_switch : 1 for switches, 0 for hosts;
    pos_of : ``[root, global node]`` -> preorder number.
    """


#: The per-notification metrics the cell rows use, in row order.
METRIC_KEYS = ("delivered", "false_positives", "false_negatives", "duplicates",
               "header_entries", "header_bytes", "packets_sent", "frames", "bytes", "passes",
               "recirculations", "lookups", "circulations_simplified", "max_switch_passes",
               "delay_worst_ms", "link_false_positives")


def row_metrics(delivery: Delivery, link_waste: bool = True) -> dict[str, Any]:
    """The per-notification row metrics of a reference :class:`~sim.engines.static.Delivery`
    (``link_waste=False`` leaves out ``link_false_positives``, the costliest)."""
    d = delivery
    out = {
        "delivered": len(d.delivered), "false_positives": d.false_positives,
        "false_negatives": d.false_negatives, "duplicates": d.duplicates,
        "header_entries": d.encoding.header_entries, "header_bytes": d.encoding.header_bytes,
        "packets_sent": len(d.encoding.packets), "frames": d.frames, "bytes": d.bytes,
        "passes": d.total("passes"), "recirculations": d.total("recirculations"),
        "lookups": d.total("lookups"),
        "circulations_simplified": d.total("circulations_simplified"),
        "max_switch_passes": max((c.passes for c in d.switches.values()), default=0),
        "delay_worst_ms": d.delay_worst_s * 1e3,
    }
    if link_waste:
        out["link_false_positives"] = wasted_link_frames(d.links, d.publisher, d.receivers)
    return out
