"""``stackcast hil calibrate``: a per-visit latency model of BMv2, fitted on some
strategies and tested on others (issues 7, 16; :mod:`hil.calibrate`).

Registered under ``stackcast hil`` by :func:`experiments.cli.hil.add_hil_parser`.
Exit status: 0 after a fit with every visit agreeing with the model, 1 when
visits disagreed (they are listed and left out of the fit) or BMv2 failed,
2 for bad input or when BMv2 cannot run here.
"""

from __future__ import annotations

import argparse
import json


def cmd_calibrate(args: argparse.Namespace) -> int:
    from experiments.cli.errors import CliError
    from experiments.cli.hil_options import on_bmv2, quiet_s, show_progress
    from hil.calibrate import calibrate

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not strategies:
        raise CliError("--strategies needs at least one strategy name")
    if args.realtime < 0 or args.realtime > 99:
        raise CliError("--realtime must be 0 (off) or a priority 1-99")
    quiet = quiet_s(args)
    result = on_bmv2(lambda: calibrate(
        strategies, notifications=args.notifications, rounds=args.rounds, reps=args.reps,
        q=args.quantile, repeat=args.repeat, seed=args.seed,
        realtime=args.realtime or None, quiet_s=quiet, progress=show_progress(args)))
    if result is None:
        return 1
    print(json.dumps(result.to_json(), indent=2) if args.json else result.format_text())
    return 1 if result.disagreements else 0


def add_calibrate_parser(hsub: argparse._SubParsersAction) -> None:
    from hil.calibrate import WORKLOADS

    names = ",".join(WORKLOADS)
    cal = hsub.add_parser(
        "calibrate",
        help="time every switch visit of a workload on BMv2, fit a per-visit latency model "
             "(passes, copies, PHV, table kinds, bytes) and report its error on strategies "
             "and program families it was not fitted on (needs root)",
        description="Each strategy's visits are checked byte for byte and profiled once on "
                    "a trace-logging BMv2, then timed on a second BMv2 (kernel timestamps, "
                    "SCHED_FIFO) in rounds that visit every strategy, so load drift hits "
                    "all alike. The fit is evaluated leaving one strategy, and one program "
                    "family, out at a time. See docs/FIDELITY.md, Timing.")
    cal.add_argument("--strategies", default=names,
                     help=f"comma-separated strategies (default: all of {names}; each has "
                          "its topology and receivers, hil/calibrate.py WORKLOADS)")
    cal.add_argument("--notifications", type=int, default=6,
                     help="notifications per strategy (default 6)")
    cal.add_argument("--rounds", type=int, default=6,
                     help="timing rounds over all strategies (default 6)")
    cal.add_argument("--reps", type=int, default=10,
                     help="sends of every visit per round (default 10)")
    cal.add_argument("--quantile", type=float, default=0.25,
                     help="a visit's latency is this quantile of its sends (default 0.25)")
    cal.add_argument("--repeat", type=int, default=1,
                     help="time and fit this many times on fresh switches, reporting the "
                          "spread of every figure (default 1)")
    cal.add_argument("--realtime", type=int, default=20,
                     help="SCHED_FIFO priority of the timed BMv2 processes, 0 = normal "
                          "scheduling (default 20)")
    cal.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    cal.add_argument("--quiet-ms", type=float, default=None,
                     help="quiescence window after a group of timed sends, in which a late "
                          "frame is charged to the last visit, ms (default 20)")
    cal.add_argument("--no-progress", action="store_true", help="no progress bar")
    cal.add_argument("--json", action="store_true", help="print one JSON object")
    cal.set_defaults(func=cmd_calibrate)
