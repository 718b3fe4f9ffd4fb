"""The content section of ``stackcast report``: label stacks and content filters side by side."""

from __future__ import annotations

import pytest

from experiments.cells.spec import parse_spec_dict
from experiments.reports.content import records_from_points, summarize
from experiments.reports.report import aggregate_local, write_report
from experiments.runners.local import run_local
from experiments.storage.results import read_results

SPEC = {
    "experiment": {"name": "uc", "notifications": 8, "seeds": [1, 2], "payload_bytes": [64]},
    "grid": {"topology": ["fattree:k=4"],
             "strategy": ["range-boxes", "pleroma-dz", "switch-bitmask", "vt-freq-relation"],
             "receivers": ["content:subs=12,publishers=2,subscribers=8,dims=2,bits=10,"
                           "width=0.2,dist=zipf,churn=1"]},
    "strategy_params": {"pleroma-dz": {"max_dz": 2}},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("uc")
    run_local(parse_spec_dict(SPEC), out / "res", progress=False)
    return out


def test_records_from_points_equal_the_ratios_of_sums_over_rows(results) -> None:
    table = read_results(results / "res")
    raw = {(r["strategy"], r["params"]): r for r in summarize(table)}
    derived = records_from_points(aggregate_local(table))
    assert len(derived) == 4
    for d in derived:
        r = raw[(d["strategy"], d["params"])]
        for col in ("link_fp_rate", "network_fp_rate", "subscriber_fp_rate",
                    "bytes_per_note", "state_entries"):
            assert d[col] == pytest.approx(r[col])
        assert d["false_negatives"] == r["false_negatives"]
        # churn=1: one subscription change per notification
        assert d["writes_per_change"] == pytest.approx(r["control_writes"] / r["n"])


def test_label_stacks_get_link_waste_and_content_filters_their_own(results) -> None:
    rec = {d["strategy"]: d for d in records_from_points(
        aggregate_local(read_results(results / "res")))}
    assert rec["switch-bitmask"]["link_fp_rate"] == 0  # exact receivers, exact tree
    assert rec["range-boxes"]["link_fp_rate"] == 0     # exact boxes (seed 004)
    assert rec["pleroma-dz"]["link_fp_rate"] > 0       # 2 dz per box over-approximate
    assert rec["range-boxes"]["writes_per_change"] > 0
    # virtual trees install from the content workload's subscribers and frequencies
    assert rec["vt-freq-relation"]["false_negatives"] == 0
    assert rec["vt-freq-relation"]["state_entries"] > 0


def test_report_has_the_content_table_findings_and_chart(results) -> None:
    md = write_report(aggregate_local(read_results(results / "res")), results / "report")
    text = md.read_text()
    assert "### uc: content filters and the other families" in text
    assert "| switch-bitmask |" in text and "| range-boxes |" in text
    assert "- lowest link FP rate:" in text
    assert (results / "report" / "uc-content.png").stat().st_size > 5000
