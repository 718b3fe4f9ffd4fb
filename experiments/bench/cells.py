"""The cells item of ``stackcast bench``: whole cells, rows per CPU second.

Whole cells through :func:`experiments.cells.pipeline.run_cell` (workload
draw, installs, control writes, engine, rows), with the
:class:`~sim.dataplanes.caches.Caches` a runner shares between the cells of
a partition: one switch-bitmask cell of ``cell_notifications`` notifications
on the static item's jellyfish at 30 % receivers, beside the fast path alone
on the same notifications (the ceiling a whole cell can reach) and the same
cell with cold caches; and 20-notification virtual-tree cells (``tree`` on
uniform 30 % receivers, ``vt-clusters`` with 40 rules on nearby clusters, as
in ch. 5/6) on zoo:Dfn, over ``vt_cells`` seeds each, one fresh ``Caches``
per repetition. Issue 16 item 2's targets: >= 50k rows/s and >= 20k rows/s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from experiments.bench.common import STATIC_TOPOLOGY, judge, mark, median, rate

CELL_TOPOLOGY = STATIC_TOPOLOGY
VT_CELL_TOPOLOGY = "zoo:Dfn"
#: (strategy, its parameters, receiver model) of the 20-notification VT cells
VT_CELLS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("tree", {}, "uniform:percent=30"),
    ("vt-clusters", {"max_rules": 40}, "clustered:scenario=nearby,churn=0"))


def cell_rate(notifications: int, reps: int, topology: str) -> dict[str, Any]:
    """Whole switch-bitmask cell (workload draw, state, fast path, rows) per second."""
    from experiments.cells.pipeline import run_cell
    from experiments.cells.spec import parse_spec_dict

    spec = parse_spec_dict({
        "experiment": {"name": "bench-static", "notifications": notifications, "seeds": [1],
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": ["switch-bitmask"],
                 "receivers": ["uniform:percent=30"]},
    }, "<bench static>")
    (cell,) = spec.cells()
    run_cell(cell)  # topology, tables and compiled kernels warm (caches: fresh per cell)
    rates = [rate(lambda: run_cell(cell, "auto").num_rows)[1] for _ in range(reps)]
    return {"strategy": "switch-bitmask", "notifications": notifications,
            "per_cpu_s": median(rates)}


def _spec_cells(topology: str, strategy: str, params: dict[str, Any], receivers: str,
                notifications: int, seeds: list[int]) -> list[Any]:
    from experiments.cells.spec import parse_spec_dict

    data: dict[str, Any] = {
        "experiment": {"name": "bench-cells", "notifications": notifications, "seeds": seeds,
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": [strategy], "receivers": [receivers]}}
    if params:
        data["strategy_params"] = {strategy: params}
    return list(parse_spec_dict(data, "<bench cells>").cells())


def bench_cells(reps: int = 3, cell_notifications: int = 2000, vt_cells: int = 10,
                topology: str = CELL_TOPOLOGY, vt_topology: str = VT_CELL_TOPOLOGY,
                vt: Iterable[tuple[str, dict[str, Any], str]] = VT_CELLS,
                tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Whole-cell rows per CPU second (see the module docstring).

    Cells run as a runner runs them (:func:`experiments.cells.pipeline.run_cell`
    with one :class:`~sim.dataplanes.caches.Caches` for the cells of a
    partition): the switch-bitmask cell with the partition's warm caches (its
    topology-wide install and fast path built by an earlier cell), and cold
    (a fresh ``Caches``: the first cell of a partition) as extra information;
    each repetition's virtual-tree cells share one fresh ``Caches``. The
    reference is the fast path alone on the same notifications
    (``metric_columns`` on the drawn host indices, what the cell calls).
    """
    from experiments.cells.pipeline import _fast_path, cell_setup, run_cell
    from experiments.cells.workload import cell_workload, draw_runs
    from sim.dataplanes.caches import Caches

    (cell,) = _spec_cells(topology, "switch-bitmask", {}, "uniform:percent=30",
                          cell_notifications, [1])
    warm = Caches()
    run_cell(cell, caches=warm)  # the partition's earlier cell: install, tables, kernels
    topo, strategy, delays = cell_setup(cell)
    fast = _fast_path(topo, strategy, delays, "auto", warm)
    drawn = draw_runs(cell_workload(cell, topo, warm), cell_notifications)
    if fast is None or drawn is None or not hasattr(fast, "metric_columns"):
        raise ValueError("cells bench: switch-bitmask has no column fast path here")

    def kernel() -> int:
        got = fast.metric_columns(drawn.publishers, drawn.offsets, drawn.receivers,
                                  cell.payload_bytes)
        return int(got.taken.sum())

    vt = list(vt)
    groups = [(name, _spec_cells(vt_topology, name, params, receivers, 20,
                                 list(range(1, vt_cells + 1))))
              for name, params, receivers in vt]
    for _, cs in groups:
        run_cell(cs[0], caches=Caches())  # warm: topology, compiled kernels
    whole, cold, ref = [], [], []
    vt_rates: dict[str, list[float]] = {name: [] for name, _ in groups}
    for _ in range(reps):
        whole.append(rate(lambda: run_cell(cell, caches=warm).num_rows)[1])
        ref.append(rate(kernel)[1])
        cold.append(rate(lambda: run_cell(cell, caches=Caches()).num_rows)[1])
        for name, cs in groups:
            partition = Caches()
            vt_rates[name].append(rate(lambda cs=cs, partition=partition: sum(  # type: ignore[misc]
                run_cell(c, caches=partition).num_rows for c in cs))[1])
        tick()
    rows_rate, kernel_rate = median(whole), median(ref)
    out: dict[str, Any] = {
        "switch_bitmask": {"topology": topology, "receivers": "uniform:percent=30",
                           "notifications": cell_notifications, "rows_per_cpu_s": rows_rate,
                           "cold_rows_per_cpu_s": median(cold),
                           "kernel_per_cpu_s": kernel_rate, "to_kernel": rows_rate / kernel_rate,
                           "target": judge("cells", "switch-bitmask", rows_rate)},
        "vt": {"topology": vt_topology, "notifications": 20, "cells": vt_cells,
               "strategies": {}},
    }
    for name, params, receivers in vt:
        r = median(vt_rates[name])
        out["vt"]["strategies"][name] = {"params": params, "receivers": receivers,
                                         "rows_per_cpu_s": r, "ms_per_cell": 20e3 / r,
                                         "target": judge("cells", name, r)}
    return out


def format_cells(c: dict[str, Any]) -> list[str]:
    """The cells item's lines of the suite's summary."""
    lines: list[str] = []
    sb = c["switch_bitmask"]
    lines.append(f"whole cells    switch-bitmask, {sb['topology']}, {sb['receivers']}, "
                 f"{sb['notifications']} notifications: {sb['rows_per_cpu_s']:,.0f} rows/s; "
                 f"fast path alone {sb['kernel_per_cpu_s']:,.0f}/s = "
                 f"{sb['to_kernel']:.2f}x" + mark(sb["target"]))
    if "cold_rows_per_cpu_s" in sb:
        lines.append(f"  (first cell of a partition, install and tables built: "
                     f"{sb['cold_rows_per_cpu_s']:,.0f} rows/s; extra information)")
    v = c["vt"]
    for name, r in v["strategies"].items():
        lines.append(f"  {name:<16} {v['topology']}, {v['cells']} cells of "
                     f"{v['notifications']} notifications: {r['rows_per_cpu_s']:>8,.0f} "
                     f"rows/s ({r['ms_per_cell']:.1f} ms/cell)" + mark(r["target"]))
    return lines
