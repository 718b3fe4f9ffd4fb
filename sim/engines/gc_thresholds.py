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
import time
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


#: Uses of :func:`frozen_survivors` with ``hold=True`` (a worker's tasks) between two
#: unfreezes: the cycles that earlier tasks' frozen objects became are freed at the
#: latest this many tasks later.
HOLD_TASKS = 8
#: Only a use shorter than this (CPU seconds) holds its freeze: the full pass it saves
#: the next task (0.1-0.2 s) matters for short tasks, while a long task's caches can be
#: large (elmo-1m: gigabytes), and those held in cycles would wait for the unfreeze.
HOLD_MAX_CPU_S = 5.0
#: How many ended uses of :func:`frozen_survivors` left their freeze held (0: none).
_held = 0


@contextmanager
def frozen_survivors(hold: bool = False) -> Iterator[Callable[[], None]]:
    """Between the cells of a runner's task: what a cell leaves alive is frozen.

    Yields ``settle``, to call after each cell: it collects what the cell left
    unreachable (a collection that skips the frozen objects, so it costs about
    what the cell allocated; without it a cell's garbage cycles, e.g. a timed
    cell's SimPy environment, would stay frozen until the task ends) and moves
    every object left to the permanent generation (:func:`gc.freeze`), so later
    collections no longer rescan what earlier cells left (the task's caches:
    installs, walk tables, populations) and a cell pays only for what it
    allocates itself. Without it a large ch. 6 family spent about a fifth of
    its CPU time in collections whose every object survived (one
    second-generation pass over the caches cost 0.8 s on VtlWavenet2008).

    On exit everything is unfrozen (:func:`gc.unfreeze`) and the collector
    treats it as old again; the next use's first ``settle`` then makes one full
    pass over the process's heap (0.1-0.2 s with the project's modules loaded,
    a fifth of a small ch. 6 task). With ``hold=True`` (a worker process that
    runs task after task) the freeze is kept on exit instead, except after
    every :data:`HOLD_TASKS`-th use and after a use of more than
    :data:`HOLD_MAX_CPU_S` CPU seconds: frozen objects are still freed by
    reference counting when the task drops its caches, but the cycles among
    them (a few strategies' caches hold some) wait for that unfreeze and the
    next full pass. When
    something else froze objects before (``gc.get_freeze_count()`` is not 0 and
    no freeze of ours is held), ``settle`` does nothing and nothing is
    unfrozen, so their freeze stays as it was. Nothing here changes what is
    computed.
    """
    global _held
    mine = gc.get_freeze_count() == 0 or _held > 0
    start = time.process_time()
    try:
        yield _collect_and_freeze if mine else _nothing
    finally:
        if mine:
            short = time.process_time() - start < HOLD_MAX_CPU_S
            _held = _held + 1 if hold and short and _held + 1 < HOLD_TASKS else 0
            if not _held:
                gc.unfreeze()


def release_held() -> None:
    """Unfreeze the freeze :func:`frozen_survivors` holds, if it holds one."""
    global _held
    if _held:
        gc.unfreeze()
        _held = 0


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()


def _nothing() -> None:
    pass
