"""``stackcast hil calibrate``: BMv2 latency against passes and copies (issue 7).

For each strategy, the switch visits of a one-cell workload (the exact frames
each switch receives in the simulation, :func:`hil.hop.model_visits`) are
replayed on one ``simple_switch_grpc`` in hop mode (:class:`hil.hop.HopSwitch`).
Each visit is sent ``reps`` times; its latency is the median time from the
send to the last copy read back, and the frames must equal the model's (a
visit that disagrees is counted and left out). The per-visit latencies are
fitted to the timed engine's switch model (:mod:`hil.calibrate_fit`):

    latency = switch_latency_s + passes x pass_s + (copies - 1) x pre_delay_s

on the visits of three notifications in four; the fourth notification of
each four is held out, and the report gives the fitted model's error on its
visits and on its summed switch time per notification.

The latencies include the host side (raw-socket send, veth, select wake-up),
as a host on a real link would see; BMv2 itself is a software switch, so
the fitted ``pass_s`` describes BMv2 on this machine, not a hardware target.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hil.calibrate_fit import Fit, Sample, fit_timing

#: Default workload: strategies whose visits span many passes (switch-port
#: recirculates once per label) and many copies (switch-mcgroup replicates).
STRATEGIES = ("switch-port", "switch-mcgroup", "mixed")
TOPOLOGY = "jellyfish:switches=10,degree=3,seed=2"


@dataclass
class Calibration:
    """Samples measured per strategy, visits left out, and the fit."""

    topology: str
    reps: int
    samples: list[Sample] = field(default_factory=list)
    per_strategy: dict[str, int] = field(default_factory=dict)
    disagreed: int = 0
    fit: Fit | None = None
    notification_rel_error: float = 0.0

    def to_json(self) -> dict[str, Any]:
        f = self.fit
        return {
            "topology": self.topology,
            "reps": self.reps,
            "visits": len(self.samples),
            "visits_per_strategy": self.per_strategy,
            "visits_disagreeing_left_out": self.disagreed,
            "timed": f.timed_params() if f else None,
            "held_out": None if f is None else {
                "visits": f.held_out,
                "mean_abs_error_us": f.mean_abs_error_s * 1e6,
                "max_abs_error_us": f.max_abs_error_s * 1e6,
                "median_rel_error": f.median_rel_error,
                "notification_switch_time_median_rel_error": self.notification_rel_error,
            },
        }

    def format_text(self) -> str:
        j = self.to_json()
        lines = [f"hil calibrate on {self.topology}: {j['visits']} visits "
                 f"({', '.join(f'{k} {v}' for k, v in self.per_strategy.items())}), "
                 f"median of {self.reps} sends each; {self.disagreed} disagreeing visits "
                 "left out"]
        if self.fit:
            f = self.fit
            lines += [
                f"fit: switch_latency_s = {f.switch_latency_s:.3e}, pass_s = {f.pass_s:.3e}, "
                f"pre_delay_s = {f.pre_delay_s:.3e}  (timed-engine [timed] keys)",
                f"held-out notifications ({f.held_out} visits): mean |error| "
                f"{f.mean_abs_error_s * 1e6:.1f} us, max {f.max_abs_error_s * 1e6:.1f} us, "
                f"median relative {f.median_rel_error:.1%}; summed switch time per "
                f"notification: median relative {self.notification_rel_error:.1%}",
            ]
        return "\n".join(lines)


def time_visit(hop: Any, in_port: int, frame: bytes, expected: int, reps: int,
               quiet_s: float, max_s: float) -> float | None:
    """Median send-to-last-copy latency over ``reps`` sends (None: frames disagree)."""
    lat = []
    for _ in range(reps):
        hop.capture.drain()
        t0 = time.perf_counter()
        hop.capture.send(in_port, frame)
        got = [f for f in hop.capture.collect(quiet_s, max_s) if not f.outgoing]
        if len(got) != expected:
            return None
        lat.append(max(f.read_s for f in got) - t0)
    return statistics.median(lat)


def calibrate(topology: str = TOPOLOGY, strategies: Sequence[str] = STRATEGIES,
              notifications: int = 40, reps: int = 5, seed: int = 1,
              quiet_s: float = 0.02, progress: bool = False) -> Calibration:
    """Measure, fit and evaluate (see the module docstring)."""
    from tqdm import tqdm

    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell
    from hil.hop import HopSwitch, group_visits, max_port, model_visits
    from hil.programs import program_for
    from hil.validate import preflight, strategy_params

    if reps < 1 or notifications < 4:
        raise ValueError(f"need reps >= 1 and notifications >= 4, got {reps}, {notifications}")
    preflight()
    out = Calibration(topology, reps)
    groups_of: dict[tuple[int, int], list[Sample]] = {}
    for index, name in enumerate(strategies):
        cell = Cell(experiment="hil-calibrate", topology=topology, strategy=name, params=(),
                    receivers="uniform:percent=30", payload_bytes=50, seed=seed,
                    notifications=notifications)
        topo, strat, _ = cell_setup(cell)
        visits = []
        for item in cell_notifications(cell, topo, strat):
            visits += model_visits(topo, strat, item)[1]
        program = program_for(strat.dataplane, name, strategy_params(strat), strat.model(),
                              None)
        ports = max([max_port(topo)] + [v.in_port for v in visits])
        bar = tqdm(total=len(visits), unit="visit", disable=not progress, leave=False,
                   desc=f"calibrate {name}")
        with HopSwitch(program, ports, quiet_s=quiet_s) as hop:
            for _sw, config, members in group_visits(visits):
                hop.load(config)
                for v in members:
                    bar.update()
                    if not v.emits:
                        continue
                    lat = time_visit(hop, v.in_port, v.frame, len(v.emits), reps, quiet_s,
                                     hop.max_s)
                    if lat is None:
                        out.disagreed += 1
                        continue
                    sample = Sample(v.passes, len(v.emits), lat)
                    out.samples.append(sample)
                    groups_of.setdefault((index, v.notification), []).append(sample)
                    out.per_strategy[name] = out.per_strategy.get(name, 0) + 1
        bar.close()
    out.fit, out.notification_rel_error = fit_held_out(groups_of)
    return out


def fit_held_out(groups: dict[tuple[int, int], list[Sample]]) -> tuple[Fit, float]:
    """Fit on three notifications in four, evaluate on the fourth.

    Returns the fit and the median relative error of the summed switch time
    of each held-out notification.
    """
    keys = sorted(groups)
    held_keys = set(keys[3::4])
    train = [s for k in keys if k not in held_keys for s in groups[k]]
    held = [s for k in keys if k in held_keys for s in groups[k]]
    fit = fit_timing(train, held)
    errs = []
    for k in held_keys:
        measured = sum(s.latency_s for s in groups[k])
        predicted = sum(fit.predict(s.passes, s.copies) for s in groups[k])
        errs.append(abs(predicted - measured) / measured)
    return fit, statistics.median(errs) if errs else 0.0
