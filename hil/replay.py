"""``stackcast hil replay``: a run trace (hil/trace.py) replayed on BMv2 (issue 7).

Unlike ``hil validate``, nothing is recomputed: the installed states, the
packets and the expected outcome all come from the trace file, so a trace
written on one machine (``stackcast run SPEC --trace FILE``) checks BMv2 on
another, with no strategy code involved (only the committed P4 program named
in the trace, and in network mode the topology spec, rebuilt by name).

- hop mode: the trace's switch visits (switch, ingress port, exact frame,
  expected frames per port and passes) are replayed one by one on a single
  BMv2 (:class:`hil.hop.HopSwitch`), reconfigured to each visit's recorded
  switch configuration.
- network mode: one BMv2 per switch (:class:`hil.network.Network`), each
  notification's recorded state installed, its recorded packets injected at
  the publisher; compared per switch (frames per port, passes) and per
  notification (hosts reached, with copy counts).

Each traced cell gets its own :class:`hil.compare.Report`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hil.compare import Report
from hil.programs import Program
from hil.trace import Trace, TraceCell, read_trace

MODES = ("hop", "network")


def _program(cell: TraceCell) -> Program:
    if cell.program is None:
        raise ValueError(f"cell {cell.cell_id} ({cell.cell['strategy']}): its data-plane "
                         "family has no P4 program, so it cannot be replayed")
    program = Program(cell.program)
    if not program.p4info.is_file() or not program.bmv2_json.is_file():
        raise ValueError(f"cell {cell.cell_id}: program {cell.program!r} is not committed "
                         f"(p4/{cell.program}.json / .p4info.txtpb missing)")
    return program


def hop_visits(trace: Trace, cell: TraceCell) -> list[Any]:
    """The cell's switch visits as :class:`hil.hop.Visit` objects, in trace order."""
    from hil.hop import Visit

    out = []
    for note in cell.notifications:
        state = trace.state(note)
        out += [Visit(note.run, v.switch, v.in_port, v.frame, state.config(v.switch), v.emits,
                      v.passes) for v in note.visits]
    return out


def replay_hop(trace: Trace, cell: TraceCell, *, progress: bool = False,
               **switch_options: Any) -> Report:
    """Replay one traced cell in hop mode."""
    from tqdm import tqdm

    from hil.hop import HopSwitch, group_visits

    program = _program(cell)
    report = Report("hop", cell.cell["topology"], cell.cell["strategy"], program.name)
    start = time.monotonic()
    visits = hop_visits(trace, cell)
    report.notifications = len(cell.notifications)
    if not visits:
        return report
    ports = max(max([v.in_port, *(p for p, _ in v.emits)]) for v in visits)
    bar = tqdm(total=len(visits), unit="visit", disable=not progress, leave=False,
               desc=f"replay hop {cell.cell['strategy']}")
    with HopSwitch(program, ports, **switch_options) as hop:
        for _switch, config, members in group_visits(visits):
            hop.load(config)
            for v in members:
                hop.check(v, report)
                bar.update()
    bar.close()
    report.seconds = time.monotonic() - start
    return report


def replay_network(trace: Trace, cell: TraceCell, *, progress: bool = False,
                   **options: Any) -> Report:
    """Replay one traced cell in network mode."""
    from tqdm import tqdm

    from hil.network import Network
    from topologies.model import LinkDefaults
    from topologies.registry import make_params
    from topologies.specs import load_topology

    program = _program(cell)
    if any(s.startswith("b:") or t.startswith("b:") for n in cell.notifications
           for s, t, _, _ in n.links):
        raise ValueError(f"cell {cell.cell_id} ({cell.cell['strategy']}) hangs software "
                         "brokers off the switches; network mode has no broker processes "
                         "(use --mode hop)")
    topology = load_topology(cell.cell["topology"],
                             make_params(LinkDefaults, dict(cell.cell.get("links", {})), "links"))
    report = Report("network", cell.cell["topology"], cell.cell["strategy"], program.name)
    start = time.monotonic()
    with Network(topology, program, **options) as net:
        for note in tqdm(cell.notifications, unit="notification", disable=not progress,
                         leave=False, desc=f"replay network {cell.cell['strategy']}"):
            net.check_expected(note.run, note.publisher, [p.to_bytes() for p in note.packets],
                               trace.state(note), [(v.switch, v.emits) for v in note.visits],
                               note.passes, note.delivered, report)
    report.seconds = time.monotonic() - start
    return report


def replay(path: str | Path, mode: str = "hop", *, progress: bool = False,
           **options: Any) -> list[tuple[TraceCell, Report]]:
    """Replay every cell of the trace at ``path``; one report per cell.

    Raises
    ------
    ValueError
        Bad mode, a malformed trace (:class:`hil.trace.TraceError`), a cell
        without a P4 program.
    hil.validate.HilUnavailable
        BMv2 cannot run here.
    """
    from hil.validate import preflight

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    trace = read_trace(path)
    for cell in trace.cells:
        _program(cell)  # every cell replayable, before anything starts
    preflight()
    run = replay_hop if mode == "hop" else replay_network
    return [(cell, run(trace, cell, progress=progress, **options)) for cell in trace.cells]


def summary_json(results: Iterable[tuple[TraceCell, Report]]) -> dict[str, Any]:
    """One object over all cells: the ``hil validate --json`` keys, totals, and per cell."""
    results = list(results)
    checks = sum(r.switch_visits + r.delivery_checks for _, r in results)
    matched = sum(r.visits_matched + r.deliveries_matched for _, r in results)
    mismatches = [{"cell_id": c.cell_id, **m.to_json()} for c, r in results
                  for m in r.mismatches]
    return {
        "notifications": sum(r.notifications for _, r in results),
        "switch_visits": sum(r.switch_visits for _, r in results),
        "match_rate": matched / checks if checks else 1.0,
        "mismatches": mismatches,
        "cells": [{"cell_id": c.cell_id, **r.to_json()} for c, r in results],
    }
