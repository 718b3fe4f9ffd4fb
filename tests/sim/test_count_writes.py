"""``count_writes(old, new)`` must equal ``len(diff(old, new))`` exactly, for
unrelated states and for states a ``StateBuilder`` built on a shared base;
and a builder on a base must build the state that adding base's rules first
would (structure-shared)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    Ternary,
    count_writes,
    derived_from,
    derived_state,
    diff,
)

SWITCHES = ("s1", "s2", "s3")
TABLES = ("MyIngress.a", "MyIngress.b")


@st.composite
def entries(draw):
    table = draw(st.sampled_from(TABLES))
    if draw(st.booleans()):
        match = (("k", Exact(draw(st.integers(0, 5)))),)
    else:
        match = (("k", Ternary(draw(st.integers(0, 3)), draw(st.integers(0, 3)))),)
    return TableEntry(table, match, draw(st.sampled_from(("x", "y"))),
                      (("p", draw(st.integers(0, 2))),), draw(st.integers(0, 2)))


#: one operation on a builder: ("entry", switch, entry) / ("group", ...) / ("session", ...)
ops = st.lists(st.one_of(
    st.tuples(st.just("entry"), st.sampled_from(SWITCHES), entries()),
    st.tuples(st.just("group"), st.sampled_from(SWITCHES), st.integers(1, 3),
              st.lists(st.integers(1, 4), max_size=3)),
    st.tuples(st.just("session"), st.sampled_from(SWITCHES), st.integers(1, 3),
              st.integers(1, 4)),
), max_size=14)


def apply(builder: StateBuilder, todo) -> None:
    for op in todo:
        try:
            if op[0] == "entry":
                builder.add_entry(op[1], op[2])
            elif op[0] == "group":
                if not builder.has_group(op[1], op[2]):
                    builder.add_group(op[1], op[2], op[3])
            else:
                builder.add_clone_session(op[1], op[2], op[3])
        except ValueError:  # a duplicate entry: skipped by both builders alike
            pass


def plain(*parts) -> ControlState:
    builder = StateBuilder()
    for todo in parts:
        apply(builder, todo)
    return builder.build(SWITCHES)


def layered(base: ControlState, todo) -> ControlState:
    builder = StateBuilder(base=base)
    apply(builder, todo)
    return builder.build(SWITCHES)


@given(ops, ops)
def test_count_writes_equals_diff_on_unrelated_states(a, b):
    old, new = plain(a), plain(b)
    assert count_writes(old, new) == len(diff(old, new))
    assert count_writes(new, old) == len(diff(new, old))
    assert count_writes(old, old) == 0


@given(ops, ops, ops)
def test_a_builder_on_a_base_equals_adding_the_base_first(base_ops, a, b):
    base = plain(base_ops)
    old, new = layered(base, a), layered(base, b)
    assert old == plain(base_ops, a) and new == plain(base_ops, b)
    assert count_writes(old, new) == len(diff(old, new))
    assert count_writes(new, old) == len(diff(new, old))
    assert count_writes(base, new) == len(diff(base, new))
    for sw in SWITCHES:  # untouched switches and tables are base's own objects
        if not any(op[1] == sw for op in a):
            assert old.switches[sw] is base.switches[sw]
        else:
            for table, es in old.switches[sw].tables.items():
                if not any(op[0] == "entry" and op[1] == sw and op[2].table == table for op in a):
                    assert es is base.switches[sw].tables[table]


def test_count_writes_can_fail():
    e = TableEntry("MyIngress.a", (("k", Exact(1)),), "x")
    old = plain([("entry", "s1", e)])
    new = plain([("entry", "s1", TableEntry("MyIngress.a", (("k", Exact(1)),), "y"))])
    assert count_writes(old, new) == len(diff(old, new)) == 1  # one MODIFY
    assert count_writes(old, plain([])) == 1  # one DELETE


def test_lookups_on_a_layered_state_match_a_plain_one():
    base_ops = [("entry", "s1", TableEntry("MyIngress.a", (("k", Ternary(v, 3)),), "x",
                                           priority=v)) for v in range(4)]
    base = plain(base_ops)
    extra = [("entry", "s1", TableEntry("MyIngress.b", (("k", Exact(2)),), "y"))]
    for state in (layered(base, extra), layered(base, extra)):  # the second reuses indexes
        want = plain(base_ops, extra).config("s1")
        for table in TABLES:
            for key in range(6):
                assert state.config("s1").lookup(table, key) == want.lookup(table, key)


def built(base: ControlState | None, todo, switches=SWITCHES) -> ControlState:
    builder = StateBuilder(base=base)
    apply(builder, todo)
    return builder.build(switches)


@given(ops, ops, ops, st.sampled_from([SWITCHES, SWITCHES[:2], SWITCHES[::-1]]))
def test_derived_states_count_entries_and_writes_as_a_full_comparison(base_ops, a, b, order):
    """States built on one base (or on none) compare only the switches they touched
    (derived_from); mixed with states of other bases, switch sets and orders
    (built without that record), every count is still the full one."""
    base = plain(base_ops)
    states = [built(base, a), built(base, b), built(None, a), built(None, b),
              built(base, b, order), built(None, a, order), base]
    assert derived_from(states[0]) is not None and derived_from(states[2]) is not None
    for state in states:
        assert state.entries == sum(len(es) for c in state.switches.values()
                                    for es in c.tables.values())
        assert state.multicast_groups == sum(len(c.multicast_groups)
                                             for c in state.switches.values())
        assert tuple(state.switches) in (SWITCHES, order)
    for old in states:
        for new in states:
            assert count_writes(old, new) == len(diff(old, new))


def test_count_writes_counts_a_key_once_where_a_table_repeats_it():
    """A configuration made directly (not by a builder) may hold one key twice; its
    inserts and deletes count distinct keys, as :func:`diff` does."""
    one = TableEntry("MyIngress.a", (("k", Exact(1)),), "x")
    again = TableEntry("MyIngress.a", (("k", Exact(1)),), "y")
    other = TableEntry("MyIngress.a", (("k", Exact(2)),), "x")
    empty = ControlState(switches={"s1": SwitchConfig()})
    for entries in [(one, again), (one, again, other), (one,), (one, other)]:
        full = ControlState(switches={"s1": SwitchConfig(tables={"MyIngress.a": entries})})
        assert count_writes(empty, full) == len(diff(empty, full))
        assert count_writes(full, empty) == len(diff(full, empty))


@given(ops, ops, ops)
def test_derived_state_equals_the_builder_and_counts_as_it(base_ops, a, b):
    """:func:`derived_state` with the configurations a builder on the base made is
    that builder's state: the same content, totals and writes to every other state."""
    base = plain(base_ops)
    built_a, built_b = layered(base, a), layered(base, b)
    made = [derived_state(base, {sw: s.switches[sw] for sw in derived_from(s)[1]},
                          {"made": True}) for s in (built_a, built_b)]
    states = [*made, built_a, built_b, base, plain(a)]
    for state, want in zip(made, (built_a, built_b), strict=True):
        assert state.switches == want.switches and derived_from(state)[0] is base
        assert (state.entries, state.multicast_groups) == (want.entries, want.multicast_groups)
    for old in states:
        for new in states:
            assert count_writes(old, new) == len(diff(old, new))
