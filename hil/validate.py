"""``stackcast hil validate``: the model against real BMv2, notification by
notification (issue 7).

The workload is a one-cell experiment (:class:`experiments.cells.spec.Cell`) run
through :func:`experiments.cells.pipeline.cell_notifications`, the same code
path as ``stackcast run``, so the notifications, receivers and installed
states are exactly the simulator's. :func:`preflight` gives the reasons a
run cannot start (no BMv2 on PATH, not root, no P4 program for the
strategy's family) before anything is created.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
from collections.abc import Mapping
from typing import Any

from hil.bmv2 import BINARY, find_binary
from hil.compare import Report
from hil.netns import remove_stale
from hil.programs import PROGRAMS, Program, program_for

log = logging.getLogger(__name__)

MODES = ("hop", "network")

#: The largest multicast group id BMv2's packet-replication engine holds.
BMV2_MAX_GROUP_ID = 4095


class HilUnavailable(RuntimeError):
    """This machine cannot run BMv2 validation (binary missing, not root)."""


def preflight() -> None:
    """Raise :class:`HilUnavailable` when BMv2 cannot run here."""
    if find_binary() is None:
        raise HilUnavailable(f"{BINARY} is not on PATH (build BMv2 with P4Runtime support, "
                             "see p4/README.md, and add its bin/ to PATH)")
    if os.geteuid() != 0:
        raise HilUnavailable("hil validate needs root (it creates network namespaces, veth "
                             "pairs and raw sockets)")
    for name in remove_stale():  # left by runs that were killed with SIGKILL
        log.warning("removed stale network namespace %s", name)


def strategy_params(strategy: Any) -> dict[str, Any]:
    """A strategy's validated parameters as a plain dict."""
    p = strategy.params
    return dataclasses.asdict(p) if dataclasses.is_dataclass(p) and not isinstance(p, type) else {}


def check_group_ids(strategy: str, state: Any) -> None:
    """Refuse, before starting BMv2, multicast group ids BMv2 cannot hold.

    BMv2's replication engine holds ids 0..:data:`BMV2_MAX_GROUP_ID` only
    (``McSimplePre::DEFAULT_MGID_TABLE_SIZE``); the model has no such limit
    (docs/FIDELITY.md, Findings).
    """
    for sw, config in state.switches.items():
        too_big = [g for g in config.multicast_groups if g > BMV2_MAX_GROUP_ID]
        if too_big:
            raise ValueError(
                f"strategy {strategy!r} installs multicast group {max(too_big)} on {sw}; BMv2 "
                f"holds group ids 0-{BMV2_MAX_GROUP_ID} only (for switch-mcgroup use "
                "--param groups=used --param group_ids=sequential)")


def validate(topology: str, strategy: str, notifications: int, *, mode: str = "hop",
             seed: int = 1, receivers: str = "uniform:percent=30", payload_bytes: int = 50,
             params: Mapping[str, Any] | None = None, progress: bool = False,
             **options: Any) -> Report:
    """Run ``notifications`` notifications on the model and on BMv2 and compare.

    ``options`` go to :class:`hil.hop.HopSwitch` or :class:`hil.network.Network`
    (``quiet_s``, ``retry_quiet_s``, ``startup_timeout_s``, ``log_level``).

    Raises
    ------
    ValueError
        Bad mode or counts, or no P4 program for the strategy's family.
    HilUnavailable
        BMv2 cannot run here.
    """
    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if notifications < 1:
        raise ValueError(f"notifications must be >= 1, got {notifications}")
    if payload_bytes < 8:
        raise ValueError(f"payload_bytes must be >= 8 (the notification id tag), got "
                         f"{payload_bytes}")
    cell = Cell(experiment="hil-validate", topology=topology, strategy=strategy,
                params=tuple(sorted((params or {}).items())), receivers=receivers,
                payload_bytes=payload_bytes, seed=seed, notifications=notifications)
    topo, strat, _ = cell_setup(cell)
    if strat.dataplane not in PROGRAMS:
        program_for(strat.dataplane, strategy, strategy_params(strat))  # raises, naming them
    preflight()
    if mode == "network":
        from sim.engines.static import BrokerHost

        if isinstance(strat, BrokerHost):
            raise ValueError(f"strategy {strategy!r} hangs software brokers off the switches; "
                             "network mode has no broker processes (use --mode hop)")
    items = cell_notifications(cell, topo, strat)
    first = next(items)  # installs once: builds that depend on the installed model need it
    program = program_for(strat.dataplane, strategy, strategy_params(strat), strat.model(),
                          first.state)  # camus: its up-port count is compiled in
    check_group_ids(strategy, first.state)
    report = Report(mode, topology, strategy, program.name)
    items = itertools.chain([first], items)
    return run(mode, topo, strat, program, items, report, notifications, progress, options)


def run(mode: str, topo: Any, strat: Any, program: Program, items: Any, report: Report,
        total: int, progress: bool, options: Mapping[str, Any]) -> Report:
    if mode == "hop":
        from hil.hop import run_hop

        return run_hop(topo, strat, program, items, report, progress=progress, **options)
    from hil.network import run_network

    return run_network(topo, strat, program, items, report, total=total, progress=progress,
                       **options)
