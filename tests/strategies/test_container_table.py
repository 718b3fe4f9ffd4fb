"""The incremental container-table writer equals the full rebuild (fill_container_table).

:class:`~strategies.range_filter.container_table.ContainerTable` redoes only
the entries a container touched; the reference is
:func:`~strategies.range_filter.range_boxes.fill_container_table` into an
empty StateBuilder, with its own group allocator fed the same history. Both
must give the same tables (entries in order), multicast groups and control
writes (the writer's marked count against the reference comparison), under
random add/remove churn, every priority rule, with and without the
redundancy queue, with configurations skipped between churn steps.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.content_space import Box
from sim.dataplanes.control_state import (
    EMPTY_SWITCH,
    ControlState,
    StateBuilder,
    SwitchConfig,
    _config_writes,
    count_writes,
)
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.content_filter import GroupAllocator
from strategies.range_filter.container_table import ContainerTable
from strategies.range_filter.range_boxes import Container, _range_match, fill_container_table
from topologies.specs import load_topology

TABLE = "t"
FORWARD, MULTICAST = ("fwd", "port"), ("mc", "group")


def _reference(sw: str, c: Container | None, rule: Any, groups: GroupAllocator,
               match: Any = _range_match) -> SwitchConfig:
    b = StateBuilder()
    fill_container_table(b, sw, c, rule=rule, groups=groups, made={}, table=TABLE,
                         forward=FORWARD, multicast=MULTICAST, match=match)
    return b.build([sw]).switches[sw]


def _same(mine: SwitchConfig, ref: SwitchConfig) -> None:
    assert dict(mine.tables) == dict(ref.tables)
    assert list(mine.multicast_groups.items()) == list(ref.multicast_groups.items())
    assert dict(mine.clone_sessions) == dict(ref.clone_sessions) == {}


_box = st.tuples(st.tuples(st.integers(0, 15), st.integers(0, 15)),
                 st.tuples(st.integers(0, 15), st.integers(0, 15)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_box, st.integers(1, 4), st.sampled_from(["add", "remove", "new"]),
                          st.booleans()), min_size=1, max_size=25),
       st.sampled_from(["volume", "inverse-volume", "count", "thesis"]), st.booleans())
def test_writer_equals_the_full_rebuild_under_churn(ops, rule, queue) -> None:
    """After every churn step whose table is written: same configuration and the same
    control writes as the reference (and the reference writes are what count_writes
    reports for the writer's states, through the marked counts)."""
    groups, ref_groups = GroupAllocator(), GroupAllocator()
    writer = ContainerTable(rule=rule, groups=groups, table=TABLE, forward=FORWARD,
                            multicast=MULTICAST, match=_range_match)
    c = Container(redundancy_queue=queue, space_volume=256)
    ids: list[int] = []
    prev_mine: SwitchConfig = writer.config("s1", c)
    prev_ref = _reference("s1", c, rule, ref_groups)
    for (xs, ys), port, op, write in ops:
        if op == "remove" and ids:
            c.remove(ids.pop(0))
        elif op == "new" and not ids:  # the switch gets another container
            c = Container(redundancy_queue=queue, space_volume=256)
        else:
            ids.append(c.add(Box((tuple(sorted(xs)), tuple(sorted(ys)))), port))
        if not write:
            continue
        mine, ref = writer.config("s1", c), _reference("s1", c, rule, ref_groups)
        _same(mine, ref)
        if mine is not EMPTY_SWITCH:
            assert mine.__dict__.get("_writes_from") is not None or mine is prev_mine
        assert count_writes(ControlState({"s1": prev_mine}), ControlState({"s1": mine})) \
            == _config_writes(prev_ref, ref)
        assert writer.config("s1", c) is mine  # unchanged container: the same object
        prev_mine, prev_ref = mine, ref


def test_a_container_going_empty_releases_its_groups_and_writes_deletes() -> None:
    groups, ref_groups = GroupAllocator(), GroupAllocator()
    writer = ContainerTable(rule="count", groups=groups, table=TABLE, forward=FORWARD,
                            multicast=MULTICAST, match=_range_match)
    c = Container(redundancy_queue=False)
    a = c.add(Box(((0, 9), (0, 9))), 1)
    b = c.add(Box(((5, 9), (5, 9))), 2)
    full = writer.config("s1", c)
    _same(full, _reference("s1", c, "count", ref_groups))
    assert len(full.tables[TABLE]) == 2 and len(full.multicast_groups) == 1
    c.remove(a)
    c.remove(b)
    assert writer.config("s1", c) is EMPTY_SWITCH
    assert groups.assign("s1", ()) == {}
    assert count_writes(ControlState({"s1": full}), ControlState({"s1": EMPTY_SWITCH})) == 3
    c.add(Box(((1, 2), (1, 2))), 3)  # and back: everything is written again
    again = writer.config("s1", c)
    _ref = _reference("s1", c, "count", ref_groups)
    _same(again, _ref)
    assert count_writes(ControlState({"s1": EMPTY_SWITCH}), ControlState({"s1": again})) == 1


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["kundel-bitmask", "range-boxes"]),
       st.sampled_from(["volume", "inverse-volume", "count", "thesis"]),
       st.integers(0, 2**16), st.integers(1, 3))
def test_strategies_write_what_the_full_rebuild_writes(name, rule, seed, churn) -> None:
    """kundel-bitmask and range-boxes through install and churn updates: every switch's
    configuration equals the reference fill of the strategy's containers, and the
    control writes between consecutive states equal the reference states' writes; the
    state costs through the per-switch memo equal costs computed afresh."""
    topology = load_topology("fattree:k=4")
    model = receiver_model(f"content:subs=12,publishers=2,subscribers=6,dims=2,bits=6,"
                           f"width=0.3,churn={churn}")
    pop = model.population(topology, child_rng(seed, "population"))
    strategy = make_strategy(name, {"priority": rule})
    ref_groups = GroupAllocator()
    match = (lambda box: strategy._entry_match(box.bounds)) if name == "kundel-bitmask" \
        else _range_match
    table, fwd, mc = strategy._table.table, strategy._table.forward, strategy._table.multicast
    prev = prev_ref = None
    writes = 0
    for version in range(6):
        knowledge = Knowledge(population=pop.at(version))
        state = strategy.install(topology, knowledge) if prev is None \
            else strategy.update(topology, prev, knowledge)
        configs = {}
        for sw in topology.switches:
            b = StateBuilder()
            fill_container_table(b, sw, strategy.containers.get(sw), rule=rule,
                                 groups=ref_groups, made={}, table=table, forward=fwd,
                                 multicast=mc, match=match)
            configs[sw] = b.build([sw]).switches[sw]
            _same(state.config(sw), configs[sw])
        ref = ControlState(switches=configs)
        costed = strategy.state_cost(topology, state)  # through the per-switch memo
        memo, strategy.cost_memo = strategy.cost_memo, {}
        assert costed == strategy.state_cost(topology, state)  # costed afresh
        strategy.cost_memo = memo
        if prev is not None:
            assert count_writes(prev, state) == count_writes(prev_ref, ref)
            writes += count_writes(prev_ref, ref)
        prev, prev_ref = state, ref
    assert writes > 0  # the churn did rewrite tables
