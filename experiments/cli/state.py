"""``stackcast state``: where a strategy's installed entries sit, per switch role and table.

The rows of a run carry ``state_entries`` summed over all switches; figures
such as Elmo's group-table entries per leaf (Elmo §5.1) need them per kind
of switch. This command installs the strategy on the population of a spec's
first cell of that strategy (the same population, seed and installation the
run used), then prints, per switch role (the topology's ``role`` attribute:
leaf / spine / core, edge / aggregation / core ...; ``switch`` where there is
none) and table: switches, mean, max and total entries.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import numpy as np

from experiments.cli.errors import CliError, parse_params


def cmd_state(args: argparse.Namespace) -> int:
    from experiments.cells.pipeline import cell_setup
    from experiments.cells.spec import load_spec
    from experiments.cells.workload import cell_workload
    from experiments.cli.main import resolve_spec
    from sim.dataplanes.caches import Caches
    from strategies.base import Knowledge, make_strategy

    spec = load_spec(resolve_spec(args.spec), force=args.force)
    cells = [c for c in spec.cells() if c.strategy == args.strategy]
    if not cells:
        have = ", ".join(sorted({c.strategy for c in spec.cells()}))
        raise CliError(f"spec {spec.name!r} runs no {args.strategy!r} cell (it runs: {have})")
    cell = cells[0]
    topology, strategy, _ = cell_setup(cell)
    if args.param:
        params = {**dict(cell.params), **parse_params(args.param)}
        strategy = make_strategy(args.strategy, params)
    caches = Caches()
    strategy.use_caches(caches)
    work = cell_workload(cell, topology, caches)
    start = time.process_time()
    state = strategy.install(topology, Knowledge(population=work.population, seed=work.seed,
                                                 caches=caches))
    cpu = time.process_time() - start
    counts: dict[tuple[str, str], list[int]] = defaultdict(list)
    roles = {s: str(topology.node_attrs.get(s, {}).get("role") or "switch")
             for s in topology.switches}
    tables = sorted({t for s in topology.switches for t in state.config(s).tables})
    for s in topology.switches:
        config = state.config(s)
        for t in tables:
            counts[(roles[s], t)].append(config.entry_count(t))
    rows = [{"role": role, "table": table, "switches": len(v), "mean": float(np.mean(v)),
             "max": int(np.max(v)), "total": int(np.sum(v))}
            for (role, table), v in sorted(counts.items())]
    if args.json:
        print(json.dumps({"spec": spec.name, "strategy": args.strategy,
                          "params": str(strategy.params), "cell": cell.receivers,
                          "install_cpu_s": cpu, "entries": state.entries, "tables": rows},
                         indent=2))
        return 0
    print(f"{spec.name}: {args.strategy} ({strategy.params}) on {cell.topology}, "
          f"population of {cell.receivers}; install {cpu:.1f} s CPU")
    print(f"{'role':<12} {'table':<32} {'switches':>8} {'mean':>10} {'max':>8} {'total':>10}")
    for r in rows:
        print(f"{r['role']:<12} {r['table']:<32} {r['switches']:>8} {r['mean']:>10.1f} "
              f"{r['max']:>8} {r['total']:>10}")
    return 0


def add_state_parser(sub: argparse._SubParsersAction) -> None:
    st = sub.add_parser("state", help="entries a strategy installs, per switch role and table, "
                                      "on the population of a spec's first cell")
    st.add_argument("spec", help="experiment spec (TOML path or shipped name, e.g. elmo-1m)")
    st.add_argument("--strategy", required=True, help="a strategy of the spec's grid")
    st.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="override a strategy parameter (repeatable), e.g. redundancy=0")
    st.add_argument("--json", action="store_true", help="print JSON")
    st.add_argument("--force", action="store_true", help="build topologies beyond the size "
                                                         "limits")
    st.set_defaults(func=cmd_state)
