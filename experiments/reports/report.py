"""``stackcast report``: tables and plots from a results directory.

Rows are aggregated per parameter point (experiment, strategy, params,
topology, receiver model, payload): mean, standard deviation, a 95 %
confidence half-width (normal approximation, 1.96 s / sqrt(n)) and count.
The report is a Markdown summary with one table per experiment and PNG plots
of each headline metric against the receiver model's parameter.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from experiments.cells.schema import metric_columns, point_columns

HEADLINE = ["receivers", "delivered", "false_positives", "header_bytes", "frames", "bytes",
            "lookups", "recirculations", "state_entries", "delay_worst_ms"]
PLOTTED = ["header_bytes", "frames", "bytes", "lookups", "delay_worst_ms", "state_entries"]
# Added to the table and the plots for timed experiments.
TIMED_HEADLINE = ["latency_last_ms", "cell_deliveries_per_s", "cell_delivery_ratio",
                  "dropped_frames", "stale_false_negatives", "cell_writes_per_change",
                  "cell_convergence_mean_ms"]


def group_rows(cols: dict[str, list[Any]], keys: Sequence[str]
               ) -> dict[tuple[Any, ...], list[int]]:
    """Row indexes by their values of ``keys`` (one group per parameter point)."""
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(*(cols[c] for c in keys), strict=True)):
        groups[key].append(i)
    return groups


def aggregate_local(table: pa.Table) -> list[dict[str, Any]]:
    """Aggregate in this process (numpy); same output as the Spark aggregation."""
    cols = table.to_pydict()
    points, metrics = point_columns(table.schema), metric_columns(table.schema)
    groups = group_rows(cols, points)
    out = []
    for key in sorted(groups):
        idx = groups[key]
        rec: dict[str, Any] = dict(zip(points, key, strict=True))
        rec["count"] = len(idx)
        for m in metrics:
            v = np.asarray([cols[m][i] for i in idx], dtype=float)
            std = float(v.std(ddof=1)) if len(v) > 1 else 0.0
            rec[f"{m}_mean"] = float(v.mean())
            rec[f"{m}_std"] = std
            rec[f"{m}_ci95"] = 1.96 * std / math.sqrt(len(v))
        out.append(rec)
    return out


def receiver_params(spec: str) -> dict[str, str]:
    _, _, rest = spec.partition(":")
    return dict(item.partition("=")[::2] for item in rest.split(",") if "=" in item)


def _x_axis(specs: Iterable[str]) -> tuple[str | None, dict[str, float], dict[str, str]]:
    """Pick the receiver-model parameter to plot against.

    Returns the parameter name (the numeric one with the most distinct values),
    each spec's x value, and each spec's remaining varying parameters as a
    label suffix (e.g. ``scenario=nearby``), so series are split by them.
    """
    params = {s: receiver_params(s) for s in specs}
    keys = sorted({k for p in params.values() for k in p})
    distinct = {k: {p.get(k) for p in params.values()} for k in keys}

    def numeric(k: str) -> bool:
        try:
            return all(v is not None and float(v) is not None for v in distinct[k])
        except ValueError:
            return False

    candidates = [k for k in keys if len(distinct[k]) > 1 and numeric(k)]
    if not candidates:
        return None, {}, {}
    x = max(candidates, key=lambda k: (len(distinct[k]), k))
    others = [k for k in keys if k != x and len(distinct[k]) > 1]
    xs = {s: float(p[x]) for s, p in params.items()}
    rest = {s: " ".join(f"{k}={p.get(k)}" for k in others) for s, p in params.items()}
    return x, xs, rest


def _label(rec: Mapping[str, Any], varying: Iterable[str]) -> str:
    parts = [rec["strategy"]]
    if rec["params"] != "{}":
        parts.append(rec["params"].strip("{}").replace('"', ""))
    for col in varying:
        parts.append(f"{col}={rec[col]}")
    return " ".join(parts)


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1e4 else f"{v:,.0f}"


def write_report(points: list[dict[str, Any]], out_dir: str | Path) -> Path:
    """Write ``report.md`` and plots under ``out_dir``; returns the Markdown path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_exp: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in points:
        by_exp[rec["experiment"]].append(rec)
    lines = ["# stackcast report", ""]
    for exp, recs in sorted(by_exp.items()):
        lines += [f"## {exp}", "",
                  f"{len(recs)} parameter points, {sum(r['count'] for r in recs)} notifications. "
                  "Means per notification (± 95 % CI half-width where it is not 0).", ""]
        timed = "timed" in recs[0]
        headline = HEADLINE + (TIMED_HEADLINE if timed else [])
        hdr = (["strategy", "params", "topology", "receiver model", "payload B"]
               + (["timed"] if timed else []) + headline)
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "---|" * len(hdr))
        for r in recs:
            cells = [r["strategy"], r["params"], r["topology"], r["receivers_model"],
                     str(r["payload_bytes"])] + ([r["timed"]] if timed else [])
            for m in headline:
                mean, ci = r[f"{m}_mean"], r[f"{m}_ci95"]
                cells.append(_fmt(mean) + (f" ± {_fmt(ci)}" if ci else ""))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        varying = [c for c in ("topology", "payload_bytes", "timed")
                   if c in recs[0] and len({r[c] for r in recs}) > 1]
        x_name, xs, rest = _x_axis({r["receivers_model"] for r in recs})
        if x_name is not None:
            for metric in PLOTTED + (TIMED_HEADLINE[:3] if timed else []):
                fig, ax = plt.subplots(figsize=(6.4, 4.2))
                series: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
                for r in recs:
                    spec = r["receivers_model"]
                    label = " ".join(filter(None, [_label(r, varying), rest[spec]]))
                    series[label].append(
                        (xs[r["receivers_model"]], r[f"{metric}_mean"], r[f"{metric}_ci95"]))
                for label, pts in sorted(series.items()):
                    pts.sort()
                    ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                                yerr=[p[2] for p in pts], marker="o", ms=3, capsize=2,
                                label=label)
                kind = recs[0]["receivers_model"].partition(":")[0]
                ax.set_xlabel(f"{kind}: {x_name}")
                ax.set_ylabel(metric.replace("_", " "))
                ax.set_title(f"{exp}: {metric}")
                ax.grid(alpha=0.3)
                ax.legend(fontsize=7)
                fig.tight_layout()
                name = f"{exp}-{metric}.png"
                fig.savefig(out / name, dpi=110)
                plt.close(fig)
                lines.append(f"![{exp} {metric}]({name})")
            lines.append("")
        if all(r["receivers_model"].startswith("content:") for r in recs) and not timed:
            from experiments.reports.content import report_section

            lines += report_section(recs, out, exp)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
