"""The ch6 item of ``stackcast bench``: ch6-churn end to end on Spark.

Wall time of ``experiments/specs/ch6-churn.toml`` on Spark ``local[2]``.
``fraction`` < 1 runs a deterministic subset
(:class:`~experiments.runners.subset.SubsetSpec`: that fraction of the
groups a real run keeps in one task, churn levels of one seed together)
and *extrapolates*: session start + worker warm-up (one cell) + subset time
x cells / subset cells; the output says so. Reference: the local engine
(one warm process) on a few cells of the same subset.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.bench.common import judge, mark, rate
from experiments.cells.spec import SPEC_DIR
from experiments.runners.subset import SubsetSpec

CH6_SPEC = SPEC_DIR / "ch6-churn.toml"


def bench_ch6(fraction: float = 1.0, master: str = "local[2]", ref_cells: int = 16,
              spec_path: Path = CH6_SPEC, progress: bool = True,
              work_dir: str | Path | None = None) -> dict[str, Any]:
    """Wall time of ch6-churn on Spark (a subset extrapolated when ``fraction`` < 1)."""
    from experiments.cells.pipeline import run_cell
    from experiments.cells.spec import load_spec
    from experiments.runners.spark import run_spark
    from experiments.runners.spark_session import require_spark, spark_session

    subset = SubsetSpec(load_spec(spec_path), fraction)
    cells = subset.cells()
    require_spark()
    with tempfile.TemporaryDirectory(prefix="stackcast-bench-ch6-", dir=work_dir) as tmp:
        w0 = time.perf_counter()
        with spark_session(master, app_name="stackcast bench ch6") as spark:
            start_s = time.perf_counter() - w0
            t0 = time.perf_counter()  # Python workers started, project imported: once per run
            run_spark(SubsetSpec(subset.spec, 0), Path(tmp) / "warm", spark=spark,
                      progress=False)
            warm_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            run_spark(subset, Path(tmp) / "out", spark=spark, progress=progress)
            run_s = time.perf_counter() - t0
    run_cell(cells[-1])  # warm this process too
    sample = cells[::max(1, len(cells) // max(1, ref_cells))][:ref_cells]  # spread over the grid
    local_rate = rate(lambda: sum(1 for c in sample if run_cell(c).num_rows >= 0))[0]
    spark_rate = len(cells) / run_s
    scale = subset.total / len(cells)
    wall = start_s + warm_s + run_s * scale
    return {
        "spec": str(spec_path), "master": master, "fraction": fraction,
        "cells_total": subset.total, "cells_run": len(cells),
        "extrapolated": len(cells) < subset.total,
        "session_start_s": start_s, "warm_s": warm_s, "subset_wall_s": run_s, "wall_s": wall,
        "spark_cells_per_s": spark_rate,
        "reference": {"engine": "local (one process)", "cells": len(sample),
                      "cells_per_s": local_rate},
        "ratio": spark_rate / local_rate,
        "target": judge("ch6", "wall_s", wall),
    }


def format_ch6(c6: dict[str, Any]) -> list[str]:
    """The ch6 item's lines of the suite's summary."""
    lines: list[str] = []
    how = (f"EXTRAPOLATED from {c6['cells_run']:,} of {c6['cells_total']:,} cells "
           f"(fraction {c6['fraction']:g})" if c6["extrapolated"]
           else f"all {c6['cells_total']:,} cells")
    lines.append(f"ch6-churn      {c6['master']}: {c6['wall_s']:,.0f} s wall, {how}; "
                 f"session start {c6['session_start_s']:.1f} s, worker warm-up "
                 f"{c6.get('warm_s', 0.0):.1f} s; "
                 f"{c6['spark_cells_per_s']:.2f} cells/s = {c6['ratio']:.2f}x the local "
                 f"engine ({c6['reference']['cells_per_s']:.2f} cells/s)"
                 + mark(c6["target"]))
    return lines
