"""Figure replicas of seed 000: the thesis's evaluation figures from a results directory.

A spec declares the figures it wants (``[report] figures = ["fig-5.11", ...]``,
:attr:`experiments.cells.spec.ExperimentSpec.figures`); ``stackcast report``
reads the declaration back from the cell files
(:func:`experiments.storage.results.declared_figures`) and calls the
registered builders of :data:`FIGURES` on that experiment's aggregated
points. Nothing here looks at a spec's name: a builder reads the columns,
strategy parameters (``max_rules``, ``threshold``, ``paths``) and receiver
parameters (``subscribers``, ``scenario``, ``churn``) of the points it gets.

A builder is ``builder(points, out_dir) -> [PNG paths]``; ``points`` are the
records of :func:`experiments.reports.report.aggregate_local` (or the Spark
aggregation): the point columns and ``<metric>_mean`` / ``_ci95``. PNGs are
named after the figure (``fig-6.9b-label-types.png``). A builder whose data
is missing raises :class:`FigureDataError` (the report writes its message).

Registered figures:

- ``fig-5.11``: initial header size (B) vs rules per switch, per strategy;
  one panel per topology and receiver level (subscriber density);
- ``fig-5.12``: network load (bytes on all links) vs rules per switch;
- ``fig-5.13``: header size (a) and network load (b) vs the base-tree
  threshold, virtual paths vs hop labels for the excluded subscribers;
- ``fig-6.9a``: header entries vs rules per switch;
- ``fig-6.9b``: header entries split into tree / stop / hop labels, stacked,
  per strategy at 40 rules (the largest rule count present otherwise);
- ``fig-6.14``: topology x scenario grid of header-entry bars per strategy
  over churn 0-100 %;
- ``fig-6.15``: the best strategy (smallest mean header entries) per
  network on log-log diameter x degree variance, dot size = its mean
  entries, colour = strategy; one panel per scenario and subscriber level
  (at the largest churn present, 100 % in the thesis);
- ``elmo-5.1`` (:mod:`experiments.reports.elmo_figures`): traffic over ideal
  multicast per strategy on Elmo's groups, with the pooled table.

References
----------
Seed 000 §5.4.2-5.4.4 (Figs. 5.11-5.13), §6.5.3 (Fig. 6.9), §6.6 (Figs.
6.14, 6.15), Table 6.1; digest ch. 5-7 §4.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from experiments.reports.columns import axis_label
from experiments.reports.grouping import receiver_params
from topologies.registry import Registry

Point = Mapping[str, Any]
FigureBuilder = Callable[[Sequence[Point], Path], list[Path]]

#: Figure name -> builder; a spec's ``[report] figures`` names entries of it.
FIGURES: Registry[FigureBuilder] = Registry("figure")

#: Rules per switch of Fig. 6.9b (seed 000 §6.5.2).
BAR_RULES = 40
#: The label types of a header, their columns and colours (Fig. 6.9b).
LABEL_TYPES = (("tree labels", "header_tree_labels", "#1f77b4"),
               ("stop labels", "header_stop_labels", "#d62728"),
               ("hop labels", "header_hop_labels", "#2ca02c"))
RULES_AXIS = "virtual-tree rules per switch (rules)"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
DPI = 150


class FigureDataError(ValueError):
    """The points lack what a figure needs (one line; the report prints it)."""


def check_figures(names: Iterable[str]) -> None:
    """Raise ``SpecError`` (unknown name, with the known ones) for an unregistered figure."""
    for name in names:
        FIGURES.get(name)


def draw_figure(name: str, points: Sequence[Point], out_dir: str | Path) -> list[Path]:
    """Draw figure ``name`` from ``points`` into ``out_dir``; returns the PNGs written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return FIGURES.get(name)(points, out)


# -- reading the points ---------------------------------------------------------


@lru_cache(maxsize=4096)
def _params_of(params_json: str) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(json.loads(params_json).items()))


def strategy_params(p: Point) -> dict[str, Any]:
    """The strategy parameters of a point (its ``params`` JSON)."""
    return dict(_params_of(p["params"]))


def recv(p: Point) -> dict[str, str]:
    """The receiver-model parameters of a point (``subscribers``, ``churn`` ...)."""
    return receiver_params(p["receivers_model"])


def _num(v: Any) -> float:
    return float(v)


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


#: How a strategy parameter reads in a series label (default ``key=value``).
PARAM_LABELS: dict[str, Callable[[Any], str]] = {
    "threshold": lambda v: f"threshold {_fmt_value(v)} %",
    "paths": lambda v: "paths/tree" if v else "hops/tree",
    "max_rules": lambda v: f"{_fmt_value(v)} rules",
}
#: How a receiver parameter reads in a panel title (default ``key=value``).
RECEIVER_LABELS: dict[str, Callable[[str], str]] = {
    "subscribers": lambda v: f"{v} % subscribers",
    "percent": lambda v: f"{v} % receivers",
    "scenario": lambda v: v,
    "churn": lambda v: f"churn {v} %",
}


def strategy_labels(points: Sequence[Point], skip: Iterable[str] = ()) -> dict[int, str]:
    """A series label per point: the strategy and those of its parameters (but ``skip``)
    that vary among its points, e.g. ``threshold 30 %`` or ``vt-tree (paths/tree)``."""
    skip = set(skip)
    values: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for p in points:
        for k, v in strategy_params(p).items():
            values[p["strategy"]][k].add(json.dumps(v))
    out = {}
    for i, p in enumerate(points):
        params = strategy_params(p)
        varying = [k for k in sorted(params) if k not in skip
                   and len(values[p["strategy"]][k]) > 1]
        parts = [PARAM_LABELS.get(k, lambda v, k=k: f"{k}={_fmt_value(v)}")(params[k])
                 for k in varying]
        if len(parts) == 1 and parts[0].startswith(p["strategy"]):  # "threshold 30 %"
            out[i] = parts[0]
        else:
            out[i] = p["strategy"] + (f" ({', '.join(parts)})" if parts else "")
    return out


def topology_label(spec: str) -> str:
    """``zoo:Litnet`` -> ``Litnet``; a generator spec -> its generator name."""
    kind, _, rest = spec.partition(":")
    return rest if kind == "zoo" and rest else kind


def receiver_label(spec: str, skip: Iterable[str] = ()) -> str:
    skip = set(skip)
    return ", ".join(RECEIVER_LABELS.get(k, lambda v, k=k: f"{k}={v}")(v)
                     for k, v in receiver_params(spec).items() if k not in skip)


def _need(points: Sequence[Point], columns: Iterable[str], figure: str) -> None:
    if not points:
        raise FigureDataError(f"{figure}: no points")
    missing = [c for c in columns if f"{c}_mean" not in points[0]]
    if missing:
        raise FigureDataError(f"{figure}: the results have no {', '.join(missing)} column "
                              "(run them again with this version)")


def _varying_receiver_keys(points: Sequence[Point], skip: Iterable[str] = ()) -> list[str]:
    skip = set(skip)
    specs = {p["receivers_model"] for p in points}
    keys = sorted({k for s in specs for k in receiver_params(s)} - skip)
    return [k for k in keys if len({receiver_params(s).get(k) for s in specs}) > 1]


#: Order of non-numeric receiver-parameter values in grids (the thesis's: Figs. 6.13-6.15).
VALUE_ORDER = ("uniform", "nearby", "distant")


def _sort_key(value: str) -> tuple[int, float | str]:
    """Numbers ascending, then :data:`VALUE_ORDER`, then other words alphabetically."""
    try:
        return (0, float(value))
    except ValueError:
        if value in VALUE_ORDER:
            return (1, VALUE_ORDER.index(value))
        return (2, value)


def _plain_log_ticks(axis: Any) -> None:
    """Log-axis tick labels as plain numbers (3, 10, 30; 0.1, 1), minor ones at 2, 3, 5."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    axis.set_major_formatter(plain)
    axis.set_minor_locator(LogLocator(subs=(2.0, 3.0, 5.0)))
    axis.set_minor_formatter(plain)


# -- drawing helpers --------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
                         "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8})
    return plt


def _grid(plt: Any, n: int, cols: int | None = None, size: tuple[float, float] = (4.0, 3.0),
          sharey: bool | str = False) -> tuple[Any, list[Any]]:
    cols = cols or min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows),
                             squeeze=False, sharey=sharey)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return path


def _panel_title(topology: str, receivers: str, show_receivers: bool) -> str:
    title = topology_label(topology)
    extra = receiver_label(receivers) if show_receivers else ""
    return f"{title}: {extra}" if extra else title


# -- line figures over a strategy parameter (Figs. 5.11-5.13, 6.9a) ---------------


def line_panels(points: Sequence[Point], out: Path, *, file: str, metric: str, x_param: str,
                xlabel: str, figure: str) -> Path:
    """One panel per (topology, receiver model): ``metric`` vs strategy parameter
    ``x_param``, one line per series (strategy and its other varying parameters);
    a series without ``x_param`` (e.g. source routing) is a dashed constant line."""
    _need(points, [metric], figure)
    labels = strategy_labels(points, skip=[x_param])
    if not any(x_param in strategy_params(p) for p in points):
        raise FigureDataError(f"{figure}: no strategy has the parameter {x_param!r}")
    panels: dict[tuple[str, str], dict[str, list[tuple[float, float, float]]]] = \
        defaultdict(lambda: defaultdict(list))
    flat: dict[tuple[str, str], dict[str, tuple[float, float]]] = defaultdict(dict)
    for i, p in enumerate(points):
        key = (p["topology"], p["receivers_model"])
        params = strategy_params(p)
        if x_param in params:
            panels[key][labels[i]].append((_num(params[x_param]), p[f"{metric}_mean"],
                                           p[f"{metric}_ci95"]))
        else:
            flat[key][labels[i]] = (p[f"{metric}_mean"], p[f"{metric}_ci95"])
    keys = sorted(set(panels) | set(flat))
    series_names = sorted({s for k in keys for s in (*panels[k], *flat[k])})
    style = {s: (f"C{i % 10}", MARKERS[i % len(MARKERS)]) for i, s in enumerate(series_names)}
    show_recv = len({k[1] for k in keys}) > 1
    plt = _pyplot()
    fig, axes = _grid(plt, len(keys))
    handles: dict[str, Any] = {}
    for ax, key in zip(axes, keys, strict=True):
        xs_all = sorted({x for pts in panels[key].values() for x, _, _ in pts})
        for name in series_names:
            colour, marker = style[name]
            if name in panels[key]:
                pts = sorted(panels[key][name])
                h = ax.errorbar([x for x, _, _ in pts], [y for _, y, _ in pts],
                                yerr=[e for _, _, e in pts], color=colour, marker=marker,
                                ms=4, lw=1.2, capsize=2, label=name)
                handles[name] = h
            elif name in flat[key] and xs_all:
                y, _ = flat[key][name]
                (h,) = ax.plot([xs_all[0], xs_all[-1]], [y, y], color=colour, ls="--", lw=1.4,
                               label=name)
                handles[name] = h
        ax.set_title(_panel_title(*key, show_recv))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(axis_label(metric))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.legend([handles[n] for n in series_names if n in handles],
               [n for n in series_names if n in handles], loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(handles)), frameon=False)
    fig.tight_layout()
    return _save(plt, fig, out / file)


def _lines(file: str, metric: str, x_param: str, xlabel: str, figure: str) -> FigureBuilder:
    def build(points: Sequence[Point], out: Path) -> list[Path]:
        return [line_panels(points, out, file=file, metric=metric, x_param=x_param,
                            xlabel=xlabel, figure=figure)]
    build.__doc__ = f"{figure}: {metric} vs {x_param} (:func:`line_panels`)."
    return build


FIGURES.add("fig-5.11", _lines("fig-5.11-header-bytes.png", "header_bytes", "max_rules",
                               RULES_AXIS, "fig-5.11"))
FIGURES.add("fig-5.12", _lines("fig-5.12-network-load.png", "bytes", "max_rules",
                               RULES_AXIS, "fig-5.12"))
FIGURES.add("fig-6.9a", _lines("fig-6.9a-header-entries.png", "header_entries", "max_rules",
                               RULES_AXIS, "fig-6.9a"))


@FIGURES.register("fig-5.13")
def fig_5_13(points: Sequence[Point], out: Path) -> list[Path]:
    """Fig. 5.13: header size (a) and network load (b) vs the base-tree threshold."""
    xlabel = "base-tree threshold (% of a tree's subscribers)"
    return [line_panels(points, out, file="fig-5.13a-header-bytes.png", metric="header_bytes",
                        x_param="threshold", xlabel=xlabel, figure="fig-5.13"),
            line_panels(points, out, file="fig-5.13b-network-load.png", metric="bytes",
                        x_param="threshold", xlabel=xlabel, figure="fig-5.13")]


# -- Fig. 6.9b: label types at 40 rules --------------------------------------------


@FIGURES.register("fig-6.9b")
def fig_6_9b(points: Sequence[Point], out: Path) -> list[Path]:
    """Fig. 6.9b: mean tree, stop and hop labels per header, stacked, per strategy at
    :data:`BAR_RULES` rules per switch (the largest rule count present if 40 is not);
    strategies without rules (source routing) are included."""
    _need(points, [c for _, c, _ in LABEL_TYPES], "fig-6.9b")
    rules = {r for p in points if (r := strategy_params(p).get("max_rules")) is not None}
    at = BAR_RULES if BAR_RULES in rules or not rules else max(rules)
    chosen = [p for p in points if strategy_params(p).get("max_rules", at) == at]
    labels = strategy_labels(chosen, skip=["max_rules"])
    panels: dict[tuple[str, str], dict[str, Point]] = defaultdict(dict)
    for i, p in enumerate(chosen):
        panels[(p["topology"], p["receivers_model"])][labels[i]] = p
    keys = sorted(panels)
    show_recv = len({k[1] for k in keys}) > 1
    plt = _pyplot()
    n_bars = max(len(v) for v in panels.values())
    fig, axes = _grid(plt, len(keys), size=(max(3.5, 0.36 * n_bars + 1.2), 3.8))
    for ax, key in zip(axes, keys, strict=True):
        names = sorted(panels[key])
        bottom = [0.0] * len(names)
        for label, col, colour in LABEL_TYPES:
            ys = [panels[key][n][f"{col}_mean"] for n in names]
            ax.bar(range(len(names)), ys, bottom=bottom, color=colour, width=0.7, label=label,
                   edgecolor="white", linewidth=0.4)
            bottom = [b + y for b, y in zip(bottom, ys, strict=True)]
        ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
        ax.set_title(_panel_title(*key, show_recv) + f" ({fmt_rules(at)})")
        ax.set_ylabel(axis_label("header_entries"))
        ax.grid(alpha=0.3, axis="y")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles[::-1], names[::-1], loc="upper left", bbox_to_anchor=(1.0, 0.95),
               frameon=False)
    fig.tight_layout()
    return [_save(plt, fig, out / "fig-6.9b-label-types.png")]


def fmt_rules(rules: Any) -> str:
    return "no rules" if rules is None else f"{_fmt_value(rules)} rules per switch"


# -- Fig. 6.14: header entries over churn ------------------------------------------


@FIGURES.register("fig-6.14")
def fig_6_14(points: Sequence[Point], out: Path) -> list[Path]:
    """Fig. 6.14: rows = topologies, columns = migration scenarios (and any other
    varying receiver parameter); in each panel one group of bars per strategy,
    one bar per churn level (light = 0 %, dark = 100 %), height = mean header
    entries."""
    _need(points, ["header_entries"], "fig-6.14")
    if not any("churn" in recv(p) for p in points):
        raise FigureDataError("fig-6.14: the receiver model has no churn parameter")
    col_keys = _varying_receiver_keys(points, skip=["churn"])
    labels = strategy_labels(points)
    levels = sorted({recv(p).get("churn", "0") for p in points}, key=_sort_key)
    topologies = sorted({p["topology"] for p in points})
    columns = sorted({tuple(recv(p).get(k, "") for k in col_keys) for p in points},
                     key=lambda t: [_sort_key(v) for v in t])
    cells: dict[tuple[str, tuple[str, ...]], dict[str, dict[str, float]]] = \
        defaultdict(lambda: defaultdict(dict))
    for i, p in enumerate(points):
        r = recv(p)
        col = tuple(r.get(k, "") for k in col_keys)
        cells[(p["topology"], col)][labels[i]][r.get("churn", "0")] = p["header_entries_mean"]
    strategies = sorted(set(labels.values()))
    plt = _pyplot()
    cmap = plt.get_cmap("viridis")
    shade = {c: cmap(0.9 - 0.8 * k / max(1, len(levels) - 1)) for k, c in enumerate(levels)}
    width = 0.84 / len(levels)
    bars = len(strategies) * len(levels)
    fig, axes = _grid(plt, len(topologies) * len(columns), cols=len(columns),
                      size=(max(4.0, min(6.0, 1.0 + 0.045 * bars)), 3.2), sharey="row")
    for k, ax in enumerate(axes):
        topo, col = topologies[k // len(columns)], columns[k % len(columns)]
        data = cells.get((topo, col), {})
        for j, level in enumerate(levels):
            xs = [s + (j - (len(levels) - 1) / 2) * width for s in range(len(strategies))]
            ys = [data.get(s, {}).get(level, math.nan) for s in strategies]
            ax.bar(xs, ys, width=width, color=shade[level], label=f"{level} %")
        title = topology_label(topo)
        if col_keys:
            title += ": " + ", ".join(RECEIVER_LABELS.get(key, lambda v, key=key: f"{key}={v}")(v)
                                      for key, v in zip(col_keys, col, strict=True))
        ax.set_title(title)
        ax.set_xticks(range(len(strategies)), strategies, rotation=45, ha="right")
        if k % len(columns) == 0:
            ax.set_ylabel(axis_label("header_entries"))
        ax.grid(alpha=0.3, axis="y")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, title="churn (% of clients migrated)", loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=min(11, len(levels)), frameon=False)
    fig.tight_layout()
    return [_save(plt, fig, out / "fig-6.14-churn.png")]


# -- Fig. 6.15: best strategy per network -------------------------------------------


@lru_cache(maxsize=256)
def topology_stats(spec: str) -> tuple[int, float]:
    """Diameter (hops) and degree variance σ_k² of ``spec``'s switch graph, by the
    convention of seed 000 Table 6.1 (:func:`topologies.zoo_table.table_row`:
    degrees zero-padded to the table's 88 nodes; textbook variance for larger
    graphs)."""
    from topologies.specs import load_topology
    from topologies.zoo_table import THESIS_PAD_NODES, table_row

    g = load_topology(spec).switch_graph
    pad = THESIS_PAD_NODES if g.number_of_nodes() <= THESIS_PAD_NODES else None
    row = table_row(spec, list(g.nodes), list(g.edges), pad)
    return row.diameter, row.degree_variance


def best_strategies(points: Sequence[Point], metric: str = "header_entries"
                    ) -> dict[tuple[str, str], tuple[str, float]]:
    """(topology, receiver model) -> the series label with the smallest mean ``metric``
    and that mean (ties: the first label in sorted order)."""
    labels = strategy_labels(points)
    best: dict[tuple[str, str], tuple[str, float]] = {}
    for i, p in sorted(enumerate(points), key=lambda ip: labels[ip[0]]):
        key, value = (p["topology"], p["receivers_model"]), p[f"{metric}_mean"]
        if key not in best or value < best[key][1]:
            best[key] = (labels[i], value)
    return best


def _at_top_churn(points: Sequence[Point]) -> Sequence[Point]:
    """The points at the largest churn level present (all points if none has churn)."""
    churns = {c for p in points if (c := recv(p).get("churn")) is not None}
    if not churns:
        return points
    top = max(churns, key=_sort_key)
    return [p for p in points if recv(p).get("churn", top) == top]


def best_strategy_table(points: Sequence[Point],
                        stats: Callable[[str], tuple[int, float]] | None = None) -> list[str]:
    """Fig. 6.15 as Markdown: per network (by diameter, then σ_k²) its d, σ_k² and, per
    receiver model, the best strategy with its mean header entries."""
    stats = stats or topology_stats
    best = best_strategies(_at_top_churn(points))
    specs = sorted({s for _, s in best}, key=lambda s: [_sort_key(v) for v in
                                                         receiver_params(s).values()])
    topos = sorted({t for t, _ in best}, key=lambda t: (stats(t)[0], -stats(t)[1]))
    lines = ["| network | d | σ_k² | " + " | ".join(receiver_label(s) for s in specs) + " |",
             "|" + "---|" * (3 + len(specs))]
    for t in topos:
        d, var = stats(t)
        cells = [f"{best[t, s][0]} ({best[t, s][1]:.3g})" if (t, s) in best else ""
                 for s in specs]
        lines.append(f"| {topology_label(t)} | {d} | {var:.2f} | " + " | ".join(cells) + " |")
    return lines


@FIGURES.register("fig-6.15")
def fig_6_15(points: Sequence[Point], out: Path,
             stats: Callable[[str], tuple[int, float]] | None = None) -> list[Path]:
    """Fig. 6.15: per network, the best strategy at (diameter, σ_k²) on log-log axes;
    colour = strategy, dot area proportional to its mean header entries; rows =
    scenarios, columns = subscriber levels (any varying receiver parameter but
    churn); only the largest churn level present (100 % in the thesis).
    ``stats``: topology spec -> (diameter, σ_k²), default :func:`topology_stats`."""
    _need(points, ["header_entries"], "fig-6.15")
    stats = stats or topology_stats
    points = _at_top_churn(points)
    best = best_strategies(points)
    keys = _varying_receiver_keys(points, skip=["churn"])
    row_key = "scenario" if "scenario" in keys else None
    col_keys = [k for k in keys if k != row_key]

    def panel_of(spec: str) -> tuple[str, tuple[str, ...]]:
        r = receiver_params(spec)
        return (r.get(row_key, "") if row_key else "", tuple(r.get(k, "") for k in col_keys))

    rows = sorted({panel_of(s)[0] for _, s in best}, key=_sort_key)
    cols = sorted({panel_of(s)[1] for _, s in best}, key=lambda t: [_sort_key(v) for v in t])
    strategies = sorted({s for s, _ in best.values()})
    colour = {s: f"C{i % 10}" for i, s in enumerate(sorted(set(strategy_labels(points)
                                                                .values())))}
    top_entries = max(v for _, v in best.values()) or 1.0

    def area(v: float) -> float:
        return 15 + 285 * v / top_entries

    plt = _pyplot()
    fig, axes = _grid(plt, len(rows) * len(cols), cols=len(cols), size=(3.6, 3.2))
    for k, ax in enumerate(axes):
        row, col = rows[k // len(cols)], cols[k % len(cols)]
        for (topo, spec), (name, value) in sorted(best.items()):
            if panel_of(spec) != (row, col):
                continue
            d, var = stats(topo)
            ax.scatter([d], [max(var, 1e-2)], s=area(value), color=colour[name], alpha=0.75,
                       edgecolors="black", linewidths=0.4, zorder=3)
            ax.annotate(topology_label(topo), (d, max(var, 1e-2)), fontsize=5,
                        xytext=(3, 3), textcoords="offset points", zorder=4)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis)
        _plain_log_ticks(ax.yaxis)
        title = [RECEIVER_LABELS["scenario"](row)] if row_key else []
        title += [RECEIVER_LABELS.get(key, lambda v, key=key: f"{key}={v}")(v)
                  for key, v in zip(col_keys, col, strict=True)]
        ax.set_title(", ".join(title) or "all networks")
        ax.set_xlabel("network diameter d (hops)")
        ax.set_ylabel("node degree variance σ_k² (links²)")
        ax.grid(alpha=0.3, which="both")
    handles = [plt.Line2D([], [], ls="", marker="o", ms=7, color=colour[s], label=s)
               for s in strategies]
    sizes = sorted({round(top_entries * f) for f in (0.25, 0.5, 1.0)} - {0})
    handles += [plt.Line2D([], [], ls="", marker="o", ms=math.sqrt(area(v)), color="grey",
                           alpha=0.6, label=f"{v} entries") for v in sizes]  # ms: diameter
    fig.legend(handles=handles, title="best strategy / mean header entries",
               loc="upper left", bbox_to_anchor=(1.0, 0.95), frameon=False)
    fig.tight_layout()
    return [_save(plt, fig, out / "fig-6.15-best-strategies.png")]


# -- the report's section ------------------------------------------------------------


def figure_section(names: Sequence[str], points: Sequence[Point], out_dir: str | Path
                   ) -> list[str]:
    """Markdown lines of the declared figure replicas of one experiment: each figure's
    PNGs, or one line saying why it could not be drawn (:class:`FigureDataError`)."""
    lines = ["### Figure replicas (seed 000)", ""]
    for name in names:
        try:
            paths = draw_figure(name, points, out_dir)
        except FigureDataError as exc:
            lines += [f"*{name}: not drawn ({exc}).*", ""]
            continue
        lines += [f"![{name}]({p.name})" for p in paths] + [""]
        if name in TABLES:
            title, table = TABLES[name]
            lines += [title, ""] + table(points) + [""]
    return lines


#: Figure name -> (title, Markdown table of the points) printed under its PNGs.
TABLES: dict[str, tuple[str, Callable[[Sequence[Point]], list[str]]]] = {
    "fig-6.15": ("Best strategy (smallest mean header entries) per network, at the largest "
                 "churn:", best_strategy_table),
}

from experiments.reports import elmo_figures  # noqa: E402,F401  (registers elmo-5.1)
