"""``tree`` (seed 000 §4.2.3, §4.3.2): one constant label, stored trees, both variants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.random_topologies import random_topology, scenarios

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import shortest_path_tree
from sim.dataplanes.virtual_tree.codec import FieldRangeError
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from topologies.registry import SpecError

PAYLOAD = 50


def deliver(topo, pub, recv, **params):
    strategy = make_strategy("tree", params)
    state = strategy.install(topo, Knowledge.for_notification(pub, recv))
    note = Notification(1, pub)
    return run_notification(topo, strategy, state, note, recv, payload_for(note, PAYLOAD)), state


@given(scenarios(max_switches=12), st.sampled_from(["bitmask", "mcgroup"]))
def test_every_receiver_exactly_once_with_one_label(case, variant):
    topo, pub, recv = case
    d, state = deliver(topo, pub, recv, variant=variant)
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.false_negatives == d.duplicates == 0
    if not recv:
        return
    # constant header: Size + one tree label, on every frame
    assert d.encoding.header_entries == 1 and d.encoding.header_bytes == 4
    tree = shortest_path_tree(topo, topo.host_switch(pub), recv)
    assert d.frames == len(tree.edges()) + 1
    assert d.bytes == d.frames * (14 + 4 + PAYLOAD)
    # one stored-tree rule per tree switch
    switches = tree.switches(topo)
    per = state.per_switch()
    assert sum(per[s].get("MyIngress.check_tree", 0) for s in topo.switches) == len(switches)
    assert all(per[s]["MyIngress.check_tree"] == 1 for s in switches)
    for s in switches:
        children = len(tree.children[s])
        if variant == "bitmask":
            # one clone per 1-bit: m bits -> m passes (m - 1 recirculations)
            assert d.switches[s].passes == children
            assert per[s]["MyIngress.extract_port"] == topo.degree(s)
        else:
            assert d.switches[s].passes == 1
            assert state.config(s).multicast_groups[1].ports == tuple(
                topo.port_to(s, c) for c in tree.children[s])
    if variant == "mcgroup":
        assert state.multicast_groups == len(switches)
        assert all("MyIngress.extract_port" not in p for p in per.values())


@given(scenarios(max_switches=12))
def test_steiner_trees_are_exact_too(case):
    topo, pub, recv = case
    d, _ = deliver(topo, pub, recv, tree="steiner")
    assert d.delivered == {h: 1 for h in recv} and d.false_positives == 0


def test_one_tree_per_known_receiver_set_and_unknown_sets_fail():
    topo = random_topology(8, 4, seed=3)
    pub = "h1"
    sets = (frozenset({"h2", "h3"}), frozenset({"h4"}), frozenset({"h2", "h3"}))
    strategy = make_strategy("tree")
    state = strategy.install(topo, Knowledge(receiver_sets={pub: sets}))
    assert sorted(state.publisher_info["trees"].values()) == [1, 2]
    note = Notification(0, pub)
    for recv in sets:
        d = run_notification(topo, strategy, state, note, recv, payload_for(note, 10))
        assert d.delivered == {h: 1 for h in recv}
    with pytest.raises(LookupError, match="no stored tree"):
        strategy.encode(topo, state, note, frozenset({"h5"}), b"")


def test_tree_ids_beyond_the_label_raise_naming_the_field():
    topo = random_topology(8, 2, seed=1)
    others = [h for h in topo.hosts if h != "h1"]
    sets = tuple(frozenset(c) for k in (1, 2, 3, 4) for c in itertools.combinations(others, k))
    assert len(sets) > 63
    strategy = make_strategy("tree", {"label_bits": 8, "type_bits": 2})  # 6-bit ids
    with pytest.raises(FieldRangeError, match="tree id 64 .*id_bits"):
        strategy.install(topo, Knowledge(receiver_sets={"h1": sets}))


def test_bad_params_name_the_field():
    with pytest.raises(SpecError, match="variant"):
        make_strategy("tree", {"variant": "groups"})
    with pytest.raises(SpecError, match="bitmask_bits"):
        make_strategy("tree", {"bitmask_bits": 0})


def test_more_ports_than_the_bitmask_raise_naming_the_field():
    star = random_topology(1, 0, seed=0, hosts=5)
    with pytest.raises(FieldRangeError, match="bitmask_bits"):
        make_strategy("tree", {"bitmask_bits": 4}).install(star, Knowledge())
