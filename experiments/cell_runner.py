"""Run one cell: its notifications through the static engine, one row each.

Pure of any engine: the local and the Spark runner both call
:func:`run_cell`, which is why their rows are identical.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from experiments.schema import ROWS
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
               stable: frozenset[str] | None, cache: dict[Any, ControlState]) -> ControlState:
    """Install state; strategies whose state does not depend on the receivers are cached."""
    scope = strategy.scope
    if scope == "topology":
        key: Any = ()
        knowledge = Knowledge()
    elif scope == "publisher":
        key = publisher
        knowledge = Knowledge(receiver_sets={publisher: ()})
    else:
        return strategy.install(topology, Knowledge(
            receiver_sets={publisher: (receivers,)},
            stable={publisher: stable} if stable is not None else {}))
    if key not in cache:
        cache[key] = strategy.install(topology, knowledge)
    return cache[key]


def cell_rows(cell: Cell) -> list[dict[str, Any]]:
    """The rows of ``cell`` as plain dicts (column order of :data:`ROWS`)."""
    links = make_params(LinkDefaults, dict(cell.links), "links")
    delays = make_params(DelayModel, dict(cell.delays), "delays")
    topology = load_topology(cell.topology, links)
    strategy = make_strategy(cell.strategy, dict(cell.params))
    population = receiver_model(cell.receivers).population(
        topology, child_rng(cell.workload_seed, "population"))
    cache: dict[Any, ControlState] = {}
    stable_of = getattr(population, "stable", None)  # populations that know stable subscribers
    previous: ControlState | None = None
    rows = []
    for run in range(cell.notifications):
        rng = child_rng(cell.workload_seed, "notification", run)
        publisher = population.publishers[int(rng.integers(len(population.publishers)))]
        receivers = population.receivers(publisher, rng)
        note = Notification(notification_id=run, publisher=publisher)
        stable = stable_of(publisher, run) if stable_of else None
        state = _state_for(strategy, topology, publisher, receivers, stable, cache)
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
        })
    return rows


def run_cell(cell: Cell) -> pa.Table:
    """The rows of ``cell`` as an Arrow table with the :data:`ROWS` schema."""
    return pa.Table.from_pylist(cell_rows(cell), schema=ROWS)
