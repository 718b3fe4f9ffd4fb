"""``stackcast bench specs`` (issue 16 item 7): the harness in the default run.

The real measurement (every shipped spec on local[2], hours) is run by hand
and recorded in docs/BENCHMARKS.md; here: the process-tree memory reader, the
resumable JSON record, the CLI's checks, and one real run of a one-cell spec
through Spark.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from experiments.bench import specs as bench_specs
from experiments.cli.main import main


def test_process_tree_holds_grandchildren_and_their_memory():
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        tree: set[int] = set()
        while time.monotonic() < deadline and len(tree) < 2:
            tree = bench_specs._children({proc.pid}) - {proc.pid}
            time.sleep(0.05)
        assert len(tree) == 1  # the sleep, a grandchild of this process
        assert bench_specs._rss_mb(proc.pid) > 0
        assert bench_specs._rss_mb(2 ** 22 + 7) == 0.0  # no such process
    finally:
        subprocess.run(["pkill", "-P", str(proc.pid)], check=False)
        proc.kill()
        proc.wait()


def test_results_are_written_after_every_spec_and_resumed(tmp_path, monkeypatch):
    ran: list[str] = []

    def fake(name, path, master, timeout_s, work_dir=None):
        ran.append(name)
        status = "failed" if name == "camus" else "ok"
        return {"spec": name, "cells": 1, "status": status, "wall_s": 1.0,
                "peak_process_mb": 1.0, "peak_tree_mb": 2.0, "load_before": 0.0,
                "load_after": 0.0, "met": status == "ok"}

    monkeypatch.setattr(bench_specs, "run_spec", fake)
    out = tmp_path / "specs.json"
    bench_specs.run_specs(["quickstart", "camus"], out=out)
    assert ran == ["quickstart", "camus"]
    assert set(json.loads(out.read_text())["specs"]) == {"quickstart", "camus"}
    ran.clear()
    result = bench_specs.run_specs(["quickstart", "camus", "ch4-churn"], out=out, resume=True)
    assert ran == ["camus", "ch4-churn"]  # the finished one is kept, the failed one rerun
    assert list(result["specs"]) == ["quickstart", "camus", "ch4-churn"]
    text = bench_specs.format_specs(result)
    assert "| quickstart | 1 | 0 min 01 s |" in text and "**failed**" in text
    with pytest.raises(ValueError, match="unknown spec 'nope'"):
        bench_specs.run_specs(["nope"])


def test_cli_rejects_unknown_specs_and_resume_without_out(capsys):
    assert main(["bench", "specs", "--specs", "quickstart,nope"]) == 2
    assert "--specs: unknown spec 'nope'" in capsys.readouterr().err
    assert main(["bench", "specs", "--specs", "quickstart", "--resume"]) == 2
    assert "--resume needs --out" in capsys.readouterr().err


@pytest.mark.spark
def test_one_spec_end_to_end_on_spark(tmp_path: Path):
    spec = tmp_path / "tiny.toml"
    spec.write_text('[experiment]\nname = "tiny"\nnotifications = 2\nseeds = [1]\n'
                    'payload_bytes = [50]\n[grid]\n'
                    'topology = ["jellyfish:switches=8,degree=3,seed=1"]\n'
                    'strategy = ["multicast"]\nreceivers = ["uniform:percent=30"]\n')
    rec = bench_specs.run_spec("tiny", spec, master="local[1]", work_dir=str(tmp_path))
    assert rec["status"] == "ok", rec.get("error")
    assert rec["cells"] == 1 and rec["met"]
    assert rec["peak_tree_mb"] >= rec["peak_process_mb"] > 50  # a Python driver and a JVM
