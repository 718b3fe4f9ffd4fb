"""Line plots of the report: every series visible, units on the axes.

Each series gets its own colour, marker and line style (cycled); series
that lie on top of each other (within 1 % of the axis span at every x) are
drawn with hollow markers of decreasing size, so the lower ones show as
rings around the upper ones, and their legend entries say which series
they coincide with. The y axis is logarithmic (symlog when zeros occur)
where the values span two decades or more (:func:`~experiments.reports.columns.y_scale`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.reports.columns import axis_label, column, y_scale

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")
#: Series closer than this share of the axis span at every x coincide.
COINCIDE_TOLERANCE = 0.01


@dataclass(frozen=True, slots=True)
class Series:
    """One line: points sorted by x, with 95 % CI half-widths."""

    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    errs: tuple[float, ...]


def _transform(scale: str, linthresh: float | None):  # noqa: ANN202
    if scale == "log":
        return math.log10
    if scale == "symlog":
        lt = linthresh or 1.0
        return lambda y: math.copysign(math.log10(1 + abs(y) / lt), y)
    return lambda y: y


def coinciding(series: Sequence[Series], scale: str = "linear",
               linthresh: float | None = None) -> list[list[str]]:
    """Groups (of two or more labels, in ``series`` order) of series drawn on top of
    each other: same xs and, in axis coordinates, within :data:`COINCIDE_TOLERANCE`
    of the span at every x."""
    t = _transform(scale, linthresh)
    ty = {s.label: [t(y) for y in s.ys] for s in series}
    every = [v for vs in ty.values() for v in vs if math.isfinite(v)]
    span = (max(every) - min(every)) if every else 0.0
    tol = COINCIDE_TOLERANCE * span if span > 0 else 1e-12
    groups: list[list[Series]] = []
    for s in series:
        for g in groups:
            head = g[0]
            if head.xs == s.xs and all(abs(a - b) <= tol for a, b in
                                       zip(ty[head.label], ty[s.label], strict=True)):
                g.append(s)
                break
        else:
            groups.append([s])
    return [[s.label for s in g] for g in groups if len(g) > 1]


def line_figure(series: Sequence[Series], *, metric: str, title: str, xlabel: str,
                per: str = "notification") -> tuple[Any, list[list[str]]]:
    """A figure of ``series`` for ``metric``; returns it and the coinciding groups.

    The y label comes from :mod:`experiments.reports.columns` (unit and
    "per notification" / "per step"); the caller closes the figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scale, linthresh = y_scale([y for s in series for y in s.ys], metric)
    groups = coinciding(series, scale, linthresh)
    rank = {label: (g, k, len(g)) for g in groups for k, label in enumerate(g)}
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    for i, s in enumerate(series):
        group, k, n = rank.get(s.label, ([s.label], 0, 1))
        label = s.label if k == 0 else f"{s.label} (= {group[0]})"
        errs = list(s.errs) if any(s.errs) else None
        ax.errorbar(list(s.xs), list(s.ys), yerr=errs, label=label, color=f"C{i % 10}",
                    marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[i % len(LINESTYLES)],
                    ms=4 + 3 * (n - 1 - k), mfc="none" if n > 1 else None, mew=1.2, lw=1.2,
                    capsize=2, zorder=2 + k)
    if scale == "symlog":
        ax.set_yscale("symlog", linthresh=linthresh)
    elif scale == "log":
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(axis_label(metric, per))
    ax.set_title(title)
    ax.grid(alpha=0.3, which="major")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig, groups


def save_line_plot(series: Sequence[Series], path: str | Path, *, metric: str, title: str,
                   xlabel: str, per: str = "notification") -> list[list[str]]:
    """Write :func:`line_figure` as a PNG; returns the coinciding groups."""
    import matplotlib.pyplot as plt

    fig, groups = line_figure(series, metric=metric, title=title, xlabel=xlabel, per=per)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return groups


def coincide_note(groups: Sequence[Sequence[str]]) -> str:
    """Markdown sentence naming the coinciding series (empty when there are none)."""
    if not groups:
        return ""
    return "Coinciding series (drawn as nested hollow markers): " + "; ".join(
        " = ".join(g) for g in groups) + "."


def plot_title(experiment: str, metric: str) -> str:
    return f"{experiment}: {column(metric).label}"
