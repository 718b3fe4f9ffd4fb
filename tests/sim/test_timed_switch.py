"""Timed switch elements (issue 5): egress queues, drop-tail, recirculation, PRE, metrics."""

from __future__ import annotations

import dataclasses
import math

import pytest

from sim.engines.timed.config import (
    Capacity,
    TimedConfig,
    Workload,
    settings_canonical,
    timed_settings,
)
from sim.engines.timed.engine import TimedEngine, run_notifications
from sim.engines.timed.metrics import TimeWeighted, percentile, summary
from strategies.base import Knowledge, make_strategy
from topologies.model import LinkDefaults, Topology, build_topology
from topologies.registry import SpecError

US = 1e-6


def line_with_slow_middle(middle_bps: float) -> Topology:
    """h1 - s1 =slow= s2 - h2, host links at 1 Gbit/s."""
    base = build_topology("slowline", [(1, 2)], [1, 2], 1, LinkDefaults(bandwidth_bps=1e9))
    links = tuple(dataclasses.replace(lk, bandwidth_bps=middle_bps)
                  if {lk.a, lk.b} == {"s1", "s2"} else lk for lk in base.links)
    return Topology(name="slowline", switches=base.switches, hosts=base.hosts, links=links)


def test_bandwidth_serialization_and_drop_tail_on_a_two_switch_line():
    """Ten 64 B frames 10 us apart into an 8 Mbit/s link (64 us each), buffer 3:
    frames 1-3 queue, 4-7 are dropped, 8 fits after frame 1 left, 9-10 are dropped."""
    topo = line_with_slow_middle(8e6)
    strategy = make_strategy("unicast")
    state = strategy.install(topo, Knowledge())
    cfg = TimedConfig(pass_s=0.0, feed_in_s=10 * US, buffer_frames=3)
    engine = TimedEngine(topo, strategy, state, cfg, payload_bytes=50, trace=True)
    for _ in range(10):
        engine.publish("h1", frozenset({"h2"}))
    r = engine.run()
    out = [ev[0] for ev in r.trace if ev[1] == "tx" and ev[2] == "s1"]
    assert out == pytest.approx([74 * US, 138 * US, 202 * US, 266 * US], abs=1e-12)
    assert sorted(n.nid for n in r.notes.values() if n.delivered) == [0, 1, 2, 7]
    assert r.recorder.drops == {("egress", "s1", topo.port_to("s1", "s2")): 6}
    drops = [ev[5] for ev in r.trace if ev[1] == "drop"]
    assert drops == [3, 4, 5, 6, 8, 9]
    assert r.queues["egress"]["peak"] == 3
    # all published at t = 0: each queued frame waits one more serialization
    lat = [r.notes[i].latency_last_s for i in (0, 1, 2)]
    assert lat[1] - lat[0] == pytest.approx(64 * US, abs=1e-12)


def test_queue_occupancy_is_time_weighted():
    tw = TimeWeighted(t0=0.0)
    tw.set(1.0, 2)
    tw.set(3.0, 1)
    tw.set(4.0, 0)
    assert tw.mean(5.0) == pytest.approx((2 * 2 + 1 * 1) / 5)
    assert tw.peak == 2
    with pytest.raises(ValueError):
        tw.set(3.5, 1)


def test_percentiles():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert math.isnan(percentile([], 99))
    s = summary([1.0, 3.0])
    assert s["count"] == 2 and s["mean"] == 2 and s["max"] == 3 and s["p50"] == 2
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def star(hosts: int) -> Topology:
    return build_topology("star", [], [1], hosts, LinkDefaults(bandwidth_bps=1e15))


def tree_state(topo, pub, recv):
    strategy = make_strategy("tree")
    return strategy, strategy.install(topo, Knowledge.for_notification(pub, recv))


def test_recirculation_port_adds_its_serialization_to_every_recirculation():
    """3 copies by bitmask (3 passes); each recirculation crosses a port of 4.096 Mbit/s,
    where the 22 B frame (14 + Size + one label + 4 B payload) takes 43 us."""
    topo = star(4)
    recv = frozenset({"h2", "h3", "h4"})
    strategy, state = tree_state(topo, "h1", recv)
    frame = 14 + 2 + 2 + 4
    bps = 4.096e6
    rec_s = 8 * frame / bps
    cfg = TimedConfig(pass_s=10 * US, feed_in_s=100 * US, recirc_port_bps=bps)
    r = run_notifications(topo, strategy, state, [(0.0, "h1", recv)], cfg, payload_bytes=4,
                          trace=True)
    out = [ev[0] for ev in r.trace if ev[1] == "tx" and ev[2] == "s1"]
    t0 = 100 * US
    assert out == pytest.approx([t0 + k * 10 * US + (k - 1) * rec_s for k in (1, 2, 3)],
                                abs=1e-12)
    assert r.recorder.recirc_executed == {"s1": 2}


def test_recirculation_port_buffer_drops_recirculations():
    """Two notifications at once share the recirculation port (buffer 1): the second one's
    first recirculation finds it busy and is dropped with all the copies it would make."""
    topo = star(4)
    recv = frozenset({"h2", "h3", "h4"})
    strategy, state = tree_state(topo, "h1", recv)
    cfg = TimedConfig(pass_s=10 * US, feed_in_s=1 * US, recirc_port_bps=1e6,
                      recirc_buffer_frames=1)
    engine = TimedEngine(topo, strategy, state, cfg, payload_bytes=4)
    engine.publish("h1", recv)
    engine.publish("h1", recv)
    r = engine.run()
    assert r.recorder.drops == {("recirc", "s1", 0): 1}
    assert len(r.notes[0].delivered) == 3
    assert len(r.notes[1].delivered) == 1  # only the copy of its first pass left


def test_recirculations_compete_with_arriving_packets_fifo():
    """Packet A needs 3 passes; B (one pass) arrives during A's first pass and is served
    before A's recirculation, which only becomes ready when that pass completes."""
    topo = star(4)
    recv_a = frozenset({"h2", "h3", "h4"})
    strategy = make_strategy("tree")
    state = strategy.install(topo, Knowledge(receiver_sets={"h1": (recv_a,),
                                                            "h2": (frozenset({"h3"}),)}))
    cfg = TimedConfig(pass_s=10 * US, feed_in_s=100 * US)
    engine = TimedEngine(topo, strategy, state, cfg, payload_bytes=4, trace=True)
    engine.publish("h1", recv_a)                         # at s1 at 100 us
    engine.publish_at(5 * US, "h2", frozenset({"h3"}))   # at s1 at 105 us
    r = engine.run()
    out = [(round(ev[0] / US, 3), ev[5]) for ev in r.trace if ev[1] == "tx" and ev[2] == "s1"]
    assert out == [(110.0, 0), (120.0, 1), (130.0, 0), (140.0, 0)]


def test_pass_delay_hands_off_without_holding_the_pipeline():
    """Packet A needs 3 passes (one copy each), B one pass, arriving during A's first.
    Every pass's copies and recirculation move on 5 us after it (pass_delay_s), and the
    pipeline serves B in the meantime: A 100-110, B 110-120, A 120-130, A 135-145."""
    topo = star(4)
    recv_a = frozenset({"h2", "h3", "h4"})
    strategy = make_strategy("tree")
    state = strategy.install(topo, Knowledge(receiver_sets={"h1": (recv_a,),
                                                            "h2": (frozenset({"h3"}),)}))
    cfg = TimedConfig(pass_s=10 * US, feed_in_s=100 * US, pass_delay_s=5 * US)
    engine = TimedEngine(topo, strategy, state, cfg, payload_bytes=4, trace=True)
    engine.publish("h1", recv_a)
    engine.publish_at(5 * US, "h2", frozenset({"h3"}))
    r = engine.run()
    out = [(round(ev[0] / US, 3), ev[5]) for ev in r.trace if ev[1] == "tx" and ev[2] == "s1"]
    assert out == [(115.0, 0), (125.0, 1), (135.0, 0), (150.0, 0)]
    assert r.recorder.recirc_executed == {"s1": 2}


def test_pass_delay_is_in_the_canonical_settings_only_when_set():
    assert "pass_delay_s" not in settings_canonical(timed_settings({}, notifications=1))
    given = timed_settings({"pass_delay_s": 1e-4}, notifications=1)
    assert settings_canonical(given)["pass_delay_s"] == 1e-4
    with pytest.raises(SpecError, match="pass_delay_s"):
        timed_settings({"pass_delay_s": -1.0}, notifications=1)


def test_pre_delay_spaces_the_replicas_of_one_pass():
    topo = star(4)
    recv = frozenset({"h2", "h3", "h4"})
    strategy = make_strategy("multicast")
    state = strategy.install(topo, Knowledge.for_notification("h1", recv))
    cfg = TimedConfig(pass_s=10 * US, feed_in_s=100 * US, pre_delay_s=2 * US)
    r = run_notifications(topo, strategy, state, [(0.0, "h1", recv)], cfg, trace=True)
    out = [ev[0] for ev in r.trace if ev[1] == "tx" and ev[2] == "s1"]
    assert out == pytest.approx([(110 + 2 * k) * US for k in (1, 2, 3)], abs=1e-12)


def test_pipelines_serve_their_own_ports():
    """Two pipelines: frames from ports 1 and 2 are processed in parallel."""
    topo = star(4)
    strategy = make_strategy("unicast")
    state = strategy.install(topo, Knowledge())
    for pipes, second in ((1, 120.0), (2, 110.0)):
        cfg = TimedConfig(pass_s=10 * US, feed_in_s=100 * US, pipelines=pipes)
        engine = TimedEngine(topo, strategy, state, cfg, trace=True)
        engine.publish("h1", frozenset({"h3"}))
        engine.publish("h2", frozenset({"h4"}))
        r = engine.run()
        out = sorted(ev[0] for ev in r.trace if ev[1] == "tx" and ev[2] == "s1")
        assert out == pytest.approx([110 * US, second * US], abs=1e-11)


def test_pipeline_buffer_drop_tail():
    topo = star(4)
    strategy = make_strategy("unicast")
    state = strategy.install(topo, Knowledge())
    cfg = TimedConfig(pass_s=10 * US, feed_in_s=100 * US, pipeline_buffer_frames=1)
    engine = TimedEngine(topo, strategy, state, cfg)
    for h in ("h1", "h2", "h3"):
        engine.publish(h, frozenset({"h4"}))
    r = engine.run()
    assert r.recorder.drops == {("pipeline", "s1", 0): 2}


def test_config_validation_names_the_field():
    with pytest.raises(SpecError, match="pass_s must be >= 0"):
        TimedConfig(pass_s=-1)
    with pytest.raises(SpecError, match="lookup_model must be one of"):
        TimedConfig(lookup_model="cubic")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="duration_s or notifications"):
        Workload()
    with pytest.raises(SpecError, match="unknown key 'rate'.*rate_hz"):
        timed_settings({"rate": 1})
    with pytest.raises(SpecError, match="tree_rules must be >= 0"):
        Capacity(tree_rules=-1)
    s = timed_settings({"rate_hz": "200", "recirc_port_bps": "none", "tree_rules": 5},
                       notifications=7)
    assert s.workload.rate_hz == 200 and s.workload.notifications == 7
    assert s.config.recirc_port_bps is None and s.capacity.tree_rules == 5
    assert timed_settings({"duration_s": 1.0}, notifications=7).workload.notifications is None


def test_a_dedicated_recirculation_port_adds_recirculation_capacity():
    """The setting of the previous test with a second (dedicated loopback) port per pipe."""
    topo = star(4)
    recv = frozenset({"h2", "h3", "h4"})
    strategy, state = tree_state(topo, "h1", recv)
    out = {}
    for ports in (1, 2):
        cfg = TimedConfig(pass_s=10 * US, feed_in_s=1 * US, recirc_port_bps=1e6,
                          recirc_buffer_frames=1, recirc_ports=ports)
        engine = TimedEngine(topo, strategy, state, cfg, payload_bytes=4)
        engine.publish("h1", recv)
        engine.publish("h1", recv)
        r = engine.run()
        out[ports] = (sum(r.recorder.drops.values()),
                      [len(n.delivered) for n in r.notes.values()], r.t_end)
    assert out[1][:2] == (1, [3, 1])
    assert out[2][:2] == (0, [3, 3])


def looping_ring():
    """A 3-switch ring whose L2 rules send h3's MAC round and round (never to h3)."""
    from sim.dataplanes.control_state import StateBuilder
    from sim.dataplanes.l2.reference import FORWARD
    from sim.dataplanes.packet import host_mac
    from strategies.l2.rules import l2_entry

    topo = build_topology("ring3", [(1, 2), (2, 3), (3, 1)], [1, 2, 3], 1)
    builder = StateBuilder()
    for a, b in (("s1", "s2"), ("s2", "s3"), ("s3", "s1")):
        builder.add_entry(a, l2_entry(host_mac(topo, "h3"), FORWARD, topo.port_to(a, b)))
    return topo, builder.build(topo.switches)


def test_a_forwarding_loop_is_an_error_without_ttl_and_dropped_with_it():
    from sim.engines.timed.switch import EngineError

    topo, state = looping_ring()
    strategy = make_strategy("unicast")
    with pytest.raises(EngineError, match="forwarding loop"):
        run_notifications(topo, strategy, state, [(0.0, "h1", frozenset({"h3"}))])
    r = run_notifications(topo, strategy, state, [(0.0, "h1", frozenset({"h3"}))],
                          TimedConfig(ttl_hops=5))
    assert r.notes[0].frames == 5 and not r.notes[0].delivered
    assert list(r.recorder.drops) == [("ttl", "s2", topo.port_to("s2", "s3"))]  # 6th link
