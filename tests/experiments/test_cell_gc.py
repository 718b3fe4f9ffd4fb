"""A static cell runs with the cyclic collector at the timed engine's rare
thresholds (``sim.engines.gc_thresholds.rare_gc``), restored afterwards, also
when the cell fails."""

from __future__ import annotations

import gc

import pytest

import experiments.cells.pipeline as pipeline
from experiments.cells.spec import Cell
from sim.engines.gc_thresholds import RUN_GC_THRESHOLDS

CELL = Cell(experiment="gc-test", topology="fattree:k=4", strategy="switch-bitmask", params=(),
            receivers="uniform:percent=30", payload_bytes=50, seed=1, notifications=4)


def test_cells_collect_cycles_rarely_and_restore_the_thresholds(monkeypatch):
    seen = []
    inner = pipeline._cell_table

    def spy(*args, **kwargs):
        seen.append(gc.get_threshold())
        return inner(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_cell_table", spy)
    before = gc.get_threshold()
    assert len(pipeline.cell_rows(CELL)) == 4
    assert seen == [RUN_GC_THRESHOLDS] and gc.get_threshold() == before

    def fail(*args, **kwargs):
        raise RuntimeError("a failing cell")

    monkeypatch.setattr(pipeline, "_cell_table", fail)
    with pytest.raises(RuntimeError):
        pipeline.cell_rows(CELL)
    assert gc.get_threshold() == before
