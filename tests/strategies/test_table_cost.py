"""Table cost model: entry kinds, range expansion, entry bits, capacities by table kind."""

from __future__ import annotations

import pytest

from sim.dataplanes.control_state import Exact, Range, StateBuilder, TableEntry
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.table_cost import TableCapacity, TableSpec, prefix_count, state_cost
from topologies.registry import SpecError
from topologies.specs import load_topology


def _state():
    b = StateBuilder()
    # s1: one two-field range entry (TCAM) and two exact entries (SRAM); s2: nothing
    b.add_entry("s1", TableEntry("R", (("a", Range(1, 14)), ("b", Range(0, 15))), "fwd",
                                 (("port", 1),), priority=1))
    b.add_entry("s1", TableEntry("E", (("k", Exact(3)),), "fwd", (("port", 2),)))
    b.add_entry("s1", TableEntry("E", (("k", Exact(4)),), "fwd", (("port", 2),)))
    b.add_group("s1", 1, (1, 2))
    return b.build(["s1", "s2"])


SPECS = {"R": TableSpec(key_bits={"a": 4, "b": 4}, action_bits=9),
         "E": TableSpec(key_bits={"k": 8}, action_bits=9)}


def test_entry_kinds_bits_and_range_expansion() -> None:
    state = _state()
    native = state_cost(state, SPECS, lambda t: t == "R", 2)
    assert native.tcam_entries == 1 and native.tcam_bits == 8
    assert native.sram_entries == 2 and native.sram_bits == 2 * (8 + 9)
    assert native.filter_entries == {"s1": 1, "s2": 0}
    assert native.multicast_groups == 1 and native.stages == 2
    expanded = state_cost(state, SPECS, lambda t: t == "R", 2, "expand")
    # [1, 14] on 4 bits needs 2w - 2 = 6 prefixes, [0, 15] one: the product is 6
    assert prefix_count(1, 14, 4) == 6
    assert expanded.tcam_entries == 6 and expanded.tcam_bits == 6 * 8
    assert expanded.per_switch_tcam == {"s1": 6, "s2": 0}
    assert expanded.per_switch_sram == {"s1": 2, "s2": 0}


@pytest.mark.parametrize(("capacity", "over"), [
    (TableCapacity(), []),
    (TableCapacity(tcam_entries=5), ["s1"]),      # 6 expanded TCAM entries
    (TableCapacity(tcam_entries=6), []),
    (TableCapacity(sram_entries=1), ["s1"]),
    (TableCapacity(sram_entries=2), []),
    (TableCapacity(multicast_groups=0), []),
    (TableCapacity(stages=1), ["s1"]),            # s2 holds no table
])
def test_capacity_by_table_kind(capacity: TableCapacity, over: list[str]) -> None:
    state = _state()
    cost = state_cost(state, SPECS, lambda t: t == "R", 2, "expand")
    assert capacity.overflowing_switches(state, cost) == over


def test_content_strategies_report_switches_over_capacity() -> None:
    topology = load_topology("fattree:k=4")
    pop = receiver_model("content:subs=30,publishers=1,subscribers=7,dims=2,bits=16,"
                         "width=0.25").population(topology, child_rng(2, "population"))
    view = pop.at(0)
    rows = {}
    for cap in (0, 10):
        s = make_strategy("range-boxes", {"tcam_capacity": cap})
        state = s.install(topology, Knowledge(population=view))
        cost = s.state_cost(topology, state)
        busy = sum(1 for n in cost.per_switch_tcam.values() if n > 10)
        assert busy > 0  # the workload does overflow 10 entries somewhere
        rows[cap] = (s.params.capacities().overflowing_switches(state, cost), busy)
    assert rows[0][0] == []
    assert len(rows[10][0]) == rows[10][1]
    with pytest.raises(SpecError, match="tcam_capacity must be >= 0"):
        make_strategy("range-boxes", {"tcam_capacity": -1})
