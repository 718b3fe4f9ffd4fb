"""``stackcast recommend``: the virtual-tree strategy with the smallest expected header."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from experiments.cli.errors import CliError


def cmd_recommend(args: argparse.Namespace) -> int:
    """``recommend``: simulate the VT strategies (default), or ask the learned k-NN."""
    if args.build_training or args.evaluate:
        return _recommend_training(args)
    missing = [f"--{n}" for n in ("topology", "scenario", "churn")
               if getattr(args, n) is None]
    if missing:
        raise CliError(f"recommend needs {', '.join(missing)} (or --evaluate, "
                       "--build-training OUT)")
    method = args.method or ("learned" if args.results else "simulate")
    if method == "simulate":
        if args.results:
            raise CliError("--results trains --method learned; it has no meaning for "
                           "--method simulate")
        from experiments.reports.recommend_simulate import format_ranking, simulate

        ranking = simulate(args.topology, args.scenario, args.churn, args.subscribers,
                           seeds=args.seeds, notifications=args.notifications,
                           first_seed=args.seed, progress=not args.json)
        print(json.dumps(ranking.to_json(), indent=2) if args.json
              else format_ranking(ranking))
        return 0
    from experiments.reports.recommend import recommend

    results = Path(args.results) if args.results else None
    if results is not None and not results.is_dir():
        raise CliError(f"results directory {str(results)!r} does not exist (run a spec with "
                       "the clustered receiver model first, or drop --results to use the "
                       "shipped training set)")
    out = recommend(results, args.topology, args.scenario, args.churn, args.subscribers, args.k)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{out['topology']} ({out['scenario']}, churn {out['churn']:g} %, "
              f"{out['subscribers']:g} % subscribers): {out['strategy']}, expected header "
              f"{out['expected_header_entries']:.2f} entries")
        print(f"  learned from {out['training_points']} points on {out['networks']} networks; "
              f"cross-validated accuracy {out['accuracy_leave_one_out']:.0%} (leave one out), "
              f"{out['accuracy_leave_one_network_out']:.0%} (leave one network out; "
              f"{out['accuracy_leave_one_network_out_not_separable']:.0%} within the "
              "strategies not separable from the best)")
    return 0


def _recommend_training(args: argparse.Namespace) -> int:
    """``recommend --build-training OUT`` / ``--evaluate``: the learned method's data."""
    from experiments.reports.recommend import (
        TRAINING_PATH,
        build_training,
        held_out_accuracy,
        load_training,
    )

    if args.build_training:
        if args.workers < 1:
            raise CliError(f"--workers must be >= 1, got {args.workers}")
        summary = build_training(args.build_training, seeds=args.training_seeds,
                                 notifications=args.notifications, workers=args.workers,
                                 progress=not args.json)
        held = summary["held_out"]
        where = args.build_training
    else:
        held = held_out_accuracy(load_training(args.training or TRAINING_PATH), args.k)
        where = args.training or TRAINING_PATH
        summary = {"held_out": held}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    if args.build_training:
        print(f"wrote {where}: {held['points']} points on {held['networks']} networks "
              f"in {summary['build_seconds']:.0f} s")
    print(f"learned k-NN (k={held['k']}) against the simulated answer, leave one network out "
          f"({held['points']} points, {held['networks']} networks of {where}): "
          f"{held['exact']:.0%} exact, {held['not_separable']:.0%} not separable from the best; "
          f"always {held['majority']}: {held['majority_exact']:.0%} / "
          f"{held['majority_not_separable']:.0%}")
    return 0


# -- parser ---------------------------------------------------------------------
