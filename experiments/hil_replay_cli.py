"""``stackcast hil replay FILE``: replay a run trace on BMv2 (issue 7).

Registered under ``stackcast hil`` by :func:`experiments.hil_cli.add_hil_parser`.
Exit status as ``hil validate``: 0 when everything agrees, 1 when something
disagrees or BMv2 fails, 2 for bad input or when BMv2 cannot run here.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_MISMATCH = 1


def cmd_replay(args: argparse.Namespace) -> int:
    from experiments.cli import CliError
    from hil.bmv2 import Bmv2Error
    from hil.netns import NetnsError, signals_as_interrupt
    from hil.replay import replay, summary_json
    from hil.validate import HilUnavailable

    quiet_ms = args.quiet_ms if args.quiet_ms is not None else (
        20.0 if args.mode == "hop" else 100.0)
    if quiet_ms <= 0:
        raise CliError("--quiet-ms must be > 0")
    try:
        with signals_as_interrupt():
            results = replay(args.file, args.mode,
                             progress=not args.no_progress and sys.stderr.isatty(),
                             quiet_s=quiet_ms / 1e3, log_level=args.bmv2_log_level)
    except HilUnavailable as exc:
        raise CliError(str(exc)) from None
    except (Bmv2Error, NetnsError) as exc:
        print(f"stackcast: BMv2 failed: {exc}", file=sys.stderr)
        return EXIT_MISMATCH
    summary = summary_json(results)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for cell, report in results:
            print(f"cell {cell.cell_id}: " + report.format_text())
        print(f"match rate {summary['match_rate']:.4f} over {len(results)} cell(s)")
    return 0 if summary["match_rate"] == 1.0 else EXIT_MISMATCH


def add_replay_parser(hsub: argparse._SubParsersAction) -> None:
    rep = hsub.add_parser(
        "replay", help="replay a trace written by `stackcast run SPEC --trace FILE` on BMv2 "
                       "(needs root) and compare with the model's recorded outcome")
    rep.add_argument("file", help="trace file (JSON Lines, hil/trace.py)")
    rep.add_argument("--mode", choices=["hop", "network"], default="hop",
                     help="hop: one BMv2 fed the recorded switch visits (default); "
                          "network: one BMv2 per switch, small topologies")
    rep.add_argument("--quiet-ms", type=float, default=None,
                     help="quiescence window per check in ms (default 20 hop, 100 network)")
    rep.add_argument("--bmv2-log-level", default="off",
                     choices=["off", "error", "warn", "info", "debug", "trace"],
                     help="BMv2 log level (default off)")
    rep.add_argument("--no-progress", action="store_true", help="no progress bar")
    rep.add_argument("--json", action="store_true",
                     help="one JSON object: notifications, switch_visits, match_rate, "
                          "mismatches, cells")
    rep.set_defaults(func=cmd_replay)
