"""Configuration of the timed (SimPy) engine: frozen, validated, units in names.

Four dataclasses, each validated at construction (a bad value raises
:class:`~topologies.registry.SpecError` naming the field and what is allowed):

- :class:`TimedConfig`: switch, host, broker and controller timing;
- :class:`Workload`: who publishes how often;
- :class:`Churn`: subscription changes per second;
- :class:`Capacity`: table capacity per switch and table kind.

:func:`timed_settings` builds all four from one flat mapping (the ``[timed]``
table of an experiment spec): every key belongs to exactly one dataclass.

Defaults are the analytic constants of seed 000 §3.5.4 (feed-in 0.1 ms,
broker 2 ms, one pass ("circulation") 10 µs); ``switch_latency_s`` is the
part of the thesis's 0.1 ms "queuing and processing at switches" that is not
a pipeline pass (set it to 0.09 ms to reproduce the analytic per-switch
delay: 0.09 + 0.01 per pass). The linear lookup model is the Netronome
measurement of seed 004 (6.4 µs + ~1.12 µs per extra entry).

References
----------
Seed 000 §3.5.4, digest ch. 1-4 §4.1 and §7.16; digest seeds 001-004 Part C
(per-lookup latency linear in table size).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from topologies.registry import SpecError, check, make_params

LookupModel = Literal["none", "constant", "linear"]
UpdateOrder = Literal["make-before-break", "simultaneous"]
OverflowPolicy = Literal["reject", "allow"]
Arrival = Literal["periodic", "poisson"]
ReceiversMode = Literal["per-publisher", "per-notification"]
Records = Literal["notifications", "summary"]

#: Seed 004's linear model: 6.4 µs for one entry plus ~1.12 µs per extra entry.
SEED004_LOOKUP_S = 6.4e-6
SEED004_PER_ENTRY_S = 1.12e-6


def _nonneg(obj: Any, *names: str) -> None:
    for name in names:
        v = getattr(obj, name)
        check(v >= 0, f"{name} must be >= 0 (seconds or a count); got {v!r}")


def _positive_or_none(obj: Any, *names: str) -> None:
    for name in names:
        v = getattr(obj, name)
        check(v is None or v > 0, f"{name} must be > 0 or none (unlimited); got {v!r}")


def _literal(obj: Any, name: str, allowed: tuple[str, ...]) -> None:
    v = getattr(obj, name)
    check(v in allowed, f"{name} must be one of {', '.join(allowed)}; got {v!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TimedConfig:
    """Timing of switches, hosts, brokers and the controller.

    Parameters
    ----------
    pass_s : float
        Service time of one pipeline pass (ingress + egress), seconds. A
        packet whose program needs k sequential passes occupies its pipeline
        k x ``pass_s`` (plus lookup time). Default 10 µs (seed 000 §3.5.4).
    switch_latency_s : float
        Fixed, contention-free latency of every arriving frame before its
        first pass (parser, MAC, traffic manager), seconds. Default 0.
    pipelines : int
        Ingress pipelines per switch. Port p is served by pipeline
        (p - 1) mod ``pipelines``; recirculated passes stay on their pipeline.
    pipeline_buffer_frames : int or None
        Passes that may wait for one pipeline (arrivals and recirculations
        together); more are dropped (drop-tail). None = unlimited.
    lookup_model : {"none", "constant", "linear"}
        Per-lookup latency added to a pass: none; ``lookup_s`` per lookup;
        or ``lookup_s + lookup_per_entry_s x (entries - 1)`` per lookup, where
        entries is the size of ``lookup_table`` on the switch (all tables
        when empty), as measured in seed 004.
    lookup_s, lookup_per_entry_s : float
        Constants of the lookup model, seconds.
    lookup_table : str
        Fully qualified table whose size drives the linear model ("" = all).
    recirc_port_bps : float or None
        None: a recirculated pass re-enters its pipeline's queue at once
        (BMv2's software recirculation). A rate: it first crosses a
        recirculation port of that rate, with its own drop-tail buffer, and
        then re-enters the pipeline (hardware: Tofino's per-pipe
        recirculation port).
    recirc_ports : int
        Recirculation ports per pipeline when ``recirc_port_bps`` is set:
        1 = the pipe's own port; each more is a dedicated loopback port
        (the Tofino BIER fix of seed 000 §4.1, digest §3.10: "physical
        loopback recirculation ports"). A recirculation takes the port with
        the shortest queue (lowest index on ties). The front-panel ports
        they would cost are not removed from the topology.
    recirc_buffer_frames : int or None
        Buffer of each recirculation port (None = unlimited).
    pre_delay_s : float
        Packet-replication engine: the i-th of m >= 2 copies leaving after
        the same pass leaves i x ``pre_delay_s`` after that pass.
    pass_delay_s : float
        Hand-off after every pass that does not hold the pipeline: what a
        pass made (its recirculated or cloned passes, its copies) moves on
        ``pass_delay_s`` after the pass completes. A software switch hands
        every packet from its ingress thread to an egress thread and, on
        recirculation, back (BMv2; fitted by ``stackcast hil calibrate``),
        so a chain of k passes takes k x (``pass_s`` + ``pass_delay_s``)
        while clones of one pass overlap. Default 0 (no hand-off); a value
        > 0 turns recirculation off the pipeline's fast path.
    buffer_frames : int or None
        Frames an egress queue holds (the one on the wire included); an
        arriving frame beyond it is dropped (drop-tail). None = unlimited.
    ttl_hops : int or None
        A frame that (with the frames it descends from, brokers included)
        crossed this many links since its publisher is dropped at the next
        port (a "ttl" drop), and a notification's frames beyond the static
        engine's loop limit are dropped ("loop"): transient forwarding loops
        during updates. None: a loop is an error (the run stops, as in the
        static engine).
    feed_in_s : float
        Host NIC time per frame (publishers and brokers); the NIC needs at
        least the wire serialization time. Default 0.1 ms.
    broker_s : float
        Broker software processing per received frame (FIFO, one at a
        time). Default 2 ms.
    broker_link_bps : float
        Rate of the switch-broker link.
    write_latency_s : float
        Controller: time per write (INSERT/MODIFY/DELETE) on a switch.
    write_rtt_s : float
        Controller: fixed cost of one P4Runtime WriteRequest.
    write_batch : int
        Writes per WriteRequest (per switch). A request's writes take effect
        together when it completes.
    compute_s : float
        Controller: recomputation time per update.
    inform_s : float
        Controller: time to tell the publishers their new encodings.
    update_order : {"make-before-break", "simultaneous"}
        Default update order (a strategy may set ``update_order``):
        inserts/modifies, then inform the publishers, then deletes; or all
        writes and the inform step at once.
    overflow : {"reject", "allow"}
        When an update does not fit the capacity: keep the old state and
        leave the change unserved until a later update fits, or install it
        anyway and count the overflow.
    """

    pass_s: float = 1e-5
    switch_latency_s: float = 0.0
    pipelines: int = 1
    pipeline_buffer_frames: int | None = None
    lookup_model: LookupModel = "none"
    lookup_s: float = SEED004_LOOKUP_S
    lookup_per_entry_s: float = SEED004_PER_ENTRY_S
    lookup_table: str = ""
    recirc_port_bps: float | None = None
    recirc_ports: int = 1
    recirc_buffer_frames: int | None = None
    pre_delay_s: float = 0.0
    pass_delay_s: float = 0.0
    buffer_frames: int | None = None
    ttl_hops: int | None = None
    feed_in_s: float = 1e-4
    broker_s: float = 2e-3
    broker_link_bps: float = 1e9
    write_latency_s: float = 1e-4
    write_rtt_s: float = 1e-3
    write_batch: int = 100
    compute_s: float = 0.0
    inform_s: float = 1e-3
    update_order: UpdateOrder = "make-before-break"
    overflow: OverflowPolicy = "reject"

    def __post_init__(self) -> None:
        _nonneg(self, "pass_s", "switch_latency_s", "lookup_s", "lookup_per_entry_s",
                "pre_delay_s", "pass_delay_s", "feed_in_s", "broker_s", "write_latency_s",
                "write_rtt_s", "compute_s", "inform_s")
        check(self.pipelines >= 1, f"pipelines must be >= 1; got {self.pipelines!r}")
        check(self.write_batch >= 1, f"write_batch must be >= 1; got {self.write_batch!r}")
        check(self.recirc_ports >= 1, f"recirc_ports must be >= 1; got {self.recirc_ports!r}")
        check(self.broker_link_bps > 0,
              f"broker_link_bps must be > 0; got {self.broker_link_bps!r}")
        _positive_or_none(self, "pipeline_buffer_frames", "recirc_port_bps",
                          "recirc_buffer_frames", "buffer_frames", "ttl_hops")
        _literal(self, "lookup_model", ("none", "constant", "linear"))
        _literal(self, "update_order", ("make-before-break", "simultaneous"))
        _literal(self, "overflow", ("reject", "allow"))

    def lookup_time_s(self, entries: int) -> float:
        """Latency of one lookup in a table of ``entries`` entries."""
        if self.lookup_model == "none":
            return 0.0
        if self.lookup_model == "constant":
            return self.lookup_s
        return self.lookup_s + self.lookup_per_entry_s * max(entries - 1, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """Who publishes, how often, to whom.

    Parameters
    ----------
    rate_hz : float
        Notifications per second of each publisher.
    arrival : {"periodic", "poisson"}
        Periodic (first one after a random phase in [0, 1/rate)) or Poisson.
    publishers : int
        Publishing hosts, drawn from the receiver model's publishers
        (0 = all of them).
    receivers : {"per-publisher", "per-notification"}
        Each publisher's receiver set is drawn once (topic-style, the
        subscriptions churn acts on), or every notification draws its own
        (as the static engine's cells do; all sets are installed up front).
    duration_s : float or None
        Publishing stops at this simulated time; None: after
        ``notifications`` notifications in all.
    notifications : int or None
        Cap on notifications in all (None = no cap; then ``duration_s`` is
        required).
    records : {"notifications", "summary"}
        One row per notification, from a record of each kept to the end of the
        run (default); or one row per cell, its per-notification columns
        aggregated as the notifications finish, their records then dropped
        (:mod:`experiments.cells.timed_summary`: a long loaded run holds only the
        notifications in flight).
    """

    rate_hz: float = 100.0
    arrival: Arrival = "poisson"
    publishers: int = 0
    receivers: ReceiversMode = "per-publisher"
    duration_s: float | None = None
    notifications: int | None = None
    records: Records = "notifications"

    def __post_init__(self) -> None:
        check(self.rate_hz > 0, f"rate_hz must be > 0; got {self.rate_hz!r}")
        _literal(self, "records", ("notifications", "summary"))
        _literal(self, "arrival", ("periodic", "poisson"))
        _literal(self, "receivers", ("per-publisher", "per-notification"))
        check(self.publishers >= 0, f"publishers must be >= 0; got {self.publishers!r}")
        _positive_or_none(self, "duration_s", "notifications")
        check(self.duration_s is not None or self.notifications is not None,
              "a workload needs duration_s or notifications (or both)")
        check(self.receivers == "per-publisher" or self.notifications is not None,
              "receivers = per-notification needs a notifications count")


@dataclass(frozen=True, slots=True, kw_only=True)
class Churn:
    """Subscription changes (rates per second; all Poisson).

    Parameters
    ----------
    subscribe_hz : float
        New subscriptions: a uniformly drawn (publisher, host) pair that is
        not subscribed yet (the publisher's own host excluded).
    unsubscribe_hz : float
        Ended subscriptions: a uniformly drawn existing subscription.
    migrate_hz : float
        A client moves: every subscription of one subscribing host moves to
        a host (another attachment point) that subscribes to nothing.
    changes_hz : float
        Stationary churn, one sweepable axis: subscriptions arrive at
        ``changes_hz / 2`` and each existing one ends at rate
        ``changes_hz / 2 / N0`` (N0 = subscriptions at the start), so the
        number of subscriptions reverts to N0 and changes happen at
        ``changes_hz`` on average (a birth-death process; added to the
        constant rates above).
    """

    subscribe_hz: float = 0.0
    unsubscribe_hz: float = 0.0
    migrate_hz: float = 0.0
    changes_hz: float = 0.0

    def __post_init__(self) -> None:
        _nonneg(self, "subscribe_hz", "unsubscribe_hz", "migrate_hz", "changes_hz")

    def rates(self, subscriptions: int, initial: int) -> tuple[float, float, float]:
        """(subscribe, unsubscribe, migrate) per second with ``subscriptions`` now."""
        half = self.changes_hz / 2
        leave = half * subscriptions / initial if initial > 0 else half
        return (self.subscribe_hz + half, self.unsubscribe_hz + leave, self.migrate_hz)

    @property
    def active(self) -> bool:
        return self.subscribe_hz + self.unsubscribe_hz + self.migrate_hz + self.changes_hz > 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity:
    """Per-switch capacity by table kind (None = unlimited).

    Kinds (:func:`sim.engines.timed.capacity.occupancy`): exact-match entries (SRAM),
    ternary/LPM/range entries (TCAM), virtual-tree rules (``check_tree``),
    multicast groups and clone sessions.
    """

    exact_entries: int | None = None
    ternary_entries: int | None = None
    tree_rules: int | None = None
    multicast_groups: int | None = None
    clone_sessions: int | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            check(v is None or v >= 0, f"{f.name} must be >= 0 or none; got {v!r}")

    def limits(self) -> dict[str, int]:
        """The limited kinds only."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class TimedSettings:
    """Everything a timed cell needs besides topology, strategy and receivers."""

    config: TimedConfig = TimedConfig()
    workload: Workload = Workload(notifications=1)
    churn: Churn = Churn()
    capacity: Capacity = Capacity()


_PARTS: dict[str, type] = {"config": TimedConfig, "workload": Workload, "churn": Churn,
                           "capacity": Capacity}


def _field_owner() -> dict[str, str]:
    owner = {}
    for part, cls in _PARTS.items():
        for f in dataclasses.fields(cls):
            owner[f.name] = part
    return owner


TIMED_KEYS: frozenset[str] = frozenset(_field_owner())


def timed_settings(raw: Mapping[str, Any], where: str = "[timed]",
                   notifications: int | None = None) -> TimedSettings:
    """Build :class:`TimedSettings` from one flat mapping (a ``[timed]`` table).

    ``notifications`` (the spec's ``[experiment] notifications``) is the
    workload's cap unless ``raw`` sets one or sets ``duration_s`` (then
    the duration alone ends publishing).

    Raises
    ------
    SpecError
        On an unknown key (naming the allowed ones) or a bad value.
    """
    owner = _field_owner()
    split: dict[str, dict[str, Any]] = {p: {} for p in _PARTS}
    for key, value in raw.items():
        if key not in owner:
            raise SpecError(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(owner))})")
        split[owner[key]][key] = value
    wl = split["workload"]
    if notifications is not None and "notifications" not in wl and wl.get("duration_s") is None:
        wl["notifications"] = notifications
    built: dict[str, Any] = {p: make_params(cls, split[p], where) for p, cls in _PARTS.items()}
    return TimedSettings(**built)


#: Fields added after results were published: in the canonical dict only when
#: set, so the rows of runs that do not use them stay as they were.
_OMITTED_AT_DEFAULT = frozenset({"pass_delay_s", "records"})


def settings_canonical(settings: TimedSettings) -> dict[str, Any]:
    """Plain-value dict of every field (for JSON columns and metadata)."""
    out: dict[str, Any] = {}
    for part in _PARTS:
        obj = getattr(settings, part)
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.name not in _OMITTED_AT_DEFAULT or value != f.default:
                out[f.name] = value
    return out
