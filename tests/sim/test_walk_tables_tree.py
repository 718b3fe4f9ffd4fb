"""The walk tables' ``check_tree`` answer blocks in one loop equal the definition.

:meth:`~sim.dataplanes.virtual_tree.walk_tables.WalkTables._tree_actions` lays out
a ``check_tree`` tuple's answers (seed 000 §5.2.6, Listing 5.3: tree label ->
stored port mask or multicast group) as
``_actions(entries, lambda e: _tree(e, seq, groups))`` does. Property-tested on
random tuples: exact and other matches, repeated and out-of-range keys, port
masks (empty, past the bitmask, not answered by ``extract_port``), groups that
exist or not, other actions and missing parameters; the same return value, the
same array laid out and the same ``max_outs``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import Exact, MulticastGroup, SwitchConfig, TableEntry, Ternary
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import (
    CHECK_TREE,
    EXTRACT_PORT,
    KEY_LABEL,
    SET_TREE_GROUP,
    SET_TREE_PORTS,
    extract_port_entries,
)
from sim.dataplanes.virtual_tree.walk_tables import WalkTables


@st.composite
def tree_entries(draw: st.DrawFn, ports: list[int]) -> TableEntry:
    key = draw(st.sampled_from(["exact", "exact", "exact", "ternary", "two"]))
    label = draw(st.integers(-2, 40) | st.just(1 << 62))
    match: tuple = ((KEY_LABEL, Exact(label)),)
    if key == "ternary":
        match = ((KEY_LABEL, Ternary(label, 0xFF)),)
    elif key == "two":
        match = (*match, ("meta.x", Exact(1)))
    action = draw(st.sampled_from([SET_TREE_PORTS, SET_TREE_PORTS, SET_TREE_GROUP, "other"]))
    params: tuple = ()
    if action == SET_TREE_GROUP:
        params = (("group", draw(st.integers(0, 4))),)
    elif draw(st.integers(0, 9)):  # now and then no parameter at all
        mask = draw(st.integers(0, 1 << 10) | st.lists(st.sampled_from(ports or [1])).map(
            lambda on: sum({1 << (p - 1) for p in on})))  # mostly ports extract_port answers
        params = (("ports", mask),)
    return TableEntry(CHECK_TREE, match, action, params)


@settings(max_examples=400, deadline=None)
@given(st.data(), st.lists(st.integers(1, 9), unique=True, max_size=9),
       st.dictionaries(st.integers(0, 4), st.lists(st.integers(0, 12), max_size=4), max_size=4),
       st.sampled_from([6, 8, 64]), st.booleans())
def test_tree_actions_equal_the_definition(data, ports, groups, bits, odd_extract):
    entries = data.draw(st.lists(tree_entries(ports), max_size=12))
    fmt = LabelFormat(bitmask_bits=bits)
    extract = extract_port_entries(LabelFormat(bitmask_bits=64), ports)
    if odd_extract and extract:  # a table the lowest-bit shortcut does not read
        extract.append(TableEntry(EXTRACT_PORT, extract[0].match, extract[0].action,
                                  (("port", 12),), priority=100))
    config = SwitchConfig(
        tables={CHECK_TREE: tuple(entries), EXTRACT_PORT: tuple(extract)},
        multicast_groups={g: MulticastGroup(g, tuple((p, 1) for p in ps))
                          for g, ps in groups.items()})
    table, ext, mgroups = config.tables[CHECK_TREE], config.tables[EXTRACT_PORT], \
        config.multicast_groups
    want_tables, got_tables = WalkTables(fmt), WalkTables(fmt)
    for tables in (want_tables, got_tables):  # something laid out before
        tables.pool.extend([7, 7, 7])
    seq_want = want_tables._extract_answers(config, ext)
    seq_got = got_tables._extract_answers(config, ext)
    want = want_tables._actions(table, lambda e: want_tables._tree(e, seq_want, mgroups))
    got = got_tables._tree_actions(table, seq_got, mgroups)
    assert got == want
    assert got_tables.array().tolist() == want_tables.array().tolist()
    assert got_tables.max_outs == want_tables.max_outs
