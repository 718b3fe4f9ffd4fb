"""range-boxes: seed 004's overlap example, closure and priority invariants, zero FP/FN."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.content_space import Box
from sim.dataplanes.control_state import Range, StateBuilder, TableEntry
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.dataplanes.table_index import lookup as fast_lookup
from sim.engines.static import run_notification
from sim.workloads.content import ContentPopulation
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.range_filter.range_boxes import Container
from topologies.specs import load_topology


def test_seed004_overlap_example() -> None:
    c = Container()
    c.add(Box(((10, 50), (10, 50))), 1)
    c.add(Box(((30, 70), (30, 70))), 2)
    o = Box(((30, 50), (30, 50)))
    assert set(c.entries) == {Box(((10, 50), (10, 50))), Box(((30, 70), (30, 70))), o}
    assert c.entries[o].ports == {1, 2}
    for rule in ("volume", "count", "thesis"):
        prio = c.priorities(rule)
        assert prio[o] == max(prio.values())  # the overlap outranks its causes
        assert c.lookup((40, 40), rule) == {1, 2}
        assert c.lookup((20, 20), rule) == {1}


def test_equivalent_boxes_share_one_entry_and_contained_entries_gain_ports() -> None:
    c = Container(redundancy_queue=False)
    c.add(Box(((0, 9), (0, 9))), 1)
    c.add(Box(((2, 3), (2, 3))), 2)
    c.add(Box(((0, 9), (0, 9))), 3)
    assert len(c.entries) == 2
    assert c.entries[Box(((2, 3), (2, 3)))].ports == {1, 2, 3}


def test_redundancy_queue_holds_covered_base_flows_until_their_cover_leaves() -> None:
    c = Container(redundancy_queue=True)
    small = c.add(Box(((2, 3), (2, 3))), 1)
    big = c.add(Box(((0, 9), (0, 9))), 1)  # covers the small one with the same port
    assert small in c.queue and list(c.entries) == [Box(((0, 9), (0, 9)))]
    c.add(Box(((1, 1), (1, 1))), 1)        # redundant on arrival
    assert len(c.queue) == 2
    c.remove(big)
    assert not c.queue and len(c.entries) == 2  # both re-entered


def _boxes(n: int, top: int = 15):
    iv = st.tuples(st.integers(0, top), st.integers(0, top)).map(lambda t: (min(t), max(t)))
    return st.lists(st.tuples(st.tuples(iv, iv), st.integers(1, 3)), min_size=1, max_size=n)


@given(_boxes(9), st.sampled_from(["volume", "inverse-volume", "count", "thesis"]),
       st.booleans(), st.integers(0, 8))
def test_highest_priority_entry_carries_exactly_the_wanted_ports(bases, rule, queue,
                                                                  drop) -> None:
    c = Container(redundancy_queue=queue)
    ids = [c.add(Box(b), p) for b, p in bases]
    if drop < len(ids):
        c.remove(ids[drop])
    for e in itertools.product(range(0, 16, 3), range(0, 16, 3)):
        assert c.lookup(e, rule) == c.wanted(e)
    # deletion leaves the closure of the remaining base flows
    fresh = Container(redundancy_queue=queue)
    for bid in sorted(c.bases):
        fresh.add(*c.bases[bid])
    assert set(fresh.entries) == set(c.entries)
    assert {b: e.ports for b, e in fresh.entries.items()} == \
        {b: e.ports for b, e in c.entries.items()}


@given(_boxes(40, 99), st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)),
                                min_size=1, max_size=20))
def test_vectorised_lookup_equals_switchconfig_lookup(bases, keys) -> None:
    b = StateBuilder()
    seen = set()
    for i, ((x, y), p) in enumerate(bases):
        if (x, y) in seen:
            continue
        seen.add((x, y))
        b.add_entry("s1", TableEntry("T", (("f0", Range(*x)), ("f1", Range(*y))), "a",
                                     (("port", p),), priority=i % 4))
    cfg = b.build(["s1"]).config("s1")
    for k in keys:
        assert fast_lookup(cfg, "T", *k) == cfg.lookup("T", *k)


@pytest.mark.parametrize("dist", ["uniform", "zipf"])
def test_range_boxes_deliver_with_zero_false_positives_and_negatives(dist: str) -> None:
    topology = load_topology("fattree:k=4")
    spec = (f"content:subs=25,publishers=1,subscribers=7,dims=2,bits=16,dist={dist},"
            "width=0.2,hotspot_mode=per_host")
    pop = receiver_model(spec).population(topology, child_rng(4, "population"))
    assert isinstance(pop, ContentPopulation)
    strategy = make_strategy("range-boxes")
    view = pop.at(0)
    state = strategy.install(topology, Knowledge(population=view))
    rng = np.random.default_rng(5)
    delivered = 0
    for run in range(300):
        pub = pop.publishers[0]
        event, receivers = view.draw(pub, run, rng)
        note = Notification(run, pub, event=event)
        d = run_notification(topology, strategy, state, note, receivers, payload_for(note, 8))
        assert d.false_positives == 0 and d.false_negatives == 0 and d.duplicates == 0
        m = strategy.extra_metrics(topology, state, note, receivers, d)
        assert m.link_false_positives == 0
        delivered += len(receivers)
    assert delivered > 0


def test_latency_model_linear_in_entries() -> None:
    topology = load_topology("fattree:k=4")
    pop = receiver_model("content:subs=10,dims=2,bits=16").population(
        topology, child_rng(6, "population"))
    strategy = make_strategy("range-boxes", {"latency": "linear"})
    state = strategy.install(topology, Knowledge(population=pop.at(0)))
    cost = strategy.state_cost(topology, state)
    model = strategy.params.latency_model()
    assert model.lookup_us(1) == pytest.approx(6.4)
    assert model.lookup_us(530) == pytest.approx(6.4 + 529 * 1.12)  # ~600 us at 530 entries
    assert max(cost.filter_entries.values()) >= 10


def test_deleting_a_cause_removes_its_overlap_and_its_port() -> None:
    """Seed 004 §4.3 "delete base flow": the overlap A30-50 & B30-50 lives while both
    causes do; deleting one leaves the other alone with its own ports."""
    c = Container(redundancy_queue=False)
    b1 = c.add(Box(((10, 50), (10, 50))), 1)
    b2 = c.add(Box(((30, 70), (30, 70))), 2)
    c.remove(b2)
    assert list(c.entries) == [Box(((10, 50), (10, 50)))]
    assert c.entries[Box(((10, 50), (10, 50)))].ports == {1}
    assert c.lookup((40, 40)) == {1} and c.lookup((60, 60)) == frozenset()
    c.remove(b1)
    assert not c.entries and not c.bases


def test_deleting_a_nested_flow_keeps_the_container_and_other_overlaps() -> None:
    c = Container(redundancy_queue=False)
    c.add(Box(((0, 99), (0, 99))), 1)            # container, port 1
    inner = c.add(Box(((10, 20), (10, 20))), 2)  # inside it, port 2
    c.add(Box(((15, 60), (15, 60))), 3)          # overlaps both
    assert c.entries[Box(((15, 20), (15, 20)))].ports == {1, 2, 3}
    c.remove(inner)
    assert set(c.entries) == {Box(((0, 99), (0, 99))), Box(((15, 60), (15, 60)))}
    assert c.entries[Box(((15, 60), (15, 60)))].ports == {1, 3}
    assert c.lookup((12, 12)) == {1} and c.lookup((30, 30)) == {1, 3}


def test_redundancy_queue_partial_cover_and_dequeue_on_delete() -> None:
    """Seed 004's figure: a new port-1 box covers two port-1 boxes (queued) and only
    partly covers a third (kept); deleting a queued flow only dequeues it."""
    c = Container(redundancy_queue=True)
    blue = c.add(Box(((2, 4), (2, 4))), 1)
    green = c.add(Box(((6, 8), (6, 8))), 1)
    red = c.add(Box(((8, 12), (8, 12))), 1)
    c.add(Box(((0, 9), (0, 9))), 1)
    assert c.queue == {blue, green} and red in c.active
    assert c.lookup((3, 3)) == {1} and c.lookup((11, 11)) == {1}
    before = dict(c.entries)
    c.remove(green)
    assert c.queue == {blue} and green not in c.bases and c.entries == before
    # a queued flow with another port is not redundant
    other = c.add(Box(((2, 4), (2, 4))), 2)
    assert other in c.active and c.lookup((3, 3)) == {1, 2}


def _installed_ports(cfg, values):
    entry = fast_lookup(cfg, "MyIngress.publish_subscribe", *values)
    assert entry == cfg.lookup("MyIngress.publish_subscribe", *values)
    if entry is None:
        return frozenset()
    (_, value), = entry.params
    if entry.action == "MyIngress.set_outport":
        return frozenset({value})
    return frozenset(cfg.multicast_groups[value].ports)


@given(st.lists(st.tuples(st.tuples(st.tuples(st.integers(0, 15), st.integers(0, 15)),
                                    st.tuples(st.integers(0, 15), st.integers(0, 15))),
                          st.integers(1, 3), st.booleans()), min_size=1, max_size=10),
       st.sampled_from(["volume", "inverse-volume", "count", "thesis"]), st.booleans())
def test_installed_table_forwards_exactly_the_wanted_ports_through_churn(ops, rule,
                                                                         queue) -> None:
    """Adds and deletes in any order; after each, the P4 table the strategy writes
    (fast lookup and SwitchConfig lookup) gives every point exactly its base flows' ports."""
    from strategies.range_filter.range_boxes import RangeBoxes

    strategy = make_strategy("range-boxes", {"priority": rule, "redundancy_queue": queue})
    assert isinstance(strategy, RangeBoxes)
    c = Container(redundancy_queue=queue, space_volume=256)
    ids: list[int] = []
    for (xs, ys), port, delete in ops:
        box = Box((tuple(sorted(xs)), tuple(sorted(ys))))
        if delete and ids:
            c.remove(ids.pop(0))
        else:
            ids.append(c.add(box, port))
        cfg = strategy._table.config("s1", c)
        for e in itertools.product(range(0, 16, 3), range(1, 16, 4)):
            assert _installed_ports(cfg, e) == c.wanted(e)


def test_table_grows_faster_than_the_subscriptions() -> None:
    """Seed 004 §5.1: uniform boxes make the closure grow much faster than linearly."""
    topology = load_topology("fattree:k=4")
    busiest = {}
    for subs in (10, 20, 40):
        spec = (f"content:subs={subs},publishers=1,subscribers=7,dims=2,bits=16,"
                "dist=uniform,width=0.25")
        pop = receiver_model(spec).population(topology, child_rng(8, "population"))
        strategy = make_strategy("range-boxes")
        state = strategy.install(topology, Knowledge(population=pop.at(0)))
        busiest[subs] = max(strategy.state_cost(topology, state).filter_entries.values())
    assert busiest[10] >= 10 - 1  # at least the (non-redundant) base boxes
    assert busiest[40] / busiest[20] > 2 and busiest[20] / busiest[10] > 2
