"""The ``stackcast hil`` subcommands (hardware in the loop, issue 7).

``stackcast hil validate`` replays a strategy's notifications on BMv2 (hop or
network mode) and compares them with the model; exit status 0 when every
check agrees, 1 when some disagree, 2 for bad input or when BMv2 cannot run
here. BMv2 and P4Runtime modules are imported inside the command only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TypeVar

EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2

T = TypeVar("T")


def add_run_options(parser: argparse.ArgumentParser, quiet_help: str) -> None:
    """Options every BMv2 command takes: quiescence window, BMv2 log level, progress."""
    parser.add_argument("--quiet-ms", type=float, default=None, help=quiet_help)
    parser.add_argument("--bmv2-log-level", default="off",
                        choices=["off", "error", "warn", "info", "debug", "trace"],
                        help="BMv2 log level (logs live in a temporary directory; default off)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def quiet_s(args: argparse.Namespace) -> float:
    """``--quiet-ms`` in seconds (default 20 ms in hop mode, 100 ms in network mode)."""
    from experiments.cli.errors import CliError

    ms = args.quiet_ms
    if ms is None:
        ms = 100.0 if getattr(args, "mode", "hop") == "network" else 20.0
    if ms <= 0:
        raise CliError("--quiet-ms must be > 0")
    return ms / 1e3


def show_progress(args: argparse.Namespace) -> bool:
    return not args.no_progress and sys.stderr.isatty()


def on_bmv2(run: Callable[[], T]) -> T | None:
    """Call ``run`` with Ctrl-C / SIGTERM turned into a clean-up.

    BMv2 unavailable here (not on PATH, not root) or bad input: a one-line
    :class:`~experiments.cli.errors.CliError` (exit 2). The target refusing or losing
    the run (a write BMv2 rejects, a crash): not a model verdict, but the run
    failed, so the message is printed and None returned (exit 1).
    """
    from experiments.cli.errors import CliError
    from hil.bmv2 import Bmv2Error
    from hil.netns import NetnsError, signals_as_interrupt
    from hil.p4rt import P4RuntimeError
    from hil.validate import HilUnavailable

    try:
        with signals_as_interrupt():
            return run()
    except (HilUnavailable, ValueError) as exc:
        raise CliError(str(exc)) from None
    except (Bmv2Error, NetnsError, P4RuntimeError) as exc:
        print(f"stackcast: BMv2 failed: {exc}", file=sys.stderr)
        return None


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
