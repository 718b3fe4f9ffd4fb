"""The ``stackcast hil`` subcommands (hardware in the loop, issue 7).

``stackcast hil validate`` replays a strategy's notifications on BMv2 (hop or
network mode) and compares them with the model; exit status 0 when every
check agrees, 1 when some disagree, 2 for bad input or when BMv2 cannot run
here. BMv2 and P4Runtime modules are imported inside the command only.
"""

from __future__ import annotations

import argparse
import json

from experiments.cli.hil_options import add_run_options, on_bmv2, quiet_s, show_progress

EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2


def cmd_validate(args: argparse.Namespace) -> int:
    from experiments.cli.errors import CliError, parse_params
    from hil.validate import validate

    if args.notifications < 1:
        raise CliError("--notifications must be >= 1")
    options = {"quiet_s": quiet_s(args), "log_level": args.bmv2_log_level}
    report = on_bmv2(lambda: validate(
        args.topology, args.strategy, args.notifications, mode=args.mode, seed=args.seed,
        receivers=args.receivers, payload_bytes=args.payload_bytes,
        params=parse_params(args.param), progress=show_progress(args), **options))
    if report is None:
        return EXIT_MISMATCH
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.format_text())
    return 0 if report.match_rate == 1.0 else EXIT_MISMATCH


def add_hil_parser(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """Register ``stackcast hil``; returns its sub-parsers so others can add actions."""
    hil = sub.add_parser("hil", help="hardware in the loop: check the model against BMv2")
    hsub = hil.add_subparsers(dest="hil_command", required=True, metavar="ACTION")
    val = hsub.add_parser(
        "validate", help="replay notifications on BMv2 (simple_switch_grpc, needs root) and "
                         "compare deliveries, emitted frames and passes with the model")
    val.add_argument("--topology", required=True, help="topology spec, e.g. zoo:Dfn")
    val.add_argument("--strategy", required=True,
                     help="strategy name (stackcast list strategies)")
    val.add_argument("--notifications", type=int, required=True,
                     help="random notifications to replay")
    val.add_argument("--mode", choices=["hop", "network"], default="hop",
                     help="hop: one BMv2 reconfigured per switch, any size (default); "
                          "network: one BMv2 per switch, small topologies")
    val.add_argument("--seed", type=int, default=1, help="workload seed (default 1)")
    val.add_argument("--receivers", default="uniform:percent=30",
                     help="receiver model spec (default uniform:percent=30)")
    val.add_argument("--payload-bytes", type=int, default=50, help="event size (default 50)")
    val.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                     help="strategy parameter (repeatable)")
    add_run_options(val, "quiescence window per check in ms (default 20 hop, 100 network); "
                         "disagreeing checks are retried once with a long window")
    val.add_argument("--json", action="store_true",
                     help="one JSON object: notifications, switch_visits, match_rate, "
                          "mismatches, ...")
    val.set_defaults(func=cmd_validate)
    from experiments.cli.hil_replay import add_replay_parser

    add_replay_parser(hsub)
    from experiments.cli.hil_calibrate import add_calibrate_parser

    add_calibrate_parser(hsub)
    return hsub
