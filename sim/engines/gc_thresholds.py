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
from collections.abc import Callable, Iterator
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


@contextmanager
def frozen_survivors() -> Iterator[Callable[[], None]]:
    """Between the cells of a runner's task: what a cell leaves alive is frozen.

    Yields ``settle``, to call after each cell: it moves every object the
    collector tracks to the permanent generation (:func:`gc.freeze`), so later
    collections no longer rescan what earlier cells left (the task's caches:
    installs, walk tables, populations) and a cell pays only for what it
    allocates itself. Without it a large ch. 6 family spent about a fifth of
    its CPU time in collections whose every object survived (one
    second-generation pass over the caches cost 0.8 s on VtlWavenet2008). On
    exit everything is unfrozen (:func:`gc.unfreeze`) and the collector treats
    it as old again. Cycles among frozen objects are freed only after the
    exit. When something else froze objects before (``gc.get_freeze_count()``
    is not 0), ``settle`` does nothing and nothing is unfrozen, so their freeze
    stays as it was. Nothing here changes what is computed.
    """
    mine = gc.get_freeze_count() == 0
    try:
        yield gc.freeze if mine else _nothing
    finally:
        if mine:
            gc.unfreeze()


def _nothing() -> None:
    pass
