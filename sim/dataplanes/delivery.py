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
from typing import Any, overload

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.link_waste import wasted_link_frames
from sim.dataplanes.packet import Encoding
from sim.dataplanes.pipeline import PipelineResult
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
    """Pipeline work at one switch (or summed over switches)."""

    passes: int = 0
    recirculations: int = 0
    lookups: int = 0
    circulations_simplified: int = 0

    def add(self, result: PipelineResult) -> None:
        """Count one pipeline run (all its passes) of the data plane."""
        self.passes += result.passes
        self.recirculations += result.recirculations
        self.lookups += result.lookups
        self.circulations_simplified += result.circulations_simplified


class SwitchTotal:
    """A :class:`SwitchCount` field summed over a :class:`DeliveryCounts`'s switches.

    A read-only attribute named like the field (``passes = SwitchTotal()``).
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> SwitchTotal: ...

    @overload
    def __get__(self, obj: DeliveryCounts, owner: type | None = None) -> int: ...

    def __get__(self, obj: DeliveryCounts | None, owner: type | None = None
                ) -> SwitchTotal | int:
        return self if obj is None else obj.total(self.field)


class DeliveryCounts:
    """What one notification's deliveries and switch work add up to (a mixin).

    Shared by :class:`Delivery` (static engine, fast paths) and the timed
    engine's :class:`sim.engines.timed.engine.NoteRecord`, so both count
    false positives, false negatives, duplicates and switch totals the same
    way. The class using it has ``receivers`` (who should get the
    notification), ``delivered`` (host -> copies received) and ``switches``
    (switch -> :class:`SwitchCount`).

    References
    ----------
    Seed 000 §3.5 (evaluation metrics); shared/DESIGN.md "Engines" (exact
    counts).
    """

    __slots__ = ()

    receivers: frozenset[str]
    delivered: dict[str, int]
    switches: dict[str, SwitchCount]

    #: :class:`SwitchCount` totals over all switches (read-only attributes).
    passes = SwitchTotal()
    recirculations = SwitchTotal()
    lookups = SwitchTotal()
    circulations_simplified = SwitchTotal()

    @property
    def false_positives(self) -> int:
        """Hosts outside the receiver set that got the notification."""
        return sum(1 for h in self.delivered if h not in self.receivers)

    @property
    def false_negatives(self) -> int:
        """Receivers that did not get the notification."""
        return sum(1 for h in self.receivers if h not in self.delivered)

    @property
    def duplicates(self) -> int:
        """Copies beyond the first at any host."""
        return sum(c - 1 for c in self.delivered.values())

    def total(self, attr: str) -> int:
        """``attr`` of :class:`SwitchCount` summed over the switches."""
        return sum(getattr(c, attr) for c in self.switches.values())

    @property
    def max_switch_passes(self) -> int:
        """The most passes one switch ran (0 when no switch was reached)."""
        return max((c.passes for c in self.switches.values()), default=0)


@dataclass(kw_only=True)
class Delivery(DeliveryCounts):
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
    def frames(self) -> int:
        return sum(f for f, _ in self.links.values())

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.links.values())

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


def row_metrics(delivery: Delivery, link_waste: bool = True) -> dict[str, Any]:
    """The per-notification row metrics of a reference :class:`~sim.engines.static.Delivery`
    (``link_waste=False`` leaves out ``link_false_positives``, the costliest)."""
    d = delivery
    out = {
        "delivered": len(d.delivered), "false_positives": d.false_positives,
        "false_negatives": d.false_negatives, "duplicates": d.duplicates,
        "header_entries": d.encoding.header_entries, "header_bytes": d.encoding.header_bytes,
        "packets_sent": len(d.encoding.packets), "frames": d.frames, "bytes": d.bytes,
        "passes": d.passes, "recirculations": d.recirculations, "lookups": d.lookups,
        "circulations_simplified": d.circulations_simplified,
        "max_switch_passes": d.max_switch_passes,
        "delay_worst_ms": d.delay_worst_s * 1e3,
    }
    if link_waste:
        out["link_false_positives"] = wasted_link_frames(d.links, d.publisher, d.receivers)
    return out
