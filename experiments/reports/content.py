"""Content-filter summaries: rates over whole cells, a Markdown table and a bar chart.

``stackcast report`` averages per-row metrics; the content experiments need
ratios of sums (seed 001's network false-positive rate = network FP link
forwardings / all link forwardings), the merge ratio of the installed state
and per-strategy totals. Usage::

    python -m experiments.reports.content RESULTS_DIR [--md OUT.md] [--png OUT.png]

One line per parameter point (experiment, strategy, params, topology,
receiver model, payload): notifications, network FP rate, link FP rate,
subscriber FP rate (unwanted deliveries / deliveries), false negatives,
merge ratios, flows on the busiest switch, state entries, TCAM entries,
control writes and controller wall time (sum over the cell), bytes per
notification, header bytes, lookup latency.

References
----------
Seed 001 §6.2 (network FP rate, merge ratio); digest seed001-004 A5.6-A5.8.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from experiments.cells.schema import POINT_COLUMNS
from experiments.reports.columns import axis_label, fmt, header, y_scale
from experiments.reports.grouping import group_rows, receiver_params
from experiments.storage.results import read_results

SUMS = ["frames", "bytes", "link_false_positives", "network_false_positives",
        "false_positives", "false_negatives", "delivered", "receivers", "control_writes",
        "controller_wall_ms"]
MAXES = ["flows_peak"]  # reported once per deployed state
MEANS = ["merge_ratio", "merge_ratio_limited", "flows_max", "state_entries",
         "tcam_entries", "tcam_bits", "multicast_groups", "header_bytes", "lookup_latency_us"]
COLUMNS = ["strategy", "params", "topology", "receivers_model", "n", "network_fp_rate",
           "link_fp_rate", "subscriber_fp_rate", "false_negatives", "merge_ratio",
           "merge_ratio_limited", "flows_max", "flows_peak", "state_entries", "tcam_entries",
           "multicast_groups", "control_writes", "controller_wall_ms", "bytes_per_note",
           "header_bytes", "lookup_latency_us"]


def summarize(table: pa.Table) -> list[dict[str, Any]]:
    """One record per parameter point (sums and ratios over all its rows)."""
    cols = table.to_pydict()
    groups = group_rows(cols, POINT_COLUMNS)
    out = []
    for key in sorted(groups):
        idx = groups[key]
        rec: dict[str, Any] = dict(zip(POINT_COLUMNS, key, strict=True))
        rec["n"] = len(idx)
        for c in SUMS:
            rec[c] = sum(cols[c][i] for i in idx)
        for c in MEANS:
            rec[c] = sum(cols[c][i] for i in idx) / len(idx)
        for c in MAXES:
            rec[c] = max(cols[c][i] for i in idx)
        frames = rec["frames"] or 1
        rec["network_fp_rate"] = rec["network_false_positives"] / frames
        rec["link_fp_rate"] = rec["link_false_positives"] / frames
        rec["subscriber_fp_rate"] = rec["false_positives"] / (rec["delivered"] or 1)
        rec["bytes_per_note"] = rec["bytes"] / len(idx)
        out.append(rec)
    return out


def _fmt(v: Any) -> str:
    """Numbers in the reports' one format (:func:`experiments.reports.columns.fmt`)."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        return fmt(v)
    return str(v)


def markdown(records: Sequence[dict[str, Any]], columns: Sequence[str] = COLUMNS) -> str:
    lines = ["| " + " | ".join(header(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    for r in records:
        lines.append("| " + " | ".join(_fmt(r[c]).replace("|", "/") for c in columns) + " |")
    return "\n".join(lines) + "\n"


def bar_chart(records: Sequence[dict[str, Any]], out: str | Path,
              metrics: Sequence[str] = ("bytes_per_note", "link_fp_rate", "state_entries",
                                        "control_writes")) -> Path:
    """One panel per metric (three per row), one horizontal bar per strategy/params
    (log scale where the positive values span two decades or more; titles with
    units from :mod:`experiments.reports.columns`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [_label(r) for r in records]
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    height = 0.9 + 0.28 * len(records)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, height * nrows),
                             squeeze=False)
    for ax in axes.flat[len(metrics):]:
        ax.set_visible(False)
    for n, (ax, m) in enumerate(zip(axes.flat, metrics, strict=False)):
        vals = [float(r[m]) for r in records]
        ys = range(len(vals))
        ax.barh(ys, vals, color=[f"C{i % 10}" for i in ys])
        ax.set_yticks(ys, labels if n % ncols == 0 else [""] * len(vals), fontsize=7)
        ax.invert_yaxis()
        ax.set_title(axis_label(m), fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        scale, linthresh = y_scale(vals, m)  # zeros stay visible (at 0) under symlog
        if scale == "symlog":
            ax.set_xscale("symlog", linthresh=linthresh)
        elif scale == "log":
            ax.set_xscale("log")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- the content section of ``stackcast report`` (from aggregated points) -------------
#: Columns of the report's content table; every one is derivable from per-point
#: means and counts (ratios of sums = ratios of means over the same rows), so the
#: section works on the local and the Spark aggregation alike.
REPORT_COLUMNS = ["strategy", "params", "setting", "n", "bytes_per_note", "link_fp_rate",
                  "network_fp_rate", "subscriber_fp_rate", "false_negatives", "state_entries",
                  "tcam_entries", "multicast_groups", "flows_max", "merge_ratio",
                  "writes_per_change", "controller_ms_per_note"]
REPORT_PANELS = ("bytes_per_note", "link_fp_rate", "subscriber_fp_rate", "state_entries",
                 "multicast_groups", "writes_per_change")


def _churn(receivers_model: str) -> int:
    """Subscription changes per notification of a ``content:`` spec (0 = none)."""
    return int(receiver_params(receivers_model).get("churn", 0))


def records_from_points(points: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Content records (as :func:`summarize`) from ``experiments.reports.report`` points.

    ``writes_per_change`` = control writes per notification / subscription
    changes per notification (the cell's first notification installs and
    counts 0 writes); ``controller_ms_per_note`` is wall time (not simulated,
    not reproducible).
    """
    out = []
    for p in points:
        mean = {k[:-5]: v for k, v in p.items() if k.endswith("_mean")}
        frames = mean.get("frames", 0.0) or 1.0
        churn = _churn(p["receivers_model"])
        out.append({
            "strategy": p["strategy"], "params": p["params"], "topology": p["topology"],
            "receivers_model": p["receivers_model"], "n": p["count"],
            "bytes_per_note": mean.get("bytes", 0.0),
            "link_fp_rate": mean.get("link_false_positives", 0.0) / frames,
            "network_fp_rate": mean.get("network_false_positives", 0.0) / frames,
            "subscriber_fp_rate": mean.get("false_positives", 0.0)
            / (mean.get("delivered", 0.0) or 1.0),
            "false_negatives": round(mean.get("false_negatives", 0.0) * p["count"]),
            "state_entries": mean.get("state_entries", 0.0),
            "tcam_entries": mean.get("tcam_entries", 0.0),
            "multicast_groups": mean.get("multicast_groups", 0.0),
            "flows_max": mean.get("flows_max", 0.0),
            "merge_ratio": mean.get("merge_ratio", 0.0),
            "writes_per_change": (mean.get("control_writes", 0.0) / churn) if churn else 0.0,
            "controller_ms_per_note": mean.get("controller_wall_ms", 0.0),
        })
    return out


def _best(records: Sequence[dict[str, Any]], metric: str) -> str:
    best = min(r[metric] for r in records)
    names = sorted({_label(r) for r in records if r[metric] == best})
    if len(names) > 3:
        names = names[:3] + [f"{len(names) - 3} more points"]
    return f"{', '.join(names)} ({_fmt(float(best))})"


def _label(r: dict[str, Any]) -> str:
    return r["strategy"] + ("" if r["params"] == "{}" else " " + r["params"][1:-1]
                            .replace('"', "")) + r.get("suffix", "")


def _with_suffixes(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records whose label also names the receiver-model and topology settings that vary."""
    specs = {r["receivers_model"]: receiver_params(r["receivers_model"]) for r in records}
    keys = sorted({k for p in specs.values() for k in p})
    varying = [k for k in keys if len({p.get(k) for p in specs.values()}) > 1]
    topo = len({r["topology"] for r in records}) > 1
    out = []
    for r in records:
        p = specs[r["receivers_model"]]
        parts = [f"{k}={p.get(k)}" for k in varying] + ([r["topology"]] if topo else [])
        out.append({**r, "suffix": (" " + " ".join(parts)) if parts else "",
                    "setting": " ".join(parts) or "-"})
    return out


def report_section(points: Sequence[dict[str, Any]], out_dir: str | Path, experiment: str
                   ) -> list[str]:
    """Markdown lines (table, one-line findings, bar chart) for one content experiment."""
    recs = _with_suffixes(records_from_points(points))
    if not recs:
        return []
    name = f"{experiment}-content.png"
    bar_chart(recs, Path(out_dir) / name, REPORT_PANELS)
    lines = [f"### {experiment}: content filters and the other families", "",
             "Rates are ratios of sums over all notifications of a point: link FP rate = "
             "frames on links from which no receiver was reached / all frames (the "
             "publisher's access link excepted); network FP rate = seed 001's (frames the "
             "unlimited dz flows would not send; 0 outside pleroma-dz); subscriber FP rate = "
             "unwanted deliveries / deliveries. Writes per change = P4Runtime writes between "
             "consecutive states per subscription change; controller ms = wall clock, not "
             "simulated time.", "", markdown(recs, REPORT_COLUMNS).rstrip("\n"), ""]
    zero_fn = [r for r in recs if r["false_negatives"] == 0]
    lines += [f"- fewest bytes per notification: {_best(recs, 'bytes_per_note')}",
              f"- lowest link FP rate: {_best(recs, 'link_fp_rate')}",
              f"- fewest state entries: {_best(recs, 'state_entries')}",
              f"- fewest writes per subscription change: {_best(recs, 'writes_per_change')}",
              f"- points with false negatives: "
              f"{', '.join(_label(r) for r in recs if r not in zero_fn) or 'none'}",
              "", f"![{experiment} content]({name})", ""]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.reports.content")
    parser.add_argument("results")
    parser.add_argument("--md", help="write the Markdown table here (default: stdout)")
    parser.add_argument("--png", help="also write a bar chart")
    args = parser.parse_args(argv)
    records = summarize(read_results(args.results))
    text = markdown(records)
    if args.md:
        Path(args.md).write_text(text)
    else:
        import sys

        sys.stdout.write(text)
    if args.png:
        bar_chart(records, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
