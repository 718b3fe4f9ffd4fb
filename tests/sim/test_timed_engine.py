"""Timed engine (issue 5): zero-load agreement with the static engine, exact traces.

The zero-load property runs every registered strategy; exact traces check
the timing model element by element (feed-in, passes, serialization,
propagation).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import random_topology, scenarios

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.pipeline import PipelineResult
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.engines.timed.config import TimedConfig
from sim.engines.timed.engine import TimedEngine, run_notifications
from sim.engines.timed.switch import EngineError, pass_plan
from sim.workloads.receivers import receiver_model
from strategies.base import STRATEGIES, Knowledge, load_builtin_strategies, make_strategy
from topologies.model import LinkDefaults, build_topology
from topologies.registry import SpecError
from topologies.specs import load_topology

load_builtin_strategies()

#: Strategies the zero-load property cannot run at all, with the reason (none today:
#: those that need the datacenter fabric or the workload's publisher/subscriber
#: relations run on FABRIC with a frequency population, content filters on
#: events of a content population).
NEEDS_SPECIAL_KNOWLEDGE: dict[str, str] = {}
TRACED_FAMILIES = ("l2", "neighbor_labels", "virtual_tree", "source_routing", "alm", "bier")
FABRIC = "fabric:pods=2,racks=2,hosts=2,planes=2,spines=2"
CLOS = "elmo:pods=2,leaves=3,hosts=2"
CONTENT = "content:subs=20,dims=2"


def knowledge(pub, recv, population=None):
    """Knowledge of one receiver set, plus the population where Knowledge takes one."""
    extra = {"population": population, "seed": 1} if population is not None and \
        "population" in {f.name for f in dataclasses.fields(Knowledge)} else {}
    return Knowledge(receiver_sets={pub: (recv,)}, **extra)


def zero_load_check(topo, name, pub, recv, population=None, event=None) -> bool:
    """Compare both engines on one notification; False if the strategy refuses the case
    (it needs another topology or knowledge: the static engine cannot run it either)."""
    strategy = make_strategy(name)
    try:
        state = strategy.install(topo, knowledge(pub, recv, population))
        note = Notification(0, pub, event=event)
        d = run_notification(topo, strategy, state, note, recv, payload_for(note, 37))
    except SpecError:
        return False
    r = run_notifications(topo, strategy, state, [(0.0, pub, recv, event)], payload_bytes=37)
    note = r.notes[0]
    assert note.delivered == d.delivered, name
    assert r.recorder.links == d.links, name
    assert (note.frames, note.bytes) == (d.frames, d.bytes), name
    for attr in ("passes", "recirculations", "lookups", "circulations_simplified"):
        assert r.total(attr) == d.total(attr), (name, attr)
        assert getattr(note, attr) == d.total(attr), (name, attr)
    assert {s: c.passes for s, c in r.recorder.switches.items()} == \
        {s: c.passes for s, c in d.switches.items()}, name
    assert r.recorder.dataplane_drops == d.drops, name
    assert not r.recorder.drops, name
    assert (note.false_positives, note.false_negatives, note.duplicates) == \
        (d.false_positives, d.false_negatives, d.duplicates), name
    return True


def runnable():
    return [n for n in STRATEGIES.names() if n not in NEEDS_SPECIAL_KNOWLEDGE]


@settings(max_examples=25)
@given(scenarios(max_switches=10))
def test_zero_load_counts_equal_the_static_engine_for_every_strategy(case):
    """One notification in flight: deliveries, frames, bytes and passes are the static ones."""
    topo, pub, recv = case
    for name in runnable():
        zero_load_check(topo, name, pub, recv)


@settings(max_examples=8)
@given(st.integers(0, 2**16))
def test_zero_load_on_the_fabric_with_workload_knowledge(seed):
    """The same on the ch. 5 fabric with a frequency population (virtual-tree strategies)."""
    topo = load_topology(FABRIC)
    pop = receiver_model("frequency:subscribers=40").population(topo, child_rng(seed, "pop"))
    rng = child_rng(seed, "note")
    pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
    recv = pop.receivers(pub, rng)
    for name in runnable():
        zero_load_check(topo, name, pub, recv, pop)


def content_case(topo, seed):
    """(publisher, receivers, event, view) of one event of a content workload."""
    pop = receiver_model(CONTENT).population(topo, child_rng(seed, "pop"))
    view = pop.at(0)
    rng = child_rng(seed, "note")
    pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
    event, recv = view.draw(pub, 0, rng)
    return pub, recv, event, view


@settings(max_examples=8)
@given(st.integers(0, 2**16))
def test_zero_load_with_content_events(seed):
    """The same for content-filtering strategies: events matched against subscriptions."""
    topo = random_topology(10, 4, seed=seed % 97)
    pub, recv, event, view = content_case(topo, seed)
    for name in runnable():
        zero_load_check(topo, name, pub, recv, view, event)


def test_every_strategy_is_covered_by_the_zero_load_property():
    """No registered strategy is silently skipped (a new one must run somewhere)."""
    fabric = load_topology(FABRIC)
    pop = receiver_model("frequency:subscribers=40").population(fabric, child_rng(1, "pop"))
    recv = pop.receivers(pop.publishers[0], child_rng(1, "note"))
    topo = random_topology(8, 3, seed=2)
    content = content_case(topo, 1)
    clos = load_topology(CLOS)  # strategies that need a three-tier Clos (elmo)
    missing = [n for n in runnable()
               if not zero_load_check(topo, n, topo.hosts[0], frozenset(topo.hosts[2:6]))
               and not zero_load_check(fabric, n, pop.publishers[0], recv, pop)
               and not zero_load_check(topo, n, content[0], content[1], content[3],
                                       content[2])
               and not zero_load_check(clos, n, clos.hosts[0], frozenset(clos.hosts[3:9]))]
    assert not missing, f"strategies no zero-load case can run: {missing}"


class Spy:
    """Wraps a data plane and keeps every result."""

    def __init__(self, inner):
        self.inner, self.name, self.results = inner, inner.name, []

    def process(self, switch, config, packet, in_port):
        result = self.inner.process(switch, config, packet, in_port)
        self.results.append(result)
        return result


def _dag_depth(result: PipelineResult, j: int) -> int:
    depth = 1
    while result.pass_parents[j] >= 0:
        j = result.pass_parents[j]
        depth += 1
    return depth


@settings(max_examples=20)
@given(scenarios(max_switches=10))
def test_traced_families_give_consistent_pass_traces(case):
    """Every emitted copy's chain in the pass DAG is exactly its ``depth`` passes."""
    topo, pub, recv = case
    for name in STRATEGIES.names():
        strategy = make_strategy(name)
        if strategy.model().name not in TRACED_FAMILIES:
            continue
        spy = Spy(strategy.model())
        strategy.model = lambda spy=spy: spy  # type: ignore[method-assign]
        try:
            state = strategy.install(topo, Knowledge.for_notification(pub, recv))
        except SpecError:  # needs the fabric or workload knowledge
            continue
        note = Notification(0, pub)
        run_notification(topo, strategy, state, note, recv, payload_for(note, 20))
        for result in spy.results:
            assert len(result.pass_parents) == result.passes, name
            pass_plan(result)  # raises on an inconsistent trace
            for e in result.emitted:
                assert _dag_depth(result, e.after_pass) == e.depth, name


def test_untraced_result_falls_back_to_one_chain():
    from sim.dataplanes.pipeline import Emit

    result = PipelineResult(passes=4, recirculations=3, lookups=4,
                            emitted=(Emit(1, None, depth=2), Emit(2, None, depth=4)))
    plan = pass_plan(result)
    assert not plan.traced
    assert plan.children == ((1,), (2,), (3,), ())
    assert [len(e) for e in plan.emits] == [0, 1, 0, 1]


def test_inconsistent_trace_is_an_error():
    result = PipelineResult(passes=2, recirculations=1, lookups=2, emitted=(),
                            pass_parents=(-1, 1))
    with pytest.raises(EngineError, match="inconsistent pass trace"):
        pass_plan(result)


# -- exact traces ------------------------------------------------------------------------


def test_unicast_to_204_receivers_leaves_the_publisher_after_20_4_ms():
    """Seed 000 §3.5.4: 204 copies x 0.1 ms feed-in = 20.4 ms at the publisher."""
    topo = random_topology(255, 300, seed=7)
    pub, recv = topo.hosts[0], frozenset(topo.hosts[1:205])
    strategy = make_strategy("unicast")
    state = strategy.install(topo, Knowledge())
    r = run_notifications(topo, strategy, state, [(0.0, pub, recv)], trace=True)
    sent = [ev[0] for ev in r.trace if ev[1] == "tx" and ev[2] == pub]
    assert len(sent) == 204
    assert sent == pytest.approx([(i + 1) * 1e-4 for i in range(204)], abs=1e-12)
    assert sent[-1] == pytest.approx(20.4e-3)
    assert r.notes[0].latency_last_s > 20.4e-3
    assert r.notes[0].delivered == {h: 1 for h in recv}


def line(n: int = 2, hosts: int = 1, **link) -> object:
    return build_topology(f"line{n}", [(i, i + 1) for i in range(1, n)], range(1, n + 1), hosts,
                          LinkDefaults(**link))


def test_exact_trace_of_one_unicast_frame_on_a_two_switch_line():
    topo = line(2, delay_s=1e-6)  # 1 Gbit/s: a 64 B frame takes 0.512 us
    strategy = make_strategy("unicast")
    state = strategy.install(topo, Knowledge())
    r = run_notifications(topo, strategy, state, [(0.0, "h1", frozenset({"h2"}))], trace=True)
    ser, prop, feed, pass_s = 512e-9, 1e-6, 1e-4, 1e-5
    t1 = feed
    t2 = t1 + prop + pass_s + ser
    t3 = t2 + prop + pass_s + ser
    expected = [(0.0, "publish", 0, "h1", 1),
                (t1, "tx", "h1", 1, "s1", 0, 64),
                (t2, "tx", "s1", 2, "s2", 0, 64),
                (t3, "tx", "s2", 1, "h2", 0, 64),
                (t3 + prop, "deliver", "h2", 0)]
    assert [ev[1:] for ev in r.trace] == [ev[1:] for ev in expected]
    assert [ev[0] for ev in r.trace] == pytest.approx([ev[0] for ev in expected], abs=1e-15)


def star(hosts: int):
    return build_topology("star", [], [1], hosts, LinkDefaults(bandwidth_bps=1e15))


@pytest.mark.parametrize("name", ["tree", "switch-bitmask"])  # traced, and the chain fallback
def test_a_packet_needing_k_passes_leaves_k_pass_times_later(name):
    """Bitmask forwarding to 3 ports: copy k leaves after pass k (k = 1, 2, 3)."""
    topo = star(4)
    recv = frozenset({"h2", "h3", "h4"})
    strategy = make_strategy(name)
    state = strategy.install(topo, Knowledge.for_notification("h1", recv))
    cfg = TimedConfig(pass_s=1e-5, feed_in_s=1e-4)
    r = run_notifications(topo, strategy, state, [(0.0, "h1", recv)], cfg, trace=True)
    out = [ev[0] for ev in r.trace if ev[1] == "tx" and ev[2] == "s1"]
    assert out == pytest.approx([1e-4 + k * 1e-5 for k in (1, 2, 3)], abs=1e-12)
    assert r.total("passes") == 3


def test_switch_latency_and_lookup_model_add_to_each_pass():
    topo = star(2)
    strategy = make_strategy("unicast")
    state = strategy.install(topo, Knowledge())
    entries = state.config("s1").entry_count()
    cfg = TimedConfig(pass_s=1e-5, switch_latency_s=9e-5, lookup_model="linear")
    r = run_notifications(topo, strategy, state, [(0.0, "h1", frozenset({"h2"}))], cfg,
                          trace=True)
    (t_out,) = [ev[0] for ev in r.trace if ev[1] == "tx" and ev[2] == "s1"]
    lookup = 6.4e-6 + 1.12e-6 * (entries - 1)
    assert t_out == pytest.approx(1e-4 + 9e-5 + 1e-5 + lookup, abs=1e-12)


def test_same_inputs_give_identical_traces():
    topo = random_topology(12, 6, seed=5)
    strategy = make_strategy("hops")
    state = strategy.install(topo, Knowledge())
    notes = [(i * 2e-5, topo.hosts[i % 3], frozenset(topo.hosts[4:10])) for i in range(12)]

    def run():
        return run_notifications(topo, strategy, state, notes, trace=True).trace

    first = run()
    assert len(first) > 100
    assert first == run()


def test_engine_refuses_unknown_publisher():
    topo = star(2)
    strategy = make_strategy("unicast")
    engine = TimedEngine(topo, strategy, strategy.install(topo, Knowledge()))
    with pytest.raises(EngineError, match="unknown publisher"):
        engine.publish("h9", frozenset())


def test_runs_collect_cycles_rarely_and_restore_the_thresholds():
    import gc

    from sim.engines.timed.engine import RUN_GC_THRESHOLDS, rare_gc

    topo = load_topology("fattree:k=4")
    strat = make_strategy("broadcast")
    engine = TimedEngine(topo, strat, strat.install(topo, Knowledge()))
    during = []
    engine.env.timeout(1e-3).callbacks.append(lambda _ev: during.append(gc.get_threshold()))
    before = gc.get_threshold()
    engine.run()
    assert during == [RUN_GC_THRESHOLDS] and gc.get_threshold() == before
    with pytest.raises(RuntimeError), rare_gc():
        raise RuntimeError("a failing run")
    assert gc.get_threshold() == before
