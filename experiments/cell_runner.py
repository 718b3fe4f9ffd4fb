"""Run one cell: its notifications through the static engine, one row each
(timed cells go to :mod:`experiments.timed_cell`).

Pure of any engine: the local and the Spark runner both call
:func:`run_cell`, which is why their rows are identical.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa

from experiments.schema import EXTRA_COLUMNS, ROWS
from experiments.spec import Cell
from sim.control import ControlState, diff
from sim.packet import Notification, payload_for
from sim.receivers import receiver_model
from sim.seeds import child_rng
from sim.static import DelayModel, run_notification
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


def cell_rows(cell: Cell) -> list[dict[str, Any]]:
    """The rows of ``cell`` as plain dicts (column order of :data:`ROWS`)."""
    links = make_params(LinkDefaults, dict(cell.links), "links")
    delays = make_params(DelayModel, dict(cell.delays), "delays")
    topology = load_topology(cell.topology, links)
    strategy = make_strategy(cell.strategy, dict(cell.params))
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
    rows = []
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
        d = run_notification(topology, strategy, state, note, receivers,
                             payload_for(note, cell.payload_bytes), delays)
        rows.append({
            "experiment": cell.experiment, "cell_id": cell.cell_id, "strategy": cell.strategy,
            "params": cell.params_json, "topology": cell.topology,
            "receivers_model": cell.receivers, "payload_bytes": cell.payload_bytes,
            "seed": cell.seed, "run": run, "publisher": publisher,
            "receivers": len(receivers), "delivered": len(d.delivered),
            "false_positives": d.false_positives, "false_negatives": d.false_negatives,
            "duplicates": d.duplicates, "header_entries": d.encoding.header_entries,
            "header_bytes": d.encoding.header_bytes, "packets_sent": len(d.encoding.packets),
            "frames": d.frames, "bytes": d.bytes, "passes": d.total("passes"),
            "recirculations": d.total("recirculations"), "lookups": d.total("lookups"),
            "circulations_simplified": d.total("circulations_simplified"),
            "max_switch_passes": max((c.passes for c in d.switches.values()), default=0),
            "state_entries": state.entries, "multicast_groups": state.multicast_groups,
            "delay_worst_ms": d.delay_worst_s * 1e3, "control_writes": writes,
            **_extra(strategy, topology, state, note, receivers, d),
        })
    return rows


def _extra(strategy: Strategy, topology: Any, state: ControlState, note: Notification,
           receivers: frozenset[str], delivery: Any) -> dict[str, Any]:
    """The strategy's extra metrics over the defaults of :data:`EXTRA_COLUMNS`."""
    out: dict[str, Any] = dict(EXTRA_COLUMNS)
    for k, v in strategy.extra_metrics(topology, state, note, receivers, delivery).items():
        if k not in out:
            raise KeyError(f"strategy {strategy.name!r} reports unknown metric {k!r} "
                           f"(known: {', '.join(EXTRA_COLUMNS)})")
        out[k] = v
    return out


def run_cell(cell: Cell) -> pa.Table:
    """The rows of ``cell`` as an Arrow table: :data:`ROWS` for static cells,
    :data:`~experiments.schema.TIMED_ROWS` for timed ones (engine = "timed")."""
    if cell.engine == "timed":
        from experiments.timed_cell import run_timed_cell

        return run_timed_cell(cell)
    return pa.Table.from_pylist(cell_rows(cell), schema=ROWS)
