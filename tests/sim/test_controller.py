"""Controller of the timed engine (issue 5): update order, stale state, capacity, writes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from support.random_topologies import scenarios

from sim.dataplanes.control_state import diff
from sim.engines.timed.capacity import occupancy, violations
from sim.engines.timed.config import Capacity, Churn, TimedConfig, Workload
from sim.engines.timed.controller import Controller, apply_writes, same_config
from sim.engines.timed.engine import TimedEngine
from strategies.base import Knowledge, make_strategy
from topologies.model import LinkDefaults, build_topology

MS = 1e-3


def line3():
    """h1 - s1 - s2 - s3 with h2 on s2 and h3 on s3; 1 ms on every link."""
    return build_topology("line3", [(1, 2), (2, 3)], [1, 2, 3], 1, LinkDefaults(delay_s=1 * MS))


def setup(subs, order="make-before-break", capacity=None, overflow="reject"):
    topo = line3()
    strategy = make_strategy("tree")
    subs = {p: frozenset(r) for p, r in subs.items()}
    state = strategy.install(topo, Knowledge(receiver_sets={p: (r,) for p, r in subs.items()}))
    cfg = TimedConfig(write_rtt_s=1 * MS, write_latency_s=0.1 * MS, inform_s=1 * MS,
                      update_order=order, overflow=overflow)
    engine = TimedEngine(topo, strategy, state, cfg, trace=True)
    return engine, Controller(engine, subs, capacity=capacity or Capacity())


def at(engine, t, fn):
    ev = engine.env.timeout(t - engine.env.now)
    ev.callbacks.append(lambda _ev: fn())


def test_make_before_break_with_a_packet_in_flight_counted_as_stale():
    """h3 subscribes while a notification for {h2} is in flight: the tree is modified
    in place (MODIFY at s2, INSERT at s3) before the packet reaches s2, so it also
    reaches h3 - a stale false positive. The publisher learns the new receiver set
    only after the inform step."""
    engine, ctl = setup({"h1": {"h2"}})
    engine.publish("h1")                                   # in flight until ~3.1 ms
    at(engine, 0.01 * MS, lambda: ctl.apply("subscribe", "h3", ("h1",)))
    at(engine, 1.5 * MS, lambda: engine.publish("h1"))     # writes done, not yet informed
    at(engine, 3.0 * MS, lambda: engine.publish("h1"))     # informed
    r = engine.run()
    writes = [(ev[0], ev[2], ev[3]) for ev in r.trace if ev[1] == "write"]
    informs = [ev[0] for ev in r.trace if ev[1] == "inform"]
    t_write = 0.01 * MS + 1 * MS + 0.1 * MS
    assert writes == [(pytest.approx(t_write), "s2", ("MODIFY",)),
                      (pytest.approx(t_write), "s3", ("INSERT",))]
    assert informs == [0.0, pytest.approx(t_write + 1 * MS)]  # t = 0: initial views
    first, stale_view, fresh = (r.notes[i] for i in range(3))
    assert first.receivers == frozenset({"h2"}) and set(first.delivered) == {"h2", "h3"}
    assert ctl.exposed(first)
    assert ctl.misdelivery(first).stale_false_positives == 1
    assert stale_view.encoded_for == frozenset({"h2"}) and stale_view.view_stale
    assert ctl.exposed(stale_view) and ctl.misdelivery(stale_view).misdeliveries == 0
    assert fresh.encoded_for == frozenset({"h2", "h3"}) and not ctl.exposed(fresh)
    assert set(fresh.delivered) == {"h2", "h3"}
    (change,) = ctl.changes
    assert change.convergence_s == pytest.approx(t_write + 1 * MS - 0.01 * MS)
    (upd,) = ctl.updates
    assert (upd.inserts, upd.modifies, upd.deletes) == (1, 1, 0)


@pytest.mark.parametrize("order", ["make-before-break", "simultaneous"])
def test_update_order_of_inserts_inform_and_deletes(order):
    """h3 unsubscribes: s2's tree rule is modified, s3's deleted."""
    engine, ctl = setup({"h1": {"h2", "h3"}}, order=order)
    at(engine, 0.0, lambda: ctl.apply("unsubscribe", "h3", ("h1",)))
    r = engine.run()
    events = [(ev[0], ev[1], ev[2:]) for ev in r.trace if ev[1] in ("write", "inform")][1:]
    t_w = 1.1 * MS
    if order == "make-before-break":
        assert [(e[1], e[2]) for e in events] == [
            ("write", ("s2", ("MODIFY",))), ("inform", ("h1",)), ("write", ("s3", ("DELETE",)))]
        assert [e[0] for e in events] == pytest.approx([t_w, t_w + 1 * MS, 2 * t_w + 1 * MS])
    else:
        assert sorted(e[0] for e in events) == pytest.approx([1 * MS, t_w, t_w])
    assert same_config(engine.switches["s3"].config, ctl.target.config("s3"))
    assert ctl.changes[0].t_served == pytest.approx(events[-1][0])


def test_write_batching_and_latency():
    """Writes on one switch go in requests of write_batch, one after another."""
    topo = build_topology("star", [], [1], 6)
    strategy = make_strategy("multicast")
    subs = {"h1": frozenset({"h2"})}
    state = strategy.install(topo, Knowledge(receiver_sets={"h1": (subs["h1"],)}))
    cfg = TimedConfig(write_rtt_s=1 * MS, write_latency_s=0.5 * MS, write_batch=1,
                      inform_s=0.0, update_order="simultaneous")
    engine = TimedEngine(topo, strategy, state, cfg, trace=True)
    ctl = Controller(engine, subs)
    at(engine, 0.0, lambda: ctl.apply("migrate", "h2", ("h1",), target="h5"))
    r = engine.run()
    writes = [ev for ev in r.trace if ev[1] == "write"]
    assert [ev[0] for ev in writes] == pytest.approx([1.5 * MS * k for k in
                                                      range(1, len(writes) + 1)])
    assert ctl.updates[0].writes == len(writes)
    assert engine.truth["h1"] == frozenset({"h5"})


def test_capacity_overflow_rejects_the_update_or_counts_it():
    """A second tree through s2 does not fit tree_rules = 1."""
    cap = Capacity(tree_rules=1)
    engine, ctl = setup({"h1": {"h2"}, "h3": set()}, capacity=cap)
    assert ctl.initial_violations == 0
    at(engine, 0.0, lambda: ctl.apply("subscribe", "h2", ("h3",)))
    at(engine, 5 * MS, lambda: engine.publish("h3"))
    r = engine.run()
    assert ctl.changes[0].rejected and ctl.changes[0].t_served is None
    assert ctl.updates[0].rejected and ctl.updates[0].writes == 0
    assert not [ev for ev in r.trace if ev[1] == "write"]
    assert r.notes[0].false_negatives == 1 and r.notes[0].encoded_for == frozenset()

    engine, ctl = setup({"h1": {"h2"}, "h3": set()}, capacity=cap, overflow="allow")
    at(engine, 0.0, lambda: ctl.apply("subscribe", "h2", ("h3",)))
    engine.run()
    assert ctl.updates[0].overflow and not ctl.changes[0].rejected
    assert violations(engine.installed(), cap)
    report = ctl.occupancy.report(engine.env.now)
    assert report["tree_rules"]["switch_peak"] == 2


@settings(max_examples=20)
@given(scenarios(max_switches=8), scenarios(max_switches=8))
def test_applying_the_diff_reaches_the_new_state(a, b):
    topo, pub, recv = a
    other = frozenset(h for h in b[2] if h in topo.hosts and h != pub)
    for name in ("multicast", "tree", "hybrid", "alm-mcgroup"):
        strategy = make_strategy(name)
        old = strategy.install(topo, Knowledge.for_notification(pub, recv))
        new = strategy.install(topo, Knowledge.for_notification(pub, other))
        writes = diff(old, new)
        for sw in topo.switches:
            mine = [w for w in writes if w.switch == sw]
            assert same_config(apply_writes(old.config(sw), mine), new.config(sw)), name
            assert occupancy(apply_writes(old.config(sw), mine)) == occupancy(new.config(sw))


def test_churn_is_deterministic_and_every_change_converges():
    topo = build_topology("ring", [(i, i % 8 + 1) for i in range(1, 9)], range(1, 9), 1)
    strategy = make_strategy("tree")

    def run(seed):
        subs = {"h1": frozenset({"h3", "h5"}), "h2": frozenset({"h6"})}
        state = strategy.install(topo, Knowledge(receiver_sets={p: (r,) for p, r in
                                                                subs.items()}))
        engine = TimedEngine(topo, strategy, state, TimedConfig(), trace=True)
        ctl = Controller(engine, subs, Churn(subscribe_hz=50, unsubscribe_hz=50,
                                             migrate_hz=20), seed=seed)
        ctl.start(until=0.2)
        engine.start_workload(Workload(rate_hz=200, duration_s=0.2), ["h1", "h2"], seed)
        r = engine.run()
        return r, ctl

    r1, c1 = run(1)
    r2, _ = run(1)
    r3, _ = run(2)
    assert r1.trace == r2.trace and r1.trace != r3.trace
    assert len(c1.changes) > 5 and {c.kind for c in c1.changes} == {"subscribe", "unsubscribe",
                                                                    "migrate"}
    assert all(c.t_served is not None and c.t_served >= c.t for c in c1.changes)
    exposed = [n for n in r1.notes.values() if c1.exposed(n)]
    assert 0 < len(exposed) < len(r1.notes)
    for n in r1.notes.values():  # an exact strategy is exact whenever no update interferes
        if not c1.exposed(n):
            assert n.delivered == dict.fromkeys(n.receivers, 1)
