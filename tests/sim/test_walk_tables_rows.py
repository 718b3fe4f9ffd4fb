"""A state's row in the walk tables is the piece of each switch, however it is found.

:meth:`~sim.dataplanes.virtual_tree.walk_tables.WalkTables.row` copies the row of
a derived state's base (:func:`~sim.dataplanes.control_state.derived_from`) and
looks up the touched switches only. Property-tested: for ``tree`` installs of
single receiver sets and several sets (derived and plain states), states a
builder derived from the base, and :func:`derived_state` of a base holding only
some switches, in random order, the row laid out equals the piece of every
switch of the topology in order (seed 000 §5.2.6: the tables the walk reads).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import (
    EMPTY_SWITCH,
    StateBuilder,
    derived_from,
    derived_state,
)
from sim.dataplanes.virtual_tree.reference import tree_ports_entry
from sim.dataplanes.virtual_tree.walk_tables import WalkTables
from strategies.base import Knowledge, make_strategy
from tests.support.random_topologies import random_topology


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 10), extra=st.integers(0, 6), seed=st.integers(0, 2**16),
       data=st.data())
def test_rows_are_every_switchs_piece(n, extra, seed, data):
    topo = random_topology(n, extra, seed, hosts=2)
    strategy = make_strategy("tree")
    fmt = strategy.fmt
    base = strategy.base_state(topo)
    hosts = st.sampled_from(topo.hosts)
    states = [base]
    for _ in range(data.draw(st.integers(1, 6))):
        pub = data.draw(hosts)
        sets = data.draw(st.lists(st.frozensets(hosts.filter(lambda h, p=pub: h != p),
                                                min_size=1), min_size=1, max_size=2))
        states.append(strategy.install(topo, Knowledge(receiver_sets={pub: tuple(sets)})))
    on = data.draw(st.lists(st.sampled_from(topo.switches), unique=True, max_size=3))
    builder = StateBuilder(base=base)
    for i, sw in enumerate(on):
        builder.add_entry(sw, tree_ports_entry(fmt, 7 + i, [1]))
    states.append(builder.build(topo.switches))
    part = StateBuilder().build(topo.switches[: len(topo.switches) // 2 + 1])
    states.append(derived_state(part, {sw: states[-1].switches[sw] for sw in on
                                       if sw in part.switches}))
    assert any(derived_from(s) for s in states)
    order = data.draw(st.permutations(range(len(states))))
    tables = WalkTables(fmt)
    for k in order + order[:2]:  # some rows asked for again
        state = states[k]
        offset = tables.row(state, topo)
        want = [tables.piece(state.switches.get(sw, EMPTY_SWITCH)) for sw in topo.switches]
        assert tables.array()[offset:offset + len(want)].tolist() == want
