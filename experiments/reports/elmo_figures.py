"""Elmo's headline comparison (issue 18): every strategy on the same groups, sliced runs pooled.

``[report] figures = ["elmo-5.1"]`` (experiments/specs/elmo.toml, elmo-1m.toml)
draws the traffic of each strategy over ideal multicast and prints the
table Elmo's §5.1 headline numbers are read from: per strategy and group-size
model, the mean and largest header (B), frames on links per notification,
their excess over the ``multicast`` strategy (ideal multicast: one frame per
tree link) on the same notifications, and the state entries of all
switches.

The points of one strategy and group-size model that differ only in the
``tenants`` slice (``part``/``parts``, the cells of the 1M-group study)
are pooled: means weighted by their notification counts, the largest
maximum. Every strategy's slices must be the same set as multicast's (the
same notifications), else the excess is not printed.

References
----------
Elmo SIGCOMM 2019 §5.1 (header size, traffic over ideal multicast, group
table entries); experiments/reports/figures.py (the registry).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from experiments.reports.figures import (
    DPI,
    FIGURES,
    TABLES,
    FigureDataError,
    Point,
    _pyplot,
    _save,
    recv,
    strategy_labels,
)

#: Receiver parameters that only name a slice of one workload.
SLICE_KEYS = ("part", "parts")
IDEAL = "multicast"


def _model(p: Point) -> str:
    """The group-size model of a point (``wve`` unless its receivers say otherwise)."""
    return recv(p).get("group_size", "wve")


def pooled(points: Sequence[Point]) -> dict[tuple[str, str], dict[str, float]]:
    """(series label, group-size model) -> pooled figures (module docstring); also
    ``slices``, the set of slice names, as a frozenset under ``"_slices"``."""
    labels = strategy_labels(points)
    groups: dict[tuple[str, str, str], list[Point]] = defaultdict(list)
    for i, p in enumerate(points):
        groups[(labels[i], _model(p), p["topology"])].append(p)
    out: dict[tuple[str, str], dict[str, float]] = {}
    for (label, model, _), ps in sorted(groups.items()):
        n = sum(p["count"] for p in ps)
        rec: dict[str, float] = {"count": n}
        for m in ("receivers", "header_bytes", "frames", "bytes", "state_entries"):
            rec[m] = sum(p[f"{m}_mean"] * p["count"] for p in ps) / n
        rec["header_bytes_max"] = max(p.get("header_bytes_max", float("nan")) for p in ps)
        rec["_slices"] = frozenset(  # type: ignore[assignment]
            (recv(p).get("part", "0"), recv(p).get("parts", "1")) for p in ps)
        out[(label, model)] = rec
    return out


def excess(figures: dict[tuple[str, str], dict[str, float]]) -> dict[tuple[str, str], float]:
    """(label, model) -> frames over ``multicast``'s on the same slices (fraction)."""
    out = {}
    for (label, model), rec in figures.items():
        ideal = figures.get((IDEAL, model))
        if ideal is not None and ideal["_slices"] == rec["_slices"] and ideal["frames"] > 0:
            out[(label, model)] = rec["frames"] / ideal["frames"] - 1.0
    return out


def elmo_table(points: Sequence[Point]) -> list[str]:
    """The pooled comparison as Markdown lines (module docstring)."""
    figures = pooled(points)
    over = excess(figures)
    lines = ["| strategy | group sizes | notifications | receivers (hosts) | header bytes, mean"
             " (B) | header bytes, max (B) | frames on links | over ideal multicast (%) | "
             "bytes on links (B) | state entries, all switches |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (label, model), r in sorted(figures.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ex = f"{100 * over[(label, model)]:+.1f}" if (label, model) in over else ""
        lines.append(f"| {label} | {model} | {int(r['count']):,} | {r['receivers']:.1f} | "
                     f"{r['header_bytes']:.1f} | {r['header_bytes_max']:.0f} | "
                     f"{r['frames']:.1f} | {ex} | {r['bytes']:,.0f} | "
                     f"{r['state_entries']:,.0f} |")
    return lines


@FIGURES.register("elmo-5.1")
def elmo_5_1(points: Sequence[Point], out: Path) -> list[Path]:
    """Bars: frames on links over ideal multicast (%) per strategy, one group per
    group-size model (WVE, uniform)."""
    over = excess(pooled(points))
    if not over:
        raise FigureDataError("needs the multicast strategy on the same groups")
    plt = _pyplot()
    models = sorted({m for _, m in over})
    labels = sorted({label for label, _ in over if label != IDEAL})
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(labels) * len(models), 3.4), dpi=DPI)
    width = 0.8 / len(models)
    for k, model in enumerate(models):
        xs = [i + (k - (len(models) - 1) / 2) * width for i in range(len(labels))]
        ys = [100 * over.get((label, model), float("nan")) for label in labels]
        ax.bar(xs, ys, width, label=f"{model} group sizes")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylabel("frames on links over ideal multicast (%)")
    ax.set_yscale("symlog", linthresh=10)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.legend(frameon=False, fontsize="small")
    ax.set_title("Traffic over ideal multicast, same notifications (Elmo §5.1)")
    return [_save(plt, fig, out / "elmo-5.1-traffic-over-multicast.png")]


TABLES["elmo-5.1"] = ("Every strategy on Elmo's groups, slices pooled (Elmo §5.1):",
                      elmo_table)
