"""SimPy elements of the timed engine: FIFO servers, egress ports, pipelines, switches.

Pure core, timed shell: a switch asks its data-plane model *what* happens to
an arriving frame (:meth:`sim.dataplane.DataPlane.process`, a
:class:`~sim.dataplane.PipelineResult`) and only decides *when*: every
pipeline pass, recirculation, replication and transmission is an
``env.timeout``.

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
from dataclasses import dataclass
from typing import Any

import simpy

from sim.control import SwitchConfig
from sim.dataplane import DataPlane, Emit, PipelineResult
from sim.timed_config import TimedConfig
from sim.timed_metrics import TimeWeighted

#: A frame in flight: the packet, the id of the notification it belongs to, and
#: the links it and the frames it descends from crossed since the publisher
#: (brokers' and hosts' answers inherit the count; for ``ttl_hops``).
Frame = tuple[Any, int, int]
_PLAN_CACHE_LIMIT = 4096


class EngineError(RuntimeError):
    """The network or a data-plane model misbehaved (loop, bad port, bad pass trace)."""


# -- pass plans (pure) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PassPlan:
    """The pass DAG of one arriving frame at one switch.

    ``children[j]``: passes spawned by pass j (they re-enter the pipeline
    when j completes); ``emits[j]``: copies leaving after pass j; ``traced``:
    whether the data plane gave the DAG (else the sequential-chain fallback).
    """

    children: tuple[tuple[int, ...], ...]
    emits: tuple[tuple[Emit, ...], ...]
    traced: bool


def pass_plan(result: PipelineResult) -> PassPlan:
    """The pass DAG of ``result`` (or the documented chain fallback).

    Raises
    ------
    EngineError
        If a recorded trace is inconsistent (wrong length, a parent that is
        not an earlier pass, a copy after a pass that does not exist).
    """
    n = max(result.passes, 1)
    parents = result.pass_parents
    traced = bool(parents)
    if traced:
        if len(parents) != result.passes or parents[0] != -1 or any(
                not 0 <= p < j for j, p in enumerate(parents) if j):
            raise EngineError(f"inconsistent pass trace {parents} for {result.passes} passes")
    else:
        parents = (-1, *range(n - 1))
    children: list[list[int]] = [[] for _ in range(n)]
    for j, p in enumerate(parents):
        if p >= 0:
            children[p].append(j)
    emits: list[list[Emit]] = [[] for _ in range(n)]
    for e in result.emitted:
        after = e.after_pass if traced else min(max(e.depth, 1), n) - 1
        if not 0 <= after < n:
            raise EngineError(f"copy to port {e.port} leaves after pass {after} of {n}")
        emits[after].append(e)
    return PassPlan(tuple(map(tuple, children)), tuple(map(tuple, emits)), traced)


# -- FIFO servers --------------------------------------------------------------------


class FifoServer:
    """A single FIFO server with an optional buffer (drop-tail).

    Timing: the head item is held for ``service(item)`` seconds (one
    ``env.timeout``), then ``done(item)`` is called and the next item starts
    at once; an item offered to an idle server starts at the moment it is
    offered. Items offered while ``buffer`` items are present (the one in
    service included) are refused. Occupancy is tracked time-weighted.

    The server is driven by the timeouts' callbacks rather than by a
    generator process: the same schedule with half the events (no wake-up
    event when an idle server gets work), which matters for the engine's
    speed (``stackcast bench timed``).
    """

    __slots__ = ("env", "queue", "buffer", "occupancy", "_busy", "name")

    def __init__(self, env: simpy.Environment, name: Any, buffer: int | None) -> None:
        self.env = env
        self.name = name
        self.queue: deque[Any] = deque()
        self.buffer = buffer
        self.occupancy = TimeWeighted(t0=env.now)
        self._busy = False

    def offer(self, item: Any) -> bool:
        """Enqueue ``item`` now; False (and nothing queued) when the buffer is full."""
        q = self.queue
        if self.buffer is not None and len(q) >= self.buffer:
            return False
        q.append(item)
        self.occupancy.set(self.env.now, len(q))
        if not self._busy:
            self._start()
        return True

    def service(self, item: Any) -> float:
        raise NotImplementedError

    def done(self, item: Any) -> None:
        raise NotImplementedError

    def _start(self) -> None:
        self._busy = True
        self.env.timeout(self.service(self.queue[0])).callbacks.append(self._finish)

    def _finish(self, _event: simpy.Event) -> None:
        q = self.queue
        item = q.popleft()
        self.occupancy.set(self.env.now, len(q))
        self.done(item)  # may offer more work to this server (it is still busy)
        if q:
            self._start()
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
                 "recorder", "ttl")

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
        if self.delay_s > 0:
            self.env.timeout(self.delay_s).callbacks.append(self._arrival(item))
        else:
            self.arrive(self.dst_port, item)

    def _arrival(self, frame: Frame) -> Callable[[simpy.Event], None]:
        def arrive(_ev: simpy.Event) -> None:
            self.arrive(self.dst_port, frame)
        return arrive


class _Packet:
    """One arriving frame inside a switch: its plan once the first pass started."""

    __slots__ = ("frame", "in_port", "pipe", "plan", "service")

    def __init__(self, frame: Frame, in_port: int, pipe: int) -> None:
        self.frame = frame
        self.in_port = in_port
        self.pipe = pipe
        self.plan: PassPlan | None = None
        self.service: float = 0.0


class Pipeline(FifoServer):
    """One ingress pipeline: passes (jobs ``(packet, pass index)``) one at a time.

    Timing: a pass holds the pipeline ``pass_s`` plus its share of lookup
    time; the data-plane model runs when a frame's first pass starts.
    """

    __slots__ = ("switch",)

    def __init__(self, env: simpy.Environment, switch: SwitchNode, index: int,
                 buffer: int | None) -> None:
        super().__init__(env, (switch.name, index), buffer)
        self.switch = switch

    def service(self, item: tuple[_Packet, int]) -> float:
        pkt = item[0]
        if pkt.plan is None:
            self.switch.start(pkt)
        return pkt.service

    def done(self, item: tuple[_Packet, int]) -> None:
        self.switch.pass_done(item[0], item[1])


class RecircPort(FifoServer):
    """A dedicated recirculation port: serialization at ``bps``, then back to the pipeline.

    Timing: ``8 x bytes / bps`` per recirculated pass, where bytes is the
    size of the frame as it arrived at the switch (stacks only shrink, so
    this is an upper bound).
    """

    __slots__ = ("switch", "bps")

    def __init__(self, env: simpy.Environment, switch: SwitchNode, index: str, bps: float,
                 buffer: int | None) -> None:
        super().__init__(env, (switch.name, f"recirc{index}"), buffer)
        self.switch = switch
        self.bps = bps

    def service(self, item: tuple[_Packet, int]) -> float:
        return 8.0 * item[0].frame[0].frame_bytes / self.bps

    def done(self, item: tuple[_Packet, int]) -> None:
        self.switch.enqueue(item)


# -- the switch -----------------------------------------------------------------------


class SwitchNode:
    """A P4 switch: fixed ingress latency, pipelines, recirculation, PRE, egress ports.

    Timing assumptions (all from :class:`~sim.timed_config.TimedConfig`):
    a frame arriving on port p waits ``switch_latency_s`` and then queues for
    pipeline (p - 1) mod ``pipelines``; every pass costs ``pass_s`` plus
    ``lookups / passes`` lookup latencies; a pass spawned by another pass
    (recirculation or clone) is ready when its parent completes and, with
    ``recirc_port_bps`` set, first crosses the least-loaded of the pipeline's
    ``recirc_ports`` recirculation ports; the i-th of m >= 2 copies leaving after one pass waits
    ``i x pre_delay_s`` in the replication engine; then it joins the
    egress queue of its port.
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
                                                      float]] = {}
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

            self.env.timeout(latency).callbacks.append(ready)
        else:
            self.enqueue((pkt, 0))

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
            hit = self._cache[key] = (cfg, result, plan, service)
        _, result, pkt.plan, pkt.service = hit
        self.recorder.processed(self.name, result, nid)

    def pass_done(self, pkt: _Packet, j: int) -> None:
        plan: PassPlan = pkt.plan  # type: ignore[assignment]  # set by start()
        _, nid, hops = pkt.frame
        rec = self.recorder
        if j:
            rec.recirculated(self.name)
        for c in plan.children[j]:
            if self.recirc:
                ports = self.recirc[pkt.pipe]
                port = min(ports, key=lambda p: len(p.queue)) if len(ports) > 1 else ports[0]
                if not port.offer((pkt, c)):
                    rec.drop(self.env.now, "recirc", self.name, pkt.pipe, nid)
            else:
                self.enqueue((pkt, c))
        copies = plan.emits[j]
        pre = self.timed.pre_delay_s
        if len(copies) >= 2 and pre > 0:
            for i, emit in enumerate(copies, start=1):
                self.env.timeout(i * pre).callbacks.append(self._replica(emit, nid, hops))
        else:
            for emit in copies:
                self.egress(emit, nid, hops)

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
