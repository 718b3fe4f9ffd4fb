"""``stackcast bench`` (issue 9): wiring in the default run, the measurements on demand.

The default run checks the harness on small inputs (every figure present,
ratios computed from their parts, the fast-path cross-check, the ch6 subset);
``-m benchmark`` runs the real suite on the issue's networks.
"""

from __future__ import annotations

import json

import pytest

from experiments.bench import ch6 as bench_ch6
from experiments.bench import common as bench_common
from experiments.bench import suite as bench_suite
from experiments.cli.main import main
from experiments.runners.subset import SubsetSpec

SMALL = "jellyfish:switches=16,degree=3,hosts=1,seed=1"


def test_static_item_on_a_small_network():
    out = bench_suite.bench_static(reps=1, notifications=30, ref_notifications=4,
                                   topology=SMALL)
    assert set(out["strategies"]) == set(bench_suite.STATIC_STRATEGIES)
    for name, r in out["strategies"].items():
        assert r["fast_per_s"] > 0 and r["reference_per_cpu_s"] > 0
        assert r["ratio"] == pytest.approx(r["fast_per_cpu_s"] / r["reference_per_cpu_s"])
        assert (r["target"] is not None) == (name == "switch-bitmask")
    bitmask = out["strategies"]["switch-bitmask"]
    assert bitmask["target"]["met"] == (bitmask["fast_per_cpu_s"] >= 20_000)
    assert out["cell_rows"]["per_cpu_s"] > 0


def test_static_item_refuses_a_wrong_fast_path(monkeypatch):
    """The suite cross-checks the fast path against the reference before timing it."""
    from strategies.source_routing.switch_bitmask import SwitchBitmask

    real = SwitchBitmask.fast_path

    class OffByOne:
        """The strategy's own fast path with one lookup too many."""

        def __init__(self, fast):
            self.fast, self.impl = fast, fast.impl

        def metrics(self, *args, **kwargs):
            return [None if m is None else {**m, "lookups": m["lookups"] + 1}
                    for m in self.fast.metrics(*args, **kwargs)]

    monkeypatch.setattr(SwitchBitmask, "fast_path",
                        lambda self, topology, delays: OffByOne(real(self, topology, delays)))
    with pytest.raises(RuntimeError, match="disagrees with the reference"):
        bench_suite.bench_static(reps=1, notifications=6, ref_notifications=2, topology=SMALL,
                                 strategies=["switch-bitmask"])


def test_timed_item_is_judged_against_one_simpy_process():
    out = bench_suite.bench_timed_item(reps=1, topology=SMALL, publishers=4, rate_hz=200.0,
                                       duration_s=0.01)
    assert out["target"]["met"] == (out["events_to_raw_ratio"] >= 0.5)
    assert out["target"]["unit"] == "x raw SimPy, one process"
    text = bench_suite.format_suite({"cpus": 2, "reps": 1, "load_avg": [0.0] * 3,
                                     "load_avg_end": [0.0] * 3, "items": {"timed": out}})
    assert f"= {out['events_to_raw_at_depth_ratio']:.2f}x" in text
    assert "vs one SimPy process" in text and f"= {out['events_to_raw_ratio']:.2f}x" in text


def test_ch6_subset_keeps_the_fraction_asked_and_whole_groups():
    """--fraction f runs about f of the cells (not 2f), and a churn group is kept whole."""
    from experiments.cells.spec import load_spec
    from experiments.runners.spark import affinity

    spec = load_spec(bench_ch6.CH6_SPEC)
    sub = SubsetSpec(spec, 0.05)
    assert 0.035 * sub.total < len(sub.cells()) < 0.065 * sub.total
    kept = {affinity(c) for c in sub.cells()}
    members: dict[tuple[str, ...], int] = {}
    for c in spec.cells():
        members[affinity(c)] = members.get(affinity(c), 0) + 1
    assert max(members.values()) > 1  # ch6-churn has groups (the churn levels of one seed)
    assert sum(members[k] for k in kept) == len(sub.cells())


def test_ch6_subset_is_deterministic_and_spread():
    from experiments.cells.spec import load_spec

    spec = load_spec(bench_ch6.CH6_SPEC)
    a, b = SubsetSpec(spec, 0.01), SubsetSpec(spec, 0.01)
    assert [c.cell_id for c in a.cells()] == [c.cell_id for c in b.cells()]
    assert a.total == len(spec.cells()) and 0.006 * a.total < len(a.cells()) < 0.014 * a.total
    assert len({c.strategy for c in a.cells()}) > 3 and len({c.topology for c in a.cells()}) == 3
    assert set(c.cell_id for c in a.cells()) <= set(c.cell_id for c in
                                                     SubsetSpec(spec, 0.05).cells())
    assert len(SubsetSpec(spec, 0).cells()) == 1
    with pytest.raises(ValueError, match="--fraction must be in"):
        SubsetSpec(spec, 1.5)


def test_cli_rejects_bad_items_and_fractions(capsys):
    assert main(["bench", "--items", "static,warp"]) == 2
    assert "unknown item 'warp'" in capsys.readouterr().err
    assert main(["bench", "ch6", "--fraction", "1.5"]) == 2
    assert "--fraction must be in (0, 1]" in capsys.readouterr().err


def test_format_names_every_item_and_extrapolation():
    static = bench_suite.bench_static(reps=1, notifications=10, ref_notifications=2,
                                      topology=SMALL, strategies=["switch-bitmask"])
    result = {"cpus": 2, "reps": 1, "load_avg": [1.0, 1.0, 1.0],
              "load_avg_end": [1.0, 1.0, 1.0],
              "items": {"static": static,
                        "ch6": {"master": "local[2]", "wall_s": 1200.0, "extrapolated": True,
                                "cells_run": 250, "cells_total": 24750, "fraction": 0.01,
                                "session_start_s": 3.0, "spark_cells_per_s": 20.0,
                                "ratio": 1.8, "reference": {"cells_per_s": 11.0},
                                "target": bench_common.judge("ch6", "wall_s", 1200.0)}}}
    text = bench_suite.format_suite(result)
    assert "switch-bitmask" in text and "EXTRAPOLATED from 250 of 24,750 cells" in text
    assert "<= 900 s: NOT met" in text


@pytest.mark.benchmark
def test_suite_on_the_issue_networks(capsys):
    """The real measurement (select with -m benchmark; Spark skipped without Java)."""
    assert main(["bench", "--reps", "3", "--quiet", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    static = doc["items"]["static"]["strategies"]
    assert static["switch-bitmask"]["ratio"] > 10
    print(json.dumps(doc, indent=2))


@pytest.mark.benchmark
def test_ch6_end_to_end_fraction(capsys):
    assert main(["bench", "ch6", "--fraction", "0.01", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "EXTRAPOLATED" in out
    print(out)


def test_bound_and_cells_items_on_a_small_network():
    """The bound item's ratio is its engine time over the bound's (the virtual-tree labels
    with their walk alone beside), the content filters per workload; the cells item has
    every figure; the summary prints both."""
    from experiments.bench import bound as bench_bound
    from experiments.bench import cells as bench_cells

    b = bench_bound.bench_bound(reps=1, notifications=8, strategies=("tree", "hops"),
                                topologies=(SMALL,), content_strategies=("kundel-id",))
    res = b["topologies"][SMALL]
    assert set(res) == {"tree", "hops", "kundel-id (dense)", "kundel-id (sparse)"}
    for r in res.values():
        assert r["ratio"] == pytest.approx(r["engine_us"] / r["bound_us"])
        assert r["target"]["met"] == (r["ratio"] <= 3.0)
    assert res["tree"]["walk_ratio"] == pytest.approx(res["tree"]["walk_us"]
                                                      / res["tree"]["bound_us"])
    assert "walk_us" not in res["hops"]
    c = bench_cells.bench_cells(reps=1, cell_notifications=20, vt_cells=1, topology=SMALL)
    sb = c["switch_bitmask"]
    assert sb["to_kernel"] == pytest.approx(sb["rows_per_cpu_s"] / sb["kernel_per_cpu_s"])
    assert set(c["vt"]["strategies"]) == {"tree", "vt-clusters"}
    text = bench_suite.format_suite({"cpus": 2, "reps": 1, "load_avg": [0.0] * 3,
                                     "load_avg_end": [0.0] * 3,
                                     "items": {"bound": b, "cells": c}})
    assert "kundel-id (sparse)" in text and "vt-clusters" in text and "walk alone" in text
