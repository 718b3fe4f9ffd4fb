"""``stackcast hil calibrate`` against real BMv2 (issues 7, 16).

Needs ``simple_switch_grpc`` on PATH and root; run with
``PATH=/opt/p4/bin:$PATH`` where BMv2 is built outside the repo.
"""

from __future__ import annotations

import dataclasses
import json
import os

from support.bmv2 import BMV2_MODULE

import hil.calibrate
from experiments.cli.main import main
from hil.calibrate_fit import TERM_NAMES
from hil.netns import PREFIX, namespaces

pytestmark = BMV2_MODULE

SMALL = ["--strategies", "switch-port,multicast,tree", "--notifications", "2", "--rounds", "2",
         "--reps", "3", "--no-progress", "--json"]


def test_calibrate_profiles_times_and_holds_out_strategies_and_families(capsys):
    rc = main(["hil", "calibrate", *SMALL, "--repeat", "2"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["disagreements"] == []
    assert set(out["strategies"]) == {"switch-port", "multicast", "tree"}
    assert {s["family"] for s in out["strategies"].values()} == {
        "source_routing", "l2", "virtual_tree"}
    for s in out["strategies"].values():
        assert s["profiled"] == s["visits"] > 0
    assert out["visits_timed"] == [sum(s["visits"] for s in out["strategies"].values())] * 2
    assert set(out["terms"]) == set(TERM_NAMES)
    assert all(len(t["per_repeat"]) == 2 and min(t["per_repeat"]) >= 0
               for t in out["terms"].values())
    for by in ("family", "strategy"):
        h = out["held_out"][by]
        assert set(h["per_strategy_median_rel_error"]) == set(out["strategies"])
        assert h["visit_median_rel_error"]["median"] > 0
    assert set(out["timed"]) == {"source_routing_port", "l2_multicast", "virtual_tree"}
    # removed again (names carry the creating process's pid)
    assert not [n for n in namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]


def test_a_wrong_expected_frame_is_a_disagreement_with_its_first_byte(capsys, monkeypatch):
    prepare = hil.calibrate.prepare

    def corrupted(workload, notifications, seed):  # noqa: ANN001, ANN202
        prep = prepare(workload, notifications, seed)
        if workload.strategy == "tree":
            config, members = prep.groups[0]
            key, v = members[0]
            port, frame = v.emits[0]
            bad = frame[:20] + bytes([frame[20] ^ 0xFF]) + frame[21:]
            members[0] = (key, dataclasses.replace(v, emits=((port, bad), *v.emits[1:])))
        return prep

    monkeypatch.setattr(hil.calibrate, "prepare", corrupted)
    rc = main(["hil", "calibrate", *SMALL])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    (d,) = out["disagreements"]
    assert (d["strategy"], d["during"]) == ("tree", "profile")
    assert "first difference at byte 20" in d["detail"]
    tree = out["strategies"]["tree"]
    assert tree["profiled"] == tree["visits"] - 1
    assert out["visits_timed"] == [sum(s["profiled"] for s in out["strategies"].values())]
