"""Run one timed cell (``[experiment] engine = "timed"``): one row per notification.

The cell's ``[timed]`` settings (:func:`sim.engines.timed.config.timed_settings`)
choose the workload:

``receivers = "per-notification"``
    the same notifications as the static engine's cell (publisher and
    receivers drawn from ``child_rng(workload_seed, "notification", run)``),
    published one stream at ``rate_hz`` in all; the state is installed once
    for every receiver set. With a low rate this is the zero-load setting of
    Fig. 3.15 (``analytic_delay_ms`` is the static engine's delay of the
    same notification).
``receivers = "per-publisher"`` (default)
    ``publishers`` hosts (all of the receiver model's when 0) publish at
    ``rate_hz`` each; each has one subscriber set drawn once from the
    receiver model, which the controller's churn then changes.

Both modes draw their workload through :mod:`experiments.cells.workload`.

Rows have the :data:`experiments.cells.schema.TIMED_ROWS` schema: the static
columns per notification (built by :func:`experiments.cells.rows.notification_row`,
as static rows are), timed columns per notification, and run-level ``cell_``
columns repeated on each row. The strategy's extra metrics
(:class:`strategies.base.ExtraMetrics`) and ``analytic_delay_ms`` come from
the static engine on the state and receiver set the publisher encoded with;
unlike static rows, ``link_false_positives`` stays 0 for strategies that do
not measure it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np
import pyarrow as pa

from experiments.cells.rows import identity_columns, notification_row
from experiments.cells.schema import TIMED_ROWS
from experiments.cells.spec import Cell
from experiments.cells.timed_summary import RowSummary, RunTotals
from experiments.cells.workload import cell_workload, draw_notifications
from sim.dataplanes.caches import Caches, or_fresh
from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.packet import Notification
from sim.dataplanes.seeds import canonical_json, child_rng
from sim.engines.static import run_notification
from sim.engines.timed.config import TimedSettings, settings_canonical, timed_settings
from sim.engines.timed.controller import Controller
from sim.engines.timed.engine import NoteRecord, TimedEngine, TimedResult
from sim.engines.timed.metrics import percentile
from sim.workloads.receivers import Population
from strategies.base import ExtraMetrics, Knowledge, Strategy, make_strategy
from topologies.model import LinkDefaults, Topology
from topologies.registry import check, make_params
from topologies.specs import load_topology


def cell_settings(cell: Cell) -> TimedSettings:
    return timed_settings(dict(cell.timed), f"cell {cell.cell_id} [timed]", cell.notifications)


def _install(strategy: Strategy, topology: Topology, base: Knowledge,
             sets: dict[str, list[frozenset[str]]]) -> ControlState:
    if strategy.scope == "topology":
        return strategy.install(topology, base)
    return strategy.install(topology, dataclasses.replace(
        base, receiver_sets={p: tuple(dict.fromkeys(rs)) for p, rs in sets.items()}))


def _publishers(population: Population, topology: Topology, count: int, seed: int
                ) -> list[str]:
    pubs = list(population.publishers)
    if 0 < count < len(pubs):
        rng = child_rng(seed, "timed-publishers")
        pubs = [pubs[int(i)] for i in rng.choice(len(pubs), size=count, replace=False)]
    return sorted(pubs, key=topology.host_id)


def simulate_cell(cell: Cell, trace: bool = False, caches: Caches | None = None
                  ) -> tuple[TimedEngine, TimedResult, Controller | None]:
    """Build and run the cell's network; returns the engine, its result and controller
    (``trace``: record the exact event trace; ``caches``: the runner's
    :class:`~sim.dataplanes.caches.Caches`, default a fresh one)."""
    engine, controller = build_cell(cell, trace, caches)
    return engine, engine.run(), controller


def build_cell(cell: Cell, trace: bool = False, caches: Caches | None = None
               ) -> tuple[TimedEngine, Controller | None]:
    """The cell's network with its workload (and churn) started, not run yet
    (see :func:`simulate_cell`)."""
    settings = cell_settings(cell)
    wl = settings.workload
    links = make_params(LinkDefaults, dict(cell.links), "links")
    topology = load_topology(cell.topology, links)
    strategy = make_strategy(cell.strategy, dict(cell.params))
    caches = or_fresh(caches)
    strategy.use_caches(caches)
    workload = cell_workload(cell, topology, caches)
    population, seed = workload.population, workload.seed
    # Content populations (draws_events): events decide the receivers; the state
    # is installed from the subscriptions as they stand at the start.
    view = population.at(0)
    base = Knowledge(population=view, seed=seed, caches=caches)
    controller = None
    if wl.receivers == "per-notification":
        items = []
        for drawn in draw_notifications(workload, wl.notifications or 0):
            check(drawn.view.version == view.version,  # the static engine's notifications
                  f"cell {cell.cell_id}: the timed engine does not run content "
                  "subscription churn (use churn=0 in the receiver model)")
            items.append((drawn.publisher, drawn.receivers, drawn.notification.event))
        sets: dict[str, list[frozenset[str]]] = {}
        for pub, rec, _ in items:
            sets.setdefault(pub, []).append(rec)
        state = _install(strategy, topology, base, sets)
        engine = TimedEngine(topology, strategy, state, settings.config,
                             payload_bytes=cell.payload_bytes, trace=trace)
        engine.start_schedule(wl, items, seed)
    else:
        pubs = _publishers(population, topology, wl.publishers, seed)
        if view.draws_events:  # content: every notification draws its event
            check(not settings.churn.active,
                  f"cell {cell.cell_id}: host-level churn does not apply to content "
                  "workloads (their subscriptions are boxes)")
            state = _install(strategy, topology, base, {})
            engine = TimedEngine(topology, strategy, state, settings.config,
                                 payload_bytes=cell.payload_bytes, trace=trace)
            engine.draw = lambda pub, nid: view.draw(pub, 0, child_rng(seed, "timed-event", nid))
        else:
            subs = {p: population.receivers(p, child_rng(seed, "timed-subscribers",
                                                         topology.host_id(p))) for p in pubs}
            state = _install(strategy, topology, base, {p: [r] for p, r in subs.items()})
            engine = TimedEngine(topology, strategy, state, settings.config,
                                 payload_bytes=cell.payload_bytes, trace=trace)
            controller = Controller(engine, subs, settings.churn, settings.capacity,
                                    seed=seed, knowledge=base)
            until = (wl.duration_s if wl.duration_s is not None
                     else (wl.notifications or 0) / (wl.rate_hz * max(len(pubs), 1)))
            controller.start(until)
        engine.start_workload(wl, pubs, seed)
    return engine, controller


def _nan_to(v: float, default: float = math.nan) -> float:
    return default if v is None or math.isnan(v) else v


def run_timed_cell(cell: Cell, caches: Caches | None = None) -> pa.Table:
    """The rows of a timed cell as an Arrow table with the :data:`TIMED_ROWS` schema."""
    return pa.Table.from_pylist(timed_cell_rows(cell, caches), schema=TIMED_ROWS)


def timed_cell_rows(cell: Cell, caches: Caches | None = None) -> list[dict[str, Any]]:
    """The rows of a timed cell as plain dicts (column order of :data:`TIMED_ROWS`):
    :func:`experiments.cells.rows.notification_row` per notification, then
    :func:`_timed_columns` and the run-level columns (:func:`_run_level`).

    With ``[timed] records = "summary"`` the engine hands each notification over
    as it finishes and the cell keeps only running totals: one row
    (:mod:`experiments.cells.timed_summary`)."""
    engine, ctl = build_cell(cell, caches=caches)
    rows = _NoteRows(cell, engine, ctl)
    totals = RunTotals()
    if cell_settings(cell).workload.records == "summary":
        summary = RowSummary()

        def finished(note: NoteRecord) -> None:  # control_writes: summed at the end
            row, exposed, mis = rows.row(note, 0)
            totals.add(note, exposed, mis)
            summary.add(row)

        engine.stream(finished)
        result = engine.run()
        last = totals.span if totals.notifications else -math.inf
        writes = 0 if ctl is None else sum(u.writes for u in ctl.updates
                                           if not u.rejected and u.t_end <= last)
        return summary.rows({**_run_level(engine, result, ctl, totals),
                             "control_writes": writes})
    result = engine.run()
    out = []
    t_prev = -math.inf
    for k in sorted(result.notes):
        note = result.notes[k]
        writes = 0 if ctl is None else sum(u.writes for u in ctl.updates
                                           if not u.rejected and t_prev < u.t_end <= note.t_pub)
        t_prev = note.t_pub
        row, exposed, mis = rows.row(note, writes)
        totals.add(note, exposed, mis)
        out.append(row)
    run_level = _run_level(engine, result, ctl, totals)
    for row in out:
        row.update(run_level)
    return out


class _NoteRows:
    """The row of one notification without the run-level columns (the static engine's
    analytic delay and extra metrics cached per encoding)."""

    def __init__(self, cell: Cell, engine: TimedEngine, ctl: Controller | None) -> None:
        self.engine, self.ctl = engine, ctl
        self.delays = make_params(DelayModel, dict(cell.delays), "delays")
        self.timed_json = canonical_json(settings_canonical(cell_settings(cell)))
        self.identity = identity_columns(cell)
        self.analytic: dict[tuple[Any, ...], tuple[float, ExtraMetrics]] = {}

    def row(self, note: NoteRecord, writes: int) -> tuple[dict[str, Any], bool, Any]:
        """(row, exposed, misdeliveries or None) of ``note``; ``writes``: its
        control_writes."""
        engine, ctl = self.engine, self.ctl
        key = (note.publisher, note.encoded_for, id(note.view_state), note.notification.event)
        if key not in self.analytic:  # the static engine on the state the publisher encoded with
            static_note = Notification(0, note.publisher, event=note.notification.event)
            d = run_notification(engine.topology, engine.strategy, note.view_state,
                                 static_note, note.encoded_for, engine.payload, self.delays)
            self.analytic[key] = (d.delay_worst_s * 1e3,
                                  engine.strategy.extra_metrics(engine.topology, note.view_state,
                                                                static_note, note.encoded_for, d))
        delay_ms, extra = self.analytic[key]
        row = notification_row(
            self.identity, run=note.nid, publisher=note.publisher, receivers=len(note.receivers),
            metrics=_note_metrics(note), state_entries=note.view_state.entries,
            multicast_groups=note.view_state.multicast_groups, control_writes=writes,
            extra=extra)
        exposed = ctl is not None and ctl.exposed(note)
        mis = ctl.misdelivery(note) if exposed and ctl is not None else None
        row.update(_timed_columns(note, exposed, mis, self.timed_json, delay_ms))
        return row, exposed, mis


def _note_metrics(note: NoteRecord) -> dict[str, Any]:
    """The engine metrics (:data:`experiments.cells.rows.ENGINE_METRICS`) of one timed
    notification; ``delay_worst_ms`` is its timed worst-case delay (latency_last_ms)."""
    return {
        "delivered": len(note.delivered), "false_positives": note.false_positives,
        "false_negatives": note.false_negatives, "duplicates": note.duplicates,
        "header_entries": note.header_entries, "header_bytes": note.header_bytes,
        "packets_sent": note.packets, "frames": note.frames, "bytes": note.bytes,
        "passes": note.passes, "recirculations": note.recirculations,
        "lookups": note.lookups, "circulations_simplified": note.circulations_simplified,
        "max_switch_passes": max(note.switch_passes.values(), default=0),
        "delay_worst_ms": note.latency_last_s * 1e3 if note.receivers else 0.0,
    }


def _timed_columns(note: NoteRecord, exposed: bool, mis: Any, timed_json: str,
                   analytic_delay_ms: float) -> dict[str, Any]:
    """The per-notification timed columns of :data:`TIMED_ROWS` (after the static ones)."""
    return {
        "timed": timed_json, "publish_s": note.t_pub,
        "latency_first_ms": note.latency_first_s * 1e3,
        "latency_last_ms": note.latency_last_s * 1e3,
        "analytic_delay_ms": analytic_delay_ms,
        "dropped_frames": note.drops, "exposed": exposed,
        "stale_false_negatives": mis.stale_false_negatives if mis else 0,
        "stale_false_positives": mis.stale_false_positives if mis else 0,
        "misdeliveries": mis.misdeliveries if mis else 0,
    }


def _run_level(engine: TimedEngine, result: TimedResult, ctl: Controller | None,
               totals: RunTotals) -> dict[str, Any]:
    rec = result.recorder
    t_end = result.t_end
    span, intended, got, t_last = totals.span, totals.intended, totals.got, totals.t_last
    lat = totals.latencies_ms
    drops: dict[str, int] = {}
    sites: dict[str, int] = {}
    for (where, node, detail), n in rec.drops.items():
        drops[where] = drops.get(where, 0) + n
        sites[f"{node}:{where}:{detail}"] = n
    q = result.queues
    egress = q.get("egress", {})
    pipe = q.get("pipeline", {})
    changes = ctl.changes if ctl else []
    conv = [c.convergence_s * 1e3 for c in changes if c.convergence_s is not None]
    writes = sum(u.writes for u in ctl.updates if not u.rejected) if ctl else 0
    occupancy = ctl.occupancy.report(t_end) if ctl else {}
    return {
        "cell_sim_time_s": t_end, "cell_notifications": totals.notifications,
        "cell_offered_load_hz": totals.notifications / span if span > 0 else 0.0,
        "cell_deliveries_per_s": got / t_last if t_last > 0 else 0.0,
        "cell_delivery_ratio": got / intended if intended else 1.0,
        "cell_latency_p50_ms": _nan_to(percentile(lat, 50)),
        "cell_latency_p90_ms": _nan_to(percentile(lat, 90)),
        "cell_latency_p99_ms": _nan_to(percentile(lat, 99)),
        "cell_drops_egress": drops.get("egress", 0),
        "cell_drops_pipeline": drops.get("pipeline", 0),
        "cell_drops_recirc": drops.get("recirc", 0),
        "cell_drop_sites": json.dumps(dict(sorted(sites.items(), key=lambda kv: -kv[1])[:20])),
        "cell_egress_queue_mean": egress.get("mean", 0.0),
        "cell_egress_queue_max_mean": egress.get("max_mean", 0.0),
        "cell_egress_queue_peak": egress.get("peak", 0.0),
        "cell_pipeline_queue_mean": pipe.get("mean", 0.0),
        "cell_pipeline_queue_peak": pipe.get("peak", 0.0),
        "cell_recirculations_per_s": (sum(rec.recirc_executed.values()) / t_end
                                      if t_end > 0 else 0.0),
        "cell_recirc_port_queue_peak": q.get("recirc", {}).get("peak", 0.0),
        "cell_changes": len(changes),
        "cell_rejected_changes": sum(1 for c in changes if c.rejected),
        "cell_control_writes": writes,
        "cell_writes_per_change": writes / len(changes) if changes else 0.0,
        "cell_convergence_mean_ms": float(np.mean(conv)) if conv else 0.0,
        "cell_convergence_max_ms": max(conv, default=0.0),
        "cell_exposed": totals.exposed,
        "cell_misdeliveries": totals.misdeliveries,
        "cell_stale_false_negatives": totals.stale_false_negatives,
        "cell_overflow_updates": sum(1 for u in ctl.updates if u.overflow) if ctl else 0,
        "cell_occupancy": json.dumps(occupancy, sort_keys=True),
        "cell_events": result.events,
    }


def saturation(rows: list[dict[str, Any]], ratio: float = 0.99, blowup: float = 10.0
               ) -> list[dict[str, Any]]:
    """Where each load curve saturates, from timed rows of a rate sweep.

    Rows are grouped by everything that identifies a curve (strategy, params,
    topology, receiver model, payload and the ``[timed]`` settings except
    ``rate_hz``); along the offered load, a point is saturated when its
    delivery ratio is below ``ratio`` or its p99 latency exceeds ``blowup``
    times the p99 at the lowest load. Returns per curve the largest offered
    load before the first saturated point (``capacity_hz``, None if even the
    lowest is saturated) and that point (``saturated_hz``, None if none is).
    """
    curves: dict[str, dict[float, dict[str, Any]]] = {}
    for r in rows:
        timed = {k: v for k, v in json.loads(r["timed"]).items() if k != "rate_hz"}
        key = canonical_json([r["strategy"], r["params"], r["topology"], r["receivers_model"],
                              r["payload_bytes"], timed])
        curves.setdefault(key, {})[r["cell_offered_load_hz"]] = r
    out = []
    for key, points in sorted(curves.items()):
        loads = sorted(points)
        base = points[loads[0]]["cell_latency_p99_ms"]
        capacity = saturated = None
        for load in loads:
            p = points[load]
            if p["cell_delivery_ratio"] < ratio or p["cell_latency_p99_ms"] > blowup * base:
                saturated = load
                break
            capacity = load
        strategy, params, topology, receivers, payload, timed = json.loads(key)
        out.append({"strategy": strategy, "params": params, "topology": topology,
                    "receivers_model": receivers, "payload_bytes": payload, "timed": timed,
                    "capacity_hz": capacity, "saturated_hz": saturated})
    return out
