"""``stackcast bench scaling``: one process per run, its peak memory, resume, the table.

The figures themselves depend on the machine; these tests check what the
bench reports on a tiny network (a real child process each) and how it reads
its own records back.
"""

from __future__ import annotations

import json

import pytest

from experiments.bench import scaling
from experiments.cli.main import main
from strategies.base import make_strategy

TINY = 12  # jellyfish switches: a child process runs in a few seconds


def test_oversize_policy_splits_where_the_strategy_can() -> None:
    """Stack strategies split into jumbo packets per subtree; the virtual trees,
    which have no split, send whole jumbo frames; others get no policy."""
    assert scaling.strategy_params("switch-bitmask") == {
        "id_bits": 16, "bitmask_bits": 64, "on_oversize": "split", "mtu_bytes": 9000}
    assert scaling.strategy_params("vt-random") == {"bitmask_bits": 64, "on_oversize": "jumbo"}
    assert scaling.strategy_params("unicast") == {}
    for name in scaling.all_strategies():  # every choice is a valid parameter set
        make_strategy(name, scaling.strategy_params(name))


@pytest.mark.slow
def test_runs_resume_from_the_file_and_the_table_has_a_verdict(tmp_path) -> None:
    out = tmp_path / "runs.jsonl"
    ticks: list[dict] = []
    first = scaling.run_scaling([TINY], ["unicast", "elmo"], fattree=False, notifications=2,
                                out=out, tick=ticks.append)
    unicast, elmo = first["runs"]
    assert unicast["status"] == "ok" and unicast["rows"] == 2 and unicast["target_met"]
    assert 10 < unicast["max_rss_mb"] < scaling.RSS_TARGET_MB
    assert unicast["wall_s"] >= unicast["run_s"] > 0 and len(unicast["load"]) == 2
    assert 0 < unicast["cpu_s"]
    assert elmo["status"] == "refused" and "three-tier Clos" in elmo["error"]
    assert elmo["target_met"] is None
    assert len(ticks) == 2 and len(scaling.read_records(out)) == 2
    # a rerun reads both records instead of running them again
    again = scaling.run_scaling([TINY], ["unicast", "elmo"], fattree=False, notifications=2,
                                out=out)
    assert again["runs"] == first["runs"] and len(out.read_text().splitlines()) == 2
    table = scaling.format_scaling(first)
    assert f"| strategy | {TINY} switches |" in table
    assert f"| unicast | {unicast['max_rss_mb']:,.0f} MB, " in table and " s CPU) ok |" in table
    assert "| elmo | refused |" in table
    assert f"- elmo on {TINY} switches: SpecError:" in table


@pytest.mark.slow
def test_a_run_over_its_time_is_killed_and_reported() -> None:
    rec = scaling.measure(scaling.JELLYFISH.format(n=TINY), "unicast", 2, timeout_s=0.2)
    assert rec["status"] == "timeout" and rec["target_met"] is None
    assert rec["wall_s"] < 30
    assert scaling.verdict(rec).startswith("timeout after")


def test_verdict_marks_runs_over_the_target() -> None:
    over = {"status": "ok", "max_rss_mb": 5000.0, "wall_s": 12.0, "cpu_s": 9.4,
            "target_met": False}
    assert scaling.verdict(over) == "5,000 MB, 12 s (9 s CPU) OVER"


@pytest.mark.slow
def test_cli_prints_the_table_and_json(tmp_path, capsys) -> None:
    out = tmp_path / "runs.jsonl"
    args = ["bench", "scaling", "--sizes", str(TINY), "--strategies", "multicast",
            "--no-fattree", "--notifications", "2", "--quiet", "--out", str(out)]
    assert main(args) == 0
    assert "| multicast |" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0  # resumed from the file
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["strategy"] == "multicast" and run["notifications"] == 2
    assert len(out.read_text().splitlines()) == 1


@pytest.mark.parametrize("bad,message", [
    (["--notifications", "0"], "--notifications must be >= 1"),
    (["--timeout-s", "0"], "--timeout-s must be > 0"),
    (["--cpu-limit-s", "0.5"], "--cpu-limit-s must be >= 1"),
    (["--strategies", "nope"], "unknown strategy 'nope'"),
])
def test_cli_refuses_bad_input(bad, message, capsys) -> None:
    assert main(["bench", "scaling", "--sizes", str(TINY), "--no-fattree", "--quiet",
                 *bad]) != 0
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_over_its_cpu_time_is_stopped_and_reported() -> None:
    rec = scaling.measure(scaling.JELLYFISH.format(n=TINY), "unicast", 2, cpu_limit_s=1)
    assert rec["status"] == "cpu-limit" and rec["target_met"] is None
    assert rec["cpu_s"] > 0.5  # the kernel's tick: SIGXCPU comes at about 1 s
    assert scaling.verdict(rec).startswith("cpu-limit after")
