"""Receiver-scoped strategies install their receiver-independent rules once
(``Strategy.base_rules`` + ``state_builder``); every install must equal the
one that adds those rules anew (the code before the split), and consecutive
installs share the base's switch configurations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import scenarios

from sim.dataplanes.control_state import StateBuilder, count_writes, diff
from sim.dataplanes.virtual_tree.codec import FieldRangeError
from strategies.base import Knowledge, Strategy, make_strategy

CASES = [("tree", {}), ("tree", {"variant": "mcgroup"}), ("tree", {"tree": "steiner"}),
         ("hybrid", {}), ("hybrid", {"ratio": "30:70", "seed": 3})]


def unsplit_install(strategy: Strategy, topology, knowledge):
    """``install`` with the base rules added to a fresh builder every time."""

    def fresh_builder(topology):
        builder = StateBuilder()
        strategy.base_rules(builder, topology)
        return builder

    strategy.state_builder = fresh_builder  # type: ignore[method-assign]
    try:
        return strategy.install(topology, knowledge)
    finally:
        del strategy.state_builder


@pytest.mark.parametrize(("name", "params"), CASES)
@settings(max_examples=25, deadline=None)
@given(case=scenarios(max_switches=12), other=st.data())
def test_install_on_the_base_equals_the_unsplit_install(name, params, case, other):
    topo, pub, recv = case
    strategy = make_strategy(name, params)
    second = other.draw(st.frozensets(st.sampled_from(topo.hosts)).map(lambda r: r - {pub}))
    states = []
    for receivers in (recv, second, recv):
        knowledge = Knowledge.for_notification(pub, receivers)
        state = strategy.install(topo, knowledge)
        assert state == unsplit_install(strategy, topo, knowledge)
        assert state.publisher_info == unsplit_install(strategy, topo, knowledge).publisher_info
        states.append(state)
    a, b, _ = states
    assert count_writes(a, b) == len(diff(a, b))
    # switches no tree crosses keep the base's configuration object
    base = strategy.caches.base_states.get(next(iter(strategy.caches.base_states.keys())))
    shared = [sw for sw in topo.switches if a.switches[sw] is base.switches[sw]]
    untouched = [sw for sw in topo.switches if a.switches[sw] == base.switches[sw]]
    assert shared == untouched


def test_a_failing_base_is_not_cached():
    """Too many ports for the bitmask: every install raises, none is remembered."""
    from support.random_topologies import random_topology

    topo = random_topology(12, 30, seed=1)
    strategy = make_strategy("hybrid", {"bitmask_bits": 2})
    knowledge = Knowledge.for_notification(topo.hosts[0], frozenset(topo.hosts[1:3]))
    for _ in range(2):
        with pytest.raises(FieldRangeError):
            strategy.install(topo, knowledge)
    assert len(strategy.caches.base_states) == 0
