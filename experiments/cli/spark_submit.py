"""Entry point for ``spark-submit``: run an experiment spec on the submitting cluster.

Usage (the master and resources come from ``spark-submit``)::

    spark-submit --master spark://host:7077 \\
        "$(python -c 'import experiments.cli.spark_submit as m; print(m.__file__)')" \\
        SPEC.toml --out /shared/results/NAME [--resume] [--report] [--quiet]

The driver needs stackcast installed; the executors need only its third-party
dependencies, because :func:`experiments.runners.spark.run_spark` ships the
project's packages to them. ``--out`` must be visible at the same path to the
driver and every executor. See docs/SPARK.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from topologies.registry import SpecError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="spark_submit_main.py",
        description="Run a stackcast experiment spec on the cluster of spark-submit.")
    p.add_argument("spec", help="spec file, or a shipped spec name (quickstart)")
    p.add_argument("--out", help="results directory, shared by driver and executors "
                                 "(default results/<experiment>)")
    p.add_argument("--resume", action="store_true", help="skip cells already finished")
    p.add_argument("--report", action="store_true",
                   help="aggregate with Spark and write the report afterwards")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    from experiments.cells.spec import load_spec
    from experiments.cli.errors import CliError
    from experiments.cli.main import resolve_spec

    try:
        spec = load_spec(resolve_spec(args.spec))  # validated before Spark starts
        out = Path(args.out or Path("results") / spec.name)
        from experiments.runners.spark import aggregate_spark, run_spark

        counts = run_spark(spec, out, resume=args.resume, master=None,
                           progress=not args.quiet)
        print(f"{spec.name}: {counts['ran']} cells run, {counts['skipped']} skipped, "
              f"results in {out}")
        if args.report:
            from experiments.reports.report import write_report

            path = write_report(aggregate_spark(out, master=None), out / "report")
            print(f"report: {path}")
    except (CliError, SpecError, FileNotFoundError, ValueError) as exc:
        print(f"stackcast: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
