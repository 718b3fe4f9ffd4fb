"""Elmo's headline table (experiments/reports/elmo_figures.py): slices pooled, the excess
over ideal multicast on the same notifications, the largest header, and the figure."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.rows import rows_table

from experiments.reports.elmo_figures import elmo_5_1, elmo_table, excess, pooled
from experiments.reports.figures import FigureDataError, figure_section
from experiments.reports.report import aggregate_local

TENANTS = "tenants:groups=1000,part={},parts=2"


def rows(strategy: str, part: int, frames: list[int], headers: list[int]) -> list[dict]:
    return [{"strategy": strategy, "topology": "elmo", "receivers_model": TENANTS.format(part),
             "frames": f, "header_bytes": h, "receivers": 4, "bytes": 100 * f,
             "state_entries": 7} for f, h in zip(frames, headers, strict=True)]


def points(*groups: list[dict]) -> list[dict]:
    return aggregate_local(rows_table([r for g in groups for r in g]))


def test_slices_are_pooled_by_notification_count() -> None:
    pts = points(rows("elmo", 0, [10, 12, 14], [100, 120, 300]), rows("elmo", 1, [20], [90]),
                 rows("multicast", 0, [10, 10, 10], [0, 0, 0]), rows("multicast", 1, [16], [0]))
    got = pooled(pts)
    elmo = got[("elmo", "wve")]
    assert elmo["count"] == 4
    assert elmo["frames"] == pytest.approx((10 + 12 + 14 + 20) / 4)
    assert elmo["header_bytes"] == pytest.approx((100 + 120 + 300 + 90) / 4)
    assert elmo["header_bytes_max"] == 300
    over = excess(got)
    assert over[("elmo", "wve")] == pytest.approx(56 / 46 - 1)
    assert over[("multicast", "wve")] == 0.0
    table = elmo_table(pts)
    assert any(line.startswith("| elmo | wve | 4 |") and "| 300 |" in line
               and f"{100 * (56 / 46 - 1):+.1f}" in line for line in table)


def test_no_excess_when_the_slices_differ_from_multicast() -> None:
    pts = points(rows("elmo", 0, [10], [100]), rows("elmo", 1, [12], [100]),
                 rows("multicast", 0, [10], [0]))
    over = excess(pooled(pts))
    assert ("elmo", "wve") not in over
    assert math.isclose(over[("multicast", "wve")], 0.0)


def test_the_figure_needs_multicast(tmp_path: Path) -> None:
    with pytest.raises(FigureDataError, match="multicast"):
        elmo_5_1(points(rows("elmo", 0, [10], [100])), tmp_path)
    pts = points(rows("elmo", 0, [11], [100]), rows("multicast", 0, [10], [0]))
    lines = figure_section(["elmo-5.1"], pts, tmp_path)
    assert "![elmo-5.1](elmo-5.1-traffic-over-multicast.png)" in lines
    assert (tmp_path / "elmo-5.1-traffic-over-multicast.png").stat().st_size > 0
    assert any("+10.0" in line for line in lines)
