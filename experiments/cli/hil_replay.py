"""``stackcast hil replay FILE``: replay a run trace on BMv2 (issue 7).

Registered under ``stackcast hil`` by :func:`experiments.cli.hil.add_hil_parser`.
Exit status as ``hil validate``: 0 when everything agrees, 1 when something
disagrees or BMv2 fails, 2 for bad input or when BMv2 cannot run here.
"""

from __future__ import annotations

import argparse
import json

EXIT_MISMATCH = 1


def cmd_replay(args: argparse.Namespace) -> int:
    from experiments.cli.hil_options import on_bmv2, quiet_s, show_progress
    from hil.replay import replay, summary_json

    quiet = quiet_s(args)
    results = on_bmv2(lambda: replay(args.file, args.mode, progress=show_progress(args),
                                     quiet_s=quiet, log_level=args.bmv2_log_level))
    if results is None:
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
    from experiments.cli.hil_options import add_run_options

    rep = hsub.add_parser(
        "replay", help="replay a trace written by `stackcast run SPEC --trace FILE` on BMv2 "
                       "(needs root) and compare with the model's recorded outcome")
    rep.add_argument("file", help="trace file (JSON Lines, hil/trace.py)")
    rep.add_argument("--mode", choices=["hop", "network"], default="hop",
                     help="hop: one BMv2 fed the recorded switch visits (default); "
                          "network: one BMv2 per switch, small topologies")
    add_run_options(rep, "quiescence window per check in ms (default 20 hop, 100 network)")
    rep.add_argument("--json", action="store_true",
                     help="one JSON object: notifications, switch_visits, match_rate, "
                          "mismatches, cells")
    rep.set_defaults(func=cmd_replay)
