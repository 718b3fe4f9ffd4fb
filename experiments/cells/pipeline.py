"""Run one cell: its notifications through the static engine, one row each
(timed cells go to :mod:`experiments.cells.timed`).

The notifications come from :func:`experiments.cells.workload.draw_notifications`
(the one iterator over a cell's workload), the rows from
:func:`experiments.cells.rows.notification_row` (the one row builder). Pure of
any engine: the local and the Spark runner both call :func:`run_cell`, which
is why their rows are identical.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from experiments.cells.rows import identity_columns, notification_row
from experiments.cells.schema import ROWS
from experiments.cells.spec import Cell
from experiments.cells.workload import CellWorkload, cell_workload, draw_notifications
from sim.dataplanes.caches import Caches, or_fresh
from sim.dataplanes.control_state import ControlState, count_writes
from sim.dataplanes.delivery import DelayModel, row_metrics
from sim.dataplanes.link_waste import wasted_link_frames
from sim.dataplanes.packet import Notification, payload_for
from sim.engines.gc_thresholds import rare_gc
from sim.engines.static import choose_static_path, run_notification
from strategies.base import (
    HEADER_LABEL_FIELDS,
    ExtraMetrics,
    Knowledge,
    Strategy,
    make_strategy,
)
from topologies.model import LinkDefaults
from topologies.registry import make_params
from topologies.specs import load_topology


def _state_for(strategy: Strategy, topology: Any, publisher: str, receivers: frozenset[str],
               stable: frozenset[str] | None, cache: dict[Any, tuple[Any, ControlState]],
               base: Knowledge) -> ControlState:
    """Install state; strategies whose state does not depend on the receivers are cached.

    ``base`` carries what every install may know (the population as it
    stands, a :class:`~sim.workloads.receivers.Population`, and the workload
    seed).
    """
    scope = strategy.scope
    if scope == "topology":
        key: Any = ()
        knowledge = base
    elif scope == "publisher":
        key = publisher
        knowledge = replace(base, receiver_sets={publisher: ()})
    else:
        return strategy.install(topology, replace(
            base, receiver_sets={publisher: (receivers,)},
            stable={publisher: stable} if stable is not None else {}))
    # A population whose content changes during the cell (subscription churn)
    # has a ``version``: a new version updates the cached state of the same key.
    version = base.population.version
    cached = cache.get(key)
    if cached is None:
        cached = (version, strategy.install(topology, knowledge))
    elif cached[0] != version:
        cached = (version, strategy.update(topology, cached[1], knowledge))
    cache[key] = cached
    return cached[1]


@dataclass(frozen=True, slots=True)
class CellNotification:
    """One notification of a cell, ready for an engine: what the publisher
    sends, to whom, under which installed state (``writes``: control writes
    since the previous notification's state)."""

    run: int
    notification: Notification
    receivers: frozenset[str]
    state: ControlState
    writes: int
    payload: bytes


def cell_setup(cell: Cell) -> tuple[Any, Strategy, DelayModel]:
    """The topology, strategy and delay model of ``cell``."""
    links = make_params(LinkDefaults, dict(cell.links), "links")
    delays = make_params(DelayModel, dict(cell.delays), "delays")
    return load_topology(cell.topology, links), make_strategy(cell.strategy, dict(cell.params)), \
        delays


def cell_notifications(cell: Cell, topology: Any, strategy: Strategy,
                       caches: Caches | None = None, *, workload: CellWorkload | None = None,
                       publisher: str | None = None) -> Iterator[CellNotification]:
    """The notifications of ``cell`` in order, each with its installed state.

    Shared by the static rows below, the hardware-in-the-loop validation
    (``stackcast hil validate``) and ``stackcast deliver --workload``
    (:mod:`experiments.cells.deliver`), so all see the same workload and state.
    ``workload``: the cell's workload when the caller already drew it
    (:func:`~experiments.cells.workload.cell_workload`); ``publisher``: only
    notifications of this publisher (:func:`~experiments.cells.workload.draw_notifications`).
    """
    caches = or_fresh(caches)
    if workload is None:
        workload = cell_workload(cell, topology, caches)
    population = workload.population
    base = Knowledge(population=population, seed=workload.seed, caches=caches)
    cache: dict[Any, tuple[Any, ControlState]] = {}
    previous: ControlState | None = None
    for drawn in draw_notifications(workload, cell.notifications, publisher):
        note, receivers = drawn.notification, drawn.receivers
        knowledge = base if drawn.view is population else replace(base, population=drawn.view)
        state = _state_for(strategy, topology, note.publisher, receivers, drawn.stable, cache,
                           knowledge)
        writes = 0 if previous is None or previous is state else count_writes(previous, state)
        previous = state
        yield CellNotification(drawn.run, note, receivers, state, writes,
                               payload_for(note, cell.payload_bytes))


def cell_rows(cell: Cell, static_path: str | None = None, caches: Caches | None = None
              ) -> list[dict[str, Any]]:
    """The rows of ``cell`` as plain dicts (column order of :data:`ROWS`).

    ``static_path`` picks the engine (:func:`sim.engines.static.choose_static_path`):
    "auto" (default; the ``STACKCAST_STATIC_PATH`` environment variable
    overrides it), "fast" or "reference". Rows are identical either way.
    ``caches``: the runner's :class:`~sim.dataplanes.caches.Caches` (shared by
    the cells it runs; default: a fresh one). Rows never depend on it.
    The cyclic garbage collector runs rarely meanwhile
    (:func:`~sim.engines.gc_thresholds.rare_gc`).
    """
    with rare_gc():
        return _cell_rows(cell, static_path, caches)


def _cell_rows(cell: Cell, static_path: str | None, caches: Caches | None
               ) -> list[dict[str, Any]]:
    topology, strategy, delays = cell_setup(cell)
    caches = or_fresh(caches)
    strategy.use_caches(caches)
    fast = choose_static_path(topology, strategy, delays,
                              static_path or os.environ.get("STACKCAST_STATIC_PATH", "auto"))
    items: Any = cell_notifications(cell, topology, strategy, caches)
    fast_metrics: list[Any] = []
    if fast is not None:  # one closed-form batch; declined notifications run on the reference
        items = list(items)
        # a fast path whose counts depend on the installed state takes each one's, one
        # that evaluates the event (content filters) the notifications
        states = ({"states": [i.state for i in items]} if getattr(fast, "needs_states", False)
                  else {})
        if getattr(fast, "needs_notifications", False):
            states["notifications"] = [i.notification for i in items]
        fast_metrics = fast.metrics([i.notification.publisher for i in items],
                                    [i.receivers for i in items], cell.payload_bytes, **states)
    rows = []
    identity = identity_columns(cell)
    # (link waste, label counts) -> its record (fast rows share them); a fast path may add
    # the header's label counts to its metrics (HEADER_LABEL_FIELDS, default 0)
    fast_extra: dict[tuple[int, ...], ExtraMetrics] = {}
    counted: tuple[Any, int, int] = (None, 0, 0)  # the last state and its sizes
    for k, item in enumerate(items):
        note, receivers, state = item.notification, item.receivers, item.state
        if counted[0] is not state:  # sizes of a state shared by many notifications, once
            counted = (state, state.entries, state.multicast_groups)
        metrics = fast_metrics[k] if fast_metrics else None
        if metrics is not None and "extra" in metrics:  # the strategy's own, from the fast path
            extra = metrics["extra"]
        elif metrics is not None:
            waste = metrics["link_false_positives"]
            key = (waste, *(metrics.get(f, 0) for f in HEADER_LABEL_FIELDS))
            extra = fast_extra.get(key) or fast_extra.setdefault(key, ExtraMetrics(
                link_false_positives=waste, **dict(zip(HEADER_LABEL_FIELDS, key[1:], strict=True))))
        else:
            d = run_notification(topology, strategy, state, note, receivers, item.payload, delays)
            metrics = row_metrics(d, link_waste=False)
            extra = strategy.extra_metrics(topology, state, note, receivers, d)
            if extra.link_false_positives is None:  # every strategy gets link waste
                extra = replace(extra, link_false_positives=wasted_link_frames(
                    d.links, note.publisher, receivers))
        rows.append(notification_row(
            identity, run=item.run, publisher=note.publisher, receivers=len(receivers),
            metrics=metrics, state_entries=counted[1], multicast_groups=counted[2],
            control_writes=item.writes, extra=extra))
    return rows


def run_cell(cell: Cell, static_path: str | None = None, caches: Caches | None = None
             ) -> pa.Table:
    """The rows of ``cell`` as an Arrow table: :data:`ROWS` for static cells,
    :data:`~experiments.cells.schema.TIMED_ROWS` for timed ones (engine = "timed");
    ``static_path`` and ``caches`` as in :func:`cell_rows`."""
    if cell.engine == "timed":
        from experiments.cells.timed import run_timed_cell

        return run_timed_cell(cell, caches)
    return pa.Table.from_pylist(cell_rows(cell, static_path, caches), schema=ROWS)
