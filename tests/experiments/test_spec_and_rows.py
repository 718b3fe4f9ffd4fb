"""Spec expansion, cell identity and row determinism on the local engine."""

from __future__ import annotations

import pyarrow.compute as pc

from experiments.cells.pipeline import run_cell
from experiments.cells.spec import parse_spec_dict
from experiments.reports.report import aggregate_local, write_report
from experiments.runners.local import run_local
from experiments.storage.results import read_results

BASE = {
    "experiment": {"name": "t", "notifications": 6, "seeds": [1, 2], "payload_bytes": [50]},
    "grid": {"topology": ["jellyfish:switches=16,degree=3,seed=1"],
             "strategy": ["unicast", "multicast", "broadcast"],
             "receivers": ["uniform:percent=20", "uniform:percent=60"]},
    "strategy_params": {"multicast": {"tree": ["spt", "steiner"]}},
}


def test_grid_expands_with_strategy_parameter_points():
    spec = parse_spec_dict(BASE)
    cells = spec.cells()
    # (unicast + broadcast + 2 multicast points) x 2 receivers x 2 seeds
    assert len(cells) == 4 * 2 * 2
    assert len({c.cell_id for c in cells}) == len(cells)
    assert [c.cell_id for c in cells] == [c.cell_id for c in parse_spec_dict(BASE).cells()]


def test_same_seed_identical_rows_and_other_seed_differs():
    spec = parse_spec_dict(BASE)
    a, b = spec.cells()[0], spec.cells()[1]
    assert a.seed != b.seed and a.strategy == b.strategy
    assert run_cell(a).equals(run_cell(a))
    assert run_cell(a).column("publisher") != run_cell(b).column("publisher")


def test_strategies_see_the_same_notifications():
    spec = parse_spec_dict(BASE)
    by_strategy = {}
    for c in spec.cells():
        if c.seed == 1 and c.receivers == "uniform:percent=60":
            t = run_cell(c)
            by_strategy[(c.strategy, c.params)] = (t.column("publisher").to_pylist(),
                                                   t.column("receivers").to_pylist())
    assert len(set(map(str, by_strategy.values()))) == 1


def test_local_run_report_and_exactness(tmp_path):
    spec = parse_spec_dict(BASE)
    counts = run_local(spec, tmp_path / "out", progress=False)
    assert counts == {"cells": 16, "ran": 16, "skipped": 0}
    table = read_results(tmp_path / "out")
    assert table.num_rows == 16 * 6
    exact = table.filter(pc.field("strategy") != "broadcast")
    assert pc.sum(exact.column("false_positives")).as_py() == 0
    assert pc.sum(exact.column("false_negatives")).as_py() == 0
    assert pc.all(pc.equal(exact.column("delivered"), exact.column("receivers"))).as_py()
    points = aggregate_local(table)
    assert sum(p["count"] for p in points) == table.num_rows
    md = write_report(points, tmp_path / "report")
    text = md.read_text()
    assert "## t" in text and "| multicast |" in text
    assert (tmp_path / "report" / "t-bytes.png").stat().st_size > 1000


def test_report_x_axis_splits_series_by_other_receiver_parameters():
    from experiments.reports.report import _x_axis

    specs = {f"clustered:scenario={s},churn={c}" for s in ("nearby", "distant") for c in (0, 50)}
    name, xs, rest = _x_axis(specs)
    assert name == "churn"
    assert xs["clustered:scenario=nearby,churn=50"] == 50.0
    assert rest["clustered:scenario=distant,churn=0"] == "scenario=distant"
    assert _x_axis({"uniform:percent=10"})[0] is None
