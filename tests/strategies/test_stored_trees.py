"""``tree`` and ``hybrid`` install their stored trees on shared configurations, exactly.

:class:`strategies.virtual_tree.stored_trees.StoredTrees` builds a receiver-scoped
state from the strategy's base state and one configuration per switch with rules,
shared between installs that store equal rules. The states must equal what adding
every rule to a :class:`StateBuilder` on the base gives (the install before
sharing, written out here), and the control writes between them must be what
:func:`sim.dataplanes.control_state.diff` counts.

References
----------
Seed 000 §4.2.3, §4.3.2; digest ch. 1-4 §3.8-3.9.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import (
    ControlState,
    StateBuilder,
    count_writes,
    derived_from,
    diff,
)
from sim.dataplanes.derived_configs import derived_configs
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import shortest_path_tree, steiner_tree
from sim.dataplanes.virtual_tree.codec import FieldRangeError
from sim.dataplanes.virtual_tree.reference import tree_group_entry, tree_ports_entry
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.hybrid import choose_stable, parse_ratio, stored_tree
from strategies.virtual_tree.labels import tree_key
from strategies.virtual_tree.tree import stored_tree_ids
from tests.support.random_topologies import random_topology
from topologies.model import node_sort_key


def _rules(builder: StateBuilder, topo, tree, tree_id: int, fmt, variant: str) -> None:
    """One rule per tree switch with children, in preorder (the install before sharing)."""
    for sw in tree.switches(topo):
        ports = [topo.port_to(sw, c) for c in tree.children.get(sw, ())]
        if not ports:
            continue
        if variant == "mcgroup":
            builder.add_group(sw, tree_id, ports)
            builder.add_entry(sw, tree_group_entry(fmt, tree_id, tree_id))
        else:
            builder.add_entry(sw, tree_ports_entry(fmt, tree_id, ports))


def _expected(name: str, strategy, topo, sets: dict[str, list[frozenset[str]]]) -> ControlState:
    fmt = strategy.fmt
    builder = StateBuilder(base=strategy.base_state(topo))
    if name == "tree":
        trees: dict[str, int] = {}
        build = steiner_tree if strategy.params.tree == "steiner" else shortest_path_tree
        for pub in sorted(sets):
            for receivers in sorted(sets[pub], key=sorted):
                key = tree_key(pub, receivers)
                if key in trees or not receivers:
                    continue
                trees[key] = len(trees) + 1
                _rules(builder, topo, build(topo, topo.host_switch(pub), receivers),
                       trees[key], fmt, strategy.params.variant)
        return builder.build(topo.switches, {"trees": trees})
    per_set = {}
    next_id = len(topo.hosts) + 1
    _, percent = parse_ratio(strategy.params.ratio)
    for pub in sorted(sets, key=node_sort_key):
        for receivers in sorted(sets[pub], key=sorted):
            key = tree_key(pub, receivers)
            if key in per_set or not receivers:
                continue
            stable = choose_stable(topo, pub, receivers, percent, strategy.params.seed)
            tree_id = 0
            if stable:
                tree_id, next_id = next_id, next_id + 1
                _rules(builder, topo, stored_tree(topo, pub, stable), tree_id, fmt, "bitmask")
            per_set[key] = {"tree": tree_id, "stable": sorted(stable, key=topo.host_id)}
    return builder.build(topo.switches, {"stable_trees": {}, "set_trees": per_set})


@settings(max_examples=40, deadline=None)
@given(name_params=st.sampled_from([("tree", {}), ("tree", {"variant": "mcgroup"}),
                                    ("tree", {"tree": "steiner"}), ("hybrid", {}),
                                    ("hybrid", {"ratio": "50:50"})]),
       n=st.integers(2, 12), extra=st.integers(0, 5), seed=st.integers(0, 2**16),
       sets_per_state=st.integers(1, 3))
def test_installs_equal_adding_every_rule(name_params, n, extra, seed, sets_per_state):
    name, params = name_params
    topo = random_topology(n, extra, seed, hosts=2)
    strategy = make_strategy(name, params)
    rng = np.random.default_rng(seed)
    states, expected = [], []
    for _ in range(4):  # consecutive installs (the cell pipeline's sequence), some repeated
        sets: dict[str, list[frozenset[str]]] = {}
        for _ in range(sets_per_state):
            pub = topo.hosts[int(rng.integers(len(topo.hosts)))]
            sets.setdefault(pub, []).append(frozenset(
                h for h in topo.hosts if h != pub and rng.random() < 0.5))
        know = Knowledge(receiver_sets={p: tuple(r) for p, r in sets.items()})
        states.append(strategy.install(topo, know))
        expected.append(_expected(name, strategy, topo, sets))
        if rng.random() < 0.3:  # the same knowledge again: every configuration shared
            again = strategy.install(topo, know)
            assert all(again.switches[s] is states[-1].switches[s] for s in topo.switches)
    for got, want in zip(states, expected, strict=True):
        assert got == want
        assert list(got.switches) == list(want.switches)
        assert not diff(want, got)
    for a, b in zip(states, states[1:], strict=False):
        assert count_writes(a, b) == len(diff(a, b))


def test_stored_tree_ids_read_back_only_what_tree_key_finds():
    """A key that reads back ambiguously (names with ':' or ',') is looked up by
    :func:`tree_key`; every (publisher, receivers) the index holds has that key."""
    keys = {tree_key("h1", frozenset({"h2", "h3"})): 1, "h:1:a,b": 2, "h9:": 3}
    state = ControlState(switches={}, publisher_info={"trees": keys})
    strategy = make_strategy("tree")
    ids = stored_tree_ids(strategy.caches, random_topology(2, 0, 1), state)
    assert ids[("h1", frozenset({"h2", "h3"}))] == 1
    for (pub, receivers), tree_id in ids.items():
        assert keys[tree_key(pub, receivers)] == tree_id


@st.composite
def single_sets(draw, max_switches: int = 14):
    """(topology, [(publisher, receivers), ...]) with repeats, so configurations are shared."""
    n = draw(st.integers(1, max_switches))
    topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                           hosts=draw(st.integers(1, 3)))
    pub = st.sampled_from(topo.hosts)
    sets = draw(st.lists(pub.flatmap(lambda p: st.tuples(st.just(p), st.frozensets(
        st.sampled_from(topo.hosts).filter(lambda h: h != p), min_size=1))),
        min_size=1, max_size=6))
    picks = draw(st.lists(st.integers(0, len(sets) - 1), min_size=1, max_size=10))
    return topo, [sets[k] for k in picks]


def _walk(topo, strategy, state, note, receivers):
    """The static engine's delivery, or the error it raises (a port outside the bitmask)."""
    try:
        return run_notification(topo, strategy, state, note, receivers, payload_for(note, 8))
    except FieldRangeError as e:
        return str(e)


@settings(max_examples=80, deadline=None)
@given(case=single_sets(), variant=st.sampled_from(["bitmask", "mcgroup"]),
       bitmask_bits=st.sampled_from([3, 64]), limit=st.sampled_from([2, 1 << 14]))
def test_single_tree_install_equals_the_reference(case, variant, bitmask_bits, limit):
    """``tree``'s install of one receiver set (:func:`one_tree_state`) is
    ``install_reference``'s state, with its totals, data-plane walk and control writes
    (against the previous install, both ways); a port outside the bitmask raises the
    same error. ``limit``: configurations kept (2: forgotten all the time)."""
    topo, sets = case
    params = {"variant": variant, "bitmask_bits": bitmask_bits}
    fast, ref = make_strategy("tree", params), make_strategy("tree", params)
    try:
        derived_configs(fast.base_state(topo), fast.caches.group_configs).limit = limit
    except FieldRangeError:  # a switch's extract_port rules do not fit: no install does
        pass
    previous = None
    for pub, receivers in sets:
        knowledge = Knowledge.for_notification(pub, receivers)
        try:
            want = ref.install_reference(topo, knowledge)
        except FieldRangeError:
            with pytest.raises(FieldRangeError):
                fast.install(topo, knowledge)
            continue
        state = fast.install(topo, knowledge)
        assert state == want
        assert list(state.switches) == list(want.switches)
        assert (state.entries, state.multicast_groups) == (want.entries, want.multicast_groups)
        note = Notification(0, pub)
        assert _walk(topo, fast, state, note, receivers) == _walk(topo, ref, want, note, receivers)
        if previous is not None:
            assert count_writes(previous[0], state) == len(diff(previous[1], want))
            assert count_writes(state, previous[0]) == len(diff(want, previous[1]))
            assert count_writes(previous[1], state) == len(diff(previous[1], want))
        previous = (state, want)


def test_other_tree_installs_take_the_reference():
    """Several receiver sets, an empty one or Steiner trees: ``install_reference``."""
    topo = random_topology(6, 3, 7, hosts=2)
    a, b = topo.hosts[:2], topo.hosts[2:5]
    for params, sets in (({}, {a[0]: (frozenset(a[1:]), frozenset(b))}),
                         ({}, {a[0]: (frozenset(),)}),
                         ({"tree": "steiner"}, {a[0]: (frozenset(b),)})):
        strategy = make_strategy("tree", params)
        knowledge = Knowledge(receiver_sets=sets)
        state = strategy.install(topo, knowledge)
        assert state == strategy.install_reference(topo, knowledge)
        assert derived_from(state) is None  # not the single-tree state
