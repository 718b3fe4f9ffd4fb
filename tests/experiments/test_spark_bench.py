"""``stackcast bench spark``: a smoke run of the benchmark (never in the default run).

Selected only with ``-m benchmark``; ``-m spark`` alone skips it, because the
benchmark takes about a minute and its figures depend on the machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.bench.spark import format_bench, run_bench_spark
from experiments.cli.main import main

pytestmark = [pytest.mark.spark, pytest.mark.benchmark]


@pytest.fixture(autouse=True)
def _only_when_selected(request: pytest.FixtureRequest) -> None:
    if "benchmark" not in (request.config.getoption("-m") or ""):
        pytest.skip("benchmark: select with -m benchmark")


def test_bench_reports_overhead_and_speedup(tmp_path: Path) -> None:
    result = run_bench_spark(cells=4, reps=1, trivial_cells=8, work_dir=tmp_path)
    assert result["per_cell_overhead"]["cells"] == 8
    assert result["speedup"]["local1_s"] > 0 and result["speedup"]["local2_s"] > 0
    assert result["speedup"]["ratio"] == pytest.approx(
        result["speedup"]["local1_s"] / result["speedup"]["local2_s"])
    s = result["speedup"]
    assert len(s["efficiency_runs"]) == len(s["pool1_runs_s"]) == len(s["pool2_runs_s"]) == 1
    assert s["efficiency"] == pytest.approx(
        (s["local1_s"] / s["pool1_runs_s"][0]) / (s["local2_s"] / s["pool2_runs_s"][0]))
    text = format_bench(result)
    assert "ms/cell" in text and "speed-up" in text and "efficiency" in text


def test_bench_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "spark", "--cells", "2", "--reps", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["speedup"]["target"] == 1.7
