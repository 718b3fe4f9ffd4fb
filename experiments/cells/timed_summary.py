"""Timed cells' metrics aggregated as notifications finish (``[timed] records = "summary"``).

Two accumulators, each fed one notification at a time in any order and giving
the same result for every order:

:class:`RunTotals`
    what the run-level ``cell_`` columns read from the notifications
    (counts, intended and reached receivers, the latest publication and first
    arrival, the worst-case latencies for the percentiles, exposure and
    misdeliveries). Both record modes build their ``cell_`` columns from it.
:class:`RowSummary`
    the per-notification columns of :data:`experiments.cells.schema.TIMED_ROWS`
    folded into one row per cell: counts are summed (:data:`SUMMED`),
    ``latency_first_ms`` is the minimum, ``exposed`` whether any notification
    was, every other number is the maximum (sizes of state and headers,
    delays, the last publication); NaN (nobody reached) is skipped and stays
    NaN only when every notification had it. The identity columns are the
    cell's; ``run`` is -1 and ``publisher`` empty (the row is no notification).

:func:`summarize_rows` folds the rows of ``records = "notifications"`` the same
way: a summary cell's row equals it (tests/sim/test_timed_summary.py).

References
----------
shared/DESIGN.md "Engines" (timed rows); issue 16 item 4.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from experiments.cells.schema import TIMED_ROWS

#: Per-notification columns summed over the notifications of a summary row.
SUMMED = frozenset({
    "receivers", "delivered", "false_positives", "false_negatives", "duplicates",
    "packets_sent", "frames", "bytes", "passes", "recirculations", "lookups",
    "circulations_simplified", "control_writes", "dropped_frames", "stale_false_negatives",
    "stale_false_positives", "misdeliveries", "link_false_positives",
    "network_false_positives",
})
#: Per-notification columns whose minimum a summary row keeps.
MINIMUM = frozenset({"latency_first_ms"})
#: Columns that are the same on every row of a cell, or set apart.
KEPT = frozenset({"experiment", "cell_id", "strategy", "params", "topology", "receivers_model",
                  "payload_bytes", "seed", "timed"})
SUMMARY_RUN = -1


@dataclass(slots=True)
class RunTotals:
    """The notifications' part of the run-level columns (see the module)."""

    notifications: int = 0
    span: float = 0.0
    intended: int = 0
    got: int = 0
    t_last: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    exposed: int = 0
    misdeliveries: int = 0
    stale_false_negatives: int = 0

    def add(self, note: Any, exposed: bool, mis: Any) -> None:
        """One notification (a :class:`~sim.engines.timed.engine.NoteRecord`), whether it
        was exposed and its misdeliveries (or None)."""
        self.notifications += 1
        self.span = max(self.span, note.t_pub)
        self.intended += len(note.receivers)
        self.got += sum(1 for h in note.receivers if h in note.first)
        self.t_last = max(self.t_last, max(note.first.values(), default=0.0))
        if note.receivers and note.first:
            self.latencies_ms.append(note.latency_last_s * 1e3)
        if exposed:
            self.exposed += 1
            self.misdeliveries += mis.misdeliveries
            self.stale_false_negatives += mis.stale_false_negatives


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


class RowSummary:
    """Per-notification rows folded into one (see the module)."""

    def __init__(self) -> None:
        self.row: dict[str, Any] = {}

    def add(self, row: Mapping[str, Any]) -> None:
        acc = self.row
        if not acc:
            acc.update(row)
            acc["run"], acc["publisher"] = SUMMARY_RUN, ""
            return
        for name, v in row.items():
            if name in KEPT or name in ("run", "publisher") or name.startswith("cell_"):
                continue
            old = acc[name]
            if name == "exposed":
                acc[name] = old or v
            elif name in SUMMED:
                acc[name] = old + v
            elif _nan(v):
                continue
            elif _nan(old):
                acc[name] = v
            else:
                acc[name] = min(old, v) if name in MINIMUM else max(old, v)

    def rows(self, cell_columns: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The summary row (none for a cell without notifications), in the column order of
        :data:`TIMED_ROWS`, with ``cell_columns`` (and any other given column) set."""
        if not self.row:
            return []
        row = {**self.row, **(cell_columns or {})}
        return [{name: row[name] for name in TIMED_ROWS.names}]


def summarize_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of one cell with ``records = "notifications"`` folded into its summary row
    (what the same cell gives with ``records = "summary"``)."""
    summary = RowSummary()
    for row in rows:
        summary.add(row)
    return summary.rows()
