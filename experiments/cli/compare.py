"""``stackcast compare``: do two results directories hold the same rows?

The check behind "rows identical" for a speed-up or refactor: run a spec (or
``--fraction`` of it) on two revisions into two directories, then::

    stackcast compare results/before results/after

Exit status 0 when every cell has the same rows, 1 when something differs
(each differing cell's first difference is printed), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from experiments.cli.errors import CliError

#: Exit status when the two directories' rows differ.
EXIT_DIFFERENT = 1


def _results_dir(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise CliError(f"results directory {text!r} does not exist"
                       if not path.exists() else f"{text!r} is a file: give a results "
                       "directory (the --out of stackcast run)")
    return path


def cmd_compare(args: argparse.Namespace) -> int:
    from experiments.cells.schema import TIMED_ROWS
    from experiments.storage.compare import WALL_CLOCK, compare_results

    left, right = _results_dir(args.left), _results_dir(args.right)
    ignore = WALL_CLOCK + tuple(c.strip() for c in (args.ignore or "").split(",") if c.strip())
    unknown = [c for c in ignore if c not in TIMED_ROWS.names]
    if unknown:
        raise CliError(f"--ignore: no column {unknown[0]!r} in the result rows")
    got = compare_results(left, right, ignore=ignore)
    if args.json:
        print(json.dumps({**asdict(got), "identical": got.identical}, indent=2, default=str))
        return 0 if got.identical else EXIT_DIFFERENT
    if got.identical:
        print(f"identical: {got.cells:,} cells, {got.rows:,} rows "
              f"(not compared: {', '.join(got.ignored)})")
        return 0
    for where, cells in ((args.left, got.only_left), (args.right, got.only_right)):
        if cells:
            print(f"{len(cells):,} cells only in {where}, e.g. {cells[0]}")
    for name, cols in (("left", got.columns_only_left), ("right", got.columns_only_right)):
        if cols:
            print(f"columns only in {name}: {', '.join(cols)}")
    if got.cells_differing:
        print(f"{got.cells_differing:,} of {got.cells:,} shared cells differ:")
        for d in got.differences:
            print(f"  {d.describe()}")
        if got.cells_differing > len(got.differences):
            print(f"  ... and {got.cells_differing - len(got.differences):,} more cells")
    return EXIT_DIFFERENT


def add_compare_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cmp = sub.add_parser(
        "compare", help="do two results directories hold the same rows? (exit 0 yes, 1 no)",
        description="Match the cells of two results directories by cell_id and their rows by "
                    "order, and report cells present on one side only and the first differing "
                    "column of each differing cell. Host timings (controller_wall_ms) and the "
                    "files' provenance (commit, version) are not compared.")
    cmp.add_argument("left", help="results directory (the --out of stackcast run)")
    cmp.add_argument("right", help="results directory to compare it with")
    cmp.add_argument("--ignore", metavar="COLUMNS",
                     help="comma-separated further columns not to compare")
    cmp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp.set_defaults(func=cmd_compare)
