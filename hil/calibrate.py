"""``stackcast hil calibrate``: a per-visit latency model of BMv2, validated on
strategies it was not fitted on (issues 7, 16).

For each strategy of the workload (:data:`WORKLOADS`, one program family or
more each), the switch visits of a one-cell run (the exact frames each
switch receives in the simulation, :func:`hil.hop.model_visits`) are

1. checked and profiled once on a trace-logging BMv2: frames byte for byte
   and passes against the model, and what BMv2 did, counted from its log
   (:func:`hil.calibrate_measure.profile_visit`);
2. timed on a second BMv2 of the strategy that logs nothing and runs under
   ``SCHED_FIFO``: ``rounds`` rounds, each sending every visit ``reps``
   times (visits of a configuration interleaved); all strategies' timing
   switches run side by side and every round visits every strategy, so a
   load that drifts over minutes (a shared machine) hits all strategies
   alike. A visit's latency is a low quantile of its sends (kernel
   timestamps, :class:`hil.calibrate_measure.VisitTimer`);
3. fitted (:mod:`hil.calibrate_fit`) and evaluated leaving one strategy,
   and one program family, out at a time.

``repeat`` re-times everything on fresh timing switches and fits again,
to show how stable the coefficients and errors are.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hil.calibrate_fit import TERMS, Fit, HeldOut, Sample, amounts, evaluate, fit, spread
from hil.calibrate_measure import Disagreement, VisitTimer, profile_visit, quantile, time_round

#: Default topology of the workloads.
TOPOLOGY = "jellyfish:switches=10,degree=3,seed=2"
UNIFORM = "uniform:percent=30"
CONTENT = "content:subs=40,publishers=3,subscribers=8,dims=2,bits=12,width=0.2,dist=zipf,churn=0"


@dataclass(frozen=True, slots=True)
class Workload:
    """Where a strategy's visits come from (a one-cell run)."""

    strategy: str
    topology: str = TOPOLOGY
    receivers: str = UNIFORM
    params: tuple[tuple[str, Any], ...] = ()


#: The default workload: every program family with a P4 program except
#: camus's flat build, spanning recirculation (label stacks), clones (virtual
#: trees, BIER), multicast (l2, switch-mcgroup, Elmo, ALM) and every table
#: kind (ternary: l2, switch-bitmask, ALM; LPM: prefix_filter; range:
#: range_filter, kundel, camus).
WORKLOADS: dict[str, Workload] = {w.strategy: w for w in (
    Workload("switch-port"), Workload("switch-bitmask"), Workload("switch-mcgroup"),
    Workload("mixed"), Workload("hops"), Workload("destinations"), Workload("tree"),
    Workload("vt-broadcast"), Workload("source-routed"), Workload("unicast"),
    Workload("multicast"), Workload("broadcast"), Workload("bier"),
    Workload("elmo", "fattree:k=4", "uniform:percent=40",
             (("leaf_prules", 1), ("leaf_srules", 0), ("spine_srules", 0))),
    Workload("pleroma-dz", receivers=CONTENT), Workload("range-boxes", receivers=CONTENT),
    Workload("kundel-id", receivers=CONTENT), Workload("camus-bdd", receivers=CONTENT),
    Workload("alm-mcgroup", receivers=CONTENT),
)}


@dataclass
class Prepared:
    """One strategy's visits, program and state of the run."""

    workload: Workload
    family: str
    program: Any
    shape: Any
    ports: int
    #: (configuration, [(key, visit)]) in the order they are installed
    groups: list[tuple[Any, list[tuple[Any, Any]]]]
    dropped: int = 0
    work: dict[Any, Any] = field(default_factory=dict)
    chain: dict[Any, int] = field(default_factory=dict)


@dataclass
class Repeat:
    """One timing pass over all strategies and its fit."""

    samples: list[Sample]
    fit: Fit
    held_out: dict[str, HeldOut]
    load_average: tuple[float, float]


@dataclass
class Calibration:
    """Everything one ``hil calibrate`` measured and fitted."""

    settings: dict[str, Any]
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    repeats: list[Repeat] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        from hil.calibrate_report import calibration_json

        return calibration_json(self)

    def format_text(self) -> str:
        from hil.calibrate_report import calibration_text

        return calibration_text(self)


def prepare(workload: Workload, notifications: int, seed: int) -> Prepared:
    """Run the strategy's cell on the model; its visits grouped by configuration."""
    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell
    from hil.bmv2_work import ProgramShape
    from hil.hop import group_visits, max_port, model_visits
    from hil.programs import program_for
    from hil.validate import check_group_ids, strategy_params

    cell = Cell(experiment="hil-calibrate", topology=workload.topology,
                strategy=workload.strategy, params=workload.params,
                receivers=workload.receivers, payload_bytes=50, seed=seed,
                notifications=notifications)
    topo, strat, _ = cell_setup(cell)
    items = list(cell_notifications(cell, topo, strat))
    visits = []
    for item in items:
        visits += model_visits(topo, strat, item)[1]
    program = program_for(strat.dataplane, workload.strategy, strategy_params(strat),
                          strat.model(), items[0].state)
    check_group_ids(workload.strategy, items[0].state)
    ports = max([max_port(topo)] + [max([v.in_port, *(p for p, _ in v.emits)]) for v in visits])
    out = Prepared(workload, strat.dataplane, program,
                   ProgramShape.from_json(program.name, program.bmv2_json), ports, [])
    index = 0
    for _switch, config, members in group_visits(visits):
        keyed = []
        for v in members:
            if v.emits:
                keyed.append(((workload.strategy, index), v))
                index += 1
            else:
                out.dropped += 1
        if keyed:
            out.groups.append((config, keyed))
    return out


def _profile(prep: Prepared, out: Calibration, quiet_s: float,
             tick: Callable[[int], None]) -> None:
    from hil.hop import HopSwitch

    name = prep.workload.strategy
    with HopSwitch(prep.program, prep.ports, log_level="trace", quiet_s=quiet_s) as hop:
        for config, members in prep.groups:
            hop.load(config)
            for key, v in members:
                work, why = profile_visit(hop, v, prep.shape, name)
                if why is not None:
                    out.disagreements.append(why)
                else:
                    prep.work[key] = work
                    prep.chain[key] = v.chain
                tick(1)


def _time(preps: Sequence[Prepared], out: Calibration, rounds: int, reps: int, q: float,
          realtime: int | None, quiet_s: float, tick: Callable[[int], None]) -> Repeat:
    from hil.capture import Capture
    from hil.hop import HopSwitch

    load_start = os.getloadavg()[0]
    latencies: dict[Any, list[float]] = {}
    failed: dict[Any, str] = {}
    with contextlib.ExitStack() as stack:
        timers = []
        for prep in preps:
            hop = stack.enter_context(HopSwitch(prep.program, prep.ports, quiet_s=quiet_s,
                                                realtime=realtime))
            tap: Capture[int] = stack.enter_context(
                Capture(hop.ns, {p: f"p{p}" for p in range(1, prep.ports + 1)}))
            timers.append((hop, VisitTimer(hop.capture, tap, hop.max_s)))
        for warm in (True, *([False] * rounds)):
            for prep, (hop, timer) in zip(preps, timers, strict=True):
                groups = [(c, [(k, v) for k, v in m if k in prep.work]) for c, m in prep.groups]
                time_round(timer, groups, hop.load, 1 if warm else reps,
                           {} if warm else latencies, failed, quiet_s, tick)
        late = {k: n for _, timer in timers for k, n in timer.late.items()}
    by_key = {k: (prep, v) for prep in preps for _, m in prep.groups for k, v in m}
    for key, why in sorted(failed.items()):
        prep, v = by_key[key]
        out.disagreements.append(Disagreement(prep.workload.strategy, v.notification, v.switch,
                                              "timing", why))
    for key, n in sorted(late.items()):
        if key not in failed:
            prep, v = by_key[key]
            out.disagreements.append(Disagreement(
                prep.workload.strategy, v.notification, v.switch, "timing",
                f"bmv2 sent {n} frames after the model's frames had all arrived"))
    samples = []
    for key, lat in latencies.items():
        if key in failed or key in late:
            continue
        prep, v = by_key[key]
        samples.append(Sample(prep.workload.strategy, prep.family, v.notification, v.switch,
                              amounts(prep.work[key], prep.shape, prep.chain[key]),
                              quantile(lat, q), prep.program.name, v.passes))
    model = fit(samples)
    return Repeat(samples, model, {by: evaluate(samples, by) for by in ("family", "strategy")},
                  (load_start, os.getloadavg()[0]))


def calibrate(strategies: Sequence[str] = tuple(WORKLOADS), notifications: int = 6,
              rounds: int = 6, reps: int = 10, q: float = 0.25, repeat: int = 1,
              seed: int = 1, realtime: int | None = 20, quiet_s: float = 0.02,
              profile_quiet_s: float = 0.1, progress: bool = False,
              workloads: dict[str, Workload] | None = None) -> Calibration:
    """Profile, time, fit and evaluate (see the module docstring).

    Raises
    ------
    ValueError
        Unknown strategy, too few strategies or families to hold one out,
        bad counts.
    HilUnavailable
        BMv2 cannot run here.
    """
    from tqdm import tqdm

    from hil.validate import preflight

    known = workloads or WORKLOADS
    unknown = [s for s in strategies if s not in known]
    if unknown:
        raise ValueError(f"no calibration workload for {', '.join(unknown)} (known: "
                         f"{', '.join(known)})")
    if len(set(strategies)) < 2:
        raise ValueError("hil calibrate needs at least two strategies (one is held out)")
    if rounds < 1 or reps < 1 or repeat < 1 or notifications < 1:
        raise ValueError(f"rounds, reps, repeat and notifications must be >= 1, got {rounds}, "
                         f"{reps}, {repeat}, {notifications}")
    if not 0 <= q <= 1:
        raise ValueError(f"the latency quantile must be in [0, 1], got {q}")
    preflight()
    preps = [prepare(known[s], notifications, seed) for s in dict.fromkeys(strategies)]
    if len({p.family for p in preps}) < 2:
        raise ValueError("hil calibrate needs strategies of at least two program families")
    out = Calibration(dict(notifications=notifications, rounds=rounds, reps=reps, quantile=q,
                           repeat=repeat, seed=seed, realtime=realtime,
                           cpus=os.cpu_count(), load_average_start=os.getloadavg()[0]))
    visits = sum(len(m) for p in preps for _, m in p.groups)
    bar = tqdm(total=visits * (1 + repeat * (1 + rounds * reps)), unit="send",
               disable=not progress, leave=False, desc="hil calibrate")
    for prep in preps:
        _profile(prep, out, profile_quiet_s, bar.update)
        out.strategies[prep.workload.strategy] = {
            "topology": prep.workload.topology, "receivers": prep.workload.receivers,
            "params": dict(prep.workload.params), "family": prep.family,
            "program": prep.program.name, "visits": sum(len(m) for _, m in prep.groups),
            "profiled": len(prep.work), "visits_without_frames": prep.dropped}
    for _ in range(repeat):
        out.repeats.append(_time(preps, out, rounds, reps, q, realtime, quiet_s, bar.update))
    bar.close()
    out.settings["load_average_end"] = os.getloadavg()[0]
    return out


def coefficient_spread(repeats: Sequence[Repeat]) -> dict[str, float]:
    """Per term: (max - min) / median of its coefficient over the repeats."""
    return {name: spread([r.fit.coefficients[name] for r in repeats]) for name, _ in TERMS}


def median_coefficients(repeats: Sequence[Repeat]) -> dict[str, float]:
    return {name: statistics.median(r.fit.coefficients[name] for r in repeats)
            for name, _ in TERMS}
