"""``stackcast report``: tables and plots from a results directory.

Rows are aggregated per parameter point (experiment, strategy, params,
topology, receiver model, payload): mean, standard deviation, a 95 %
confidence half-width (normal approximation, 1.96 s / sqrt(n)), maximum and count.
The report is a Markdown summary with one table per experiment and PNG plots
of each headline metric against the receiver model's parameter.

Receiver models whose notifications are the steps of one sweep (a declared
:class:`~sim.workloads.receivers.StepAxis`, e.g. ``replacement``: run x
step % of the subscribers replaced) are aggregated per step, not over it;
their table has one row per step and their plots run against the step,
with the running sum of control writes (seed 000 Fig. 4.8). Labels, units,
the number format and the log-scale decision: :mod:`experiments.reports.columns`.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from experiments.cells.schema import POINT_COLUMNS, metric_columns, point_columns
from experiments.reports.columns import fmt, header, receiver_axis_label
from experiments.reports.grouping import group_rows, receiver_params
from experiments.reports.plots import Series, coincide_note, plot_title, save_line_plot
from sim.workloads.receivers import StepAxis, receiver_model, step_model_names, step_x

HEADLINE = ["receivers", "delivered", "false_positives", "header_bytes", "header_entries",
            "frames", "bytes", "lookups", "recirculations", "state_entries", "control_writes",
            "delay_worst_ms"]
#: Series beyond which a metric's line plot is left out: its legend would not be readable,
#: and drawing it takes minutes (ch6-best-strategies: 840 series; every point is in the
#: table, and a spec's declared figures summarise it).
MAX_SERIES = 128
# Added to the table, all three, where any point has typed labels (virtual trees, seed 000
# Fig. 6.9b).
LABEL_HEADLINE = ["header_tree_labels", "header_stop_labels", "header_hop_labels"]
# Plotted when not 0 everywhere; labels and units: experiments/reports/columns.py.
PLOTTED = ["header_bytes", "frames", "bytes", "lookups", "delay_worst_ms", "state_entries",
           "control_writes"]
# Added to the table and the plots for timed experiments.
TIMED_HEADLINE = ["latency_last_ms", "cell_deliveries_per_s", "cell_delivery_ratio",
                  "dropped_frames", "stale_false_negatives", "cell_writes_per_change",
                  "cell_convergence_mean_ms"]


def has_steps(receivers_model: str) -> bool:
    """Whether the receiver model declares a step axis (its notifications are
    the steps of one sweep, :class:`sim.workloads.receivers.StepAxis`)."""
    name = receivers_model.partition(":")[0]
    return name in step_model_names()


def _running_sums(cols: dict[str, list[Any]], step: list[bool]) -> list[float]:
    """Per row of a step model: control_writes summed over its cell up to its run."""
    out = [0.0] * len(step)
    by_cell: dict[str, list[int]] = defaultdict(list)
    for i, is_step in enumerate(step):
        if is_step:
            by_cell[cols["cell_id"][i]].append(i)
    for idx in by_cell.values():
        total = 0.0
        for i in sorted(idx, key=lambda i: cols["run"][i]):
            total += cols["control_writes"][i]
            out[i] = total
    return out


def aggregate_local(table: pa.Table) -> list[dict[str, Any]]:
    """Aggregate in this process (numpy); same output as the Spark aggregation.

    Rows of a receiver model with a step axis (:func:`has_steps`) are
    aggregated per point *and* ``run`` (the record gets ``run``) and get the
    running sum ``control_writes_cum`` (per cell, over ``run``), so no
    average is taken over the steps of a sweep (seed 000 Fig. 4.8).
    """
    cols = table.to_pydict()
    points, metrics = point_columns(table.schema), metric_columns(table.schema)
    spec_steps = {m: has_steps(m) for m in set(cols["receivers_model"])}
    step = [spec_steps[m] for m in cols["receivers_model"]]
    cols["_run"] = [r if s else -1 for r, s in zip(cols["run"], step, strict=True)]
    cols["control_writes_cum"] = _running_sums(cols, step)
    groups = group_rows(cols, [*points, "_run"])
    out = []
    for key in sorted(groups):
        idx = groups[key]
        rec: dict[str, Any] = dict(zip(points, key, strict=False))
        if key[-1] >= 0:
            rec["run"] = key[-1]
        rec["count"] = len(idx)
        for m in metrics + (["control_writes_cum"] if key[-1] >= 0 else []):
            v = np.asarray([cols[m][i] for i in idx], dtype=float)
            std = float(v.std(ddof=1)) if len(v) > 1 else 0.0
            rec[f"{m}_mean"] = float(v.mean())
            rec[f"{m}_std"] = std
            rec[f"{m}_ci95"] = 1.96 * std / math.sqrt(len(v))
            rec[f"{m}_max"] = float(v.max())
        out.append(rec)
    return out


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


def _label(rec: Mapping[str, Any], varying: Iterable[str],
           timed: Mapping[str, str] | None = None) -> str:
    """A series' legend label: strategy, parameters and the varying point columns
    (the ``timed`` column as its varying settings, :func:`timed_labels`)."""
    parts = [rec["strategy"]]
    if rec["params"] != "{}":
        parts.append(rec["params"].strip("{}").replace('"', ""))
    for col in varying:
        parts.append(timed[rec[col]] if col == "timed" and timed is not None
                     else f"{col}={rec[col]}")
    return " ".join(parts)


def timed_labels(settings: Iterable[str]) -> dict[str, str]:
    """Each ``timed`` value (canonical JSON of a point's ``[timed]`` settings) as a
    label: only the settings that differ between ``settings``, in key order
    (``rate_hz=3200.0 recirc_port_bps=none``); the table keeps the whole JSON.

    A legend of the whole JSON per series costs the report most of its time on
    a swept spec (tens of thousands of glyphs per legend, drawn three times per
    plot) and is unreadable; the varying keys tell the series apart all the same.
    """
    parsed = {t: json.loads(t) for t in settings}
    keys = sorted({k for s in parsed.values() for k in s})

    def text(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, sort_keys=True)

    varying = [k for k in keys if len({text(s.get(k)) for s in parsed.values()}) > 1]
    out = {t: " ".join(f"{k}={text(s.get(k))}" for k in varying) for t, s in parsed.items()}
    if len(set(out.values())) < len(out):  # two settings that print alike: the whole JSON
        return {t: f"timed={t}" for t in parsed}
    return out


def _varying(specs: Iterable[str], skip: str | None = None) -> dict[str, str]:
    """Each spec's receiver-model parameters that vary over ``specs`` (but ``skip``),
    as a label suffix such as ``policy=HEAD``."""
    params = {s: receiver_params(s) for s in specs}
    keys = sorted({k for p in params.values() for k in p})
    others = [k for k in keys if k != skip and len({p.get(k) for p in params.values()}) > 1]
    return {s: " ".join(f"{k}={p.get(k)}" for k in others) for s, p in params.items()}


def _cell(r: Mapping[str, Any], metric: str) -> str:
    mean, ci = r[f"{metric}_mean"], r[f"{metric}_ci95"]
    return fmt(mean) + (f" ± {fmt(ci)}" if ci else "")


def _table(recs: Sequence[Mapping[str, Any]], timed: bool, steps: bool) -> list[str]:
    """The experiment's Markdown table: one row per point (and step), one number format."""
    typed = any(r.get(f"{m}_mean") for r in recs for m in LABEL_HEADLINE)
    labels = LABEL_HEADLINE if typed else []
    headline = (HEADLINE + labels + (TIMED_HEADLINE if timed else [])
                + (["control_writes_cum"] if steps else []))
    step_hdr = []
    if steps:
        axis = _step_axis(recs[0]["receivers_model"])
        step_hdr = [f"{axis.label} ({axis.unit})"]
    hdr = (["strategy", "params", "topology", "receiver model", "payload (B)"]
           + (["timed"] if timed else []) + step_hdr + [header(m) for m in headline])
    lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for r in recs:
        cells = [r["strategy"], r["params"], r["topology"], r["receivers_model"],
                 fmt(r["payload_bytes"])] + ([r["timed"]] if timed else [])
        if steps:
            cells.append(fmt(_at_step(r["receivers_model"], r["run"])))
        cells += [_cell(r, m) for m in headline]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return lines


def _at_step(spec: str, run: int) -> float:
    x = step_x(spec, run)
    if x is None:
        raise ValueError(f"receiver model {spec!r} declares no step axis")
    return x


def _step_axis(spec: str) -> StepAxis:
    axis = receiver_model(spec).kind.steps
    if axis is None:
        raise ValueError(f"receiver model {spec!r} declares no step axis")
    return axis


def _plots(exp: str, recs: Sequence[Mapping[str, Any]], out: Path, timed: bool,
           steps: bool) -> list[str]:
    """One PNG per metric against the receiver model's parameter, or against the
    step for step models (with Fig. 4.8's running sum of control writes)."""
    varying = [c for c in ("topology", "payload_bytes", "timed")
               if c in recs[0] and len({r[c] for r in recs}) > 1]
    specs = {r["receivers_model"] for r in recs}
    if steps:
        axis = _step_axis(recs[0]["receivers_model"])
        xlabel, per = f"{axis.label} ({axis.unit})", "step"
        xs = {(r["receivers_model"], r["run"]): _at_step(r["receivers_model"], r["run"])
              for r in recs}
        rest = _varying(specs)
        metrics = PLOTTED + ["control_writes_cum"]
    else:
        x_name, x_of, rest = _x_axis(specs)
        if x_name is None:
            return []
        kind = recs[0]["receivers_model"].partition(":")[0]
        xlabel, per = receiver_axis_label(kind, x_name), "notification"
        xs = {(r["receivers_model"], r.get("run")): x_of[r["receivers_model"]] for r in recs}
        metrics = PLOTTED + (TIMED_HEADLINE[:3] if timed else [])
    timed_names = timed_labels({r["timed"] for r in recs}) if "timed" in varying else None
    lines, zero, crowded = [], [], []
    for metric in metrics:
        pts: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        for r in recs:
            spec = r["receivers_model"]
            label = " ".join(filter(None, [_label(r, varying, timed_names), rest[spec]]))
            pts[label].append((xs[(spec, r.get("run"))], r[f"{metric}_mean"],
                               r[f"{metric}_ci95"]))
        if all(p[1] == 0 for ps in pts.values() for p in ps):
            zero.append(header(metric))
            continue
        if len(pts) > MAX_SERIES:
            crowded.append(header(metric))
            too_many = len(pts)
            continue
        series = [Series(label, *map(tuple, zip(*sorted(ps), strict=True)))
                  for label, ps in sorted(pts.items())]
        name = f"{exp}-{metric}.png"
        groups = save_line_plot(series, out / name, metric=metric, xlabel=xlabel, per=per,
                                title=plot_title(exp, metric))
        caption = f"![{exp} {metric}]({name})"
        if steps and metric == "control_writes_cum":
            caption += ("\n\nRunning sum of P4Runtime writes over the steps, per policy "
                        "(seed 000 Fig. 4.8).")
        lines.append(caption)
        if groups:
            lines += ["", f"*{plot_title(exp, metric)}*. {coincide_note(groups)}", ""]
    if zero:
        lines += ["", f"Not plotted (0 at every point): {', '.join(zero)}."]
    if crowded:
        lines += ["", f"Not plotted ({too_many} series, more than {MAX_SERIES} in one legend; "
                  f"every point is in the table): {', '.join(crowded)}."]
    return lines + [""]


def write_report(points: list[dict[str, Any]], out_dir: str | Path,
                 figures: Mapping[str, Sequence[str]] | None = None) -> Path:
    """Write ``report.md`` and plots under ``out_dir``; returns the Markdown path.

    ``figures``: experiment -> the figure replicas its spec declares
    (:func:`experiments.storage.results.declared_figures`), drawn by
    :mod:`experiments.reports.figures`; no others are drawn.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_exp: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in points:
        by_exp[rec["experiment"]].append(rec)
    lines = ["# stackcast report", ""]
    for exp, recs in sorted(by_exp.items()):
        timed = "timed" in recs[0]
        steps = all("run" in r for r in recs)
        count = sum(r["count"] for r in recs)
        what = ("Means per notification at each step" if steps
                else "Means per notification")
        n_points = len({tuple(r.get(c) for c in (*POINT_COLUMNS, "timed")) for r in recs})
        lines += [f"## {exp}", "",
                  f"{fmt(n_points)} parameter points, {fmt(count)} notifications. {what} "
                  "(± 95 % CI half-width where it is not 0).", ""]
        lines += _table(recs, timed, steps) + [""]
        lines += _plots(exp, recs, out, timed, steps)
        if all(r["receivers_model"].startswith("content:") for r in recs) and not timed:
            from experiments.reports.content import report_section

            lines += report_section(recs, out, exp)
        if figures and figures.get(exp):
            from experiments.reports.figures import figure_section

            lines += figure_section(figures[exp], recs, out)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
