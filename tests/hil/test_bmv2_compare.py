"""The BMv2-vs-model comparison and the ``hil validate`` pre-checks (no BMv2 needed)."""

from __future__ import annotations

from collections import Counter

import pytest

from experiments.cli.main import main
from hil.compare import (
    Report,
    compare_delivered,
    compare_switch,
    first_difference,
    port_frames,
)
from hil.hop import HOP, Visit, group_visits, reconfigure_writes
from sim.dataplanes.control_state import CloneSession, Exact, SwitchConfig, TableEntry

A, B = b"\x01" * 20, b"\x02" * 20


def test_port_frames_keeps_duplicates():
    got = port_frames([(1, A), (1, A), (2, B)])
    assert got == {1: Counter({A: 2}), 2: Counter({B: 1})}


def test_equal_visit_has_no_mismatch():
    want = port_frames([(1, A), (2, B)])
    assert compare_switch(0, "s1", want, port_frames([(2, B), (1, A)]), 3, 3) == []


def test_duplicate_frame_is_a_mismatch_on_its_port():
    found = compare_switch(4, "s2", port_frames([(1, A)]), port_frames([(1, A), (1, A)]), 1, 1)
    assert [(m.notification, m.switch, m.port, m.what) for m in found] == [(4, "s2", 1, "frames")]
    assert found[0].expected == [A.hex()] and found[0].actual == [A.hex(), A.hex()]
    assert "1 unexpected, 0 missing" in found[0].detail


def test_frame_on_the_wrong_port_names_both_ports():
    found = compare_switch(0, "s1", port_frames([(1, A)]), port_frames([(3, A)]), 1, 1)
    assert sorted(m.port for m in found) == [1, 3]


def test_different_bytes_and_passes():
    found = compare_switch(0, "s1", port_frames([(1, A)]), port_frames([(1, B)]), 2, 5)
    assert [m.what for m in found] == ["frames", "passes"]
    assert (found[1].expected, found[1].actual, found[1].port) == (2, 5, None)


def test_first_difference_names_the_byte():
    c = Counter
    assert first_difference(c([A, B]), c([B, A])) == ""
    wrong = A[:5] + b"\x07" + A[6:]
    assert first_difference(c([A]), c([wrong])) == (
        "first difference at byte 5: model 0x01, bmv2 0x07 (frames of 20 and 20 bytes)")
    assert first_difference(c([A]), c([A[:12]])) == (
        "first difference at byte 12: model frame has 20 bytes, bmv2 frame 12")
    assert first_difference(c([A]), c()) == "model frame (20 bytes) not sent by bmv2"
    assert first_difference(c(), c([B])).startswith("bmv2 sent an unexpected frame (20 bytes)")
    # the unmatched bmv2 frame closest to the missing model frame is the one compared
    assert "byte 19" in first_difference(c([A, B]), c([B, A[:19] + b"\x09", b"\x05" * 20]))


def test_a_wrong_byte_is_reported_where_it_is():
    wrong = b"\x01" * 19 + b"\x02"
    found = compare_switch(0, "s1", port_frames([(1, A)]), port_frames([(1, wrong)]), 1, 1)
    assert "first difference at byte 19: model 0x01, bmv2 0x02" in found[0].detail


def test_delivered_counts_copies():
    assert compare_delivered(0, {"h1": 1, "h2": 0}, {"h1": 1}) == []
    (m,) = compare_delivered(7, {"h1": 1}, {"h1": 2, "h3": 1})
    assert (m.notification, m.what, m.expected, m.actual) == (
        7, "delivered", {"h1": 1}, {"h1": 2, "h3": 1})


def test_report_match_rate_and_json():
    r = Report("network", "t", "s", "p")
    r.notifications = 2
    r.add_visit([])
    r.add_visit(compare_switch(1, "s1", port_frames([(1, A)]), {}, 1, 1))
    r.add_delivery([])
    r.add_delivery([])
    assert r.match_rate == pytest.approx(3 / 4)
    doc = r.to_json()
    assert doc["notifications"] == 2 and doc["switch_visits"] == 2
    assert doc["match_rate"] == pytest.approx(0.75)
    assert doc["mismatches"] == [{"notification": 1, "switch": "s1", "port": 1,
                                  "what": "frames", "expected": [A.hex()], "actual": [],
                                  "detail": "bmv2 sent 0 unexpected, 1 missing; model frame "
                                            "(20 bytes) not sent by bmv2"}]
    assert "notification 1, switch s1, port 1: frames differ" in r.format_text()
    r.retried(compare_switch(1, "s1", port_frames([(1, A)]), port_frames([(1, B)]), 1, 2))
    assert r.retries == 1 and r.retry_reasons == {
        "missing frames": 1, "unexpected frames": 1, "passes": 1}
    empty = Report("hop", "t", "s", "p")
    assert empty.match_rate == 1.0


def _entry(value: int, port: int) -> TableEntry:
    return TableEntry("MyIngress.t", (("hdr.x", Exact(value)),), "MyIngress.fwd",
                      (("port", port),))


def test_reconfigure_deletes_before_inserting():
    old = SwitchConfig(tables={"MyIngress.t": (_entry(1, 1), _entry(2, 2))},
                       clone_sessions={3: CloneSession(3, 3)})
    new = SwitchConfig(tables={"MyIngress.t": (_entry(2, 4), _entry(5, 1))})
    writes = reconfigure_writes(old, new)
    ops = [(w.type, w.entity.match[0][1].value if isinstance(w.entity, TableEntry)
            else "session") for w in writes]
    assert sorted(ops[:2], key=str) == [("DELETE", "session"), ("DELETE", 1)]
    assert sorted(ops[2:]) == [("INSERT", 5), ("MODIFY", 2)]
    assert {w.switch for w in writes} == {HOP}


def test_group_visits_by_switch_and_equal_config():
    c1 = SwitchConfig(tables={"MyIngress.t": (_entry(1, 1),)})
    c1_again = SwitchConfig(tables={"MyIngress.t": (_entry(1, 1),)})
    c2 = SwitchConfig()
    visits = [Visit(n, sw, 1, b"", cfg, (), 1)
              for n, sw, cfg in [(0, "s1", c1), (0, "s2", c2), (1, "s1", c1_again),
                                 (2, "s1", c2)]]
    groups = group_visits(visits)
    assert [(sw, [v.notification for v in vs]) for sw, _, vs in groups] == [
        ("s1", [0, 1]), ("s2", [0]), ("s1", [2])]


# -- CLI pre-checks: one line, exit 2 -------------------------------------------------

ARGS = ["hil", "validate", "--topology", "jellyfish:switches=6,degree=3,seed=1",
        "--strategy", "unicast", "--notifications", "2"]


def test_missing_bmv2_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setattr("hil.validate.find_binary", lambda: None)
    assert main(ARGS) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("stackcast: error: simple_switch_grpc is not on PATH")
    assert "\n" not in err


def test_not_root_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setattr("hil.validate.find_binary", lambda: "/bin/true")
    monkeypatch.setattr("hil.validate.os.geteuid", lambda: 1000)
    assert main(ARGS) == 2
    assert "needs root" in capsys.readouterr().err


def test_family_without_program_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.delitem(__import__("hil.programs").programs.PROGRAMS, "l2")
    assert main(ARGS) == 2
    err = capsys.readouterr().err
    assert "data-plane family 'l2' has no P4 program" in err


def test_bad_mode_and_counts(capsys):
    assert main([*ARGS[:-1], "0"]) == 2
    assert "--notifications must be >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*ARGS, "--mode", "star"])


def test_switch_observer_sees_every_visit_and_changes_nothing():
    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell
    from sim.engines.static import run_notification

    cell = Cell(experiment="t", topology="jellyfish:switches=8,degree=3,seed=2",
                strategy="switch-port", params=(), receivers="uniform:percent=40",
                payload_bytes=20, seed=1, notifications=2)
    topo, strategy, _ = cell_setup(cell)
    for item in cell_notifications(cell, topo, strategy):
        seen = []
        args = (topo, strategy, item.state, item.notification, item.receivers, item.payload)
        plain = run_notification(*args)
        observed = run_notification(*args, on_switch=lambda *v, seen=seen: seen.append(v))
        assert observed.links == plain.links and observed.delivered == plain.delivered
        passes: Counter[str] = Counter()
        for switch, _, _, result in seen:
            passes[switch] += result.passes
        assert passes == Counter({s: c.passes for s, c in plain.switches.items()})
        out_of_switches = sum(f for (src, _), (f, _) in plain.links.items()
                              if not topo.is_host(src))
        assert sum(len(r.emitted) for *_, r in seen) == out_of_switches


def test_group_ids_beyond_bmv2_are_refused_with_the_fix():
    from hil.validate import BMV2_MAX_GROUP_ID, check_group_ids
    from sim.dataplanes.control_state import ControlState, MulticastGroup

    ok = SwitchConfig(multicast_groups={BMV2_MAX_GROUP_ID: MulticastGroup(BMV2_MAX_GROUP_ID,
                                                                          ((1, 1),))})
    check_group_ids("switch-mcgroup", ControlState({"s1": ok}))
    big = SwitchConfig(multicast_groups={8191: MulticastGroup(8191, ((1, 1), (13, 1)))})
    with pytest.raises(ValueError, match="8191 on s2.*group_ids=sequential"):
        check_group_ids("switch-mcgroup", ControlState({"s1": ok, "s2": big}))
