"""The legend labels of a timed spec's report plots: the ``[timed]`` settings that
vary between the series, not each point's whole settings JSON
(experiments/reports/report.py :func:`timed_labels`)."""

from __future__ import annotations

import json
from typing import Any

import matplotlib
import pytest

import experiments.reports.report as report
from experiments.cells.spec import parse_spec_dict
from experiments.reports.report import aggregate_local, timed_labels, write_report
from experiments.runners.local import run_local
from experiments.storage.results import read_results
from sim.dataplanes.seeds import canonical_json

matplotlib.use("Agg")

SWEPT = {
    "experiment": {"name": "swept", "engine": "timed", "seeds": [1], "payload_bytes": [50]},
    "grid": {"topology": ["jellyfish:switches=8,degree=3,hosts=1,seed=1"],
             "strategy": ["switch-port", "tree"],
             "receivers": ["uniform:percent=25", "uniform:percent=50"]},
    "timed": {"publishers": 2, "duration_s": 0.002, "rate_hz": [1000.0, 4000.0],
              "recirc_port_bps": ["none", 1e7]},
}


def test_settings_that_vary_name_the_series_and_the_rest_are_left_out() -> None:
    a = canonical_json({"pass_s": 1e-5, "rate_hz": 100.0, "recirc_port_bps": None})
    b = canonical_json({"pass_s": 1e-5, "rate_hz": 3200.0, "recirc_port_bps": 1e7})
    c = canonical_json({"pass_s": 1e-5, "rate_hz": 3200.0, "recirc_port_bps": None})
    labels = timed_labels([a, b, c])
    assert labels[a] == "rate_hz=100.0 recirc_port_bps=null"
    assert labels[b] == "rate_hz=3200.0 recirc_port_bps=10000000.0"
    assert len(set(labels.values())) == 3


def test_settings_that_print_alike_keep_their_whole_json() -> None:
    a, b = canonical_json({"rate_hz": "1"}), canonical_json({"rate_hz": 1})
    assert timed_labels([a, b]) == {a: f"timed={a}", b: f"timed={b}"}


def test_a_timed_sweep_plots_one_series_per_strategy_and_setting(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    run_local(parse_spec_dict(SWEPT), tmp_path / "res", progress=False)
    points = aggregate_local(read_results(tmp_path / "res"))
    drawn: dict[str, list[str]] = {}

    def capture(series: Any, path: Any, *, metric: str, **_: Any) -> list[list[str]]:
        drawn[metric] = [s.label for s in series]
        return []

    monkeypatch.setattr(report, "save_line_plot", capture)
    write_report(points, tmp_path / "rep")
    assert drawn
    settings = {json.dumps([r["strategy"], r["timed"]]) for r in points}
    for metric, labels in drawn.items():
        assert len(labels) == len(set(labels)) == len(settings), metric
        assert not any("{" in label for label in labels), metric
        for strategy in ("switch-port", "tree"):
            assert {lb.partition(" ")[2] for lb in labels if lb.split()[0] == strategy} == {
                f"rate_hz={r} recirc_port_bps={p}"
                for r in ("1000.0", "4000.0") for p in ("null", "10000000.0")}


def test_a_plot_of_more_series_than_a_legend_holds_is_named_not_drawn(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond ``MAX_SERIES`` series a metric's plot is left out and the report says so
    (the sweep above has 8 series: 2 strategies x 4 settings)."""
    run_local(parse_spec_dict(SWEPT), tmp_path / "res", progress=False)
    points = aggregate_local(read_results(tmp_path / "res"))
    for limit, drawn in ((8, True), (7, False)):
        monkeypatch.setattr(report, "MAX_SERIES", limit)
        out = write_report(points, tmp_path / f"rep{limit}")
        text = out.read_text()
        pngs = list((tmp_path / f"rep{limit}").glob("swept-*.png"))
        assert bool(pngs) is drawn
        assert ("Not plotted (8 series, more than 7 in one legend" in text) is not drawn
