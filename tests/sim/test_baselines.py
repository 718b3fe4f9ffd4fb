"""Static engine invariants of the baselines (issue 2): unicast, broadcast, multicast."""

from __future__ import annotations

from hypothesis import given
from support.random_topologies import random_topology, scenarios

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import shortest_path_tree
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy


def deliver(topo, name, publisher, receivers, payload=50, **params):
    strategy = make_strategy(name, params)
    state = strategy.install(topo, Knowledge.for_notification(publisher, receivers))
    note = Notification(0, publisher)
    return run_notification(topo, strategy, state, note, receivers, payload_for(note, payload))


def hops(topo, a, b):
    """Links on the host-to-host path (host links included)."""
    import networkx as nx

    return nx.shortest_path_length(topo.graph, a, b)


@given(scenarios())
def test_unicast_exactly_once_and_frames_are_path_lengths(case):
    topo, pub, recv = case
    d = deliver(topo, "unicast", pub, recv)
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.false_negatives == d.duplicates == 0
    assert d.frames == sum(hops(topo, pub, h) for h in recv)


@given(scenarios())
def test_multicast_exactly_once_with_minimum_frames(case):
    topo, pub, recv = case
    d = deliver(topo, "multicast", pub, recv)
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.false_negatives == d.duplicates == 0
    tree = shortest_path_tree(topo, topo.host_switch(pub), recv)
    # every tree edge once, plus the publisher's own host link (when anything is sent)
    expected = len(tree.edges()) + (1 if recv else 0)
    assert d.frames == expected
    assert d.encoding.header_bytes == 0


@given(scenarios())
def test_multicast_steiner_is_exact_too(case):
    topo, pub, recv = case
    d = deliver(topo, "multicast", pub, recv, tree="steiner")
    assert d.delivered == {h: 1 for h in recv}


@given(scenarios())
def test_broadcast_reaches_every_host_and_counts_false_positives(case):
    topo, pub, recv = case
    d = deliver(topo, "broadcast", pub, recv)
    others = set(topo.hosts) - {pub}
    assert set(d.delivered) == others
    assert d.duplicates == 0 and d.false_negatives == 0
    assert d.false_positives == len(others - recv)
    # a spanning tree: one frame per switch-tree edge plus every host link
    assert d.frames == len(topo.switches) - 1 + len(topo.hosts)


@given(scenarios())
def test_bytes_are_the_sum_over_links(case):
    topo, pub, recv = case
    for name in ("unicast", "broadcast", "multicast"):
        d = deliver(topo, name, pub, recv, payload=123)
        assert d.bytes == sum(b for _, b in d.links.values())
        assert d.bytes == d.frames * (14 + 123)


def test_unicast_feed_in_of_204_copies_takes_20_4_ms():
    """Seed 000 §3.5.4: 204 copies at 0.1 ms feed-in = 20.4 ms before the last leaves."""
    topo = random_topology(255, 300, seed=7)
    pub = topo.hosts[0]
    recv = frozenset(topo.hosts[1:205])
    d = deliver(topo, "unicast", pub, recv)
    assert d.frames == sum(hops(topo, pub, h) for h in recv)
    last = max(d.first_arrival_s[h] for h in recv)
    # the last copy leaves at 20.4 ms and crosses at most diameter+1 switches at 0.1 ms
    assert 20.4e-3 < last <= 20.4e-3 + 0.1e-3 * (len(topo.switches))
    assert d.delay_worst_s == last


def test_delay_of_multicast_is_feed_in_plus_switches():
    topo = random_topology(6, 0, seed=1)  # a tree
    pub, recv = topo.hosts[0], frozenset(topo.hosts[1:])
    d = deliver(topo, "multicast", pub, recv)
    for h in recv:
        switches_on_path = hops(topo, pub, h) - 1
        assert abs(d.first_arrival_s[h] - (0.1e-3 + switches_on_path * 0.1e-3)) < 1e-12
