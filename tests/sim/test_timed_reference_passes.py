"""The timed engine's inlined pass completion and run loop equal the pass-by-pass reference.

The reference run is the engine as it was before (issue 16): every pipeline pass
completed by :func:`reference_finish` (the pass completion of that engine, verbatim but
for the third item of ``PassPlan.steps``) in a plain :class:`simpy.Environment` (``run``
calling ``step`` per event). The inlined
:meth:`Pipeline._finish <sim.engines.timed.switch.Pipeline._finish>` (plain
recirculations, ``PassPlan.steps``) and :class:`~sim.engines.timed.loop.TimedEnvironment`
must give the same run: the same event trace (times and order), records, counts, drops,
queue metrics and event count, on random networks, loads, strategies and timing
settings, also when the run stops in the middle (``until``) and under churn. That
includes the environment's lane (pass completions in a sorted FIFO beside SimPy's heap,
plain recirculations completed in the run loop; :mod:`sim.engines.timed.loop`), with
stepping by hand (``step``, ``peek``) and pass completions that go to the heap instead
(service times that differ between frames).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from heapq import heappush
from typing import Any

import pytest
import simpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simpy.events import NORMAL
from support.random_topologies import random_topology
from support.timed_runs import summary

import sim.engines.timed.engine as engine_module
from experiments.cells.spec import parse_spec_dict
from experiments.cells.timed import simulate_cell
from sim.engines.timed.config import TimedConfig
from sim.engines.timed.engine import TimedEngine, TimedResult
from sim.engines.timed.loop import TimedEnvironment
from sim.engines.timed.switch import Pipeline
from strategies.base import Knowledge, load_builtin_strategies, make_strategy

load_builtin_strategies()

US = 1e-6
#: strategies with multi-pass (recirculating) visits, and some without
STRATEGIES = ("switch-port", "hops", "switch-bitmask", "source-routed", "vt-random",
              "vt-cycles", "alm-fork", "destinations", "unicast", "tree")


def reference_finish(self: Pipeline, _event: Any) -> None:
    """One pass completion of the engine before issue 16 (commit 98004b0)."""
    q = self.queue
    pkt, j = q.popleft()
    now = self.env._now
    children, copies, _ = pkt.steps[j]
    if j:  # Recorder.recirculated
        self._recirculated[0] += 1
    if len(children) == 1 and self._reenter and (self.buffer is None or len(q) < self.buffer):
        q.append((pkt, children[0]))
    else:
        self._area += self._level * (now - self._t)
        self._t = now
        if children and self._reenter:
            buffer = self.buffer
            for c in children:
                if buffer is not None and len(q) >= buffer:
                    self.switch.recorder.drop(now, "pipeline", self._sw_name, pkt.pipe,
                                              pkt.frame[1])
                else:
                    q.append((pkt, c))
            level = len(q)
            self._level = level
            if level > self._peak:
                self._peak = level
        else:
            self._level = len(q)
            if children:
                self.switch.recirculate(pkt, children)
    if copies:
        self.switch.send_copies(pkt, copies)
    if q:
        nxt = q[0][0]
        if nxt.plan is None:
            self.switch.start(nxt)
        wake = self._wake
        wake.callbacks = self._callbacks
        heappush(self._heap, (now + nxt.service, NORMAL, next(self._eid), wake))
    else:
        self._busy = False


@contextlib.contextmanager
def reference() -> Iterator[None]:
    """Engines built inside run pass by pass on a plain SimPy environment."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Pipeline, "_finish", reference_finish)
        mp.setattr(engine_module, "TimedEnvironment", simpy.Environment)
        yield


def snapshot(r: TimedResult) -> dict[str, object]:
    """What a stopped run reported so far (copies: the records go on growing)."""
    return {"t_end": r.t_end, "events": r.events, "trace": list(r.trace),
            "hops": r.recorder.hops, "recirc": r.recorder.recirc_executed}


@st.composite
def runs(draw: st.DrawFn) -> tuple[object, ...]:
    n = draw(st.integers(2, 9))
    topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                           hosts=draw(st.integers(1, 2)))
    name = draw(st.sampled_from(STRATEGIES))
    # times on a coarse grid, so that completions, arrivals and publications tie often
    grid = draw(st.sampled_from([US, 2.5 * US, 10 * US]))
    cfg = TimedConfig(
        pass_s=draw(st.sampled_from([0.0, US, 2 * US, 2.5 * US, 10 * US])),
        switch_latency_s=draw(st.sampled_from([0.0, 0.0, US, 3 * US])),
        pipelines=draw(st.integers(1, 2)),
        pipeline_buffer_frames=draw(st.sampled_from([None, None, 1, 2, 3, 8])),
        recirc_port_bps=draw(st.sampled_from([None, None, None, 1e10])),
        recirc_buffer_frames=draw(st.sampled_from([None, 2])),
        pre_delay_s=draw(st.sampled_from([0.0, 0.0, US])),
        pass_delay_s=draw(st.sampled_from([0.0, 0.0, 0.0, US])),
        buffer_frames=draw(st.sampled_from([None, 4])),
        feed_in_s=draw(st.sampled_from([0.0, US, 5 * US, 100 * US])),
        lookup_model=draw(st.sampled_from(["none", "none", "linear"])),
    )
    hosts = list(topo.hosts)
    notes = draw(st.lists(st.tuples(
        st.integers(0, 40).map(lambda k: k * grid), st.sampled_from(hosts),
        st.sets(st.sampled_from(hosts), max_size=len(hosts))), min_size=1, max_size=14))
    until = draw(st.one_of(st.none(), st.integers(1, 200).map(lambda k: k * grid)))
    return topo, name, cfg, notes, until


def run(case: tuple[object, ...]) -> tuple[dict[str, object], type]:
    topo, name, cfg, notes, until = case
    strategy = make_strategy(name)  # type: ignore[arg-type]
    knowledge = Knowledge()
    if strategy.scope == "receivers":  # "tree": one stored tree per receiver set published
        sets: dict[str, set[frozenset[str]]] = {}
        for _, pub, receivers in notes:  # type: ignore[attr-defined]
            sets.setdefault(pub, set()).add(frozenset(receivers) - {pub})
        knowledge = Knowledge(receiver_sets={p: tuple(sorted(r, key=sorted))
                                             for p, r in sets.items()})
    state = strategy.install(topo, knowledge)  # type: ignore[arg-type]
    engine = TimedEngine(topo, strategy, state, cfg, payload_bytes=20,  # type: ignore[arg-type]
                         trace=True)
    for t, pub, receivers in notes:  # type: ignore[attr-defined]
        engine.publish_at(t, pub, frozenset(receivers) - {pub})
    return summary(engine.run(until)), type(engine.env)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_inlined_passes_and_run_loop_give_the_reference_run(case):
    got, env_type = run(case)
    with reference():
        want, ref_type = run(case)
    assert (env_type, ref_type) == (TimedEnvironment, simpy.Environment)  # not vacuous
    assert got == want
    times = [event[0] for event in got["trace"]]  # type: ignore[union-attr]
    assert times == sorted(times)


def test_a_run_stopped_at_until_goes_on_like_the_reference():
    """``run(until)`` twice: the stop event SimPy re-queues counts as in the reference."""
    topo = random_topology(6, 3, seed=5)
    out = []
    for ref in (False, True):
        with reference() if ref else contextlib.nullcontext():
            strategy = make_strategy("switch-port")
            engine = TimedEngine(topo, strategy, strategy.install(topo, Knowledge()),
                                 TimedConfig(pass_s=US), trace=True)
            for k in range(12):
                engine.publish_at(k * US, topo.hosts[k % 6], frozenset(topo.hosts))
            stops = [snapshot(engine.run(7 * US)), snapshot(engine.run(40 * US))]
            out.append((*stops, summary(engine.run())))
    assert out[0] == out[1]
    assert len(out[0][0]["trace"]) < len(out[0][1]["trace"]) < len(out[0][2]["trace"])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 2**16), st.sampled_from(["switch-port", "hybrid", "tree"]),
       st.sampled_from([None, 4]))
def test_cells_under_churn_equal_the_reference(seed, strategy, buffer):
    """A timed cell with a controller (churn, table writes) and random publishers."""
    timed = {"rate_hz": 2000.0, "duration_s": 0.004, "publishers": 4, "changes_hz": 2000.0,
             "arrival": "poisson", "pass_s": 2 * US}
    if buffer is not None:
        timed["pipeline_buffer_frames"] = buffer
    cell = parse_spec_dict({
        "experiment": {"name": "t", "engine": "timed", "notifications": 6, "seeds": [seed]},
        "grid": {"topology": ["jellyfish:switches=12,degree=3,seed=1"],
                 "strategy": [strategy], "receivers": ["uniform:percent=40"]},
        "timed": timed,
    }).cells()[0]
    got = summary(simulate_cell(cell, trace=True)[1])
    with reference():
        want = summary(simulate_cell(cell, trace=True)[1])
    assert got == want


def test_a_run_stepped_by_hand_equals_the_reference():
    """``step`` and ``peek`` take the lane into account: stepping until nothing is left
    is the run."""
    topo = random_topology(7, 4, seed=11)
    out = []
    for ref in (False, True):
        with reference() if ref else contextlib.nullcontext():
            strategy = make_strategy("hops")
            engine = TimedEngine(topo, strategy, strategy.install(topo, Knowledge()),
                                 TimedConfig(pass_s=US, feed_in_s=US), trace=True)
            for k in range(10):
                pub = topo.hosts[k % 7]
                engine.publish_at(k * US / 2, pub, frozenset(topo.hosts) - {pub})
            env, peeks = engine.env, []
            while env.peek() != float("inf"):
                peeks.append(env.peek())
                env.step()
                assert env.now == peeks[-1]
            out.append((summary(engine.result()), peeks))
    assert out[0] == out[1]
    assert len(out[0][1]) > 100


def test_pass_completions_go_to_the_lane_and_to_the_heap_like_the_reference(monkeypatch):
    """Service times that differ between frames (lookup time per table entry) send
    some pass completions to SimPy's heap (they would come due before the lane's last);
    the run is still the reference run, and both ways were taken."""
    counts = {"lane": 0, "heap": 0, "heap from the loop": 0}
    schedule = Pipeline._schedule

    def counting(self, at):
        lane = self._lane
        if lane is not None:  # not the reference run
            fits = not lane or at >= lane[-1][0]
            counts["lane" if fits else "heap"] += 1
            if not fits and sys._getframe(1).f_code.co_name == "_loop":
                counts["heap from the loop"] += 1  # after a plain recirculation
        schedule(self, at)

    monkeypatch.setattr(Pipeline, "_schedule", counting)
    topo = random_topology(9, 6, seed=3, hosts=2)
    cfg = TimedConfig(pass_s=US, lookup_model="linear", pipelines=1, feed_in_s=US)
    notes = [(k * US, topo.hosts[(3 * k) % len(topo.hosts)], set(topo.hosts))
             for k in range(14)]
    got, env_type = run((topo, "hops", cfg, notes, None))
    with reference():
        want, _ = run((topo, "hops", cfg, notes, None))
    assert env_type is TimedEnvironment
    assert got == want
    assert min(counts.values()) > 0, counts
