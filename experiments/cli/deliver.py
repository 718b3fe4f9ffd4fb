"""``stackcast deliver``: one notification (or a workload's first few) through one strategy."""

from __future__ import annotations

import argparse
import json

from experiments.cli.errors import CliError, parse_params
from topologies.registry import SpecError


def cmd_deliver(args: argparse.Namespace) -> int:
    from sim.dataplanes.packet import Notification, payload_for
    from sim.engines.static import run_notification
    from strategies.base import Knowledge, make_strategy
    from topologies.specs import check_topology_size, load_topology

    if args.receivers is not None and args.workload is not None:
        raise CliError("give either --receivers or --workload, not both")
    if args.workload is not None:
        return _deliver_workload(args)
    if args.receivers is None:
        raise CliError("give --receivers HOSTS (with --publisher) or --workload MODEL "
                       "(stackcast list receiver-models)")
    if args.publisher is None:
        raise CliError("--receivers needs --publisher (the publishing host, e.g. h1)")
    for option, value in (("--seed", args.seed), ("--notifications", args.notifications)):
        if value is not None:
            raise CliError(f"{option} draws from a workload: give --workload MODEL, "
                           f"not --receivers")
    names = [h.strip() for h in args.receivers.split(",")]
    if not any(names):
        raise CliError("--receivers names no host (give e.g. --receivers h2,h3)")
    if "" in names:
        raise CliError(f"--receivers has an empty name in {args.receivers!r}")
    twice = sorted({h for h in names if names.count(h) > 1})
    if twice:
        raise CliError(f"--receivers names {', '.join(twice)} more than once")
    check_topology_size(args.topology, force=args.force)
    topo = load_topology(args.topology)
    strategy = make_strategy(args.strategy, parse_params(args.param))
    hosts = set(topo.hosts)
    if not hosts:
        raise CliError(f"topology {args.topology!r} has no hosts")
    receivers = frozenset(names)
    for h in sorted(receivers | {args.publisher}):
        if h not in hosts:
            raise CliError(f"unknown host {h!r} (hosts are h1..h{len(topo.hosts)})")
    if args.publisher in receivers:
        raise CliError(f"the publisher {args.publisher} cannot also be a receiver")
    if args.payload_bytes < 0:
        raise CliError("--payload-bytes must be >= 0")
    note = Notification(notification_id=0, publisher=args.publisher)
    try:
        state = strategy.install(topo, Knowledge.for_notification(args.publisher, receivers))
    except SpecError as exc:  # strategies that install from a population or from content
        if "receiver model" not in str(exc):
            raise
        raise CliError(f"{exc}; give one with --workload MODEL, not --receivers") from None
    result = run_notification(topo, strategy, state, note, receivers,
                              payload_for(note, args.payload_bytes))
    doc = result.to_json(topo, args.strategy, state)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(f"{args.strategy} on {topo.name}: {doc['publisher']} -> {len(receivers)} receivers")
        print(f"  header {doc['header']['entries']} entries, {doc['header']['bytes']} B")
        print(f"  delivered {len(doc['delivered'])}, false positives {doc['false_positives']}, "
              f"false negatives {doc['false_negatives']}, duplicates {doc['duplicates']}")
        print(f"  {doc['frames']} frames, {doc['bytes']} B on links; "
              f"state {doc['state']['entries']} entries; worst delay "
              f"{doc['delay_ms']['worst']:.3f} ms")
    return 0


def _deliver_workload(args: argparse.Namespace) -> int:
    """``deliver --workload``: notifications drawn from a receiver model, through the
    cell pipeline (:func:`experiments.cells.deliver.deliver_workload`)."""
    from experiments.cells.deliver import deliver_workload
    from experiments.cells.spec import MAX_NOTIFICATIONS, Cell
    from sim.workloads.receivers import receiver_model
    from strategies.base import make_strategy
    from topologies.specs import check_topology_size

    notifications = 1 if args.notifications is None else args.notifications
    seed = 1 if args.seed is None else args.seed
    if notifications < 1:
        raise CliError(f"--notifications must be >= 1; got {notifications}")
    if notifications > MAX_NOTIFICATIONS and not args.force:
        raise CliError(f"--notifications {notifications:,} is beyond the limit of "
                       f"{MAX_NOTIFICATIONS:,}; pass --force to send them anyway")
    if seed < 0:
        raise CliError(f"--seed must be >= 0; got {seed}")
    if args.payload_bytes < 0:
        raise CliError("--payload-bytes must be >= 0")
    receiver_model(args.workload)  # unknown models and bad parameters before any build
    params = parse_params(args.param)
    make_strategy(args.strategy, params)
    check_topology_size(args.topology, force=args.force)
    cell = Cell(experiment="deliver", topology=args.topology, strategy=args.strategy,
                params=tuple(sorted(params.items())), receivers=args.workload,
                payload_bytes=args.payload_bytes, seed=seed, notifications=notifications)
    result = deliver_workload(cell, args.publisher)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print("\n".join(result.lines()))
    return 0
