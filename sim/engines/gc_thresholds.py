"""Cyclic-GC thresholds while a run or a cell is under way (:func:`rare_gc`).

Shared by the timed engine (one run) and the cell pipeline (one static
cell), which both allocate many short-lived objects while holding a large,
growing set of live ones (the record, the rows, the installed states). At
CPython's default thresholds the cyclic collector rescans those live objects
again and again: about a quarter of a timed run and 41 % of a static cell's
CPU time. Nothing here changes what is computed, only when cycles are freed.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: cyclic-GC thresholds while a run is under way (CPython's default: 700, 10, 10)
RUN_GC_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def rare_gc() -> Iterator[None]:
    """Collect reference cycles rarely while the block runs (thresholds restored after).

    Exception-safe; nested blocks restore what the enclosing block set. The
    engines free their per-event objects by reference counting; the cycles
    some strategies' encoders leave are still collected, only less often.
    """
    before = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
