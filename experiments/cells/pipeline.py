"""Run one cell: its notifications through the static engine, one row each
(timed cells go to :mod:`experiments.cells.timed`).

Pure of any engine: the local and the Spark runner both call
:func:`run_cell`, which is why their rows are identical.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from experiments.cells.schema import EXTRA_COLUMNS, ROWS
from experiments.cells.spec import Cell
from sim.dataplanes.control_state import ControlState, diff
from sim.dataplanes.delivery import DelayModel, row_metrics
from sim.dataplanes.link_waste import wasted_link_frames
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.engines.fast_static import choose_static_path
from sim.engines.static import run_notification
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, Strategy, make_strategy
from topologies.model import LinkDefaults
from topologies.registry import make_params
from topologies.specs import load_topology


def _state_for(strategy: Strategy, topology: Any, publisher: str, receivers: frozenset[str],
               stable: frozenset[str] | None, cache: dict[Any, ControlState],
               base: Knowledge | None = None) -> ControlState:
    """Install state; strategies whose state does not depend on the receivers are cached.

    ``base`` carries what every install may know (the population and the
    workload seed).
    """
    base = base if base is not None else Knowledge()
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
    version = getattr(base.population, "version", None)
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


def cell_notifications(cell: Cell, topology: Any, strategy: Strategy
                       ) -> Iterator[CellNotification]:
    """The notifications of ``cell`` in order, each with its installed state.

    Shared by the static rows below and the hardware-in-the-loop validation
    (``stackcast hil validate``), so both see the same workload and state.
    """
    model = receiver_model(cell.receivers)
    workload_seed = cell.workload_seed_for(model)
    population = model.population(topology, child_rng(workload_seed, "population"))
    base = Knowledge(population=population, seed=workload_seed)
    cache: dict[Any, tuple[Any, ControlState]] = {}
    stable_of = getattr(population, "stable", None)  # populations that know stable subscribers
    # Populations that change during the cell give their state before each run
    # (at(run)); content populations draw the event and its receivers (draw()).
    at = getattr(population, "at", None)
    previous: ControlState | None = None
    for run in range(cell.notifications):
        rng = child_rng(workload_seed, "notification", run)
        publisher = population.publishers[int(rng.integers(len(population.publishers)))]
        current = at(run) if at is not None else population
        draw = getattr(current, "draw", None)
        event = None
        if draw is not None:
            event, receivers = draw(publisher, run, rng)
        else:
            receivers = population.receivers(publisher, rng)
        note = Notification(notification_id=run, publisher=publisher, event=event)
        stable = stable_of(publisher, run) if stable_of else None
        knowledge = base if current is population else replace(base, population=current)
        state = _state_for(strategy, topology, publisher, receivers, stable, cache, knowledge)
        writes = 0 if previous is None or previous is state else len(diff(previous, state))
        previous = state
        yield CellNotification(run, note, receivers, state, writes,
                               payload_for(note, cell.payload_bytes))


_LATE = ("delay_worst_ms", "link_false_positives")  # metrics placed later in ROWS order


def cell_rows(cell: Cell, static_path: str | None = None) -> list[dict[str, Any]]:
    """The rows of ``cell`` as plain dicts (column order of :data:`ROWS`).

    ``static_path`` picks the engine (:func:`sim.engines.fast_static.choose_static_path`):
    "auto" (default; the ``STACKCAST_STATIC_PATH`` environment variable
    overrides it), "fast" or "reference". Rows are identical either way.
    """
    topology, strategy, delays = cell_setup(cell)
    fast = choose_static_path(topology, strategy, delays,
                              static_path or os.environ.get("STACKCAST_STATIC_PATH", "auto"))
    items: Any = cell_notifications(cell, topology, strategy)
    fast_metrics: list[Any] = []
    if fast is not None:  # one closed-form batch; declined notifications run on the reference
        items = list(items)
        fast_metrics = fast.metrics([i.notification.publisher for i in items],
                                    [i.receivers for i in items], cell.payload_bytes)
    rows = []
    ident = {"experiment": cell.experiment, "cell_id": cell.cell_id, "strategy": cell.strategy,
             "params": cell.params_json, "topology": cell.topology,
             "receivers_model": cell.receivers, "payload_bytes": cell.payload_bytes,
             "seed": cell.seed}
    counted: tuple[Any, int, int] = (None, 0, 0)  # the last state and its sizes
    for k, item in enumerate(items):
        run, note, receivers, state = item.run, item.notification, item.receivers, item.state
        publisher, writes = note.publisher, item.writes
        if counted[0] is not state:  # sizes of a state shared by many notifications, once
            counted = (state, state.entries, state.multicast_groups)
        metrics = fast_metrics[k] if fast_metrics else None
        if metrics is not None:
            extra = {**EXTRA_COLUMNS, "link_false_positives": metrics["link_false_positives"]}
        else:
            d = run_notification(topology, strategy, state, note, receivers, item.payload, delays)
            metrics = row_metrics(d, link_waste=False)
            extra = _extra(strategy, topology, state, note, receivers, d)
        rows.append({
            **ident, "run": run, "publisher": publisher, "receivers": len(receivers),
            **{key: v for key, v in metrics.items() if key not in _LATE},
            "state_entries": counted[1], "multicast_groups": counted[2],
            "control_writes": writes, "delay_worst_ms": metrics["delay_worst_ms"], **extra,
        })
    return rows


def _extra(strategy: Strategy, topology: Any, state: ControlState, note: Notification,
           receivers: frozenset[str], delivery: Any) -> dict[str, Any]:
    """The strategy's extra metrics over the defaults of :data:`EXTRA_COLUMNS`."""
    out: dict[str, Any] = dict(EXTRA_COLUMNS)
    metrics = strategy.extra_metrics(topology, state, note, receivers, delivery)
    if "link_false_positives" not in metrics:  # every strategy gets link waste (unified-content)
        out["link_false_positives"] = wasted_link_frames(delivery.links, note.publisher,
                                                         receivers)
    for k, v in metrics.items():
        if k not in out:
            raise KeyError(f"strategy {strategy.name!r} reports unknown metric {k!r} "
                           f"(known: {', '.join(EXTRA_COLUMNS)})")
        out[k] = v
    return out


def run_cell(cell: Cell, static_path: str | None = None) -> pa.Table:
    """The rows of ``cell`` as an Arrow table: :data:`ROWS` for static cells,
    :data:`~experiments.cells.schema.TIMED_ROWS` for timed ones (engine = "timed");
    ``static_path`` as in :func:`cell_rows`."""
    if cell.engine == "timed":
        from experiments.cells.timed import run_timed_cell

        return run_timed_cell(cell)
    return pa.Table.from_pylist(cell_rows(cell, static_path), schema=ROWS)
