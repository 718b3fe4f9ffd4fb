"""The ``stackcast`` command line.

``main(argv) -> int`` is separate from the parser so tests call it directly.
Heavy imports (pyspark, scapy, p4runtime_sh) happen inside subcommands. Bad
input gives exit code 2 and one line naming the problem, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.cells.spec import SPEC_DIR
from experiments.cli.bench import cmd_bench
from experiments.cli.deliver import cmd_deliver
from experiments.cli.errors import EXIT_BAD_INPUT, CliError
from experiments.cli.recommend import cmd_recommend
from topologies.registry import SpecError

if TYPE_CHECKING:
    from experiments.runners.spark import CellSource


def _shipped_specs() -> dict[str, Path]:
    return {p.stem: p for p in sorted(SPEC_DIR.glob("*.toml"))}


def resolve_spec(arg: str) -> Path:
    """A spec path, or the name of a shipped spec (``quickstart``)."""
    path = Path(arg)
    if path.exists() or arg.endswith(".toml"):
        return path
    shipped = _shipped_specs()
    if arg in shipped:
        return shipped[arg]
    from topologies.registry import unknown_name_message

    raise CliError(unknown_name_message("experiment spec", arg, shipped)
                   + "; or give a path to a .toml file")


# -- subcommands ------------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    what = args.what
    if what == "strategies":
        from strategies.base import STRATEGIES, load_builtin_strategies

        load_builtin_strategies()
        rows = [(n, STRATEGIES.get(n).summary) for n in STRATEGIES.names()]
    elif what == "topologies":
        from topologies.specs import TOPOLOGIES, _ensure_loaded

        _ensure_loaded()
        rows = [(n, TOPOLOGIES.get(n).summary) for n in TOPOLOGIES.names()]
    elif what == "receiver-models":
        from sim.workloads.receivers import RECEIVER_MODELS, load_builtin_receiver_models

        load_builtin_receiver_models()
        rows = [(n, RECEIVER_MODELS.get(n).summary) for n in RECEIVER_MODELS.names()]
    else:
        from experiments.cells.spec import describe_spec

        rows = [(name, describe_spec(p)) for name, p in _shipped_specs().items()]
    if args.json:
        print(json.dumps([{"name": n, "summary": s} for n, s in rows], indent=2))
    else:
        width = max((len(n) for n, _ in rows), default=0)
        for name, summary in rows:
            print(f"{name:<{width}}  {summary}")
    return 0


def cmd_topology_show(args: argparse.Namespace) -> int:
    from topologies.specs import check_topology_size, load_topology

    check_topology_size(args.spec, force=args.force)
    topo = load_topology(args.spec)
    summary = topo.summary()
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{topo.name}: {len(topo.switches)} switches, {len(topo.hosts)} hosts, "
          f"{len(topo.links)} links, max switch ports {topo.max_switch_ports}")
    for lk in summary["links"]:
        print(f"  [{lk['edge_id']}] {lk['a']}:{lk['a_port']} -- {lk['b']}:{lk['b_port']}")
    return 0


def cmd_topology_table61(args: argparse.Namespace) -> int:
    """Seed 000 Table 6.1 beside the Zoo files (needs STACKCAST_ZOO_DIR)."""
    from topologies.zoo import ZOO_DIR_ENV
    from topologies.zoo_table import compare

    if not os.environ.get(ZOO_DIR_ENV, "").strip():
        raise CliError(f"topology table61 needs the raw Topology Zoo GML files: set "
                       f"{ZOO_DIR_ENV} (e.g. shared/data/topology-zoo)")
    rows = compare()
    if args.json:
        print(json.dumps([c.to_json() for c in rows], indent=2))
        return 0

    def cols(r: object) -> str:
        if r is None:
            return f"{'-':>22}"
        v, e, k, s2, d = r.key()  # type: ignore[attr-defined]
        return f"{v:>3} {e:>3} {k:>5.2f} {s2:>5.2f} {d:>2}"

    print("Seed 000 Table 6.1 (|V| |E| <k> sigma_k^2 d; <k>, sigma_k^2 over degrees "
          "zero-padded to 88)")
    print(f"{'network':<17} {'thesis':<22} | {'ours (default)':<22} | "
          f"{'ours (table61)':<22} | verdict")
    for c in rows:
        print(f"{c.thesis.name:<17} {cols(c.thesis)} | {cols(c.ours)} | {cols(c.option)} | "
              f"{c.status}")
    same = sum(c.status == "matches" for c in rows)
    fitted = sum(c.status.startswith("matches with") for c in rows)
    print(f"{same} of {len(rows)} match by default, {fitted} more with preprocess=table61; "
          f"--json for the reasons")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from experiments.cells.spec import load_spec

    if not 0 < args.fraction <= 1:
        raise CliError(f"--fraction must be in (0, 1], got {args.fraction}")
    if args.out:  # checked first: a bad --out fails before anything is loaded or run
        check_out_dir(Path(args.out), force=args.force)
    # Every cell validated on the driver before any runner starts (nothing written on error).
    spec = load_spec(resolve_spec(args.spec), force=args.force)
    from experiments.reports.figures import check_figures

    check_figures(spec.figures)  # [report] figures: known names, before any cell runs
    out = Path(args.out or Path("results") / spec.name)
    if not args.out:
        check_out_dir(out, force=args.force)
    if args.trace:
        _write_trace(spec, args)
    source: CellSource = spec
    if args.fraction < 1:
        from experiments.runners.subset import SubsetSpec

        source = subset = SubsetSpec(spec, args.fraction)
        print(f"{spec.name}: --fraction {args.fraction:g} keeps {len(subset.cells()):,} of "
              f"{subset.total:,} cells")
    if args.runner == "local":
        if args.master:
            raise CliError("--master only applies to --runner spark")
        from experiments.runners.local import run_local

        counts = run_local(source, out, resume=args.resume, progress=not args.quiet)
        _say_ran(spec.name, counts, out)
        return _report(out, None, "local", None) if args.report else 0
    from experiments.runners.spark import run_spark

    master = args.master or "local[*]"
    if not args.report:
        counts = run_spark(source, out, resume=args.resume, master=master,
                           progress=not args.quiet)
        _say_ran(spec.name, counts, out)
        return 0
    from experiments.runners.spark_session import spark_session

    # one session for the cells and the report's aggregation (a second JVM start saved)
    with spark_session(master, app_name=f"stackcast {spec.name}") as session:
        counts = run_spark(source, out, resume=args.resume, progress=not args.quiet,
                           spark=session)
        _say_ran(spec.name, counts, out)
        return _report(out, None, "spark", master, spark=session)


def _say_ran(name: str, counts: dict[str, int], out: Path) -> None:
    print(f"{name}: {counts['ran']} cells run, {counts['skipped']} skipped, results in {out}")


#: What a stackcast results directory holds (experiments/storage/results.py):
#: the dataset, reports, and the older hive layout's ``experiment=...`` folders.
_RESULTS_ENTRIES = ("data", "report")


def check_out_dir(out: Path, *, force: bool = False) -> None:
    """Refuse a ``--out`` that cannot hold results, before any work starts.

    ``out`` must be (or be creatable as) a writable directory that is empty
    or a stackcast results directory; ``force`` accepts unrelated files.
    Writability is probed with a temporary file (``os.access`` says yes to
    root on a read-only file system), which is removed again.

    Raises
    ------
    CliError
        One line naming the problem and, where it helps, ``--force``.
    """
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {str(out)!r} is a file, not a directory")
    probe_dir = out
    while not probe_dir.exists():  # the nearest existing ancestor receives the new folder
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise CliError(f"--out {str(out)!r}: {str(probe_dir)!r} is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".stackcast-probe-", dir=probe_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise CliError(f"--out {str(out)!r} is not writable ({exc.strerror or exc})") from None
    if force or probe_dir != out:
        return
    foreign = sorted(p.name for p in out.iterdir()
                     if p.name not in _RESULTS_ENTRIES and not p.name.startswith((".",
                                                                                 "experiment=")))
    if foreign:
        raise CliError(f"--out {str(out)!r} holds files that are not stackcast results "
                       f"(e.g. {foreign[0]!r}); use an empty directory or pass --force")


def _write_trace(spec, args: argparse.Namespace) -> None:  # noqa: ANN001
    """``run --trace``: the first ``--trace-cells`` cells' states and packets (hil/trace.py)."""
    from hil.trace import write_trace

    if args.trace_cells < 1 or args.trace_notifications < 1:
        raise CliError("--trace-cells and --trace-notifications must be >= 1")
    cells = spec.cells()[:args.trace_cells]
    n = write_trace(cells, args.trace, args.trace_notifications)
    print(f"trace: {n} notifications of {len(cells)} cell(s) "
          f"({', '.join(c.strategy for c in cells)}) in {args.trace}")


def _report(results: Path, out: Path | None, runner: str, master: str | None,
            spark: Any = None) -> int:
    """Aggregate ``results`` (in this process, or with Spark: ``spark`` if given) and
    write the report to ``out`` (default: the results directory's report folder)."""
    from experiments.reports.report import aggregate_local, write_report
    from experiments.storage.results import declared_figures, read_results, report_dir

    if runner == "spark":
        from experiments.runners.spark import aggregate_spark

        points = aggregate_spark(results, master=master or "local[*]", spark=spark)
    else:
        points = aggregate_local(read_results(results))
    path = write_report(points, report_dir(results, out), declared_figures(results))
    print(f"report: {path}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    results = Path(args.dir)
    if results.exists() and not results.is_dir():
        raise CliError(f"{str(results)!r} is a file: give the results directory "
                       "(the --out of stackcast run)")
    if not results.is_dir():
        raise CliError(f"results directory {str(results)!r} does not exist")
    return _report(results, Path(args.out) if args.out else None, args.runner, args.master)


_LIMITS = "50,000 switches + hosts, 200,000 links, 1,000,000 notifications per cell; README"


def package_version() -> str:
    """The installed package's version (``stackcast --version``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("stackcast")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stackcast",
        description="Simulate in-network publish/subscribe strategies on P4 switches: "
                    "deliver one notification, run sweeps (local or Spark), report.")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    p.add_argument("--version", action="version", version=f"stackcast {package_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ls = sub.add_parser("list", help="list strategies, topologies, receiver models or shipped "
                                     "experiment specs")
    ls.add_argument("what", choices=["strategies", "topologies", "receiver-models",
                                     "experiments"])
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=cmd_list)

    topo = sub.add_parser("topology", help="inspect a topology spec")
    tsub = topo.add_subparsers(dest="topology_command", required=True, metavar="ACTION")
    show = tsub.add_parser("show", help="switches, hosts and links of SPEC, e.g. "
                                        "jellyfish:switches=16,degree=3,seed=1 or zoo:Dfn")
    show.add_argument("spec")
    show.add_argument("--json", action="store_true", help="print the JSON contract")
    show.add_argument("--force", action="store_true",
                      help=f"build topologies beyond the size limits ({_LIMITS})")
    show.set_defaults(func=cmd_topology_show)
    t61 = tsub.add_parser("table61", help="seed 000 Table 6.1 (28 Zoo networks) beside "
                                          "ours, with verdicts (needs STACKCAST_ZOO_DIR)")
    t61.add_argument("--json", action="store_true", help="machine-readable output")
    t61.set_defaults(func=cmd_topology_table61)

    dl = sub.add_parser("deliver", help="send one notification (or a few drawn from a "
                                        "workload) and report what happened")
    dl.add_argument("--topology", required=True, help="topology spec string")
    dl.add_argument("--strategy", required=True, help="strategy name (stackcast list strategies)")
    dl.add_argument("--publisher", help="publishing host, e.g. h1 (with --workload: send "
                                        "only from this publisher of the workload)")
    dl.add_argument("--receivers", help="comma-separated receiving hosts (or --workload)")
    dl.add_argument("--workload", metavar="MODEL",
                    help="receiver model spec, e.g. uniform:percent=10 or clustered:"
                         "scenario=nearby,churn=0 (stackcast list receiver-models): draw the "
                         "population with --seed and send --notifications from its publishers")
    dl.add_argument("--notifications", type=int, default=None,
                    help="--workload: notifications to send (default 1)")
    dl.add_argument("--seed", type=int, default=None,
                    help="--workload: the cell seed of the draws (default 1)")
    dl.add_argument("--payload-bytes", type=int, default=50, help="event size (default 50)")
    dl.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                    help="strategy parameter (repeatable)")
    dl.add_argument("--json", action="store_true", help="print the JSON contract")
    dl.add_argument("--force", action="store_true",
                    help=f"build topologies beyond the size limits ({_LIMITS})")
    dl.set_defaults(func=cmd_deliver)

    run = sub.add_parser("run", help="run an experiment spec (TOML path or shipped name)")
    run.add_argument("spec", help="spec file, or a shipped spec name (stackcast list experiments)")
    run.add_argument("--runner", "--engine", dest="runner", choices=["spark", "local"],
                     default="spark",
                     help="where cells run: spark (default; embedded local[*] unless --master) "
                          "or local (this process); --engine is the older name")
    run.add_argument("--master", help="Spark master URL (default local[*])")
    run.add_argument("--out", help="results directory (default results/<experiment>)")
    run.add_argument("--resume", action="store_true", help="skip cells already finished")
    run.add_argument("--force", action="store_true",
                     help="write into an --out that holds other files, and run topologies and "
                          f"notifications per cell beyond the size limits ({_LIMITS})")
    run.add_argument("--report", action="store_true", help="write the report afterwards")
    run.add_argument("--fraction", type=float, default=1.0,
                     help="run only this deterministic fraction of the cells, in whole groups "
                          "of related cells spread over the grid (default 1: all); the same "
                          "cells on every revision, for stackcast compare")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--trace", metavar="FILE",
                     help="also write the control state and encoded packets of the first "
                          "cell(s) as JSON Lines, for stackcast hil replay")
    run.add_argument("--trace-cells", type=int, default=1,
                     help="cells to trace, in grid order (default 1)")
    run.add_argument("--trace-notifications", type=int, default=200,
                     help="notifications traced per cell at most (default 200)")
    run.set_defaults(func=cmd_run)

    rep = sub.add_parser("report", help="Markdown tables and PNG plots from a results directory")
    rep.add_argument("dir", help="results directory written by stackcast run")
    rep.add_argument("--out", help="where to write (default DIR/report)")
    rep.add_argument("--runner", "--engine", dest="runner", choices=["local", "spark"],
                     default="local",
                     help="aggregate in-process (default) or with Spark")
    rep.add_argument("--master", help="Spark master URL for --runner spark")
    rep.set_defaults(func=cmd_report)

    bench = sub.add_parser("bench", help="the speed suite (static engine, VT encoder, timed "
                                         "engine, Spark; ch6-churn end to end on demand), each "
                                         "figure with its ratio to a same-run reference")
    bench.add_argument("target", nargs="?", default="suite",
                       choices=["suite", "static", "encoder", "timed", "spark", "cells", "ch6",
                                "scaling", "specs"],
                       help="suite (default: static, encoder, timed, spark), one item, ch6 "
                            "(wall time of experiments/specs/ch6-churn.toml on local[2]; long), "
                            "or specs (every shipped spec end to end with --report, one after "
                            "the other: wall time and peak memory against 15 min; hours)")
    bench.add_argument("--items", help="suite: comma-separated items (static, encoder, timed, "
                                       "timed-1000, spark, ch6, bound)")
    bench.add_argument("--fraction", type=float, default=1.0,
                       help="ch6: run this deterministic fraction of the cells and extrapolate "
                            "(default 1: the whole spec)")
    bench.add_argument("--notifications", type=int, default=None,
                       help="static: notifications per fast batch (default 400); scaling: "
                            "notifications per cell (default 5)")
    bench.add_argument("--quiet", action="store_true", help="no progress bar")
    bench.add_argument("--topology", help="timed: topology spec (default the 255-switch "
                                          "jellyfish of seed 000 ch. 3)")
    bench.add_argument("--strategy", default="switch-port", help="timed: strategy under load")
    bench.add_argument("--publishers", type=int, default=64, help="timed: publishing hosts")
    bench.add_argument("--rate-hz", type=float, default=100.0,
                       help="timed: notifications/s per publisher")
    bench.add_argument("--duration-s", type=float, default=None,
                       help="timed: simulated seconds of publishing (default 0.2)")
    bench.add_argument("--cells", type=int, default=12,
                       help="cells of the CPU-bound sweep (default 12)")
    bench.add_argument("--sizes", default="50,255,1000,4000",
                       help="scaling: jellyfish switch counts (default 50,255,1000,4000)")
    bench.add_argument("--strategies", help="scaling, bound: comma-separated strategies "
                                            "(default all)")
    bench.add_argument("--specs", help="specs: comma-separated shipped spec names (default all; "
                                       "stackcast list experiments)")
    bench.add_argument("--master", default="local[2]",
                       help="specs: Spark master the specs run on (default local[2])")
    bench.add_argument("--no-fattree", action="store_true",
                       help="scaling: skip fattree:k=48")
    bench.add_argument("--timeout-s", type=float, default=None,
                       help="scaling: seconds per (topology, strategy) run, then it is killed "
                            "and reported as a timeout (default 900); specs: seconds per spec "
                            "(default: no limit)")
    bench.add_argument("--cpu-limit-s", type=float, default=None,
                       help="scaling: CPU seconds per run, then it is stopped and reported "
                            "as cpu-limit (default none; fairer than --timeout-s on a busy "
                            "machine)")
    bench.add_argument("--out", help="scaling: JSON-lines file each run is appended to; a "
                                     "rerun with the same file skips the runs it holds. specs: "
                                     "JSON file the figures are written to after every spec")
    bench.add_argument("--resume", action="store_true",
                       help="specs: keep the specs already measured in --out")
    bench.add_argument("--reps", type=int, default=3, help="repetitions (median; default 3)")
    bench.add_argument("--json", action="store_true", help="machine-readable output")
    bench.set_defaults(func=cmd_bench)
    rec = sub.add_parser("recommend", help="pick the virtual-tree strategy with the smallest "
                                           "expected header for a network (seed 000 §7.2)")
    rec.add_argument("--topology", help="topology spec, e.g. zoo:Dfn or file:net.gml")
    rec.add_argument("--scenario", choices=["uniform", "nearby", "distant"],
                     help="client migration scenario")
    rec.add_argument("--churn", type=float, help="churn in percent (0-100)")
    rec.add_argument("--subscribers", type=float, default=30.0,
                     help="subscribers per publisher in percent (default 30)")
    rec.add_argument("--method", choices=["simulate", "learned"], default=None,
                     help="simulate the strategies on the topology (default), or ask the "
                          "k-NN learned from the shipped training set (or --results)")
    rec.add_argument("--seeds", type=int, default=20,
                     help="simulate: seeds (workload replications; default 20)")
    rec.add_argument("--notifications", type=int, default=20,
                     help="simulate: notifications per seed and strategy (default 20)")
    rec.add_argument("--seed", type=int, default=1, help="simulate: first seed (default 1)")
    rec.add_argument("--results", default=None,
                     help="learned: train on the results of your own clustered sweep "
                          "(implies --method learned)")
    rec.add_argument("--k", type=int, default=3, help="neighbours of the k-NN model (default 3)")
    rec.add_argument("--evaluate", action="store_true",
                     help="learned: print its leave-one-network-out accuracy against the "
                          "simulated answer on the shipped training set (or --training)")
    rec.add_argument("--training", default=None, help="--evaluate: a training set file")
    rec.add_argument("--build-training", metavar="OUT", default=None,
                     help="simulate the training networks and write the learned method's "
                          "training set to OUT (JSON)")
    rec.add_argument("--training-seeds", type=int, default=4,
                     help="--build-training: seeds per point (default 4)")
    rec.add_argument("--workers", type=int, default=2,
                     help="--build-training: processes (default 2)")
    rec.add_argument("--json", action="store_true", help="machine-readable output")
    rec.set_defaults(func=cmd_recommend)

    from experiments.cli.compare import add_compare_parser
    from experiments.cli.hil import add_hil_parser
    from experiments.cli.state import add_state_parser

    add_state_parser(sub)
    add_compare_parser(sub)
    add_hil_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except (CliError, SpecError, FileNotFoundError) as exc:
        print(f"stackcast: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as exc:  # validation errors from strategies and codecs
        print(f"stackcast: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError:
        return _pipe_closed()


def _pipe_closed() -> int:
    """The reader of stdout went away (``stackcast topology show ... | head``): end
    quietly. stdout is pointed at /dev/null so the interpreter's last flush cannot
    raise again (Python docs, "Note on SIGPIPE" in the ``signal`` module)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 1


#: Exit status after Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130


def _interrupted(args: argparse.Namespace) -> int:
    """One line fitting the command; exit 130 without hanging.

    A P4Runtime (gRPC) channel left behind by an interrupted ``hil`` command
    can block forever in its finalizer (``_ChannelCallState.__del__``) when
    the interpreter tears down, so once gRPC is loaded the process ends here,
    after flushing, with ``os._exit``.
    """
    if args.command == "run":
        message = "interrupted (finished cells are kept; rerun with --resume)"
    elif args.command == "hil":
        message = f"hil {args.hil_command} interrupted (BMv2 stopped; no report)"
    else:
        message = f"{args.command} interrupted"
    print(f"stackcast: {message}", file=sys.stderr)
    if "grpc" in sys.modules:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(EXIT_INTERRUPTED)
    return EXIT_INTERRUPTED


if __name__ == "__main__":  # ``python -m experiments.cli.main``: the console script
    sys.exit(main())
