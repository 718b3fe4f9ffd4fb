"""Timed cells from experiment specs (issue 5): engine dispatch, rows, determinism."""

from __future__ import annotations

import pytest

from experiments.cells.pipeline import run_cell
from experiments.cells.schema import ROWS, TIMED_ROWS
from experiments.cells.spec import load_spec, parse_spec_dict
from experiments.cells.timed import simulate_cell
from topologies.registry import SpecError

TOPO = "jellyfish:switches=16,degree=3,seed=1"


def spec(timed, strategies=("tree",), notifications=6, receivers="uniform:percent=30"):
    return parse_spec_dict({
        "experiment": {"name": "t", "engine": "timed", "notifications": notifications,
                       "seeds": [1]},
        "grid": {"topology": [TOPO], "strategy": list(strategies), "receivers": [receivers]},
        "timed": timed,
    })


def test_timed_grid_sweeps_the_timed_table_and_keeps_static_ids():
    s = spec({"rate_hz": [10.0, 20.0], "recirc_port_bps": ["none", 1e9], "duration_s": 0.01})
    cells = s.cells()
    assert len(cells) == 4 and len({c.cell_id for c in cells}) == 4
    assert {dict(c.timed)["rate_hz"] for c in cells} == {10.0, 20.0}
    static = parse_spec_dict({"experiment": {"name": "t", "notifications": 6, "seeds": [1]},
                              "grid": {"topology": [TOPO], "strategy": ["tree"],
                                       "receivers": ["uniform:percent=30"]}}).cells()[0]
    assert "engine" not in static.canonical() and "timed" not in static.canonical()
    assert cells[0].canonical()["engine"] == "timed"


@pytest.mark.parametrize("data, message", [
    ({"experiment": {"name": "t"}, "grid": {}, "timed": {"rate_hz": 1.0}},
     "needs experiment.engine"),
    ({"experiment": {"name": "t", "engine": "warp"}, "grid": {}}, "engine must be one of"),
    ({"experiment": {"name": "t", "engine": "timed"},
      "grid": {"topology": [TOPO], "strategy": ["tree"], "receivers": ["uniform:percent=30"]},
      "timed": {"rate": 1.0}}, "unknown key 'rate'"),
    ({"experiment": {"name": "t", "engine": "timed"},
      "grid": {"topology": [TOPO], "strategy": ["tree"], "receivers": ["uniform:percent=30"]},
      "timed": {"pass_s": -1.0}}, "pass_s must be >= 0"),
])
def test_bad_timed_specs_fail_early_naming_the_field(data, message):
    with pytest.raises(SpecError, match=message):
        parse_spec_dict(data)


def test_run_cell_dispatches_on_the_engine_and_rows_extend_the_static_schema():
    assert TIMED_ROWS.names[:len(ROWS)] == ROWS.names
    cell = spec({"rate_hz": 400.0, "duration_s": 0.02, "publishers": 3,
                 "changes_hz": 200.0}).cells()[0]
    table = run_cell(cell)
    assert table.schema == TIMED_ROWS and table.num_rows > 10
    rows = table.to_pylist()
    assert [r["run"] for r in rows] == sorted(r["run"] for r in rows)
    assert len({r["cell_changes"] for r in rows}) == 1 and rows[0]["cell_changes"] > 0
    assert all(r["delay_worst_ms"] == r["latency_last_ms"] for r in rows if r["delivered"])
    assert table.equals(run_cell(cell))  # same spec and seed: same rows


def test_per_notification_mode_publishes_the_static_cells_notifications():
    timed = spec({"rate_hz": 10.0, "receivers": "per-notification", "arrival": "periodic",
                  "switch_latency_s": 9e-5}, strategies=("unicast", "multicast"))
    static = parse_spec_dict({"experiment": {"name": "t", "notifications": 6, "seeds": [1]},
                              "grid": {"topology": [TOPO], "strategy": ["unicast"],
                                       "receivers": ["uniform:percent=30"]}})
    s_rows = run_cell(static.cells()[0]).to_pylist()
    for cell in timed.cells():
        t_rows = run_cell(cell).to_pylist()
        assert [r["publisher"] for r in t_rows] == [r["publisher"] for r in s_rows]
        assert [r["receivers"] for r in t_rows] == [r["receivers"] for r in s_rows]
        assert [r["publish_s"] for r in t_rows] == pytest.approx([k / 10 for k in range(6)])
        for r in t_rows:  # zero load, 1 Gbit/s: the analytic delay plus serialization
            assert r["analytic_delay_ms"] <= r["delay_worst_ms"] < r["analytic_delay_ms"] + 0.01
        if cell.strategy == "unicast":
            assert [r["frames"] for r in t_rows] == [r["frames"] for r in s_rows]


def test_same_spec_and_seed_give_identical_event_traces():
    cell = spec({"rate_hz": 300.0, "duration_s": 0.02, "publishers": 3, "changes_hz": 100.0,
                 "arrival": "poisson"}, strategies=("hybrid",)).cells()[0]
    first = simulate_cell(cell, trace=True)[1].trace
    assert len(first) > 200
    assert first == simulate_cell(cell, trace=True)[1].trace


@pytest.mark.parametrize("name", ["ch3-delay", "recirculation-capacity", "churn-in-time"])
def test_shipped_timed_specs_load(name):
    from experiments.cells.spec import SPEC_DIR

    s = load_spec(SPEC_DIR / f"{name}.toml")
    assert s.engine == "timed" and s.cells()


def test_saturation_finds_the_last_load_before_loss_or_latency_blowup():
    from experiments.cells.timed import saturation

    def row(rate, load, ratio, p99, port="none"):
        return {"strategy": "tree", "params": "{}", "topology": TOPO,
                "receivers_model": "uniform:percent=30", "payload_bytes": 50,
                "timed": f'{{"rate_hz":{rate},"recirc_port_bps":"{port}"}}',
                "cell_offered_load_hz": load, "cell_delivery_ratio": ratio,
                "cell_latency_p99_ms": p99}

    rows = [row(1, 100, 1.0, 0.2), row(2, 200, 1.0, 0.3), row(4, 400, 1.0, 5.0),
            row(1, 100, 1.0, 0.2, "1e7"), row(2, 200, 0.9, 0.2, "1e7")]
    by_port = {r["timed"]["recirc_port_bps"]: r for r in saturation(rows)}
    assert (by_port["none"]["capacity_hz"], by_port["none"]["saturated_hz"]) == (200, 400)
    assert (by_port["1e7"]["capacity_hz"], by_port["1e7"]["saturated_hz"]) == (100, 200)
