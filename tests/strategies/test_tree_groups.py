"""``multicast`` and ``bier`` build a single receiver set's state directly, exactly.

A receiver-scoped cell installs one receiver set per notification; both
strategies then build the state without a ``StateBuilder``
(:func:`strategies.l2.tree_groups.tree_group_state`,
:func:`strategies.bier.bift.local_group_state`), sharing switch configurations
between installs through ``caches.group_configs``. Each state must equal what
``install_reference`` (every rule added to a builder) gives, with the same
totals, and the control writes between consecutive states must be what
:func:`sim.dataplanes.control_state.diff` counts between the reference states.

References
----------
Seed 000 §2.3 (iv), §3.5.4 (multicast trees); RFC 8279 §6.1 (BIER local delivery).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import (
    Exact,
    MulticastGroup,
    StateBuilder,
    TableEntry,
    count_writes,
    diff,
)
from sim.dataplanes.derived_configs import ConfigExtension, derived_configs
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import shortest_path_tree
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.l2.tree_groups import tree_child_ports
from tests.support.random_topologies import random_topology


@st.composite
def installs(draw, max_switches: int = 14):
    """(topology, [(publisher, receivers), ...]) with repeats, so caches hit."""
    n = draw(st.integers(1, max_switches))
    topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                           hosts=draw(st.integers(1, 3)))
    hosts = st.sampled_from(topo.hosts)
    sets = draw(st.lists(st.tuples(hosts, st.frozensets(hosts, min_size=1)),
                         min_size=1, max_size=6))
    picks = draw(st.lists(st.integers(0, len(sets) - 1), min_size=1, max_size=10))
    return topo, [sets[k] for k in picks]


def _same(state, want) -> None:
    assert state == want  # every switch's tables, groups and sessions; publisher_info
    assert (state.entries, state.multicast_groups) == (want.entries, want.multicast_groups)


STRATEGIES = [("multicast", {}), ("bier", {}), ("bier", {"bfers": "all", "bsl_bits": 128})]


@settings(max_examples=60, deadline=None)
@given(case=installs(), which=st.sampled_from(STRATEGIES), limit=st.sampled_from([2, 1 << 14]))
def test_single_set_installs_equal_the_reference(case, which, limit):
    """``limit``: configurations the installs keep (2: forgotten all the time)."""
    topo, sets = case
    name, params = which
    fast, ref = make_strategy(name, params), make_strategy(name, params)
    derived_configs(fast.base_state(topo), fast.caches.group_configs).limit = limit
    previous = None
    for pub, receivers in sets:
        knowledge = Knowledge.for_notification(pub, receivers)
        state, want = fast.install(topo, knowledge), ref.install_reference(topo, knowledge)
        _same(state, want)
        note = Notification(0, pub)  # the data plane reads both alike (lookup memos)
        assert run_notification(topo, fast, state, note, receivers, payload_for(note, 8)) == \
            run_notification(topo, ref, want, note, receivers, payload_for(note, 8))
        if previous is not None:
            assert count_writes(previous[0], state) == len(diff(previous[1], want))
            assert count_writes(state, previous[0]) == len(diff(want, previous[1]))
        previous = (state, want)


@settings(max_examples=60, deadline=None)
@given(case=installs())
def test_tree_child_ports_are_the_tree_switches_child_ports(case):
    topo, sets = case
    for pub, receivers in sets:
        root = topo.host_switch(pub)
        tree = shortest_path_tree(topo, root, receivers)
        want = {sw: [topo.port_to(sw, c) for c in tree.children[sw]]
                for sw in tree.switches(topo)}
        assert tree_child_ports(topo, root, receivers) == want


def test_other_installs_take_the_reference():
    topo = random_topology(6, 3, 7, hosts=2)
    a, b = topo.hosts[:2], topo.hosts[2:5]
    knowledge = Knowledge(receiver_sets={a[0]: (frozenset(a), frozenset(b))})
    for name in ("multicast", "bier"):
        strategy = make_strategy(name, {})
        assert strategy.install(topo, knowledge) == strategy.install_reference(topo, knowledge)
    steiner = make_strategy("multicast", {"tree": "steiner"})
    single = Knowledge.for_notification(a[0], frozenset(b))
    assert steiner.install(topo, single) == steiner.install_reference(topo, single)


def test_config_extension_refuses_what_the_builder_would_not_add_alone():
    builder = StateBuilder()
    builder.add_group("s1", 1, [1])
    kept = builder.build(["s1"]).switches["s1"]
    entry = TableEntry("MyIngress.t", (("k", Exact(1)),), "x")
    extension = ConfigExtension(kept, {"MyIngress.t": (entry,)})
    with pytest.raises(ValueError):
        extension.config({1: MulticastGroup(1, ((2, 1),))})
    with pytest.raises(ValueError):
        ConfigExtension(extension.config({}), {"MyIngress.t": (entry,)})
    builder.add_entry("s1", entry)
    builder.add_group("s1", 2, [3])
    want = builder.build(["s1"]).switches["s1"]
    got = extension.config({2: MulticastGroup(2, ((3, 1),))})
    assert got == want and got.entry_count() == want.entry_count() == 1
