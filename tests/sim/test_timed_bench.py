"""``stackcast bench timed`` (issue 5): wiring in the default run, the measurement on demand."""

from __future__ import annotations

import json

import pytest

from experiments.cli.main import main

SMALL = ["--topology", "jellyfish:switches=12,degree=3,seed=1", "--publishers", "4",
         "--rate-hz", "200", "--duration-s", "0.01", "--reps", "1"]


def test_bench_timed_reports_rates_and_their_ratio(capsys):
    assert main(["bench", "timed", *SMALL, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    run = out["run"]
    assert out["raw_simpy_timeouts_per_s"] > 0 and run["events"] > 0 and run["hops"] > 0
    assert out["events_to_raw_ratio"] == pytest.approx(  # one repetition: its ratio
        run["events_per_s"] / out["raw_simpy_timeouts_per_s"])
    assert out["queue_depth"] > 1
    assert out["events_to_raw_at_depth_ratio"] == pytest.approx(
        run["events_per_s"] / out["raw_simpy_at_depth_per_s"])
    assert main(["bench", "timed", *SMALL]) == 0
    assert "packet-hops" in capsys.readouterr().out


def test_raw_simpy_reference_keeps_as_many_events_pending_as_processes(monkeypatch):
    import simpy

    from experiments.bench import timed as bench_timed

    depths = []
    step = simpy.Environment.step

    def counting_step(env):
        depths.append(len(env._queue))
        step(env)

    monkeypatch.setattr(simpy.Environment, "step", counting_step)
    wall, cpu = bench_timed.raw_simpy_timeouts_per_s(timeouts=600, processes=30)
    assert wall > 0 and cpu > 0
    assert max(depths) == 30 and depths.count(30) > 500  # 30 pending from the start to the end
    with pytest.raises(ValueError, match="processes must be >= 1"):
        bench_timed.raw_simpy_timeouts_per_s(processes=0)


@pytest.mark.benchmark
def test_bench_timed_on_the_255_switch_jellyfish(capsys):
    """The default measurement (select with -m benchmark)."""
    assert main(["bench", "timed", "--reps", "1"]) == 0
    print(capsys.readouterr().out)


def test_the_suites_1000_switch_model_runs():
    """The default suite's 1,000-switch item uses widths that address 1,000 switches
    (8-bit switch ids, the default, stop at 255: the suite failed on it once)."""
    from experiments.bench.timed import DURATION_1000_S, PARAMS_1000, TOPOLOGY_1000, model_run
    from strategies.base import make_strategy
    from topologies.specs import load_topology

    with pytest.raises(ValueError, match="id_bits"):
        make_strategy("switch-port").check_widths(load_topology(TOPOLOGY_1000))
    run = model_run(topology=TOPOLOGY_1000, params=PARAMS_1000, duration_s=0.002)
    assert run["notifications"] > 0 and run["hops"] > 0 and run["drops"] == 0
    assert 0 < DURATION_1000_S <= 0.2
