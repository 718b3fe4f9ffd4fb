"""Content cells built as columns give the rows the per-notification path gives.

A fast path with ``metric_batch`` (the content filters,
:class:`~sim.dataplanes.content_fast_path.MetricBatch`) has its cell's rows built
as Arrow columns (``experiments.cells.pipeline._batch_table``); the
per-notification path (``_cell_rows``: one dictionary per row, then
``pa.Table.from_pylist``) is the definition. Random content cells (every content
filter, churn, topologies, receiver specs, IPv6 states the fast path declines):
the two tables are equal, types included, wall clock aside.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.cells import pipeline
from experiments.cells.schema import ROWS
from sim.dataplanes.caches import Caches

CONTENT = ("pleroma-dz", "range-boxes", "camus-bdd", "kundel-id", "kundel-bitmask")
TOPOLOGIES = ("fattree:k=4", "jellyfish:switches=8,degree=3,hosts=1,seed=3",
              "jellyfish:switches=12,degree=4,hosts=2,seed=5")


def _cell(strategy: str, params: dict[str, Any], receivers: str, topology: str,
          notifications: int) -> Any:
    from experiments.cells.spec import parse_spec_dict

    (cell,) = parse_spec_dict({
        "experiment": {"name": "content-batch", "notifications": notifications, "seeds": [4],
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": [strategy], "receivers": [receivers]},
        "strategy_params": {strategy: params} if params else {},
        "links": {"delay_s": 2.5e-5}, "delays": {"pass_s": 3e-6},
    }, "<content batch>").cells()
    return cell


def _both(cell: Any) -> tuple[pa.Table, pa.Table]:
    """(column table, per-notification table) of ``cell``, wall clock dropped."""
    def table(columns: bool) -> pa.Table:
        topology, strategy, delays = pipeline.cell_setup(cell)
        caches = Caches()
        strategy.use_caches(caches)
        fast = pipeline._fast_path(topology, strategy, delays, "fast", caches)
        assert fast is not None and hasattr(fast, "metric_batch")
        workload = pipeline.cell_workload(cell, topology, caches)
        if columns:
            got = pipeline._batch_table(cell, topology, strategy, delays, fast, workload, caches)
        else:
            got = pa.Table.from_pylist(pipeline._cell_rows(cell, topology, strategy, delays,
                                                           fast, workload, caches), schema=ROWS)
        return got.drop_columns(["controller_wall_ms"])

    return table(True), table(False)


@pytest.mark.parametrize("strategy", CONTENT)
@settings(max_examples=8, deadline=None)
@given(topology=st.sampled_from(TOPOLOGIES), dims=st.integers(1, 3),
       subs=st.integers(0, 16), churn=st.integers(0, 2), count=st.integers(1, 12),
       dist=st.sampled_from(["uniform", "zipf", "siena"]))
def test_column_rows_equal_per_notification_rows(strategy, topology, dims, subs, churn, count,
                                                 dist):
    extra = ",preds=1,values=6" if dist == "siena" else ""
    cell = _cell(strategy, {}, f"content:subs={subs},publishers=2,dims={dims},bits=8,"
                 f"width=0.3,dist={dist}{extra},churn={churn}", topology, count)
    columns, rows = _both(cell)
    assert columns.schema == rows.schema
    assert columns.equals(rows)


def test_declined_notifications_in_columns(monkeypatch):
    """Notifications the fast path declines (here every odd one, one state each: the cell
    churns) take the reference's rows in their places."""
    from sim.dataplanes.content_fast_path import ContentFastPath

    run = ContentFastPath._run
    declined = []

    def odd_declined(self, state, pubs, sets, notes, detail):
        if notes[0].notification_id % 2:
            declined.append(notes[0].notification_id)
            return None
        return run(self, state, pubs, sets, notes, detail)

    monkeypatch.setattr(ContentFastPath, "_run", odd_declined)
    cell = _cell("pleroma-dz", {}, "content:subs=6,publishers=1,dims=2,bits=8,width=0.3,churn=1",
                 "jellyfish:switches=8,degree=3,hosts=1,seed=3", 7)
    columns, rows = _both(cell)
    assert sorted(set(declined)) == [1, 3, 5]
    assert columns.num_rows == 7
    assert columns.equals(rows)
