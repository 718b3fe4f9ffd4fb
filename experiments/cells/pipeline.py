"""Run one cell: its notifications through the static engine, one row each
(timed cells go to :mod:`experiments.cells.timed`).

The notifications come from :func:`experiments.cells.workload.draw_notifications`
(the one iterator over a cell's workload), the rows from
:func:`experiments.cells.rows.notification_row` (the one row builder). Pure of
any engine: the local and the Spark runner both call :func:`run_cell`, which
is why their rows are identical.

Where the workload draws a cell's notifications in one batch
(:func:`~experiments.cells.workload.draw_runs`), the strategy's state does not
depend on the receivers and its fast path takes host indices
(:class:`~sim.dataplanes.fast_path.ColumnFastPath`), the cell runs as columns
(:func:`_column_table`): the drawn index arrays go to the fast path as they
are and its metric arrays become the rows' columns
(:func:`~experiments.cells.rows.rows_table`); declined notifications run on the
reference as in the per-notification path. Both paths give the same rows
(``tests/experiments/test_cell_columns.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from experiments.cells.rows import (
    ENGINE_METRICS,
    extra_value_columns,
    identity_columns,
    notification_row,
    row_arrays,
    rows_table,
)
from experiments.cells.schema import ROWS
from experiments.cells.spec import Cell
from experiments.cells.workload import (
    RUNS_PER_BATCH,
    CellWorkload,
    DrawnNotification,
    cell_workload,
    draw_notifications,
    draw_runs,
    shared_draws,
    shared_workload,
)
from sim.dataplanes.caches import Caches, Identity, or_fresh
from sim.dataplanes.control_state import ControlState, count_writes
from sim.dataplanes.delivery import DelayModel, row_metrics
from sim.dataplanes.fast_path import ColumnFastPath, FastPath
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
    scope = strategy.state_scope()
    if scope == "topology" and strategy.cell_invariant:  # one install for every cell
        shared = (type(strategy), strategy.params, Identity(topology))
        return base.caches.cell_states.get_or_make(  # type: ignore[no-any-return]
            shared, lambda: strategy.install(topology, base))
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
                       publisher: str | None = None,
                       drawn: Sequence[DrawnNotification] | None = None
                       ) -> Iterator[CellNotification]:
    """The notifications of ``cell`` in order, each with its installed state.

    Shared by the static rows below, the hardware-in-the-loop validation
    (``stackcast hil validate``) and ``stackcast deliver --workload``
    (:mod:`experiments.cells.deliver`), so all see the same workload and state.
    ``workload``: the cell's workload when the caller already drew it
    (:func:`~experiments.cells.workload.cell_workload`); ``publisher``: only
    notifications of this publisher (:func:`~experiments.cells.workload.draw_notifications`);
    ``drawn``: the notifications of ``workload`` already drawn
    (:func:`~experiments.cells.workload.shared_draws`).
    """
    caches = or_fresh(caches)
    if workload is None:
        workload = cell_workload(cell, topology, caches)
    population = workload.population
    base = Knowledge(population=population, seed=workload.seed, caches=caches)
    cache: dict[Any, tuple[Any, ControlState]] = {}
    previous: ControlState | None = None
    draws: Iterable[DrawnNotification] = (
        drawn if drawn is not None
        else draw_notifications(workload, cell.notifications, publisher))
    for one in draws:
        note, receivers = one.notification, one.receivers
        knowledge = base if one.view is population else replace(base, population=one.view)
        state = _state_for(strategy, topology, note.publisher, receivers, one.stable, cache,
                           knowledge)
        writes = 0 if previous is None or previous is state else count_writes(previous, state)
        previous = state
        yield CellNotification(one.run, note, receivers, state, writes,
                               payload_for(note, cell.payload_bytes))


def cell_rows(cell: Cell, static_path: str | None = None, caches: Caches | None = None
              ) -> list[dict[str, Any]]:
    """The rows of static ``cell`` as plain dicts (column order of :data:`ROWS`):
    :func:`run_cell`'s table as Python values."""
    return run_cell(cell, static_path, caches).to_pylist()


def run_cell(cell: Cell, static_path: str | None = None, caches: Caches | None = None
             ) -> pa.Table:
    """The rows of ``cell`` as an Arrow table: :data:`ROWS` for static cells,
    :data:`~experiments.cells.schema.TIMED_ROWS` for timed ones (engine = "timed").

    ``static_path`` picks the engine (:func:`sim.engines.static.choose_static_path`):
    "auto" (default; the ``STACKCAST_STATIC_PATH`` environment variable
    overrides it), "fast" or "reference". Rows are identical either way.
    ``caches``: the runner's :class:`~sim.dataplanes.caches.Caches` (shared by
    the cells it runs; default: a fresh one). Rows never depend on it.
    A static cell runs with the cyclic garbage collector collecting rarely
    (:func:`~sim.engines.gc_thresholds.rare_gc`).
    """
    if cell.engine == "timed":
        from experiments.cells.timed import run_timed_cell

        return run_timed_cell(cell, caches)
    with rare_gc():
        return _cell_table(cell, static_path, caches)


def _fast_path(topology: Any, strategy: Strategy, delays: DelayModel, path: str,
               caches: Caches) -> FastPath | None:
    """:func:`choose_static_path`, shared between cells for ``cell_invariant`` strategies."""
    if not strategy.cell_invariant or path == "reference":
        return choose_static_path(topology, strategy, delays, path)
    key = (type(strategy), strategy.params, Identity(topology), delays)
    (fast,) = caches.fast_paths.get_or_make(
        key, lambda: (choose_static_path(topology, strategy, delays, path),))
    if fast is None and path == "fast":
        choose_static_path(topology, strategy, delays, path)  # raises its error
    return fast  # type: ignore[no-any-return]


def _cell_table(cell: Cell, static_path: str | None, caches: Caches | None) -> pa.Table:
    topology, strategy, delays = cell_setup(cell)
    caches = or_fresh(caches)
    strategy.use_caches(caches)
    fast = _fast_path(topology, strategy, delays,
                      static_path or os.environ.get("STACKCAST_STATIC_PATH", "auto"), caches)
    workload = shared_workload(cell, topology, caches)
    if fast is not None and hasattr(fast, "metric_batch"):  # the content filters
        return _batch_table(cell, topology, strategy, delays, fast, workload, caches)
    if (isinstance(fast, ColumnFastPath) and strategy.state_scope() != "receivers"
            and not getattr(fast, "needs_states", False)
            and not getattr(fast, "needs_notifications", False)):
        table = _column_table(cell, topology, strategy, delays, fast, workload)
        if table is not None:
            return table
    return pa.Table.from_pylist(_cell_rows(cell, topology, strategy, delays, fast, workload,
                                           caches, shared_draws(cell, workload, caches)),
                                schema=ROWS)


def _cell_rows(cell: Cell, topology: Any, strategy: Strategy, delays: DelayModel,
               fast: FastPath | None, workload: CellWorkload, caches: Caches,
               drawn: Sequence[DrawnNotification] | None = None) -> list[dict[str, Any]]:
    """The rows notification by notification (the fast path's batch where it has one)."""
    items: Any = cell_notifications(cell, topology, strategy, caches, workload=workload,
                                    drawn=drawn)
    fast_metrics: Sequence[Any] = []
    if fast is not None:  # one closed-form batch; declined notifications run on the reference
        items = list(items)
        fast_metrics = shared_fast_metrics(strategy, topology, delays, fast, items,
                                           cell.payload_bytes, caches)
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
            metrics, extra = _reference_metrics(topology, strategy, state, note, receivers,
                                                item.payload, delays)
        rows.append(notification_row(
            identity, run=item.run, publisher=note.publisher, receivers=len(receivers),
            metrics=metrics, state_entries=counted[1], multicast_groups=counted[2],
            control_writes=item.writes, extra=extra))
    return rows


def fast_metrics_of(fast: FastPath, items: Sequence[CellNotification], payload_bytes: int
                    ) -> list[dict[str, Any] | None]:
    """The fast path's row metrics of ``items`` (None: declined, the reference runs)."""
    return fast.metrics([i.notification.publisher for i in items],
                        [i.receivers for i in items], payload_bytes, **_fast_inputs(fast, items))


def _fast_inputs(fast: Any, items: Sequence[CellNotification]) -> dict[str, Any]:
    """What ``fast`` takes besides publishers and receivers: a fast path whose counts
    depend on the installed state takes each one's, one that evaluates the event
    (content filters) the notifications."""
    inputs: dict[str, Any] = {}
    if getattr(fast, "needs_states", False):
        inputs["states"] = [i.state for i in items]
    if getattr(fast, "needs_notifications", False):
        inputs["notifications"] = [i.notification for i in items]
    return inputs


def shared_fast_metrics(strategy: Strategy, topology: Any, delays: DelayModel, fast: FastPath,
                        items: Sequence[CellNotification], payload_bytes: int, caches: Caches
                        ) -> Sequence[dict[str, Any] | None]:
    """:func:`fast_metrics_of`, kept in ``caches.fast_metrics`` for strategies with an
    encoder key (:meth:`~strategies.base.Strategy.encoder_key`).

    The fast path's metrics of a notification depend on the topology, the delay
    model, the payload size, the installed state, the publisher, the receivers
    and what the strategy's encoder reads of its parameters, nothing else: cells
    that run the same notifications on the same state objects with equal encoder
    keys (a ch. 6 family's rule budgets whose installs select the same VTs, hence
    share one state through ``caches.vt_states``) get the same metrics. The metric
    dicts are shared read-only (the rows copy their values).
    """
    key = strategy.encoder_key()
    if key is None:
        return fast_metrics_of(fast, items, payload_bytes)
    run_key = (key, Identity(topology), delays, payload_bytes,
               tuple((Identity(i.state), i.notification, i.receivers) for i in items))
    return caches.fast_metrics.get_or_make(  # type: ignore[no-any-return]
        run_key, lambda: tuple(fast_metrics_of(fast, items, payload_bytes)))


def _batch_table(cell: Cell, topology: Any, strategy: Strategy, delays: DelayModel,
                 fast: Any, workload: CellWorkload, caches: Caches) -> pa.Table:
    """The rows of :func:`_cell_rows` built as columns, from a fast path that gives its
    metrics as columns (``metric_batch``, :class:`~sim.dataplanes.content_fast_path.MetricBatch`:
    the content filters); declined notifications run on the reference, row by row."""
    items = list(cell_notifications(cell, topology, strategy, caches, workload=workload,
                                    drawn=shared_draws(cell, workload, caches)))
    n = len(items)
    receivers = [i.receivers for i in items]
    states = [i.state for i in items]
    publishers = [i.notification.publisher for i in items]
    batch = fast.metric_batch(publishers, receivers, cell.payload_bytes,
                              **_fast_inputs(fast, items))
    sizes: list[tuple[int, int]] = []
    counted: tuple[Any, int, int] = (None, 0, 0)  # the last state and its sizes
    for state in states:  # sizes of a state shared by many notifications, once
        if counted[0] is not state:
            counted = (state, state.entries, state.multicast_groups)
        sizes.append(counted[1:])
    i64 = np.int64
    columns: dict[str, Any] = {
        "run": np.fromiter((i.run for i in items), i64, n), "publisher": publishers,
        "receivers": np.fromiter(map(len, receivers), i64, n),
        "state_entries": np.fromiter((e for e, _ in sizes), i64, n),
        "multicast_groups": np.fromiter((g for _, g in sizes), i64, n),
        "control_writes": np.fromiter((i.writes for i in items), i64, n),
        **{key: batch.column(key).copy() for key in ENGINE_METRICS}}
    extras = list(batch.extras)
    for k in np.flatnonzero(~batch.taken).tolist():  # on the reference
        item = items[k]
        metrics, extras[k] = _reference_metrics(topology, strategy, item.state,
                                                item.notification, item.receivers,
                                                item.payload, delays)
        for key in ENGINE_METRICS:
            columns[key][k] = metrics[key]
    columns.update(extra_value_columns(extras))
    return rows_table(identity_columns(cell), columns, n)


def _reference_metrics(topology: Any, strategy: Strategy, state: ControlState,
                       note: Notification, receivers: frozenset[str], payload: bytes,
                       delays: DelayModel) -> tuple[dict[str, Any], ExtraMetrics]:
    """One notification on the pass-by-pass reference: its row metrics and extra metrics."""
    d = run_notification(topology, strategy, state, note, receivers, payload, delays)
    extra = strategy.extra_metrics(topology, state, note, receivers, d)
    if extra.link_false_positives is None:  # every strategy gets link waste
        extra = replace(extra, link_false_positives=wasted_link_frames(
            d.links, note.publisher, receivers))
    return row_metrics(d, link_waste=False), extra


def _column_table(cell: Cell, topology: Any, strategy: Strategy, delays: DelayModel,
                  fast: ColumnFastPath, workload: CellWorkload) -> pa.Table | None:
    """The rows of a cell whose draws, states and fast path work on host indices, built
    as columns (see the module docstring); None when the workload does not batch."""
    population = workload.population
    base = Knowledge(population=population, seed=workload.seed, caches=strategy.caches)
    cache: dict[Any, tuple[Any, ControlState]] = {}
    identity = identity_columns(cell)
    tables = []
    previous: ControlState | None = None
    sizes: dict[Identity, tuple[int, int]] = {}  # a state -> its sizes, counted once
    sized = (0, 0)  # those of ``previous``
    for start in range(0, cell.notifications, RUNS_PER_BATCH):
        count = min(cell.notifications - start, RUNS_PER_BATCH)
        drawn = draw_runs(workload, count, start=start)
        if drawn is None:
            return None
        hosts = pa.array(drawn.hosts, pa.string())
        receivers = np.diff(drawn.offsets)
        # the installed state of each notification and the control writes that led to it
        if strategy.state_scope() == "topology":
            state = _state_for(strategy, topology, "", frozenset(), None, cache, base)
            states, changes = [state] * count, [0]
        else:  # one state per publisher
            states = [_state_for(strategy, topology, drawn.hosts[pub], frozenset(), None, cache,
                                 base) for pub in drawn.publishers.tolist()]
            changes = [0, *(run for run in range(1, count) if states[run] is not states[run - 1])]
        entries, groups, writes = (np.zeros(count, np.int64) for _ in range(3))
        for run, end in zip(changes, [*changes[1:], count], strict=True):  # runs of one state
            state = states[run]
            if state is not previous:
                writes[run] = 0 if previous is None else count_writes(previous, state)
                previous = state
                sized = sizes.get(Identity(state)) or sizes.setdefault(
                    Identity(state), (state.entries, state.multicast_groups))
            entries[run:end], groups[run:end] = sized
        got = fast.metric_columns(drawn.publishers, drawn.offsets, drawn.receivers,
                                  cell.payload_bytes)
        columns: dict[str, Any] = {
            "run": np.arange(start, start + count), "publisher": hosts.take(drawn.publishers),
            "receivers": receivers, "state_entries": entries, "multicast_groups": groups,
            "control_writes": writes, **got.columns}
        declined = np.flatnonzero(~got.taken).tolist()
        if declined:  # on the reference, as the per-notification path runs them
            columns = row_arrays(columns, count)
            for i in declined:
                note = Notification(notification_id=start + i, publisher=drawn.publisher(i))
                recv = drawn.receiver_set(i)
                metrics, extra = _reference_metrics(topology, strategy, states[i], note, recv,
                                                    payload_for(note, cell.payload_bytes),
                                                    delays)
                row = notification_row(
                    identity, run=start + i, publisher=note.publisher, receivers=len(recv),
                    metrics=metrics, state_entries=int(entries[i]),
                    multicast_groups=int(groups[i]), control_writes=int(writes[i]),
                    extra=extra)
                for name, column in columns.items():
                    column[i] = row[name]
        tables.append(rows_table(identity, columns, count))
    return pa.concat_tables(tables) if tables else ROWS.empty_table()
