"""``[timed] records = "summary"``: metrics aggregated as notifications finish.

A summary cell's one row must equal the rows of the same cell with one row per
notification (``records = "notifications"``, every record kept to the end) folded
by :func:`experiments.cells.timed_summary.summarize_rows`, on random cells: strategies,
loads, buffers (drops), ttl, churn with table writes, both receiver modes. And the
engine must really let records go while the run goes on.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.cells.spec import parse_spec_dict
from experiments.cells.timed import build_cell, timed_cell_rows
from experiments.cells.timed_summary import RowSummary, summarize_rows
from sim.engines.timed.config import timed_settings
from sim.engines.timed.engine import NoteRecord
from strategies.base import load_builtin_strategies

load_builtin_strategies()

US = 1e-6
#: wall-clock columns: not a function of the spec
WALL = ("controller_wall_ms",)


def cell_of(strategy: str, seed: int, timed: dict[str, Any], notifications: int = 8) -> Any:
    return parse_spec_dict({
        "experiment": {"name": "t", "engine": "timed", "notifications": notifications,
                       "seeds": [seed]},
        "grid": {"topology": ["jellyfish:switches=10,degree=3,seed=1"],
                 "strategy": [strategy], "receivers": ["uniform:percent=40"]},
        "timed": timed,
    }).cells()[0]


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """NaN as a string (NaN != NaN); wall-clock columns, the settings JSON and the cell id
    (a hash of the settings: ``records`` differs) left out."""
    return [{k: "nan" if isinstance(v, float) and math.isnan(v) else v
             for k, v in r.items() if k not in WALL and k not in ("timed", "cell_id")}
            for r in rows]


@st.composite
def cells(draw: st.DrawFn) -> tuple[str, int, dict[str, Any]]:
    strategy = draw(st.sampled_from(["switch-port", "hops", "tree", "hybrid", "multicast",
                                     "unicast", "alm-fork", "switch-bitmask"]))
    per_notification = draw(st.booleans())
    timed: dict[str, Any] = {
        "arrival": draw(st.sampled_from(["poisson", "periodic"])),
        "rate_hz": draw(st.sampled_from([100.0, 2000.0, 20000.0])),
        "pass_s": draw(st.sampled_from([US, 2 * US, 10 * US])),
        "feed_in_s": draw(st.sampled_from([0.0, US, 100 * US])),
        "buffer_frames": draw(st.sampled_from([None, 2, 8])),
        "pipeline_buffer_frames": draw(st.sampled_from([None, 2])),
        "pre_delay_s": draw(st.sampled_from([0.0, US])),
        "switch_latency_s": draw(st.sampled_from([0.0, 3 * US])),
    }
    if per_notification:
        timed["receivers"] = "per-notification"
    else:
        timed.update(duration_s=0.003, publishers=draw(st.integers(1, 4)),
                     changes_hz=draw(st.sampled_from([0.0, 2000.0])),
                     ttl_hops=draw(st.sampled_from([None, 16])))
    return strategy, draw(st.integers(1, 2**16)), {k: v for k, v in timed.items()
                                                    if v is not None}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells())
def test_a_summary_row_is_the_per_notification_rows_folded(case):
    strategy, seed, timed = case
    full = timed_cell_rows(cell_of(strategy, seed, timed))
    summary = timed_cell_rows(cell_of(strategy, seed, {**timed, "records": "summary"}))
    assert comparable(summary) == comparable(summarize_rows(full))
    assert len(summary) == (1 if full else 0)
    for row in summary:
        assert row["run"] == -1 and json.loads(row["timed"])["records"] == "summary"
        assert row["cell_notifications"] == len(full)


def test_records_go_while_the_run_goes_on():
    """Not vacuous: a long run holds a few records at a time and hands all of them over."""
    cell = cell_of("switch-port", 3, {"rate_hz": 200.0, "duration_s": 0.2, "publishers": 4,
                                      "records": "summary"})
    engine, _ = build_cell(cell)
    got: list[NoteRecord] = []
    engine.stream(got.append)
    result = engine.run()
    assert len(got) == engine.published > 100
    assert engine.recorder.open_peak < 20 and not result.notes
    assert sorted(n.nid for n in got) == list(range(len(got)))
    assert all(n.frames > 0 for n in got)


def test_records_is_validated_and_left_out_of_the_default_settings():
    with pytest.raises(Exception, match="records"):
        timed_settings({"records": "rows"}, notifications=1)
    assert "records" not in json.loads(timed_cell_rows(cell_of("hops", 1, {}, 1))[0]["timed"])


def test_the_fold_sums_counts_and_keeps_extremes():
    """What a summary row means, on two hand-made rows (the test above checks the
    streaming against the fold; this one checks the fold itself)."""
    base = {"experiment": "e", "run": 0, "publisher": "h1", "frames": 3, "receivers": 2,
            "latency_first_ms": 0.5, "latency_last_ms": float("nan"), "delay_worst_ms": 1.0,
            "exposed": False, "state_entries": 7, "cell_notifications": 2}
    other = {**base, "run": 1, "publisher": "h2", "frames": 4, "receivers": 1,
             "latency_first_ms": 0.25, "latency_last_ms": 2.0, "delay_worst_ms": 0.5,
             "exposed": True, "state_entries": 9}
    summary = RowSummary()
    summary.add(base)
    summary.add(other)
    assert summary.row == {"experiment": "e", "run": -1, "publisher": "", "frames": 7,
                           "receivers": 3, "latency_first_ms": 0.25, "latency_last_ms": 2.0,
                           "delay_worst_ms": 1.0, "exposed": True, "state_entries": 9,
                           "cell_notifications": 2}
    assert summarize_rows([]) == []
