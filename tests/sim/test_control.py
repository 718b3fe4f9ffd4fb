"""ControlState lookups, diffs and the runtime-JSON export."""

from __future__ import annotations

import pytest

from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    Lpm,
    Range,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    Ternary,
    diff,
    to_runtime_json,
)


def entry(table, *match, action="a", params=(), priority=0):
    return TableEntry(table=table, match=tuple((f"f{i}", m) for i, m in enumerate(match)),
                      action=action, params=params, priority=priority)


def test_exact_and_ternary_lookup_respects_priority():
    cfg = SwitchConfig(tables={"t": (
        entry("t", Exact(1), Ternary(0, 0), action="any", priority=1),
        entry("t", Exact(1), Ternary(5, 0xFF), action="five", priority=2),
        entry("t", Exact(2), Ternary(0, 0), action="two", priority=1),
    )})
    assert cfg.lookup("t", 1, 5).action == "five"
    assert cfg.lookup("t", 1, 6).action == "any"
    assert cfg.lookup("t", 2, 5).action == "two"
    assert cfg.lookup("t", 3, 5) is None
    assert cfg.lookup("missing", 1) is None


def test_lpm_longest_prefix_and_range():
    cfg = SwitchConfig(tables={"lpm": (
        entry("lpm", Lpm(0b1000_0000, 1, 8), action="short"),
        entry("lpm", Lpm(0b1010_0000, 3, 8), action="long"),
    ), "rng": (entry("rng", Range(10, 20), action="in", priority=1),)})
    assert cfg.lookup("lpm", 0b1010_1111).action == "long"
    assert cfg.lookup("lpm", 0b1100_0000).action == "short"
    assert cfg.lookup("lpm", 0b0100_0000) is None
    assert cfg.lookup("rng", 15).action == "in"
    assert cfg.lookup("rng", 21) is None


def test_diff_orders_inserts_before_deletes_and_detects_modify():
    b1 = StateBuilder()
    b1.add_entry("s1", entry("t", Exact(1), action="x", params=(("port", 1),)))
    b1.add_entry("s1", entry("t", Exact(2), action="x", params=(("port", 1),)))
    old = b1.build(["s1"])
    b2 = StateBuilder()
    b2.add_entry("s1", entry("t", Exact(1), action="x", params=(("port", 2),)))
    b2.add_entry("s1", entry("t", Exact(3), action="x", params=(("port", 1),)))
    b2.add_group("s1", 7, [1, 2])
    new = b2.build(["s1"])
    writes = diff(old, new)
    kinds = [(w.type, getattr(w.entity, "match", None) or w.entity.group_id) for w in writes]
    assert [k for k, _ in kinds] == ["MODIFY", "INSERT", "INSERT", "DELETE"]
    assert writes[-1].entity.match == (("f0", Exact(2)),)
    assert diff(new, new) == []


def test_duplicate_entry_is_refused():
    b = StateBuilder()
    b.add_entry("s1", entry("t", Exact(1)))
    with pytest.raises(ValueError, match="duplicate"):
        b.add_entry("s1", entry("t", Exact(1)))


def test_runtime_json_shape():
    b = StateBuilder()
    b.add_entry("s1", entry("MyIngress.t", Exact(4), Ternary(1, 3), action="MyIngress.go",
                            params=(("port", 2),), priority=5))
    b.add_group("s1", 3, [1, 4])
    b.add_clone_session("s1", 2, 2)
    doc = to_runtime_json(b.build(["s1"]).config("s1"))
    assert doc["table_entries"] == [{"table": "MyIngress.t", "match": {"f0": 4, "f1": [1, 3]},
                                     "action_name": "MyIngress.go", "action_params": {"port": 2},
                                     "priority": 5}]
    assert doc["multicast_group_entries"][0]["replicas"] == [
        {"egress_port": 1, "instance": 1}, {"egress_port": 4, "instance": 1}]
    assert doc["clone_session_entries"][0]["clone_session_id"] == 2


def test_state_counts():
    b = StateBuilder()
    b.add_entry("s1", entry("t", Exact(1)))
    b.add_entry("s2", entry("u", Exact(1)))
    b.add_group("s2", 1, [1])
    st: ControlState = b.build(["s1", "s2", "s3"])
    assert st.entries == 2 and st.multicast_groups == 1
    assert st.per_switch() == {"s1": {"t": 1}, "s2": {"u": 1}, "s3": {}}
