"""``stackcast report``: step-model tables and plots, labels, number format, log
scale and coinciding series (experiments/reports/report.py, columns.py, plots.py)."""

from __future__ import annotations

import re
from typing import Any

import matplotlib
import pytest

from experiments.cells.spec import parse_spec_dict
from experiments.reports.columns import COLUMNS, axis_label, fmt, header, y_scale
from experiments.reports.plots import Series, coinciding, line_figure
from experiments.reports.report import (
    HEADLINE,
    LABEL_HEADLINE,
    PLOTTED,
    TIMED_HEADLINE,
    aggregate_local,
    has_steps,
    write_report,
)
from experiments.runners.local import run_local
from experiments.storage.results import read_results

matplotlib.use("Agg")

POLICIES = ("HEAD", "RULE")
CHURN = {
    "experiment": {"name": "churn", "notifications": 5, "seeds": [1, 2], "payload_bytes": [50]},
    "grid": {"topology": ["fattree:k=4"], "strategy": ["hybrid"],
             "receivers": [f"replacement:policy={p},percent=40,ratio_dynamic=30,step=25"
                           for p in POLICIES]},
    "strategy_params": {"hybrid": {"ratio": "30:70"}},
}
SWEEP = {
    "experiment": {"name": "sweep", "notifications": 3, "seeds": [1], "payload_bytes": [50]},
    "grid": {"topology": ["fattree:k=4"],
             "strategy": ["unicast", "multicast", "switch-port", "hops"],
             "receivers": ["uniform:percent=20", "uniform:percent=60"]},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("rep")
    run_local(parse_spec_dict(CHURN), out / "churn", progress=False)
    run_local(parse_spec_dict(SWEEP), out / "sweep", progress=False)
    return out


def _table(text: str) -> list[list[str]]:
    rows = [line.strip("|").split(" | ") for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("|---")]
    return [[c.strip() for c in r] for r in rows]


# -- step models (seed 000 Fig. 4.8) -------------------------------------------------

def test_step_models_are_declared_by_the_receiver_model_not_the_spec_name() -> None:
    assert has_steps("replacement:policy=HEAD,step=10")
    assert not has_steps("uniform:percent=30")
    assert not has_steps("content:churn=1")       # per-notification churn, not a sweep
    assert not has_steps("no-such-model:x=1")


def test_aggregation_keeps_the_steps_and_sums_control_writes_over_them(results: Any) -> None:
    points = aggregate_local(read_results(results / "churn"))
    assert len(points) == len(POLICIES) * 5
    for policy in POLICIES:
        pts = sorted((p for p in points if f"policy={policy}" in p["receivers_model"]),
                     key=lambda p: p["run"])
        assert [p["run"] for p in pts] == [0, 1, 2, 3, 4]
        assert all(p["count"] == 2 for p in pts)        # one row per seed and step
        total = 0.0
        for p in pts:  # mean of per-cell running sums = running sum of per-step means
            total += p["control_writes_mean"]
            assert p["control_writes_cum_mean"] == pytest.approx(total)
    rule = [p for p in points if "policy=RULE" in p["receivers_model"]]
    assert max(p["control_writes_mean"] for p in rule) > 0   # RULE changes T' at once


def test_churn_report_has_a_row_per_step_and_the_fig_4_8_plots(results: Any) -> None:
    md = write_report(aggregate_local(read_results(results / "churn")), results / "rc")
    rows = _table(md.read_text())
    hdr, body = rows[0], rows[1:]
    assert "subscribers replaced (%)" in hdr
    assert header("control_writes") in hdr and header("control_writes_cum") in hdr
    step = hdr.index("subscribers replaced (%)")
    assert sorted(r[step] for r in body) == sorted(["0", "25", "50", "75", "100"] * 2)
    for metric in ("control_writes", "control_writes_cum", "header_bytes", "state_entries"):
        assert (results / "rc" / f"churn-{metric}.png").stat().st_size > 5000, metric
    assert "Fig. 4.8" in md.read_text()


# -- labels, units, number format --------------------------------------------------

def test_every_reported_metric_has_a_label_and_unit_declared_once() -> None:
    for m in {*HEADLINE, *LABEL_HEADLINE, *PLOTTED, *TIMED_HEADLINE, "control_writes_cum"}:
        assert m in COLUMNS, m
        assert COLUMNS[m].unit or COLUMNS[m].log is False, m    # only ratios go without
    assert axis_label("header_bytes") == "header bytes per notification (B)"
    assert axis_label("control_writes", per="step") == "P4Runtime writes per step (writes)"
    assert axis_label("delay_worst_ms") == "worst-case delay per notification (ms)"
    assert axis_label("state_entries") == "state entries, all switches (entries)"
    assert header("bytes") == "bytes on links (B)"


@pytest.mark.parametrize(("value", "text"), [
    (36271.4, "36,271"), (1234567, "1,234,567"), (4032.0, "4,032"), (0.5734, "0.573"),
    (0.6, "0.6"), (21.6, "21.6"), (99.96, "100"), (1.234e-5, "0.0000123"), (0, "0"),
    (-0.0175, "-0.0175"), (float("nan"), "n/a"), (None, "-")])
def test_one_number_format(value: Any, text: str) -> None:
    assert fmt(value) == text


def test_report_tables_use_the_one_format_and_the_sweep_plots_carry_units(results: Any
                                                                          ) -> None:
    md = write_report(aggregate_local(read_results(results / "sweep")), results / "rs")
    text = md.read_text()
    assert not re.search(r"\d[eE][+-]\d", text)             # no exponent anywhere
    for row in _table(text)[1:]:
        for cell in row[4:]:
            for number in cell.split(" ± "):
                assert re.fullmatch(r"-?\d{1,3}(,\d{3})*(\.\d+)?", number), cell
    assert (results / "rs" / "sweep-header_bytes.png").stat().st_size > 5000
    hdr = _table(text)[0]
    assert header("header_entries") in hdr
    assert not any(header(m) in hdr for m in LABEL_HEADLINE)   # no typed labels here


def test_virtual_tree_tables_split_the_header_by_label_type(results: Any) -> None:
    """Fig. 6.9b's tree / stop / hop split is in the table of a strategy with typed labels,
    and the three means add up to the header entries (seed 000 §6.5.3)."""
    md = write_report(aggregate_local(read_results(results / "churn")), results / "rl")
    rows = _table(md.read_text())
    hdr, body = rows[0], rows[1:]
    cols = [hdr.index(header(m)) for m in LABEL_HEADLINE]
    entries = hdr.index(header("header_entries"))
    for row in body:
        parts = [float(row[c].split(" ± ")[0].replace(",", "")) for c in cols]
        assert sum(parts) == pytest.approx(float(row[entries].split(" ± ")[0].replace(",", "")),
                                           rel=0.01)
    assert any(float(row[cols[0]].split(" ± ")[0]) > 0 for row in body)   # hybrid uses trees


# -- log scale -----------------------------------------------------------------------

def test_log_scale_where_the_values_span_two_decades() -> None:
    assert y_scale([1.0, 50.0]) == ("linear", None)
    assert y_scale([1.0, 100.0]) == ("log", None)
    assert y_scale([0.0, 2.0, 24000.0]) == ("symlog", 2.0)          # zeros stay visible
    assert y_scale([-1.0, 1.0, 1000.0]) == ("linear", None)
    assert y_scale([0.001, 0.5], "link_fp_rate") == ("linear", None)  # a ratio, never log
    fig, _ = line_figure([Series("a", (1.0, 2.0), (8.0, 30.0), (0.0, 0.0)),
                          Series("b", (1.0, 2.0), (24000.0, 24000.0), (0.0, 0.0)),
                          Series("c", (1.0, 2.0), (0.0, 0.0), (0.0, 0.0))],
                         metric="state_entries", title="t", xlabel="x")
    assert fig.axes[0].get_yscale() == "symlog"
    assert fig.axes[0].get_ylabel() == "state entries, all switches (entries)"
    fig, _ = line_figure([Series("a", (1.0, 2.0), (20.0, 30.0), (1.0, 1.0))],
                         metric="header_bytes", title="t", xlabel="x")
    assert fig.axes[0].get_yscale() == "linear"


# -- coinciding series ---------------------------------------------------------------

def test_coinciding_series_get_distinct_styles_and_are_named() -> None:
    xs = (10.0, 50.0, 90.0)
    series = [Series("broadcast", xs, (0.0, 0.0, 0.0), (0.0,) * 3),
              Series("hops", xs, (21.6, 77.2, 120.0), (1.0,) * 3),
              Series("multicast", xs, (0.0, 0.0, 0.0), (0.0,) * 3),
              Series("switch-port", xs, (21.7, 77.1, 120.0), (1.0,) * 3),
              Series("tree", xs, (4.0, 4.0, 4.0), (0.0,) * 3)]
    assert coinciding(series) == [["broadcast", "multicast"], ["hops", "switch-port"]]
    fig, groups = line_figure(series, metric="header_bytes", title="t", xlabel="x")
    assert groups == [["broadcast", "multicast"], ["hops", "switch-port"]]
    ax = fig.axes[0]
    by_label = {c.get_label(): c.lines[0] for c in ax.containers}  # errorbar data lines
    assert len(by_label) == 5
    styles = {(ln.get_marker(), ln.get_linestyle(), ln.get_color()) for ln in by_label.values()}
    assert len(styles) == 5
    assert "multicast (= broadcast)" in by_label and "switch-port (= hops)" in by_label
    # the lower series shows as a larger ring around the upper one
    assert by_label["broadcast"].get_markersize() > by_label["multicast (= broadcast)"] \
        .get_markersize()
    assert by_label["hops"].get_markerfacecolor() == "none"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "broadcast", "hops", "multicast (= broadcast)", "switch-port (= hops)", "tree"]
    assert coinciding(series[:2] + series[4:]) == []


@pytest.mark.spark
def test_spark_aggregates_step_models_like_the_local_aggregation(results: Any) -> None:
    from experiments.runners.spark import aggregate_frame, spark_schema
    from experiments.runners.spark_session import spark_session

    table = read_results(results / "churn")
    local = aggregate_local(table)
    with spark_session("local[1]", app_name="stackcast-tests") as session:
        frame = session.createDataFrame([tuple(r.values()) for r in table.to_pylist()],
                                        schema=spark_schema(table.schema))
        remote = aggregate_frame(frame)
    assert [list(r) for r in remote] == [list(r) for r in local]
    for r, loc in zip(remote, local, strict=True):
        for key, value in loc.items():
            if isinstance(value, float):
                assert r[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
            else:
                assert r[key] == value, key
