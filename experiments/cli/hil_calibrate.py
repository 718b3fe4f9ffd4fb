"""``stackcast hil calibrate``: fit the timed engine's switch timing to BMv2 (issue 7).

Registered under ``stackcast hil`` by :func:`experiments.cli.hil.add_hil_parser`.
Exit status: 0 after a fit, 1 when BMv2 fails, 2 for bad input or when BMv2
cannot run here.
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
    quiet = quiet_s(args)
    result = on_bmv2(lambda: calibrate(args.topology, strategies,
                                       notifications=args.notifications, reps=args.reps,
                                       seed=args.seed, quiet_s=quiet,
                                       progress=show_progress(args)))
    if result is None:
        return 1
    print(json.dumps(result.to_json(), indent=2) if args.json else result.format_text())
    return 0


def add_calibrate_parser(hsub: argparse._SubParsersAction) -> None:
    from experiments.cli.hil_options import add_run_options
    from hil.calibrate import STRATEGIES, TOPOLOGY

    cal = hsub.add_parser(
        "calibrate", help="measure BMv2 latency against passes and egress copies, fit the "
                          "timed engine's switch_latency_s / pass_s / pre_delay_s and report "
                          "the error on held-out notifications (needs root)")
    cal.add_argument("--topology", default=TOPOLOGY, help=f"topology spec (default {TOPOLOGY})")
    cal.add_argument("--strategies", default=",".join(STRATEGIES),
                     help="comma-separated strategies whose switch visits are timed "
                          f"(default {','.join(STRATEGIES)})")
    cal.add_argument("--notifications", type=int, default=40,
                     help="notifications per strategy (default 40; one in four is held out)")
    cal.add_argument("--reps", type=int, default=5,
                     help="sends per visit; the median latency counts (default 5)")
    cal.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    add_run_options(cal, "quiescence window after the last copy, ms (default 20)")
    cal.add_argument("--json", action="store_true", help="print one JSON object")
    cal.set_defaults(func=cmd_calibrate)
