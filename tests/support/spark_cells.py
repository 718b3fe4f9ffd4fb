"""Cell wrappers for the Spark runner tests: a failure once per armed cell, slow cells.

:func:`experiments.runners.spark.run_spark` takes ``around=f`` and calls
``f(cell, task)`` on the executors instead of ``task()`` (run the cell and
write its file, returning the row count). The wrappers here are what the
tests pass:

- :func:`fail_once`: a cell whose marker ``DIR/<cell_id>.arm`` exists raises
  :class:`InjectedFailure` right after writing its file, once (the marker is
  renamed to ``<cell_id>.fired`` first, so Spark's retry succeeds);
- :func:`slow_cells`: every cell sleeps before it runs, so that a run lasts
  long enough to be interrupted or to lose a worker midway.

The executors cannot import ``tests`` (a cluster worker runs in its own work
directory with only the shipped code zip), so both factories register this
module with PySpark's cloudpickle to travel *by value* inside the task.

:func:`main` is ``stackcast`` with slow cells, for the tests that start the
command line in a process of their own and kill it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any


class InjectedFailure(RuntimeError):
    """The failure :func:`fail_once` raises in an armed cell's first attempt."""


class FailOnce:
    """Raise once per armed cell, after its file is written (see :func:`fail_once`)."""

    def __init__(self, marker_dir: str) -> None:
        self.marker_dir = marker_dir

    def __call__(self, cell: Any, task: Callable[[], int]) -> int:
        rows = task()
        marker = Path(self.marker_dir) / f"{cell.cell_id}.arm"
        try:
            os.rename(marker, marker.with_suffix(".fired"))
        except FileNotFoundError:
            return rows
        raise InjectedFailure(f"injected failure in cell {cell.cell_id} (first attempt)")


class SlowCells:
    """Sleep before every cell (see :func:`slow_cells`)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, cell: Any, task: Callable[[], int]) -> int:
        time.sleep(self.seconds)
        return task()


def _by_value() -> None:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def fail_once(marker_dir: str | Path) -> FailOnce:
    """A wrapper that fails each cell with a marker ``<cell_id>.arm`` in ``marker_dir`` once."""
    _by_value()
    return FailOnce(str(marker_dir))


def slow_cells(seconds: float) -> SlowCells:
    """A wrapper that sleeps ``seconds`` before every cell."""
    _by_value()
    return SlowCells(seconds)


def main(argv: list[str]) -> int:
    """``stackcast ARGV`` whose Spark runs sleep ``argv[0]`` seconds before every cell."""
    import experiments.runners.spark as runner
    from experiments.cli.main import main as stackcast

    runner.run_spark = partial(runner.run_spark, around=slow_cells(float(argv[0])))
    return stackcast(argv[1:])
