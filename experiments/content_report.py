"""Content-filter summaries: rates over whole cells, a Markdown table and a bar chart.

``stackcast report`` averages per-row metrics; the content experiments need
ratios of sums (seed 001's network false-positive rate = network FP link
forwardings / all link forwardings), the merge ratio of the installed state
and per-strategy totals. Usage::

    python -m experiments.content_report RESULTS_DIR [--md OUT.md] [--png OUT.png]

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
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from experiments.results import read_results
from experiments.schema import POINT_COLUMNS

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
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(*(cols[c] for c in POINT_COLUMNS), strict=True)):
        groups[key].append(i)
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
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def markdown(records: Sequence[dict[str, Any]], columns: Sequence[str] = COLUMNS) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in records:
        lines.append("| " + " | ".join(_fmt(r[c]).replace("|", "/") for c in columns) + " |")
    return "\n".join(lines) + "\n"


def bar_chart(records: Sequence[dict[str, Any]], out: str | Path,
              metrics: Sequence[str] = ("bytes_per_note", "link_fp_rate", "state_entries",
                                        "control_writes")) -> Path:
    """One panel per metric, one bar per strategy/params (log scale where it helps)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["strategy"] + ("" if r["params"] == "{}" else "\n" + r["params"][1:-1]
                               .replace('"', "")) for r in records]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 4.8))
    for ax, m in zip(axes, metrics, strict=True):
        vals = [float(r[m]) for r in records]
        ax.bar(range(len(vals)), vals, color="tab:blue")
        ax.set_xticks(range(len(vals)), labels, rotation=70, ha="right", fontsize=7)
        ax.set_title(m)
        if min(vals) > 0 and max(vals) / min(vals) > 100:
            ax.set_yscale("log")
    fig.tight_layout()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.content_report")
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
