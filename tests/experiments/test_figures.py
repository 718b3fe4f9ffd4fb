"""Figure replicas of seed 000 (experiments/reports/figures.py): Figs. 5.11-5.13,
6.9a/b, 6.14, 6.15 from small synthetic row tables, the ``[report] figures``
declaration of a spec, and ``stackcast report`` drawing exactly the declared ones."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from support.rows import rows_table

from experiments.cells.spec import parse_spec_dict
from experiments.cli.main import main
from experiments.reports import figures
from experiments.reports.figures import (
    FIGURES,
    FigureDataError,
    best_strategies,
    check_figures,
    draw_figure,
)
from experiments.reports.report import aggregate_local
from topologies.registry import SpecError

SPECS = Path(__file__).resolve().parents[2] / "experiments" / "specs"


@pytest.fixture
def captured(monkeypatch):
    """The figures each builder saved (kept open for inspection)."""
    out: dict[str, object] = {}
    real = figures._save

    def save(plt, fig, path):
        fig.canvas.draw()
        out[path.name] = fig
        fig.savefig(path, dpi=40)
        return path

    monkeypatch.setattr(figures, "_save", save)
    yield out
    del real


def visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def legend_texts(fig):
    return sorted(t.get_text() for leg in fig.legends for t in leg.get_texts())


# -- Figs. 5.11 / 5.12 / 6.9a: lines over max_rules -------------------------------------


def rules_points():
    rows = []
    for density in (30, 70):
        recv = f"frequency:subscribers={density}"
        rows.append({"strategy": "source-routed", "receivers_model": recv,
                     "topology": "fabric:pods=8", "header_bytes": 60 + density,
                     "header_entries": 30, "bytes": 5000, "header_hop_labels": 30})
        for rules in (0, 10, 20):
            for thr in (30.0, 70.0):
                rows.append({"strategy": "threshold", "receivers_model": recv,
                             "topology": "fabric:pods=8",
                             "params": {"max_rules": rules, "threshold": thr},
                             "header_bytes": 60 - rules, "header_entries": 30 - rules,
                             "bytes": 4000})
            rows.append({"strategy": "vt-tree", "receivers_model": recv,
                         "topology": "fabric:pods=8", "params": {"max_rules": rules},
                         "header_bytes": 50 - rules, "bytes": 3000})
    return aggregate_local(rows_table(rows))


@pytest.mark.parametrize(("name", "file", "unit"), [
    ("fig-5.11", "fig-5.11-header-bytes.png", "(B)"),
    ("fig-5.12", "fig-5.12-network-load.png", "(B)"),
    ("fig-6.9a", "fig-6.9a-header-entries.png", "(entries)"),
])
def test_lines_over_rules_one_panel_per_density_one_series_per_strategy(
        tmp_path, captured, name, file, unit):
    paths = draw_figure(name, rules_points(), tmp_path)
    assert [p.name for p in paths] == [file] and paths[0].stat().st_size > 1000
    fig = captured[file]
    axes = visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["fabric: 30 % subscribers",
                                               "fabric: 70 % subscribers"]
    for ax in axes:
        assert ax.get_xlabel() == "virtual-tree rules per switch (rules)"
        assert ax.get_ylabel().endswith(unit) and "per notification" in ax.get_ylabel()
        assert len(ax.containers) == 3  # threshold 30 %, threshold 70 %, vt-tree
        assert len([ln for ln in ax.lines if ln.get_linestyle() == "--"]) == 1  # source routing
    assert legend_texts(fig) == ["source-routed", "threshold 30 %", "threshold 70 %",
                                 "vt-tree"]


def test_fig_5_13_draws_header_and_load_over_the_threshold(tmp_path, captured):
    rows = [{"strategy": "threshold", "receivers_model": f"frequency:subscribers={d}",
             "topology": "fabric:pods=8",
             "params": {"max_rules": 10, "threshold": t, "paths": p},
             "header_bytes": 40 + t / 10, "bytes": 900}
            for d in (30, 50, 70) for t in (0.0, 50.0, 100.0) for p in (True, False)]
    paths = draw_figure("fig-5.13", aggregate_local(rows_table(rows)), tmp_path)
    assert [p.name for p in paths] == ["fig-5.13a-header-bytes.png",
                                       "fig-5.13b-network-load.png"]
    fig = captured["fig-5.13a-header-bytes.png"]
    assert len(visible_axes(fig)) == 3
    assert legend_texts(fig) == ["threshold (hops/tree)", "threshold (paths/tree)"]
    assert visible_axes(fig)[0].get_xlabel().endswith("(% of a tree's subscribers)")


# -- Fig. 6.9b: stacked label types --------------------------------------------------


def test_fig_6_9b_stacks_tree_stop_hop_at_40_rules(tmp_path, captured):
    rows = []
    for topo in ("zoo:Litnet", "zoo:Dfn"):
        rows.append({"strategy": "source-routed", "topology": topo,
                     "receivers_model": "clustered:scenario=nearby,churn=0",
                     "header_entries": 20, "header_hop_labels": 20})
        for rules in (10, 40):
            for strategy, (t, s, h) in (("vt-clusters", (3, 1, 8)), ("vt-random", (1, 4, 9))):
                rows.append({"strategy": strategy, "topology": topo,
                             "receivers_model": "clustered:scenario=nearby,churn=0",
                             "params": {"max_rules": rules},
                             "header_entries": t + s + h + (rules == 10),
                             "header_tree_labels": t, "header_stop_labels": s,
                             "header_hop_labels": h + (rules == 10)})
    paths = draw_figure("fig-6.9b", aggregate_local(rows_table(rows)), tmp_path)
    assert [p.name for p in paths] == ["fig-6.9b-label-types.png"]
    fig = captured["fig-6.9b-label-types.png"]
    axes = visible_axes(fig)
    assert [ax.get_title() for ax in axes] == ["Dfn (40 rules per switch)",
                                               "Litnet (40 rules per switch)"]
    assert legend_texts(fig) == ["hop labels", "stop labels", "tree labels"]
    for ax in axes:
        assert ax.get_ylabel() == "header entries per notification (entries)"
        assert [t.get_text() for t in ax.get_xticklabels()] == [
            "source-routed", "vt-clusters", "vt-random"]
        assert len(ax.patches) == 3 * 3  # 3 label types x 3 strategies
        tops = {}
        for bar in ax.patches:
            x = round(bar.get_x(), 3)
            tops[x] = max(tops.get(x, 0.0), bar.get_y() + bar.get_height())
        assert sorted(tops.values()) == [12.0, 14.0, 20.0]  # the 40-rule headers


# -- Fig. 6.14: churn bars -----------------------------------------------------------


def churn_points():
    rows = [{"strategy": s, "topology": topo, "params": {"max_rules": 40} if s != "hops" else {},
             "receivers_model": f"clustered:scenario={sc},churn={c}",
             "header_entries": 10 + c / 10}
            for topo in ("zoo:Litnet", "zoo:Dfn") for sc in ("uniform", "nearby", "distant")
            for c in (0, 50, 100) for s in ("hops", "vt-freq-relation")]
    return aggregate_local(rows_table(rows))


def test_fig_6_14_topology_by_scenario_grid_of_bars_over_churn(tmp_path, captured):
    paths = draw_figure("fig-6.14", churn_points(), tmp_path)
    assert [p.name for p in paths] == ["fig-6.14-churn.png"]
    fig = captured["fig-6.14-churn.png"]
    axes = visible_axes(fig)
    assert [ax.get_title() for ax in axes] == [
        "Dfn: uniform", "Dfn: nearby", "Dfn: distant",  # the thesis's order of scenarios
        "Litnet: uniform", "Litnet: nearby", "Litnet: distant"]
    for ax in axes:
        assert len(ax.patches) == 2 * 3  # strategies x churn levels
        assert sorted(round(b.get_height(), 6) for b in ax.patches) == [10, 10, 15, 15, 20, 20]
    assert axes[0].get_ylabel() == "header entries per notification (entries)"
    assert fig.legends[0].get_title().get_text() == "churn (% of clients migrated)"
    assert legend_texts(fig) == ["0 %", "100 %", "50 %"]


def test_fig_6_14_needs_a_churn_parameter(tmp_path):
    with pytest.raises(FigureDataError, match="churn"):
        draw_figure("fig-6.14", rules_points(), tmp_path)


# -- Fig. 6.15: best strategy per network ----------------------------------------------


def best_points():
    rows = []
    entries = {"zoo:A": {"hops": 30, "vt-clusters": 12, "vt-random": 15},
               "zoo:B": {"hops": 40, "vt-clusters": 25, "vt-random": 20}}
    for topo, by in entries.items():
        for sc in ("uniform", "distant"):
            for subs in (15, 45):
                for churn in (0, 100):
                    for s, e in by.items():
                        rows.append({"strategy": s, "topology": topo,
                                     "receivers_model": (f"clustered:scenario={sc},"
                                                         f"churn={churn},subscribers={subs}"),
                                     "header_entries": e if churn == 100 else 1})
    return aggregate_local(rows_table(rows))


def test_best_strategies_picks_the_smallest_mean_header():
    best = best_strategies(best_points())
    key = "clustered:scenario=uniform,churn=100,subscribers=15"
    assert best[("zoo:A", key)] == ("vt-clusters", 12.0)
    assert best[("zoo:B", key)] == ("vt-random", 20.0)


def test_fig_6_15_scatter_of_best_strategy_log_log(tmp_path, captured):
    stats = {"zoo:A": (4, 5.04), "zoo:B": (31, 0.11)}.__getitem__
    paths = figures.fig_6_15(best_points(), tmp_path, stats=stats)
    assert [p.name for p in paths] == ["fig-6.15-best-strategies.png"]
    fig = captured["fig-6.15-best-strategies.png"]
    axes = visible_axes(fig)
    assert [ax.get_title() for ax in axes] == [
        "uniform, 15 % subscribers", "uniform, 45 % subscribers",
        "distant, 15 % subscribers", "distant, 45 % subscribers"]
    for ax in axes:
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert ax.get_xlabel() == "network diameter d (hops)"
        assert ax.get_ylabel() == "node degree variance σ_k² (links²)"
        dots = ax.collections
        assert len(dots) == 2  # one per network: only churn 100 %, the best strategy
        offsets = sorted(tuple(d.get_offsets()[0]) for d in dots)
        assert offsets == [(4.0, 5.04), (31.0, 0.11)]
        sizes = {tuple(d.get_offsets()[0]): d.get_sizes()[0] for d in dots}
        assert sizes[(31.0, 0.11)] > sizes[(4.0, 5.04)]  # 20 entries > 12 entries
    assert "vt-clusters" in legend_texts(fig) and "vt-random" in legend_texts(fig)
    assert "hops" not in legend_texts(fig)


def test_fig_6_15_table_names_the_best_strategy_per_network_at_full_churn():
    stats = {"zoo:A": (4, 5.04), "zoo:B": (31, 0.11)}.__getitem__
    lines = figures.best_strategy_table(best_points(), stats=stats)
    assert lines[0] == ("| network | d | σ_k² | uniform, churn 100 %, 15 % subscribers | "
                        "uniform, churn 100 %, 45 % subscribers | "
                        "distant, churn 100 %, 15 % subscribers | "
                        "distant, churn 100 %, 45 % subscribers |")
    assert lines[2] == "| A | 4 | 5.04 | " + " | ".join(["vt-clusters (12)"] * 4) + " |"
    assert lines[3] == "| B | 31 | 0.11 | " + " | ".join(["vt-random (20)"] * 4) + " |"


# -- declaration in the spec -----------------------------------------------------------


def test_spec_declares_figures_and_the_registry_checks_names():
    base = {"experiment": {"name": "f", "notifications": 1},
            "grid": {"topology": ["jellyfish:switches=16,degree=3,seed=1"],
                     "strategy": ["unicast"], "receivers": ["uniform:percent=30"]}}
    spec = parse_spec_dict({**base, "report": {"figures": ["fig-6.9b", "fig-5.11"]}})
    assert spec.figures == ("fig-6.9b", "fig-5.11")
    assert spec.canonical()["report"] == {"figures": ["fig-6.9b", "fig-5.11"]}
    assert "report" not in parse_spec_dict(base).canonical()  # old specs: same JSON
    with pytest.raises(SpecError, match="unknown key"):
        parse_spec_dict({**base, "report": {"figure": ["fig-6.9b"]}})
    with pytest.raises(SpecError, match="str values"):
        parse_spec_dict({**base, "report": {"figures": [611]}})
    with pytest.raises(SpecError, match="unknown figure 'fig-6.16'"):
        check_figures(["fig-6.16"])


def test_shipped_specs_declare_registered_figures():
    declared = {}
    for path in sorted(SPECS.glob("*.toml")):
        figs = tomllib.loads(path.read_text()).get("report", {}).get("figures", [])
        check_figures(figs)
        declared[path.stem] = figs
    assert declared["ch5-datacenter"] == ["fig-5.11", "fig-5.12"]
    assert declared["ch6-static"] == ["fig-6.9a", "fig-6.9b"]
    assert declared["ch6-churn"] == ["fig-6.14"]
    assert declared["ch6-best-strategies"] == ["fig-6.15"]
    assert {f for figs in declared.values() for f in figs} == set(FIGURES)


@pytest.mark.skipif(not os.environ.get("STACKCAST_ZOO_DIR"), reason="STACKCAST_ZOO_DIR unset")
def test_report_draws_the_declared_figures_and_no_others(tmp_path, capsys):
    spec = tmp_path / "mini.toml"
    spec.write_text("""
[experiment]
name = "mini"
notifications = 2
seeds = [1]

[grid]
topology = ["zoo:Litnet"]
strategy = ["vt-freq-relation", "vt-clusters"]
receivers = ["clustered:scenario=nearby,churn=0"]

[strategy_params.vt-freq-relation]
max_rules = [10, 40]

[strategy_params.vt-clusters]
max_rules = [10, 40]

[report]
figures = ["fig-6.9a", "fig-6.9b"]
""")
    out = tmp_path / "out"
    assert main(["run", str(spec), "--runner", "local", "--out", str(out), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0
    report = out / "report"
    assert sorted(p.name for p in report.glob("fig-*.png")) == [
        "fig-6.9a-header-entries.png", "fig-6.9b-label-types.png"]
    text = (report / "report.md").read_text()
    assert "![fig-6.9b](fig-6.9b-label-types.png)" in text
    assert "fig-6.14" not in text
