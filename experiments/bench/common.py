"""What every ``stackcast bench`` item shares: the targets, medians, timed rates, verdicts.

The targets are issue 9's and issue 16's; each item module judges its figures
with :func:`judge` and prints the verdict with :func:`mark`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

STATIC_TOPOLOGY = "jellyfish:switches=255,degree=4,hosts=1,seed=1"

#: Issue 9 targets: (item, figure) -> (threshold, "min" or "max", unit).
TARGETS: dict[tuple[str, str], tuple[float, str, str]] = {
    ("static", "switch-bitmask"): (20_000.0, "min", "notifications/s/core"),
    ("encoder", "vt-freq-relation"): (2_000.0, "min", "encodes/s"),
    ("encoder", "vt-clusters"): (2_000.0, "min", "encodes/s"),
    ("timed", "events_to_raw"): (0.50, "min", "x raw SimPy, one process"),
    ("timed-1000", "events_to_raw"): (0.40, "min", "x raw SimPy, one process"),
    ("spark", "speedup"): (1.7, "min", "x local[1]"),
    ("cells", "switch-bitmask"): (50_000.0, "min", "rows/s"),
    ("cells", "tree"): (20_000.0, "min", "rows/s"),
    ("cells", "vt-clusters"): (20_000.0, "min", "rows/s"),
    ("ch6", "wall_s"): (900.0, "max", "s"),
    ("bound", "ratio"): (3.0, "max", "x the networkx lower bound"),
}


def median(xs: Iterable[float]) -> float:
    return float(statistics.median(list(xs)))


def rate(fn: Callable[[], int]) -> tuple[float, float]:
    """(items per wall second, items per CPU second) of ``fn`` (which returns its count)."""
    w0, c0 = time.perf_counter(), time.process_time()
    count = fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return count / max(wall, 1e-9), count / max(cpu, 1e-9)


def judge(item: str, figure: str, value: float) -> dict[str, Any] | None:
    target = TARGETS.get((item, figure))
    if target is None:
        return None
    threshold, sense, unit = target
    met = value >= threshold if sense == "min" else value <= threshold
    return {"threshold": threshold, "sense": sense, "unit": unit, "met": bool(met)}


def mark(target: dict[str, Any] | None) -> str:
    if target is None:
        return ""
    sign = ">=" if target["sense"] == "min" else "<="
    return (f"  [target {sign} {target['threshold']:,g} {target['unit']}: "
            f"{'met' if target['met'] else 'NOT met'}]")


def static_workload(notifications: int, topology: str = STATIC_TOPOLOGY, percent: float = 30.0,
                    seed: int = 1) -> tuple[Any, Any, list[tuple[str, frozenset[str]]]]:
    """The topology, population and (publisher, receivers) pairs of the static item."""
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    from topologies.specs import load_topology

    topo = load_topology(topology)
    pop = receiver_model(f"uniform:percent={percent:g}").population(
        topo, child_rng(seed, "population"))
    cases = []
    for i in range(notifications):
        rng = child_rng(seed, "bench-static", i)
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        cases.append((pub, pop.receivers(pub, rng)))
    return topo, pop, cases
