"""SimPy elements of the timed engine: FIFO servers, egress ports, pipelines, switches.

Pure core, timed shell: a switch asks its data-plane model *what* happens to
an arriving frame (:meth:`sim.dataplanes.pipeline.DataPlane.process`, a
:class:`~sim.dataplanes.pipeline.PipelineResult`) and only decides *when*: every
pipeline pass, recirculation, replication and transmission is one SimPy
event, scheduled as ``env.timeout`` would schedule it (:func:`call_later`;
SimPy 4's ``Environment`` queue layout).

Passes. When the model records a pass trace (``pass_parents``), every pass
is a job that becomes ready when the pass that spawned it (its recirculation
or the pass that cloned it) completes, and then queues for the pipeline
together with arriving frames (FIFO, one pass at a time per pipeline). A
copy leaves after the pass ``Emit.after_pass``. Every built-in label-stack
family records one; without a trace (the content filters, which never
recirculate, and third-party models) the packet's ``passes`` run as one sequential
chain and each copy leaves after pass number ``Emit.depth`` of that chain:
the pipeline work and the zero-load departure times are exact, only the
interleaving of sibling clones under load is approximated
(:func:`pass_plan`).

The model runs once per arriving frame, when its first pass starts, and all
its passes see the tables installed at that moment (a write landing while a
packet recirculates is not seen by that packet).

References
----------
Seed 000 §3.5.4 (delay constants), digest ch. 1-4 §4.1 (recirculation,
Tofino recirculation ports), §7.16 (pipeline as a resource with per-pass
service time); shared/DESIGN.md "Engines".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from heapq import heappush
from typing import Any

import simpy
from simpy.core import SimTime
from simpy.events import NORMAL, EventPriority

from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.pipeline import DataPlane, Emit, PipelineResult
from sim.engines.timed.config import TimedConfig
from sim.engines.timed.metrics import TimeWeighted

#: A frame in flight: the packet, the id of the notification it belongs to, and
#: the links it and the frames it descends from crossed since the publisher
#: (brokers' and hosts' answers inherit the count; for ``ttl_hops``).
Frame = tuple[Any, int, int]
_PLAN_CACHE_LIMIT = 4096
#: One pass of a :class:`PassPlan`: its children, its copies, its plain child or -1.
Step = tuple[tuple[int, ...], tuple[Emit, ...], int]


class EngineError(RuntimeError):
    """The network or a data-plane model misbehaved (loop, bad port, bad pass trace)."""


# -- pass plans (pure) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PassPlan:
    """The pass DAG of one arriving frame at one switch.

    ``children[j]``: passes spawned by pass j (they re-enter the pipeline
    when j completes); ``emits[j]``: copies leaving after pass j; ``traced``:
    whether the data plane gave the DAG (else the sequential-chain fallback);
    ``steps[j]``: ``(children[j], emits[j], plain)``, in one tuple for the
    engine's hot loop, where ``plain`` is the one child of a pass that spawns
    exactly one pass and sends no copy (a plain recirculation), else -1;
    ``plains[j]``: that ``plain`` for the recirculated passes (j >= 1), -1 for pass 0
    (the engine's short path for plain recirculations reads it and counts a
    recirculation; pass 0 takes the general path).
    """

    children: tuple[tuple[int, ...], ...]
    emits: tuple[tuple[Emit, ...], ...]
    traced: bool
    steps: tuple[Step, ...] = field(init=False, repr=False, compare=False)
    plains: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        plains = tuple(c[0] if len(c) == 1 and not e else -1
                       for c, e in zip(self.children, self.emits, strict=True))
        object.__setattr__(self, "steps", tuple(zip(self.children, self.emits, plains,
                                                                strict=True)))
        object.__setattr__(self, "plains", (-1, *plains[1:]))

    @classmethod
    def _with_plains(cls, children: tuple[tuple[int, ...], ...],
                     emits: tuple[tuple[Emit, ...], ...], traced: bool,
                     plains: tuple[int, ...]) -> PassPlan:
        """The plan whose ``steps[j][2]`` the caller already worked out (``plains``;
        as ``__post_init__`` would)."""
        plan = object.__new__(cls)
        put = object.__setattr__
        put(plan, "children", children)
        put(plan, "emits", emits)
        put(plan, "traced", traced)
        put(plan, "steps", tuple(zip(children, emits, plains, strict=True)))
        put(plan, "plains", (-1, *plains[1:]))
        return plan


@lru_cache(maxsize=4096)
def _pass_shape(parents: tuple[int, ...], passes: int
                ) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """The children of every pass (from the trace ``parents``, else one chain of
    ``passes``) and, per pass, its child when it has exactly one (else -1)."""
    n = max(passes, 1)
    children: list[list[int]] = [[] for _ in range(n)]
    if parents:
        if len(parents) != passes or parents[0] != -1:
            raise EngineError(f"inconsistent pass trace {parents} for {passes} passes")
        for j in range(1, n):
            p = parents[j]
            if not 0 <= p < j:
                raise EngineError(f"inconsistent pass trace {parents} for {passes} passes")
            children[p].append(j)
    else:  # one sequential chain
        for j in range(1, n):
            children[j - 1].append(j)
    shape = tuple(map(tuple, children))
    return shape, tuple(c[0] if len(c) == 1 else -1 for c in shape)


def pass_plan(result: PipelineResult) -> PassPlan:
    """The pass DAG of ``result`` (or the documented chain fallback).

    The shape (children per pass) is shared by every result with the same pass
    trace (:func:`_pass_shape`, cached); only the copies are placed per result.

    Raises
    ------
    EngineError
        If a recorded trace is inconsistent (wrong length, a parent that is
        not an earlier pass, a copy after a pass that does not exist).
    """
    parents = result.pass_parents
    traced = bool(parents)
    children, one_child = _pass_shape(parents, result.passes)
    n = len(children)
    if not result.emitted:
        return PassPlan._with_plains(children, ((),) * n, traced, one_child)
    emits: list[list[Emit]] = [[] for _ in range(n)]
    for e in result.emitted:
        after = e.after_pass if traced else min(max(e.depth, 1), n) - 1
        if not 0 <= after < n:
            raise EngineError(f"copy to port {e.port} leaves after pass {after} of {n}")
        emits[after].append(e)
    plains = list(one_child)
    for j, copies in enumerate(emits):
        if copies:
            plains[j] = -1
    return PassPlan._with_plains(children, tuple(map(tuple, emits)), traced, tuple(plains))


# -- FIFO servers --------------------------------------------------------------------


class _Wakeup:
    """A bare, already-triggered SimPy event that only runs one callback.

    What ``env.timeout(delay).callbacks.append(callback)`` does, without the
    parts of :class:`simpy.Timeout` no caller here uses (value, delay, desc):
    it is scheduled in ``env``'s queue with the same (time, priority, id) key
    a timeout gets, so the order of events and the event count are unchanged.
    """

    __slots__ = ("callbacks",)
    _ok = True  # read by Environment.step: a successful event

    def __init__(self, callback: Callable[[Any], None]) -> None:
        self.callbacks: list[Callable[[Any], None]] | None = [callback]


class _Landing:
    """A frame reaching the far end of a link: a bare event (as :class:`_Wakeup`) that
    carries it to the callbacks its link shares among all its frames."""

    __slots__ = ("callbacks", "frame")
    _ok = True

    def __init__(self, callbacks: list[Callable[[Any], None]], frame: Frame) -> None:
        self.callbacks: list[Callable[[Any], None]] | None = callbacks
        self.frame = frame


def call_later(env: simpy.Environment, delay: float, callback: Callable[[Any], None]) -> None:
    """Run ``callback(event)`` after ``delay`` (>= 0) simulated seconds: one SimPy event."""
    env.schedule(_Wakeup(callback), NORMAL, delay)  # type: ignore[arg-type]


class FifoServer:
    """A single FIFO server with an optional buffer (drop-tail).

    Timing: the head item is held for ``service(item)`` seconds (one
    SimPy event), then ``done(item)`` is called and the next item starts
    at once; an item offered to an idle server starts at the moment it is
    offered. Items offered while ``buffer`` items are present (the one in
    service included) are refused. Occupancy is tracked time-weighted
    (:attr:`occupancy`; kept inline here, the hottest path of the engine).

    The server is driven by events' callbacks rather than by a generator
    process: the same schedule with half the events (no wake-up event when an
    idle server gets work), which matters for the engine's speed
    (``stackcast bench timed``). A server has at most one service event
    pending, so it reuses one event object (rescheduled only after SimPy has
    processed it) with the key ``env.timeout`` would give it.
    """

    __slots__ = ("env", "queue", "buffer", "_busy", "name", "_t0", "_t", "_level", "_area",
                 "_peak", "_wake", "_callbacks", "_heap", "_eid")

    def __init__(self, env: simpy.Environment, name: Any, buffer: int | None) -> None:
        self.env = env
        self.name = name
        self.queue: deque[Any] = deque()
        self.buffer = buffer
        self._busy = False
        # time-weighted occupancy, as TimeWeighted(t0=env.now) would hold it
        self._t0 = self._t = env.now
        self._level: float = 0.0
        self._peak: float = 0.0
        self._area = 0.0
        # never mutated by SimPy (it swaps in None)
        self._callbacks: list[Callable[[Any], None]] = [self._finish]
        self._wake = _Wakeup(self._finish)  # the one service event, rescheduled by _serve
        # as Environment.schedule uses them; the queue also holds the bare events here
        # (_Wakeup, _Landing), which SimPy's annotation (Event) does not cover
        self._heap: list[tuple[SimTime, EventPriority, int, Any]] = env._queue
        self._eid = env._eid

    @property
    def occupancy(self) -> TimeWeighted:
        """The queue length (in service included) over time."""
        return TimeWeighted.restore(t0=self._t0, t=self._t, level=self._level,
                                    peak=self._peak, area=self._area)

    def offer(self, item: Any) -> bool:
        """Enqueue ``item`` now; False (and nothing queued) when the buffer is full."""
        q = self.queue
        if self.buffer is not None and len(q) >= self.buffer:
            return False
        q.append(item)
        now = self.env._now
        level = len(q)
        self._area += self._level * (now - self._t)
        self._t = now
        self._level = level
        if level > self._peak:
            self._peak = level
        if not self._busy:
            self._busy = True
            self._serve(now, self.service(item))
        return True

    def _serve(self, now: float, service_s: float) -> None:
        """Schedule the end of the head item's service (as ``env.timeout(service_s)``)."""
        wake = self._wake
        wake.callbacks = self._callbacks
        heappush(self._heap, (now + service_s, NORMAL, next(self._eid), wake))

    def service(self, item: Any) -> float:
        raise NotImplementedError

    def done(self, item: Any) -> None:
        raise NotImplementedError

    def _finish(self, _event: Any) -> None:
        q = self.queue
        item = q.popleft()
        now = self.env._now
        self._area += self._level * (now - self._t)
        self._t = now
        self._level = len(q)  # lower than before: the peak cannot change
        self.done(item)  # may offer more work to this server (it is still busy)
        if q:
            self._serve(self.env._now, self.service(q[0]))
        else:
            self._busy = False


class EgressPort(FifoServer):
    """An egress queue and its link: serialization at ``bps``, then propagation.

    Timing: a frame occupies the port for ``max(min_service_s, 8 x bytes / bps)``
    (``min_service_s`` is the NIC feed-in time at hosts and brokers, 0 at
    switches), then arrives ``delay_s`` later at ``arrive(in_port, frame)``
    of the far end. The transmission is recorded when serialization ends;
    a frame that already crossed ``ttl`` links is dropped there instead.
    """

    __slots__ = ("src", "dst", "dst_port", "bps", "delay_s", "min_service_s", "arrive",
                 "recorder", "ttl", "_land")

    def __init__(self, env: simpy.Environment, recorder: Any, src: str, port: int, dst: str,
                 dst_port: int, bps: float, delay_s: float, buffer: int | None,
                 arrive: Callable[[int, Frame], None], min_service_s: float = 0.0,
                 ttl: int | None = None) -> None:
        super().__init__(env, (src, port), buffer)
        self.ttl = ttl
        self.src, self.dst, self.dst_port = src, dst, dst_port
        self.bps, self.delay_s, self.min_service_s = bps, delay_s, min_service_s
        self.arrive = arrive
        self.recorder = recorder
        #: the callbacks of every _Landing of this link
        self._land: list[Callable[[Any], None]] = [self._landed]

    def send(self, frame: Frame) -> None:
        if not self.offer(frame):
            self.recorder.drop(self.env.now, "egress", self.src, self.name[1], frame[1])

    def service(self, item: Frame) -> float:
        ser = 8.0 * item[0].frame_bytes / self.bps
        return ser if ser > self.min_service_s else self.min_service_s

    def done(self, item: Frame) -> None:
        if self.ttl is not None and item[2] >= self.ttl:
            self.recorder.drop(self.env.now, "ttl", self.src, self.name[1], item[1])
            return
        if not self.recorder.tx(self.env.now, self.src, self.dst, self.name[1], item):
            return
        item = (item[0], item[1], item[2] + 1)
        if self.delay_s > 0:  # as call_later(env, delay_s, ...)
            heappush(self._heap, (self.env._now + self.delay_s, NORMAL, next(self._eid),
                                  _Landing(self._land, item)))
        else:
            self.arrive(self.dst_port, item)

    def _landed(self, event: _Landing) -> None:
        self.arrive(self.dst_port, event.frame)


class _Packet:
    """One arriving frame inside a switch: its plan once the first pass started."""

    __slots__ = ("frame", "in_port", "pipe", "plan", "steps", "plains", "service", "recirc_s")

    def __init__(self, frame: Frame, in_port: int, pipe: int) -> None:
        self.frame = frame
        self.in_port = in_port
        self.pipe = pipe
        self.plan: PassPlan | None = None
        self.steps: tuple[Step, ...] = ()  # plan.steps
        self.plains: tuple[int, ...] = ()  # plan.plains
        self.service: float = 0.0
        #: a pass's time on a recirculation port (RecircPort.service; -1 until asked)
        self.recirc_s: float = -1.0


class Pipeline(FifoServer):
    """One ingress pipeline: passes (jobs ``(packet, pass index)``) one at a time.

    Timing: a pass holds the pipeline ``pass_s`` plus its share of lookup
    time; the data-plane model runs when a frame's first pass starts.
    """

    __slots__ = ("switch", "_sw_name", "_recirculated", "_reenter", "_room", "_lane")

    def __init__(self, env: simpy.Environment, switch: SwitchNode, index: int,
                 buffer: int | None) -> None:
        super().__init__(env, (switch.name, index), buffer)
        self.switch = switch
        self._sw_name = switch.name
        self._recirculated: list[int] = switch.recorder.recirc_counter(switch.name)
        #: no recirculation ports nor hand-off delay: spawned passes re-enter this
        #: pipeline at once
        self._reenter = switch.timed.recirc_port_bps is None and switch.timed.pass_delay_s == 0
        #: queue length below which a re-entering pass is not dropped (reenter only)
        self._room: float = (-1 if not self._reenter else
                             float("inf") if buffer is None else buffer)
        #: the environment's lane (TimedEnvironment.lane; None on a plain SimPy one)
        self._lane: deque[Any] | None = getattr(env, "lane", None)

    def service(self, item: tuple[_Packet, int]) -> float:
        pkt = item[0]
        if pkt.plan is None:
            self.switch.start(pkt)
        return pkt.service

    def done(self, item: tuple[_Packet, int]) -> None:
        self.switch.pass_done(item[0], item[1])

    def _serve(self, now: float, service_s: float) -> None:
        self._schedule(now + service_s)

    def _schedule(self, at: float) -> None:
        """The end of the head pass at ``at``: one event keyed as ``env.timeout`` keys
        it, in the environment's lane (an entry ``(at, NORMAL, id, self)``) when that
        keeps the lane sorted (:mod:`sim.engines.timed.loop`), else in SimPy's heap."""
        lane = self._lane
        if lane is not None and (not lane or at >= lane[-1][0]):
            lane.append((at, NORMAL, next(self._eid), self))
        else:
            wake = self._wake
            wake.callbacks = self._callbacks
            heappush(self._heap, (at, NORMAL, next(self._eid), wake))

    def _finish(self, _event: Any) -> None:
        self._pass_done(self.env._now)

    def _pass_done(self, now: float) -> None:
        """The head pass completed (:meth:`FifoServer._finish` with :meth:`service`,
        :meth:`done` and :meth:`SwitchNode.pass_done` inlined: the same effects in the
        same order). :meth:`TimedEnvironment._loop
        <sim.engines.timed.loop.TimedEnvironment._loop>` runs the first branch inline."""
        q = self.queue
        pkt, j = q.popleft()
        plain = pkt.plains[j]
        if plain >= 0 and len(q) < self._room:
            # a plain recirculation re-enters this pipeline: the queue is as long as
            # before, so the time-weighted occupancy goes on unchanged (no update needed)
            self._recirculated[0] += 1  # Recorder.recirculated (j >= 1)
            q.append((pkt, plain))
            self._next(now)
        else:
            self._completed(now, pkt, j)

    def _completed(self, now: float, pkt: _Packet, j: int) -> None:
        """Pass ``j`` of ``pkt`` completed and is not a plain recirculation that fits
        (popped from the queue already)."""
        if j:  # Recorder.recirculated
            self._recirculated[0] += 1
        children, copies, _ = pkt.steps[j]
        self._branch(pkt, children, copies)
        if self.queue:
            self._next(now)
        else:
            self._busy = False

    def _next(self, now: float) -> None:
        """Start the pass at the head of the queue (the data plane runs on a frame's
        first pass) and schedule its end."""
        nxt = self.queue[0][0]
        if nxt.plan is None:
            self.switch.start(nxt)
        self._schedule(now + nxt.service)

    def _branch(self, pkt: _Packet, children: tuple[int, ...], copies: tuple[Emit, ...]
                ) -> None:
        """The rest of a pass's completion when it is not a plain recirculation that
        fits: its children (re-entering, dropped or handed to recirculation) and its
        copies."""
        q = self.queue
        now = self.env._now
        rec = self.switch.recorder
        if rec.live is not None:  # streaming: the pass's children and copies replace it
            rec.spawned(pkt.frame[1], len(children) + len(copies) - 1)
        if len(children) == 1 and self._reenter and len(q) < self._room:
            q.append((pkt, children[0]))  # the queue is as long as before (see _finish)
        else:
            self._area += self._level * (now - self._t)
            self._t = now
            if children and self._reenter:  # back into this pipeline (busy: nothing starts)
                buffer = self.buffer
                for c in children:
                    if buffer is not None and len(q) >= buffer:
                        self.switch.recorder.drop(now, "pipeline", self._sw_name, pkt.pipe,
                                                  pkt.frame[1])
                    else:
                        q.append((pkt, c))
                # the level after the pop and after each append, all at `now`:
                # only the last one holds, and it is the highest of them
                level = len(q)
                self._level = level
                if level > self._peak:
                    self._peak = level
            else:
                self._level = len(q)  # lower than before: the peak cannot change
                if children:
                    self.switch.recirculate(pkt, children)
        if copies:
            self.switch.send_copies(pkt, copies)


class RecircPort(FifoServer):
    """A dedicated recirculation port: serialization at ``bps``, then back to the pipeline.

    Timing: ``8 x bytes / bps`` per recirculated pass, where bytes is the
    size of the frame as it arrived at the switch (stacks only shrink, so
    this is an upper bound).

    A recirculating visit crosses the port once per pass: the service time is
    worked out once per arriving frame (``_Packet.recirc_s``, the same
    expression) and :meth:`_finish` runs :meth:`FifoServer._finish` with
    :meth:`done` and :meth:`SwitchNode.enqueue` inlined (the same effects in the
    same order; ``tests/sim/test_timed_recirc_ports.py`` holds the reference).
    """

    __slots__ = ("switch", "bps")

    def __init__(self, env: simpy.Environment, switch: SwitchNode, index: str, bps: float,
                 buffer: int | None) -> None:
        super().__init__(env, (switch.name, f"recirc{index}"), buffer)
        self.switch = switch
        self.bps = bps

    def service(self, item: tuple[_Packet, int]) -> float:
        pkt = item[0]
        s = pkt.recirc_s
        if s < 0.0:
            s = pkt.recirc_s = 8.0 * pkt.frame[0].frame_bytes / self.bps
        return s

    def done(self, item: tuple[_Packet, int]) -> None:
        self.switch.enqueue(item)

    def _finish(self, _event: Any) -> None:
        q = self.queue
        item = q.popleft()
        now = self.env._now
        self._area += self._level * (now - self._t)
        self._t = now
        self._level = len(q)  # lower than before: the peak cannot change
        pkt = item[0]  # done: SwitchNode.enqueue
        switch = self.switch
        if not switch.pipelines[pkt.pipe].offer(item):
            switch.recorder.drop(now, "pipeline", switch.name, pkt.pipe, pkt.frame[1])
        if q:
            nxt = q[0][0]
            s = nxt.recirc_s
            if s < 0.0:
                s = nxt.recirc_s = 8.0 * nxt.frame[0].frame_bytes / self.bps
            wake = self._wake
            wake.callbacks = self._callbacks
            heappush(self._heap, (now + s, NORMAL, next(self._eid), wake))
        else:
            self._busy = False


# -- the switch -----------------------------------------------------------------------


class SwitchNode:
    """A P4 switch: fixed ingress latency, pipelines, recirculation, PRE, egress ports.

    Timing assumptions (all from :class:`~sim.engines.timed.config.TimedConfig`):
    a frame arriving on port p waits ``switch_latency_s`` and then queues for
    pipeline (p - 1) mod ``pipelines``; every pass costs ``pass_s`` plus
    ``lookups / passes`` lookup latencies; a pass spawned by another pass
    (recirculation or clone) is ready when its parent completes and, with
    ``recirc_port_bps`` set, first crosses the least-loaded of the pipeline's
    ``recirc_ports`` recirculation ports; the i-th of m >= 2 copies leaving after one pass waits
    ``i x pre_delay_s`` in the replication engine; then it joins the
    egress queue of its port. With ``pass_delay_s`` > 0, spawned passes and
    copies start all that ``pass_delay_s`` after their pass completed.
    """

    def __init__(self, env: simpy.Environment, name: str, dataplane: DataPlane,
                 config: SwitchConfig, timed: TimedConfig, recorder: Any) -> None:
        self.env = env
        self.name = name
        self.dataplane = dataplane
        self.config = config
        self.timed = timed
        self.recorder = recorder
        self.ports: dict[int, EgressPort] = {}
        self.pipelines = [Pipeline(env, self, i, timed.pipeline_buffer_frames)
                          for i in range(timed.pipelines)]
        bps = timed.recirc_port_bps
        #: per pipeline, its recirculation ports (none: recirculation re-enters at once)
        self.recirc: list[list[RecircPort]] = [
            [RecircPort(env, self, f"{i}.{k}", bps, timed.recirc_buffer_frames)
             for k in range(timed.recirc_ports)] for i in range(timed.pipelines)
        ] if bps is not None else []
        self._cache: dict[tuple[int, Any, int], tuple[SwitchConfig, PipelineResult, PassPlan,
                                                      Any, Any, float]] = {}
        self._lookup_s: tuple[int, float] = (-1, 0.0)

    # -- configuration (the controller writes here) --------------------------------
    def set_config(self, config: SwitchConfig) -> None:
        self.config = config

    def _lookup_time(self) -> float:
        cfg = self.config
        if self._lookup_s[0] != id(cfg):
            t = self.timed
            entries = (cfg.entry_count(t.lookup_table) if t.lookup_table else cfg.entry_count())
            self._lookup_s = (id(cfg), t.lookup_time_s(entries))
        return self._lookup_s[1]

    # -- arrivals --------------------------------------------------------------------
    def receive(self, in_port: int, frame: Frame) -> None:
        pkt = _Packet(frame, in_port, (in_port - 1) % len(self.pipelines))
        latency = self.timed.switch_latency_s
        if latency > 0:
            def ready(_ev: simpy.Event) -> None:
                self.enqueue((pkt, 0))

            call_later(self.env, latency, ready)
        elif not self.pipelines[pkt.pipe].offer((pkt, 0)):  # enqueue, inline
            self.recorder.drop(self.env.now, "pipeline", self.name, pkt.pipe, frame[1])

    def enqueue(self, job: tuple[_Packet, int]) -> None:
        if not self.pipelines[job[0].pipe].offer(job):
            self.recorder.drop(self.env.now, "pipeline", self.name, job[0].pipe, job[0].frame[1])

    def start(self, pkt: _Packet) -> None:
        """First pass starts: run the data-plane model on the current tables."""
        packet, nid, _ = pkt.frame
        cfg = self.config
        key = (id(cfg), packet, pkt.in_port)
        hit = self._cache.get(key)
        if hit is None or hit[0] is not cfg:
            result = self.dataplane.process(self.name, cfg, packet, pkt.in_port)
            plan = pass_plan(result)
            passes = max(result.passes, 1)
            service = self.timed.pass_s + result.lookups / passes * self._lookup_time()
            if len(self._cache) >= _PLAN_CACHE_LIMIT:
                self._cache.clear()
            hit = self._cache[key] = (cfg, result, plan, plan.steps, plan.plains, service)
        _, result, pkt.plan, pkt.steps, pkt.plains, pkt.service = hit
        self.recorder.processed(self.name, result, nid)

    def pass_done(self, pkt: _Packet, j: int) -> None:
        """Pass ``j`` of ``pkt`` completed: spawn its child passes, send its copies.

        (:meth:`Pipeline._finish` runs the same steps inline.)
        """
        plan: PassPlan = pkt.plan  # type: ignore[assignment]  # set by start()
        if j:
            self.recorder.recirculated(self.name)
        children = plan.children[j]
        if self.recorder.live is not None:  # streaming (see Pipeline._branch)
            self.recorder.spawned(pkt.frame[1], len(children) + len(plan.emits[j]) - 1)
        if children:
            if self.recirc or self.timed.pass_delay_s > 0:
                self.recirculate(pkt, children)
            else:
                for c in children:
                    self.enqueue((pkt, c))
        copies = plan.emits[j]
        if copies:
            self.send_copies(pkt, copies)

    def recirculate(self, pkt: _Packet, children: tuple[int, ...]) -> None:
        """Child passes through the least-loaded recirculation port of the pipeline
        (after ``pass_delay_s``; without recirculation ports back into the pipeline)."""
        delay = self.timed.pass_delay_s
        if delay > 0:
            call_later(self.env, delay, lambda _ev: self._recirculate_now(pkt, children))
        else:
            self._recirculate_now(pkt, children)

    def _recirculate_now(self, pkt: _Packet, children: tuple[int, ...]) -> None:
        if not self.recirc:
            for c in children:
                self.enqueue((pkt, c))
            return
        ports = self.recirc[pkt.pipe]
        for c in children:
            port = ports[0]
            if len(ports) > 1:  # the least loaded, the first of equals (as min() picks)
                shortest = len(port.queue)
                for other in ports:
                    if len(other.queue) < shortest:
                        port, shortest = other, len(other.queue)
            if not port.offer((pkt, c)):
                self.recorder.drop(self.env.now, "recirc", self.name, pkt.pipe, pkt.frame[1])

    def send_copies(self, pkt: _Packet, copies: tuple[Emit, ...]) -> None:
        """Copies leaving after one pass: after ``pass_delay_s``, through the PRE
        (``pre_delay_s`` each) to egress."""
        delay = self.timed.pass_delay_s
        if delay > 0:
            call_later(self.env, delay, lambda _ev: self._send_copies_now(pkt, copies))
        else:
            self._send_copies_now(pkt, copies)

    def _send_copies_now(self, pkt: _Packet, copies: tuple[Emit, ...]) -> None:
        _, nid, hops = pkt.frame
        pre = self.timed.pre_delay_s
        if len(copies) >= 2 and pre > 0:
            for i, emit in enumerate(copies, start=1):
                call_later(self.env, i * pre, self._replica(emit, nid, hops))
        else:
            ports = self.ports
            for emit in copies:  # egress, inline
                port = ports.get(emit.port)
                if port is None:
                    self.egress(emit, nid, hops)  # raises
                elif not port.offer((emit.packet, nid, hops)):  # EgressPort.send
                    self.recorder.drop(self.env.now, "egress", self.name, emit.port, nid)

    def _replica(self, emit: Emit, nid: int, hops: int) -> Callable[[simpy.Event], None]:
        def leave(_ev: simpy.Event) -> None:
            self.egress(emit, nid, hops)
        return leave

    def egress(self, emit: Emit, nid: int, hops: int = 0) -> None:
        port = self.ports.get(emit.port)
        if port is None:
            raise EngineError(f"{self.name} sent a frame out of port {emit.port}, "
                              "which does not exist")
        port.send((emit.packet, nid, hops))
