"""The timed engine: the static engine's data planes inside SimPy processes.

:class:`TimedEngine` assembles a network of :class:`~sim.engines.timed.switch.SwitchNode`
(pipelines, recirculation, replication, egress queues), hosts (publisher NIC
with a feed-in time per frame; subscribers record arrival times), and, for
strategies that implement :class:`~sim.engines.static.BrokerHost`, one software broker
per switch (ALM baselines). :meth:`TimedEngine.publish` injects a
notification; :meth:`TimedEngine.start_workload` adds publisher processes;
:mod:`sim.engines.timed.controller` adds churn. :class:`Recorder` counts what the static
engine counts (deliveries, frames and bytes per directed link,
passes/recirculations/lookups per switch), plus times, drops and, when asked,
an exact event trace: a list of tuples ``(t, kind, ...)``.

Timing assumptions (beyond :mod:`sim.engines.timed.switch`): a host's NIC sends one
frame at a time, each taking ``max(feed_in_s, 8 x bytes / link rate)``, so
the i-th of k copies a publisher sends leaves ``i x feed_in_s`` after the
notification (204 unicast copies at 0.1 ms: the last one leaves at 20.4 ms,
seed 000 §3.5.4); frames a host sends back (``HostAction.send``) join its NIC
after the action's delay; a broker processes one frame at a time for
``broker_s`` and sends its answers through its own NIC (feed-in per copy);
links add their propagation delay. Payloads are ``payload_bytes`` zero bytes
(the data planes never read them; the notification id travels beside the
frame, not in it).

References
----------
Seed 000 §3.5.4 (delay constants, ALM, 204 copies = 20.4 ms); digest ch. 1-4
§4.1, §7.16; shared/DESIGN.md "Engines".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from sim.dataplanes.control_state import ControlState, SwitchConfig
from sim.dataplanes.delivery import DeliveryCounts, SwitchCount, broker_node
from sim.dataplanes.packet import Notification
from sim.dataplanes.pipeline import PipelineResult
from sim.dataplanes.seeds import child_rng
from sim.engines.gc_thresholds import RUN_GC_THRESHOLDS, rare_gc  # noqa: F401 (re-exported)
from sim.engines.static import BrokerHost
from sim.engines.timed.config import TimedConfig, Workload
from sim.engines.timed.loop import TimedEnvironment
from sim.engines.timed.metrics import TimeWeighted
from sim.engines.timed.switch import EgressPort, EngineError, FifoServer, Frame, SwitchNode
from strategies.base import Encoding, Strategy
from topologies.model import Topology

DEFAULT_TIMED = TimedConfig()

__all__ = ["EngineError", "NoteRecord", "Recorder", "TimedEngine", "TimedResult"]


@dataclass(slots=True)
class NoteRecord(DeliveryCounts):
    """What happened to one notification.

    ``receivers`` is the ground truth when it was published (who should get
    it); ``encoded_for`` the receiver set the publisher encoded for (its
    view, which lags under churn). False positives/negatives, duplicates and
    the switch totals are counted as for the static engine's
    :class:`~sim.dataplanes.delivery.Delivery` (:class:`DeliveryCounts`).

    Switch work is aggregated as it streams in: ``totals`` (passes,
    recirculations, lookups, simplified circulations over all switches) and
    ``switch_passes`` (passes per switch reached, for ``max_switch_passes``);
    what the row builder reads and no per-switch :class:`SwitchCount`.
    """

    nid: int
    notification: Notification
    receivers: frozenset[str]
    encoded_for: frozenset[str]
    view_state: ControlState
    view_stale: bool = False
    truth_version: int = 0
    packets: int = 0
    header_entries: int = 0
    header_bytes: int = 0
    frames: int = 0
    bytes: int = 0
    drops: int = 0
    t_last: float = 0.0
    totals: SwitchCount = field(default_factory=SwitchCount)
    switch_passes: dict[str, int] = field(default_factory=dict)
    delivered: dict[str, int] = field(default_factory=dict)
    first: dict[str, float] = field(default_factory=dict)

    @property
    def t_pub(self) -> float:
        return self.notification.t_s

    @property
    def publisher(self) -> str:
        return self.notification.publisher

    def latencies(self) -> list[float]:
        """First-arrival latency of every intended receiver reached."""
        t0 = self.t_pub
        return [self.first[h] - t0 for h in self.receivers if h in self.first]

    @property
    def latency_first_s(self) -> float:
        lat = self.latencies()
        return min(lat) if lat else float("nan")

    @property
    def latency_last_s(self) -> float:
        """Worst-case delay: the latest first arrival at an intended receiver."""
        lat = self.latencies()
        return max(lat) if lat else float("nan")

    def total(self, attr: str) -> int:
        """``attr`` of :class:`SwitchCount` summed over the switches."""
        return int(getattr(self.totals, attr))

    @property
    def max_switch_passes(self) -> int:
        """The most passes one switch ran (0 when no switch was reached)."""
        return max(self.switch_passes.values(), default=0)


class Recorder:
    """Counts, times and (optionally) the exact event trace of a run.

    Streaming (:meth:`stream`): instead of keeping every :class:`NoteRecord` in
    :attr:`notes` to the end, the recorder counts the frames of each notification
    still somewhere in the network (on a link, in a queue, in a switch's pending
    passes, in a timer of a replica or a host's answer) and hands a record to the
    sink once none is left and simulated time has moved past its last event (so
    that every table write up to then has landed), then forgets it.
    :meth:`close` hands over the rest (a run stopped with frames in flight).
    """

    def __init__(self, trace: bool = False, frame_limit: int = 1 << 62,
                 drop_loops: bool = False) -> None:
        self.trace: list[tuple[Any, ...]] | None = [] if trace else None
        self.frame_limit = frame_limit
        #: beyond ``frame_limit`` frames of one notification: drop them ("loop") or raise
        self.drop_loops = drop_loops
        self.notes: dict[int, NoteRecord] = {}
        self.links: dict[tuple[str, str], list[int]] = {}
        self.switches: dict[str, SwitchCount] = {}
        self.dataplane_drops = 0
        #: switch -> one-element list: recirculated passes it executed (pipelines
        #: count into the list directly, see :meth:`recirc_counter`)
        self._recirc: dict[str, list[int]] = {}
        self.drops: dict[tuple[str, str, Any], int] = {}
        self.hops = 0
        #: streaming only: notification id -> its frames in the network
        self.live: dict[int, int] | None = None
        self._sink: Callable[[NoteRecord], None] = _no_sink
        self._clock: Callable[[], float] = float
        self._closing: list[NoteRecord] = []
        #: streaming only: the most records held at once
        self.open_peak = 0

    def stream(self, sink: Callable[[NoteRecord], None], clock: Callable[[], float]) -> None:
        """Hand each finished notification to ``sink`` and forget it (see the class);
        ``clock``: the simulated time now. Call before anything is published."""
        if self.notes:
            raise EngineError("stream() after notifications were published")
        self.live = {}
        self._sink = sink
        self._clock = clock

    def spawned(self, nid: int, frames: int) -> None:
        """Streaming: ``frames`` more (or fewer, when negative) frames of ``nid`` are in
        the network; the notification finishes when none is left."""
        live = self.live
        if live is None:
            return
        left = live[nid] + frames
        if left:
            live[nid] = left
            return
        del live[nid]
        self._closing.append(self.notes.pop(nid))
        now = self._clock()
        if any(n.t_last < now for n in self._closing):
            ready = [n for n in self._closing if n.t_last < now]
            self._closing = [n for n in self._closing if n.t_last >= now]
            for note in ready:
                self._sink(note)

    def close(self) -> None:
        """Streaming: hand every record still held to the sink (in id order)."""
        if self.live is None:
            return
        rest = sorted(self._closing + list(self.notes.values()), key=lambda n: n.nid)
        self._closing = []
        self.notes.clear()
        self.live.clear()
        for note in rest:
            self._sink(note)

    def event(self, *fields: Any) -> None:
        if self.trace is not None:
            self.trace.append(fields)

    def publish(self, t: float, note: NoteRecord) -> None:
        self.notes[note.nid] = note
        note.t_last = t
        if self.live is not None:
            self.live[note.nid] = note.packets
            if not note.packets:
                self.spawned(note.nid, 0)
            self.open_peak = max(self.open_peak, len(self.notes) + len(self._closing))
        if self.trace is not None:
            self.trace.append((t, "publish", note.nid, note.publisher, note.packets))

    def tx(self, t: float, src: str, dst: str, port: int, frame: Frame) -> bool:
        """Count a frame that crossed ``src -> dst``; False if it is dropped instead
        (a notification beyond the frame limit, when loops are dropped)."""
        packet, nid, _ = frame
        note = self.notes[nid]
        if note.frames >= self.frame_limit:
            if not self.drop_loops:
                raise EngineError(f"forwarding loop: notification {nid} put more than "
                                  f"{self.frame_limit} frames on links")
            self.drop(t, "loop", src, port, nid)
            return False
        size = packet.frame_bytes
        rec = self.links.get((src, dst))
        if rec is None:
            rec = self.links[(src, dst)] = [0, 0]
        rec[0] += 1
        rec[1] += size
        self.hops += 1
        note.frames += 1
        note.bytes += size
        note.t_last = t
        if self.trace is not None:
            self.trace.append((t, "tx", src, port, dst, nid, size))
        return True

    def drop(self, t: float, where: str, node: str, detail: Any, nid: int) -> None:
        key = (where, node, detail)
        self.drops[key] = self.drops.get(key, 0) + 1
        note = self.notes[nid]
        note.drops += 1
        note.t_last = t
        if self.trace is not None:
            self.trace.append((t, "drop", where, node, detail, nid))
        if self.live is not None:  # the dropped frame (or pending pass) is gone
            self.spawned(nid, -1)

    def processed(self, switch: str, result: PipelineResult, nid: int) -> None:
        c = self.switches.get(switch)
        if c is None:
            c = self.switches[switch] = SwitchCount()
        c.add(result)
        self.dataplane_drops += result.dropped
        note = self.notes[nid]
        note.totals.add(result)
        passes = note.switch_passes
        passes[switch] = passes.get(switch, 0) + result.passes

    def recirc_counter(self, switch: str) -> list[int]:
        """The counter of ``switch``'s executed recirculations (``counter[0] += 1`` per pass)."""
        return self._recirc.setdefault(switch, [0])

    def recirculated(self, switch: str) -> None:
        self.recirc_counter(switch)[0] += 1

    @property
    def recirc_executed(self) -> dict[str, int]:
        """Recirculated passes executed per switch (switches with none left out)."""
        return {sw: c[0] for sw, c in self._recirc.items() if c[0]}

    def deliver(self, t: float, host: str, nid: int) -> None:
        note = self.notes[nid]
        note.delivered[host] = note.delivered.get(host, 0) + 1
        if host not in note.first:
            note.first[host] = t
        note.t_last = t
        if self.trace is not None:
            self.trace.append((t, "deliver", host, nid))


class HostNode:
    """A host: NIC (feed-in per frame) towards its switch; records arrivals.

    Timing: arrivals are recorded when the frame's last bit arrives; frames
    the strategy's ``host_receive`` sends back join the NIC after their delay.
    """

    def __init__(self, engine: TimedEngine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.nic: EgressPort | None = None

    def receive(self, in_port: int, frame: Frame) -> None:
        eng = self.engine
        packet, nid, hops = frame
        eng.recorder.deliver(eng.env.now, self.name, nid)
        action = eng.strategy.host_receive(eng.topology, self.name, packet,
                                           eng.recorder.notes[nid].notification)
        eng.recorder.spawned(nid, len(action.send) - 1)  # answers replace the frame
        for reply, delay in action.send:
            eng.env.timeout(delay).callbacks.append(self._sender((reply, nid, hops)))

    def _sender(self, frame: Frame) -> Callable[[simpy.Event], None]:
        def send(_ev: simpy.Event) -> None:
            self.nic.send(frame)  # type: ignore[union-attr]
        return send


class BrokerNode(FifoServer):
    """A software broker on a spare switch port (application-layer multicast).

    Timing: one received frame at a time, ``broker_s`` each (FIFO, unlimited
    queue); its answers (``BrokerHost.broker_receive``, in sending order) then
    leave through the broker's NIC, ``feed_in_s`` per copy.
    """

    def __init__(self, engine: TimedEngine, switch: str) -> None:
        super().__init__(engine.env, broker_node(switch), None)
        self.engine = engine
        self.switch = switch
        self.nic: EgressPort | None = None

    def receive(self, in_port: int, frame: Frame) -> None:
        self.offer(frame)

    def service(self, item: Frame) -> float:
        return self.engine.config.broker_s

    def done(self, item: Frame) -> None:
        eng = self.engine
        packet, nid, hops = item
        note = eng.recorder.notes[nid]
        replies = list(eng.strategy.broker_receive(  # type: ignore[attr-defined]
            eng.topology, note.view_state, self.switch, packet, note.notification,
            note.encoded_for))
        eng.recorder.spawned(nid, len(replies) - 1)  # answers replace the frame
        for reply in replies:
            self.nic.send((reply, nid, hops))  # type: ignore[union-attr]


@dataclass
class TimedResult:
    """Everything measured in one run (see :class:`Recorder` and :meth:`TimedEngine.result`)."""

    t_end: float
    recorder: Recorder
    queues: dict[str, dict[str, float]]
    events: int

    @property
    def notes(self) -> dict[int, NoteRecord]:
        return self.recorder.notes

    @property
    def trace(self) -> list[tuple[Any, ...]]:
        return self.recorder.trace or []

    def total(self, attr: str) -> int:
        return sum(getattr(c, attr) for c in self.recorder.switches.values())


class TimedEngine:
    """A network of timed switches, hosts and brokers running one strategy.

    Parameters
    ----------
    topology, strategy : Topology, Strategy
    state : ControlState
        Installed on every switch at t = 0 and known to every publisher.
    config : TimedConfig
    payload_bytes : int
        Event size of every notification.
    trace : bool
        Record the exact event trace (``result().trace``).
    max_frames : int or None
        Frames one notification may put on links before the run is declared
        a forwarding loop (default as the static engine: 64 x links x
        (hosts + 1)); with ``ttl_hops`` set (loops expected, e.g. during
        updates) further frames are dropped ("loop") instead.
    """

    def __init__(self, topology: Topology, strategy: Strategy, state: ControlState,
                 config: TimedConfig = DEFAULT_TIMED, *, payload_bytes: int = 50,
                 trace: bool = False, max_frames: int | None = None) -> None:
        if payload_bytes < 0:
            raise ValueError(f"payload_bytes must be >= 0; got {payload_bytes}")
        self.env = TimedEnvironment()
        self.topology = topology
        self.strategy = strategy
        self.config = config
        self.payload = bytes(payload_bytes)
        limit = max_frames or 64 * len(topology.links) * (len(topology.hosts) + 1)
        self.recorder = Recorder(trace=trace, frame_limit=limit,
                                 drop_loops=config.ttl_hops is not None)
        self.state = state
        #: publisher -> (state it encodes with, receivers it was told; None = per call)
        self.views: dict[str, tuple[ControlState, frozenset[str] | None]] = {}
        #: publisher -> its current subscribers (ground truth; churn updates it)
        self.truth: dict[str, frozenset[str]] = {}
        self.truth_version = 0
        #: (publisher, notification id) -> (event, receivers) for content workloads
        self.draw: Callable[[str, int], tuple[Any, frozenset[str]]] | None = None
        self._next_nid = 0
        self._published = 0
        self._encodings: dict[tuple[str, int, frozenset[str], Any],
                              tuple[ControlState, Encoding]] = {}
        dataplane = strategy.model()
        self.switches = {sw: SwitchNode(self.env, sw, dataplane, state.config(sw), config,
                                        self.recorder) for sw in topology.switches}
        self.hosts = {h: HostNode(self, h) for h in topology.hosts}
        self._wire()
        self.brokers: dict[str, BrokerNode] = {}
        if isinstance(strategy, BrokerHost):
            self._wire_brokers(strategy.broker_ports(topology, state))

    # -- assembly ---------------------------------------------------------------------
    def _node(self, name: str) -> Any:
        return self.switches.get(name) or self.hosts[name]

    def _wire(self) -> None:
        cfg, env, rec = self.config, self.env, self.recorder
        for link in self.topology.links:
            for a, ap, b, bp in ((link.a, link.a_port, link.b, link.b_port),
                                 (link.b, link.b_port, link.a, link.a_port)):
                far = self._node(b)
                if a in self.hosts:
                    port = EgressPort(env, rec, a, ap, b, bp, link.bandwidth_bps, link.delay_s,
                                      None, far.receive, min_service_s=cfg.feed_in_s)
                    self.hosts[a].nic = port
                else:
                    port = EgressPort(env, rec, a, ap, b, bp, link.bandwidth_bps, link.delay_s,
                                      cfg.buffer_frames, far.receive, ttl=cfg.ttl_hops)
                    self.switches[a].ports[ap] = port

    def _wire_brokers(self, ports: Mapping[str, int]) -> None:
        cfg, env, rec = self.config, self.env, self.recorder
        for sw, port in sorted(ports.items()):
            if port in self.topology.ports(sw):
                raise EngineError(f"broker port {port} of {sw} is a topology port")
            broker = self.brokers[sw] = BrokerNode(self, sw)
            name = broker_node(sw)
            switch = self.switches[sw]
            switch.ports[port] = EgressPort(env, rec, sw, port, name, 1, cfg.broker_link_bps, 0.0,
                                            cfg.buffer_frames, broker.receive, ttl=cfg.ttl_hops)
            broker.nic = EgressPort(env, rec, name, 1, sw, port, cfg.broker_link_bps, 0.0, None,
                                    switch.receive, min_service_s=cfg.feed_in_s)

    # -- state --------------------------------------------------------------------------
    def set_config(self, switch: str, config: SwitchConfig) -> None:
        """Install ``config`` on ``switch`` now (the controller's writes land here)."""
        self.switches[switch].set_config(config)

    def installed(self) -> dict[str, SwitchConfig]:
        return {sw: node.config for sw, node in self.switches.items()}

    def inform(self, publisher: str, state: ControlState,
               receivers: frozenset[str] | None) -> None:
        """Tell ``publisher`` the state (and receiver set) to encode with from now on."""
        self.views[publisher] = (state, receivers)
        self.recorder.event(self.env.now, "inform", publisher)

    def set_truth(self, publisher: str, receivers: frozenset[str]) -> None:
        self.truth[publisher] = receivers
        self.truth_version += 1

    # -- notifications ------------------------------------------------------------------
    def _encode(self, state: ControlState, note: Notification, receivers: frozenset[str]
                ) -> Encoding:
        key = (note.publisher, id(state), receivers, note.event)
        hit = self._encodings.get(key)
        if hit is None or hit[0] is not state:
            if len(self._encodings) > 4096:
                self._encodings.clear()
            enc = self.strategy.encode(self.topology, state, note, receivers, self.payload)
            hit = self._encodings[key] = (state, enc)
        return hit[1]

    def publish(self, publisher: str, receivers: frozenset[str] | None = None,
                event: Any = None) -> int:
        """Publish one notification now; returns its id.

        ``receivers``: who should get it. None means: drawn with :attr:`draw`
        when it is set (content workloads: an event and the hosts it
        matches), else the publisher's current subscribers (:attr:`truth`).
        The publisher encodes for the receiver set of its view when it has
        one (churn), else for ``receivers``.
        """
        if publisher not in self.hosts:
            raise EngineError(f"unknown publisher {publisher!r}")
        nid = self._next_nid
        if receivers is None and self.draw is not None:
            event, receivers = self.draw(publisher, nid)
        truth = self.truth.get(publisher, frozenset()) if receivers is None else receivers
        state, told = self.views.get(publisher, (self.state, None))
        encoded_for = truth if told is None else told
        self._next_nid += 1
        self._published += 1
        note = Notification(notification_id=nid, publisher=publisher, t_s=self.env.now,
                            event=event)
        enc = self._encode(state, note, encoded_for)
        rec = NoteRecord(nid=nid, notification=note, receivers=truth, encoded_for=encoded_for,
                         view_state=state, view_stale=encoded_for != truth,
                         truth_version=self.truth_version, packets=len(enc.packets),
                         header_entries=enc.header_entries, header_bytes=enc.header_bytes)
        self.recorder.publish(self.env.now, rec)
        nic = self.hosts[publisher].nic
        if nic is None:
            raise EngineError(f"publisher {publisher} has no link")
        for packet in enc.packets:
            nic.send((packet, nid, 0))
        return nid

    def publish_at(self, t: float, publisher: str, receivers: frozenset[str] | None = None,
                   event: Any = None) -> None:
        """Schedule :meth:`publish` at simulated time ``t`` (>= now)."""
        def fire(_ev: simpy.Event) -> None:
            self.publish(publisher, receivers, event)

        self.env.timeout(t - self.env.now).callbacks.append(fire)

    @property
    def published(self) -> int:
        return self._published

    # -- workload -----------------------------------------------------------------------
    def start_workload(self, workload: Workload, publishers: Sequence[str], seed: int) -> None:
        """One publishing process per publisher (receivers: their current truth).

        Publisher ``h`` draws its times from ``child_rng(seed, "timed-publisher", id(h))``.
        """
        for pub in publishers:
            rng = child_rng(seed, "timed-publisher", self.topology.host_id(pub))
            self.env.process(self._publisher(pub, workload, rng))

    def _publisher(self, publisher: str, workload: Workload, rng: np.random.Generator) -> Any:
        """Process: publish at ``rate_hz`` (periodic after a random phase, or Poisson)
        until ``duration_s`` or the workload's notification cap; receivers are the
        publisher's current subscribers."""
        period = 1.0 / workload.rate_hz
        gap = rng.uniform(0.0, period) if workload.arrival == "periodic" else \
            rng.exponential(period)
        while True:
            yield self.env.timeout(gap)
            if not self._may_publish(workload):
                return
            self.publish(publisher)
            gap = period if workload.arrival == "periodic" else rng.exponential(period)

    def start_schedule(self, workload: Workload,
                       items: Sequence[tuple[Any, ...]], seed: int) -> None:
        """One stream of notifications with given (publisher, receivers), in order
        (times from ``child_rng(seed, "timed-stream")``)."""
        self.env.process(self._stream(workload, list(items), child_rng(seed, "timed-stream")))

    def _stream(self, workload: Workload, items: list[tuple[Any, ...]],
                rng: np.random.Generator) -> Any:
        """Process: the notifications ``items`` (publisher, receivers[, event]) at
        ``rate_hz`` in all (periodic from t = 0, or Poisson), stopping early at
        ``duration_s``."""
        period = 1.0 / workload.rate_hz
        for k, (pub, receivers, *event) in enumerate(items):
            gap = period if workload.arrival == "periodic" else rng.exponential(period)
            if k or workload.arrival == "poisson":
                yield self.env.timeout(gap)
            if not self._may_publish(workload):
                return
            self.publish(pub, receivers, event[0] if event else None)

    def _may_publish(self, workload: Workload) -> bool:
        if workload.duration_s is not None and self.env.now > workload.duration_s:
            return False
        return workload.notifications is None or self._published < workload.notifications

    # -- running ------------------------------------------------------------------------
    def run(self, until: float | None = None) -> TimedResult:
        """Run until ``until`` (or until nothing is left to happen) and summarize."""
        with rare_gc():
            self.env.run(until=until)
        if until is None:  # drained: every notification finished
            self.recorder.close()
        return self.result()

    def stream(self, sink: Callable[[NoteRecord], None]) -> None:
        """Hand each notification's record to ``sink`` once it finished instead of
        keeping it in ``result().notes`` (:meth:`Recorder.stream`); before publishing."""
        self.recorder.stream(sink, lambda: self.env._now)

    def queue_servers(self) -> Iterable[tuple[str, FifoServer]]:
        """(kind, server) of every queue: switch egress, host NIC, pipeline, recirc, broker."""
        for node in self.switches.values():
            for port in node.ports.values():
                yield ("broker_link" if port.dst.startswith("b:") else "egress"), port
            for pipe in node.pipelines:
                yield "pipeline", pipe
            for ports in node.recirc:
                for rp in ports:
                    yield "recirc", rp
        for host in self.hosts.values():
            if host.nic is not None:
                yield "nic", host.nic
        for broker in self.brokers.values():
            yield "broker", broker

    def result(self) -> TimedResult:
        t_end = self.env.now
        queues: dict[str, dict[str, float]] = {}
        for kind, server in self.queue_servers():
            tw: TimeWeighted = server.occupancy
            q = queues.setdefault(kind, {"mean": 0.0, "max_mean": 0.0, "peak": 0.0, "n": 0.0})
            m = tw.mean(t_end)
            q["mean"] += m
            q["n"] += 1
            q["max_mean"] = max(q["max_mean"], m)
            q["peak"] = max(q["peak"], tw.peak)
        for q in queues.values():
            q["mean"] /= max(q.pop("n"), 1.0)
        return TimedResult(t_end=t_end, recorder=self.recorder, queues=queues,
                           events=events_scheduled(self.env))


def _no_sink(note: NoteRecord) -> None:
    """The sink of a recorder that keeps its records."""


def events_scheduled(env: simpy.Environment) -> int:
    """Events scheduled so far in ``env`` (SimPy's event id counter; -1 if unavailable)."""
    counter = getattr(env, "_eid", None)
    if counter is None:
        return -1
    return int(next(counter))


def run_notifications(topology: Topology, strategy: Strategy, state: ControlState,
                      notifications: Iterable[tuple[Any, ...]],
                      config: TimedConfig = DEFAULT_TIMED, *, payload_bytes: int = 50,
                      trace: bool = False) -> TimedResult:
    """Publish ``(t, publisher, receivers[, event])`` notifications and run until all
    are done."""
    engine = TimedEngine(topology, strategy, state, config, payload_bytes=payload_bytes,
                         trace=trace)
    for t, pub, receivers, *event in notifications:
        engine.publish_at(t, pub, frozenset(receivers), event[0] if event else None)
    return engine.run()

