"""range-boxes: seed 004's overlap example, closure and priority invariants, zero FP/FN."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.content import Box
from sim.content_receivers import ContentPopulation
from sim.control import Range, StateBuilder, TableEntry
from sim.dataplanes.fast_lookup import lookup as fast_lookup
from sim.packet import Notification, payload_for
from sim.receivers import receiver_model
from sim.seeds import child_rng
from sim.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.range_boxes import Container
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
        assert m["link_false_positives"] == 0
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
