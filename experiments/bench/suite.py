"""``stackcast bench``: the speed suite of issue 9, each figure beside a same-run reference.

Items (each the median of ``reps`` repetitions; references and subjects
alternate, so a background load hits both alike):

static
    Static-engine notifications per second on the 255-switch jellyfish of
    seed 000 ch. 3 at 30 % receivers, 50 B payload, for switch-bitmask,
    switch-port and hops: their fast path (the strategy's
    :meth:`~strategies.base.Strategy.fast_path` hook, here the tree walk of
    :mod:`sim.dataplanes.source_routing.fast_path` with its numba kernel where
    numba is installed, on ``notifications`` at once) against
    the pass-by-pass reference
    (:func:`sim.engines.static.run_notification` on the first ``ref_notifications``).
    The fast figures are only reported if the fast path's metrics equal the
    reference's on those notifications. One process: per second of CPU time
    is per core. Also the whole cell runner (workload draw, rows) per second.
encoder
    ``strategy.encode`` per second on zoo:Dfn, 40 rules per switch, nearby
    clusters, for vt-freq-relation and vt-clusters, against the
    ``source-routed`` encoder (hop labels only) on the same notifications.
timed, timed-1000
    Model events per second against one raw SimPy process's timeouts per
    second (the verdict; the ratio at the model's queue depth is printed
    beside it), on the 255-switch jellyfish and on the 1,000-switch one
    (:mod:`experiments.bench.timed`).
spark
    Cells per second of a CPU-bound sweep on local[2] against local[1]
    (:mod:`experiments.bench.spark`).
bound (opt-in)
    Engine cost per notification against the lower bound of issue 16 item 1
    (:mod:`experiments.bench.bound`).
cells
    Whole cells, rows per CPU second, beside the fast path alone
    (:mod:`experiments.bench.cells`).
ch6 (opt-in)
    Wall time of ``experiments/specs/ch6-churn.toml`` on Spark ``local[2]``
    (:mod:`experiments.bench.ch6`).

Nothing here runs in the default test run; figures depend on the machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from experiments.bench.bound import (
    BOUND_STRATEGIES,
    BOUND_TOPOLOGIES,
    CONTENT_BOUND_STRATEGIES,
    CONTENT_BOUND_WORKLOADS,
    bench_bound,
    format_bound,
)
from experiments.bench.cells import bench_cells, cell_rate, format_cells
from experiments.bench.ch6 import bench_ch6, format_ch6
from experiments.bench.common import STATIC_TOPOLOGY, judge, mark, median, rate, static_workload

STATIC_STRATEGIES = ("switch-bitmask", "switch-port", "hops")
ENCODER_TOPOLOGY = "zoo:Dfn"
ENCODER_STRATEGIES = ("vt-freq-relation", "vt-clusters")
ENCODER_REFERENCE = "source-routed"
ITEMS = ("static", "encoder", "timed", "timed-1000", "spark", "cells", "ch6", "bound")
DEFAULT_ITEMS = ("static", "encoder", "timed", "timed-1000", "spark", "cells")
__all__ = ["STATIC_TOPOLOGY", "static_workload", "run_suite", "format_suite", "bench_static",
           "bench_encoder", "bench_timed_item", "bench_spark_item"]


# -- 1. static engine ------------------------------------------------------------


def bench_static(reps: int = 3, notifications: int = 400, ref_notifications: int = 10,
                 strategies: Iterable[str] = STATIC_STRATEGIES, payload_bytes: int = 50,
                 tick: Callable[[], None] = lambda: None,
                 topology: str = STATIC_TOPOLOGY) -> dict[str, Any]:
    """Fast path vs reference, notifications per second (see the module docstring)."""
    from sim.dataplanes.delivery import DelayModel, row_metrics
    from sim.dataplanes.packet import Notification, payload_for
    from sim.engines.static import run_notification
    from strategies.base import Knowledge, make_strategy

    if ref_notifications < 1 or notifications < ref_notifications:
        raise ValueError("static bench: need 1 <= ref_notifications <= notifications; got "
                         f"{ref_notifications} and {notifications}")
    topo, _, cases = static_workload(notifications, topology)
    pubs, sets = [p for p, _ in cases], [r for _, r in cases]
    notes = [Notification(i, p) for i, p in enumerate(pubs)]
    out: dict[str, Any] = {"topology": topology, "receivers": "uniform:percent=30",
                           "payload_bytes": payload_bytes, "notifications": notifications,
                           "ref_notifications": ref_notifications, "strategies": {}}
    for name in strategies:
        strategy = make_strategy(name)
        state = strategy.install(topo, Knowledge())
        fast = strategy.fast_path(topo, DelayModel())
        if fast is None:
            raise ValueError(f"static bench: {name!r} has no fast path")
        refs: list[Any] = []

        def reference(strategy: Any = strategy, state: Any = state, refs: list[Any] = refs
                      ) -> int:
            refs[:] = [run_notification(topo, strategy, state, notes[i], sets[i],
                                        payload_for(notes[i], payload_bytes))
                       for i in range(ref_notifications)]
            return ref_notifications

        def fast_batch(fast: Any = fast) -> int:
            done = fast.metrics(pubs, sets, payload_bytes)
            return sum(m is not None for m in done)

        fast_batch()  # warm: the per-root tree tables are built on first use
        ref_w, ref_c, fast_w, fast_c = [], [], [], []
        for _ in range(reps):
            w, c = rate(reference)
            ref_w.append(w)
            ref_c.append(c)
            w, c = rate(fast_batch)
            fast_w.append(w)
            fast_c.append(c)
            tick()
        got = fast.metrics(pubs[:ref_notifications], sets[:ref_notifications], payload_bytes)
        if got != [row_metrics(d) for d in refs]:
            raise RuntimeError(f"static bench: the fast path disagrees with the reference on "
                               f"{name}; not reporting its speed")
        fast_per_cpu = median(fast_c)
        out["strategies"][name] = {
            "impl": fast.impl, "fast_per_s": median(fast_w), "fast_per_cpu_s": fast_per_cpu,
            "reference_per_s": median(ref_w), "reference_per_cpu_s": median(ref_c),
            "ratio": fast_per_cpu / median(ref_c),
            "target": judge("static", name, fast_per_cpu),
        }
    out["cell_rows"] = cell_rate(notifications, reps, topology)
    tick()
    return out



# -- 2. virtual-tree encoder ------------------------------------------------------


def bench_encoder(reps: int = 3, notifications: int = 300, max_rules: int = 40,
                  strategies: Iterable[str] = ENCODER_STRATEGIES,
                  tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """``strategy.encode`` per CPU second against the source-routed encoder."""
    from sim.dataplanes.packet import Notification, payload_for
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    from strategies.base import Knowledge, make_strategy
    from topologies.specs import load_topology

    topo = load_topology(ENCODER_TOPOLOGY)
    pop = receiver_model("clustered:scenario=nearby").population(topo, child_rng(1, "population"))
    rng = child_rng(1, "bench-encoder")
    notes: list[tuple[Notification, frozenset[str], bytes]] = []
    while len(notes) < notifications:
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        recv = pop.receivers(pub, rng)
        if recv:
            note = Notification(len(notes), pub)
            notes.append((note, recv, payload_for(note, 50)))
    knowledge = Knowledge(population=pop, seed=1)

    def encoder(name: str) -> Callable[[], int]:
        strategy = make_strategy(name, {"max_rules": max_rules})
        state = strategy.install(topo, knowledge)
        strategy.encode(topo, state, *notes[0])  # compile what the encoder caches

        def run() -> int:
            for note, recv, payload in notes:
                strategy.encode(topo, state, note, recv, payload)
            return len(notes)
        return run

    runs = {name: encoder(name) for name in (ENCODER_REFERENCE, *strategies)}
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            rates[name].append(rate(run)[1])
        tick()
    ref = median(rates[ENCODER_REFERENCE])
    return {"topology": ENCODER_TOPOLOGY, "max_rules": max_rules, "notifications": notifications,
            "reference": {"strategy": ENCODER_REFERENCE, "per_cpu_s": ref},
            "strategies": {name: {"per_cpu_s": median(rates[name]),
                                  "ratio": median(rates[name]) / ref,
                                  "target": judge("encoder", name, median(rates[name]))}
                           for name in strategies}}


# -- 3. timed engine and 4. Spark: the existing benchmarks --------------------------


def bench_timed_item(reps: int = 3, tick: Callable[[], None] = lambda: None,
                     **model: Any) -> dict[str, Any]:
    """The timed-engine figures, judged against one SimPy process (issue 9: >= 0.5x on
    the 255-switch jellyfish, >= 0.4x on :data:`experiments.bench.timed.TOPOLOGY_1000`);
    the ratio to SimPy at the model's queue depth is extra information
    (:mod:`experiments.bench.timed`)."""
    from experiments.bench.timed import TOPOLOGY_1000, run_bench_timed

    result = run_bench_timed(reps=reps, tick=tick, **model)
    figure = "timed-1000" if model.get("topology") == TOPOLOGY_1000 else "timed"
    result["target"] = judge(figure, "events_to_raw", result["events_to_raw_ratio"])
    return result


def bench_spark_item(reps: int = 3, cells: int = 12,
                     tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
    from experiments.bench.spark import run_bench_spark
    from experiments.runners.spark_session import SparkUnavailableError

    try:
        result = run_bench_spark(cells=cells, reps=reps)
    except SparkUnavailableError as exc:
        tick()
        return {"skipped": str(exc)}
    tick()
    result["target"] = judge("spark", "speedup", result["speedup"]["ratio"])
    return result



# -- the suite --------------------------------------------------------------------------


def run_suite(items: Iterable[str] = DEFAULT_ITEMS, reps: int = 3, fraction: float = 1.0,
              progress: bool = True, static_notifications: int = 400,
              spark_cells: int = 12, strategies: Iterable[str] | None = None
              ) -> dict[str, Any]:
    """Run the chosen items; returns ``{"cpus", "load_avg", "reps", "items": {...}}``."""
    items = list(items)
    bound_strategies = BOUND_STRATEGIES if strategies is None else tuple(
        n for n in strategies if n not in CONTENT_BOUND_STRATEGIES)
    bound_content = CONTENT_BOUND_STRATEGIES if strategies is None else tuple(
        n for n in strategies if n in CONTENT_BOUND_STRATEGIES)
    unknown = [i for i in items if i not in ITEMS]
    if unknown:
        raise ValueError(f"unknown bench item {unknown[0]!r}; known: {', '.join(ITEMS)}")
    if reps < 1:
        raise ValueError(f"--reps must be >= 1; got {reps}")
    from tqdm import tqdm

    steps = {"static": reps * len(STATIC_STRATEGIES) + 1, "encoder": reps, "timed": reps + 1,
             "timed-1000": reps + 1,
             "spark": 1, "cells": reps, "ch6": 0,
             "bound": len(BOUND_TOPOLOGIES) * (len(bound_strategies) + len(
                 bound_content) * len(CONTENT_BOUND_WORKLOADS))}
    bar = tqdm(total=sum(steps[i] for i in items), desc="stackcast bench", unit="step",
               disable=not progress, dynamic_ncols=True)
    out: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg": list(os.getloadavg()),
                           "reps": reps, "items": {}}
    try:
        for item in items:
            bar.set_description(f"stackcast bench: {item}")
            if item == "static":
                res = bench_static(reps=reps, notifications=static_notifications,
                                   ref_notifications=min(10, static_notifications),
                                   tick=lambda: bar.update(1))
            elif item == "encoder":
                res = bench_encoder(reps=reps, tick=lambda: bar.update(1))
            elif item == "timed":
                res = bench_timed_item(reps=reps, tick=lambda: bar.update(1))
            elif item == "timed-1000":
                from experiments.bench.timed import DURATION_1000_S, PARAMS_1000, TOPOLOGY_1000

                res = bench_timed_item(reps=reps, tick=lambda: bar.update(1),
                                       topology=TOPOLOGY_1000, params=PARAMS_1000,
                                       duration_s=DURATION_1000_S)
            elif item == "spark":
                res = bench_spark_item(reps=reps, cells=spark_cells, tick=lambda: bar.update(1))
            elif item == "cells":
                res = bench_cells(reps=reps, tick=lambda: bar.update(1))
            elif item == "bound":
                res = bench_bound(reps=reps, notifications=static_notifications,
                                  strategies=bound_strategies, tick=lambda: bar.update(1),
                                  content_strategies=bound_content)
            else:
                res = bench_ch6(fraction=fraction, progress=progress)
            out["items"][item] = res
    finally:
        bar.close()
    out["load_avg_end"] = list(os.getloadavg())
    return out


def format_suite(result: dict[str, Any]) -> str:
    """Human-readable summary of :func:`run_suite`."""
    lines = [f"stackcast bench: {result['cpus']} CPUs, median of {result['reps']} repetitions, "
             f"load average {result['load_avg'][0]:.1f} at start, "
             f"{result['load_avg_end'][0]:.1f} at end (rates per CPU-second unless noted)"]
    items = result["items"]
    if "static" in items:
        s = items["static"]
        lines.append(f"static engine  {s['topology']}, {s['receivers']}, {s['payload_bytes']} B "
                     f"({s['notifications']} notifications fast, {s['ref_notifications']} "
                     "reference)")
        for name, r in s["strategies"].items():
            lines.append(f"  {name:<16} fast ({r.get('impl', 'numpy')}) "
                         f"{r['fast_per_cpu_s']:>9,.0f}/s "
                         f"(wall {r['fast_per_s']:,.0f}/s)  reference "
                         f"{r['reference_per_cpu_s']:>7,.1f}/s  = {r['ratio']:,.0f}x"
                         + mark(r["target"]))
        c = s["cell_rows"]
        lines.append(f"  whole cell runner ({c['strategy']}, {c['notifications']} "
                     f"notifications): {c['per_cpu_s']:,.0f} rows/s")
    if "encoder" in items:
        e = items["encoder"]
        lines.append(f"vt encoder     {e['topology']}, {e['max_rules']} rules, "
                     f"{e['notifications']} notifications; reference "
                     f"{e['reference']['strategy']} {e['reference']['per_cpu_s']:,.0f}/s")
        for name, r in e["strategies"].items():
            lines.append(f"  {name:<16} {r['per_cpu_s']:>9,.0f} encodes/s = {r['ratio']:.2f}x "
                         "reference" + mark(r["target"]))
    for t in (items[k] for k in ("timed", "timed-1000") if k in items):
        lines.append(f"timed engine   {t['model']['topology']}: {t['run']['events_per_s']:,.0f} "
                     f"events/s vs one SimPy process {t['raw_simpy_timeouts_per_s']:,.0f} "
                     f"timeouts/s (wall) = {t['events_to_raw_ratio']:.2f}x" + mark(t["target"]))
        lines.append(f"  (at the model's queue depth, {t['queue_depth']:.0f} pending: "
                     f"{t['raw_simpy_at_depth_per_s']:,.0f} timeouts/s = "
                     f"{t['events_to_raw_at_depth_ratio']:.2f}x; extra information)")
    if "spark" in items:
        sp = items["spark"]
        if "skipped" in sp:
            lines.append(f"spark          skipped: {sp['skipped']}")
        else:
            s2 = sp["speedup"]
            lines.append(f"spark          local[2] {s2['local2_s']:.2f} s vs local[1] "
                         f"{s2['local1_s']:.2f} s (wall, {s2['cells']} cells) = "
                         f"{s2['ratio']:.2f}x; machine offers {s2['machine_ratio']:.2f}x"
                         + mark(sp["target"]))
    if "cells" in items:
        lines += format_cells(items["cells"])
    if "ch6" in items:
        lines += format_ch6(items["ch6"])
    if "bound" in items:
        lines += format_bound(items["bound"])
    return "\n".join(lines)
