"""``stackcast bench timed``: how fast the timed engine runs on this machine.

Figures, each the median of ``reps`` repetitions:

raw SimPy
    timeouts per second of one SimPy process that does nothing but
    ``yield env.timeout(1)``;
raw SimPy at the model's queue depth
    the same with as many such processes as the model has events pending on
    average (``queue_depth``, from one untimed probe run of the model). SimPy
    keeps pending events in a binary heap, so its cost per event grows with
    their number: this is the ceiling for a SimPy model with that much going
    on at once, where one process is the ceiling for a model with nothing
    concurrent;
model events
    SimPy events per second of wall time while the timed engine runs a
    loaded network (default: ``switch-port`` on the 255-switch jellyfish of
    seed 000 ch. 3, 64 publishers at 100 notifications/s each, 30 %
    subscribers, 0.2 s of simulated time: 1,253 notifications, 3.4 million
    events), and their ratios to both raw rates (how much of SimPy's ceiling
    the model reaches; the rest is the model's own Python work: data planes,
    queues, recording). The first notification of each publisher runs the
    data-plane model at every switch of its tree; later ones hit the switches'
    caches. A long study is mostly the latter: in 0.05 s of simulated time
    (``--duration-s 0.05``) the first notifications take a third of the run;
packet-hops
    frames carried over links per second of wall time, and pipeline passes
    per second.

Building the network and installing the state are timed apart (``setup_s``)
and are not in the rates. Rates are given per wall-clock second and per
CPU-second of this process (the latter is steadier on a shared machine).
Nothing here runs in the default test run; the numbers depend on the machine.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import simpy

from sim.dataplanes.seeds import child_rng
from sim.engines.timed.config import TimedConfig, Workload
from sim.engines.timed.engine import TimedEngine, events_scheduled
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from topologies.specs import load_topology

TOPOLOGY = "jellyfish:switches=255,degree=4,hosts=1,seed=1"
#: the large network of the issue 9 target (>= 0.4x one SimPy process)
TOPOLOGY_1000 = "jellyfish:switches=1000,degree=4,hosts=1,seed=1"
#: Strategy parameters at 1,000 switches: 8-bit switch ids address 255 switches, and
#: stacks over that many switches need jumbo frames.
PARAMS_1000 = {"id_bits": "16", "on_oversize": "jumbo"}
#: Simulated seconds at 1,000 switches (about 30 s of wall time per run on this machine).
DURATION_1000_S = 0.05
DURATION_S = 0.2


def raw_simpy_timeouts_per_s(timeouts: int = 200_000, processes: int = 1
                             ) -> tuple[float, float]:
    """Timeouts per second (wall, CPU) of ``processes`` bare SimPy processes.

    Each process yields ``timeout(1)`` over and over, starting at a distinct
    offset in [0, 1), so ``processes`` events are always pending and none tie.
    """
    if processes < 1:
        raise ValueError(f"processes must be >= 1; got {processes}")
    env = simpy.Environment()
    per = max(timeouts // processes, 1)

    def ticker(offset: float) -> Any:
        yield env.timeout(offset)
        for _ in range(per):
            yield env.timeout(1.0)

    for i in range(processes):
        env.process(ticker(i / processes))
    start, cpu0 = time.perf_counter(), time.process_time()
    env.run()
    done = per * processes
    return done / (time.perf_counter() - start), done / (time.process_time() - cpu0)


def build_model(topology: str = TOPOLOGY, strategy: str = "switch-port", publishers: int = 64,
                rate_hz: float = 100.0, duration_s: float = DURATION_S, percent: float = 30.0,
                seed: int = 1, params: dict[str, str] | None = None) -> TimedEngine:
    """The loaded network of the benchmark, with its workload started (not run);
    ``params``: the strategy's parameters (default: its defaults)."""
    topo = load_topology(topology)
    strat = make_strategy(strategy, params)
    population = receiver_model(f"uniform:percent={percent}").population(
        topo, child_rng(seed, "population"))
    hosts = list(topo.hosts)
    rng = child_rng(seed, "bench-publishers")
    pubs = sorted((hosts[int(i)] for i in rng.choice(len(hosts), min(publishers, len(hosts)),
                                                     replace=False)), key=topo.host_id)
    subs = {p: population.receivers(p, child_rng(seed, "bench-subscribers", i))
            for i, p in enumerate(pubs)}
    knowledge = Knowledge(receiver_sets={p: (r,) for p, r in subs.items()})
    state = strat.install(topo, knowledge if strat.scope == "receivers" else Knowledge(
        receiver_sets={p: () for p in pubs}))
    engine = TimedEngine(topo, strat, state, TimedConfig(buffer_frames=256))
    for p, r in subs.items():
        engine.set_truth(p, r)
    engine.start_workload(Workload(rate_hz=rate_hz, arrival="poisson", duration_s=duration_s),
                          pubs, seed)
    return engine


def queue_depth(**model: Any) -> float:
    """Mean number of pending SimPy events over the events of one (untimed) model run
    (SimPy's heap and the engine's lane, :mod:`sim.engines.timed.loop`)."""
    env = build_model(**model).env
    total, steps = 0, 0
    while (pending := env.pending()):
        total += pending
        steps += 1
        env.step()
    return total / max(steps, 1)


def model_run(**model: Any) -> dict[str, float]:
    """One loaded run of the timed engine (:func:`build_model`); wall-clock rates of its
    events and hops."""
    t0 = time.perf_counter()
    engine = build_model(**model)
    setup = time.perf_counter() - t0
    start, cpu0 = time.perf_counter(), time.process_time()
    result = engine.run()
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    events = events_scheduled(engine.env)
    rec = result.recorder
    return {
        "setup_s": setup, "wall_s": wall, "cpu_s": cpu, "sim_s": result.t_end,
        "notifications": float(len(rec.notes)), "events": float(events),
        "hops": float(rec.hops), "passes": float(result.total("passes")),
        "events_per_s": events / wall, "hops_per_s": rec.hops / wall,
        "passes_per_s": result.total("passes") / wall,
        "events_per_cpu_s": events / cpu, "hops_per_cpu_s": rec.hops / cpu,
        "drops": float(sum(rec.drops.values())),
    }


def run_bench_timed(reps: int = 3, tick: Callable[[], None] = lambda: None,
                    **model: Any) -> dict[str, Any]:
    """Raw SimPy rates, model rates and their ratios (medians of ``reps``); ``tick`` is
    called after the queue-depth probe and after each repetition (progress)."""
    if reps < 1:
        raise ValueError(f"--reps must be >= 1; got {reps}")
    depth = queue_depth(**model)
    tick()
    processes = max(round(depth), 1)
    raws, raws_cpu, deep, runs = [], [], [], []
    for _ in range(reps):  # alternate, so a background load hits all alike
        wall, cpu = raw_simpy_timeouts_per_s()
        raws.append(wall)
        raws_cpu.append(cpu)
        deep.append(raw_simpy_timeouts_per_s(processes=processes)[0])
        runs.append(model_run(**model))
        tick()
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    raw, raw_cpu, raw_deep = (statistics.median(raws), statistics.median(raws_cpu),
                              statistics.median(deep))
    return {
        "cpus": os.cpu_count(), "reps": reps,
        "model": {"topology": model.get("topology", TOPOLOGY),
                  "strategy": model.get("strategy", "switch-port"),
                  "publishers": model.get("publishers", 64),
                  "rate_hz": model.get("rate_hz", 100.0),
                  "duration_s": model.get("duration_s", DURATION_S),
                  "percent": model.get("percent", 30.0),
                  "params": dict(model.get("params") or {})},
        "raw_simpy_timeouts_per_s": raw,
        "raw_simpy_timeouts_per_cpu_s": raw_cpu,
        "queue_depth": depth,
        "raw_simpy_at_depth_per_s": raw_deep,
        "run": med,
        # medians of each repetition's ratio: a model run and the references
        # measured right before it share the machine's speed of the moment
        "events_to_raw_ratio": statistics.median(
            r["events_per_s"] / x for r, x in zip(runs, raws, strict=True)),
        "events_to_raw_ratio_cpu": statistics.median(
            r["events_per_cpu_s"] / x for r, x in zip(runs, raws_cpu, strict=True)),
        "events_to_raw_at_depth_ratio": statistics.median(
            r["events_per_s"] / x for r, x in zip(runs, deep, strict=True)),
    }


def format_bench_timed(result: dict[str, Any]) -> str:
    """Human-readable summary of :func:`run_bench_timed`."""
    m, r = result["model"], result["run"]
    return "\n".join([
        f"stackcast bench timed: {result['cpus']} CPUs, median of {result['reps']} repetitions",
        f"  raw SimPy           {result['raw_simpy_timeouts_per_s']:,.0f} timeouts/s "
        f"({result['raw_simpy_timeouts_per_cpu_s']:,.0f} per CPU-second)",
        f"  raw SimPy, {result['queue_depth']:.0f} pending "
        f"{result['raw_simpy_at_depth_per_s']:,.0f} timeouts/s (as many processes as the model "
        "has events pending on average)",
        f"  model               {m['strategy']} on {m['topology']}, {m['publishers']} publishers"
        f" x {m['rate_hz']:g} Hz, {m['percent']:g}% subscribers, {m['duration_s']:g} s simulated",
        f"  run                 {r['notifications']:,.0f} notifications, {r['events']:,.0f} events,"
        f" {r['hops']:,.0f} packet-hops, {r['passes']:,.0f} passes in {r['wall_s']:.2f} s "
        f"wall, {r['cpu_s']:.2f} s CPU (setup {r['setup_s']:.2f} s, {r['drops']:,.0f} drops)",
        f"  model events        {r['events_per_s']:,.0f} events/s = "
        f"{result['events_to_raw_ratio']:.2f} x one SimPy process (the verdict's reference; "
        f"{result['events_to_raw_at_depth_ratio']:.2f} x at the model's queue depth, extra); "
        f"per CPU-second {r['events_per_cpu_s']:,.0f} ({result['events_to_raw_ratio_cpu']:.2f} x)",
        f"  packet-hops         {r['hops_per_s']:,.0f} hops/s, {r['passes_per_s']:,.0f} passes/s;"
        f" per CPU-second {r['hops_per_cpu_s']:,.0f} hops",
    ])
