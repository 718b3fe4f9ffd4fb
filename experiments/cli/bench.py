"""``stackcast bench``: the speed suite, its single items and the scaling table."""

from __future__ import annotations

import argparse
import json

from experiments.cli.errors import CliError


def _bench_scaling(args: argparse.Namespace) -> int:
    """``bench scaling``: peak memory per (topology, strategy), one process each."""
    from pathlib import Path

    from tqdm import tqdm

    from experiments.bench.scaling import (
        FATTREE_STRATEGIES,
        TIMEOUT_S,
        all_strategies,
        format_scaling,
        run_scaling,
    )

    try:
        sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"--sizes: comma-separated switch counts, got {args.sizes!r}") from None
    names = [x.strip() for x in args.strategies.split(",") if x.strip()] \
        if args.strategies else list(all_strategies())
    bad = [n for n in names if n not in all_strategies()]
    if bad:
        raise CliError(f"--strategies: unknown strategy {bad[0]!r}")
    notifications = 5 if args.notifications is None else args.notifications
    if notifications < 1:
        raise CliError(f"--notifications must be >= 1, got {notifications}")
    timeout_s = TIMEOUT_S if args.timeout_s is None else args.timeout_s
    if not timeout_s > 0:
        raise CliError(f"--timeout-s must be > 0, got {timeout_s}")
    if args.cpu_limit_s is not None and not args.cpu_limit_s >= 1:
        raise CliError(f"--cpu-limit-s must be >= 1, got {args.cpu_limit_s}")
    runs = len(sizes) * len(names) + (
        0 if args.no_fattree else sum(s in names for s in FATTREE_STRATEGIES))
    with tqdm(total=runs, desc="bench scaling", unit="run", disable=args.quiet,
              dynamic_ncols=True) as bar:
        result = run_scaling(sizes, names, not args.no_fattree, notifications=notifications,
                             timeout_s=timeout_s, tick=lambda rec: bar.update(1),
                             out=Path(args.out) if args.out else None,
                             cpu_limit_s=args.cpu_limit_s)
    print(json.dumps(result, indent=2) if args.json else format_scaling(result))
    return 0


def _bench_specs(args: argparse.Namespace) -> int:
    """``bench specs``: every shipped spec end to end on ``--master``, one after the other."""
    from tqdm import tqdm

    from experiments.bench.specs import format_specs, run_specs, shipped_specs

    names = [x.strip() for x in args.specs.split(",") if x.strip()] if args.specs \
        else list(shipped_specs())
    bad = [n for n in names if n not in shipped_specs()]
    if bad:
        raise CliError(f"--specs: unknown spec {bad[0]!r} (stackcast list experiments)")
    if args.resume and not args.out:
        raise CliError("--resume needs --out (the JSON file of an earlier run)")
    if args.timeout_s is not None and not args.timeout_s > 0:
        raise CliError(f"--timeout-s must be > 0, got {args.timeout_s}")
    with tqdm(total=len(names), desc="bench specs", unit="spec", disable=args.quiet,
              dynamic_ncols=True) as bar:
        def tick(rec: dict[str, object]) -> None:
            bar.set_postfix_str(f"{rec['spec']}: {rec['status']}")
            bar.update(1)

        result = run_specs(names, master=args.master, out=args.out, resume=args.resume,
                           timeout_s=args.timeout_s, tick=tick)
    print(json.dumps(result, indent=2) if args.json else format_specs(result))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.target in ("suite", "static", "encoder", "cells", "ch6"):
        from experiments.bench.suite import DEFAULT_ITEMS, ITEMS, format_suite, run_suite

        if args.target == "suite":
            items = [i.strip() for i in args.items.split(",") if i.strip()] if args.items \
                else list(DEFAULT_ITEMS)
            bad = [i for i in items if i not in ITEMS]
            if bad:
                raise CliError(f"--items: unknown item {bad[0]!r} (known: {', '.join(ITEMS)})")
        else:
            items = [args.target]
        if not 0 < args.fraction <= 1:
            raise CliError(f"--fraction must be in (0, 1], got {args.fraction}")
        if args.reps < 1:
            raise CliError(f"--reps must be >= 1, got {args.reps}")
        static_notifications = 400 if args.notifications is None else args.notifications
        if static_notifications < 1:
            raise CliError(f"--notifications must be >= 1, got {static_notifications}")
        strategies = None
        if args.strategies:  # the bound item's strategies
            from strategies.base import STRATEGIES, load_builtin_strategies

            load_builtin_strategies()
            strategies = [x.strip() for x in args.strategies.split(",") if x.strip()]
            bad = [n for n in strategies if n not in STRATEGIES.names()]
            if bad:
                raise CliError(f"--strategies: unknown strategy {bad[0]!r}")
        suite = run_suite(items, reps=args.reps, fraction=args.fraction,
                          progress=not args.quiet, spark_cells=args.cells,
                          static_notifications=static_notifications, strategies=strategies)
        print(json.dumps(suite, indent=2) if args.json else format_suite(suite))
        return 0
    if args.target == "scaling":
        return _bench_scaling(args)
    if args.target == "specs":
        return _bench_specs(args)
    if args.target == "timed":
        from tqdm import tqdm

        from experiments.bench.timed import (
            DURATION_S,
            TOPOLOGY,
            format_bench_timed,
            run_bench_timed,
        )

        duration = DURATION_S if args.duration_s is None else args.duration_s
        if not duration > 0:
            raise CliError(f"--duration-s must be > 0, got {duration}")
        with tqdm(total=args.reps + 1, desc="bench timed (probe, then repetitions)",
                  unit="run", disable=args.quiet, dynamic_ncols=True) as bar:
            timed = run_bench_timed(reps=args.reps, tick=lambda: bar.update(1),
                                    topology=args.topology or TOPOLOGY,
                                    strategy=args.strategy, publishers=args.publishers,
                                    rate_hz=args.rate_hz, duration_s=duration)
        print(json.dumps(timed, indent=2) if args.json else format_bench_timed(timed))
        return 0
    from experiments.bench.spark import format_bench, run_bench_spark

    result = run_bench_spark(cells=args.cells, reps=args.reps)
    print(json.dumps(result, indent=2) if args.json else format_bench(result))
    return 0
