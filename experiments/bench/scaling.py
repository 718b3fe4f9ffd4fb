"""``stackcast bench scaling``: peak memory and time of every strategy as networks grow.

Each (topology, strategy) runs in a fresh Python process: one static cell of
``notifications`` notifications (uniform 30 % receivers, or the receiver
model a strategy needs, :data:`STRATEGY_RECEIVERS`; 50 B payload, seed 1)
through :func:`experiments.cells.pipeline.cell_rows`, the path every runner
takes (topology, install, fast path or reference, rows). The parent waits
for the child with :func:`os.wait4` and reports the child's maximum resident
set size (``ru_maxrss``: the whole process, interpreter and numba included),
its wall time and CPU time (``cpu_s``, user + system: what a shared machine's
load does not inflate), ``run_s`` (the cell's wall time, imports excluded)
and the load average before and after. Topologies: ``jellyfish:switches=N,degree=4,seed=1`` for each
``N`` of ``sizes``, and ``fattree:k=48`` (27,648 hosts) for
:data:`FATTREE_STRATEGIES`. Parameters (:func:`strategy_params`): ``id_bits=16``
where a strategy has it (8 bits name at most 255 switches), 64-bit port
bitmasks (48-port switches), and stacks beyond the 1,500 B MTU sent as
jumbo frames split into one packet per subtree of the publisher's switch
where the strategy offers the split, whole jumbo frames otherwise. On the fat
tree 1 % of the hosts receive (:data:`FATTREE_RECEIVERS`): at 30 % (8,294
receivers) a switch-bitmask stack is 12 kB per subtree of the root.

A strategy that refuses a topology (a header width it cannot fit, a
topology without the roles it needs) exits with its one-line error,
reported as ``refused``; a run over ``timeout_s`` of wall time is killed and
reported as ``timeout``, one over ``cpu_limit_s`` of CPU time (``RLIMIT_CPU``:
on a shared machine the fairer bound) as ``cpu-limit``. Runs go one after
another; with ``out`` each record is appended to a JSON-lines file as it
finishes and a rerun with the same file skips the runs it holds (resume).
Targets (issue 16 item 3): at most :data:`RSS_TARGET_MB` for every strategy
that accepts the 4,000-switch jellyfish, and fattree:k=48 loads and runs
:data:`FATTREE_STRATEGIES`.
:func:`format_scaling` prints the strategy x size table with a verdict per
cell.

Nothing here runs in the default test run's timing; figures depend on the machine.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

SIZES = (50, 255, 1000, 4000)
JELLYFISH = "jellyfish:switches={n},degree=4,seed=1"
FATTREE = "fattree:k=48"
#: On the fat tree: the four of the issue's target, then the other strategies
#: built for Clos fabrics or that a fat tree's size tests.
FATTREE_STRATEGIES = ("unicast", "multicast", "switch-bitmask", "tree", "hybrid", "elmo",
                      "bier")
RECEIVERS = "uniform:percent=30"
FATTREE_RECEIVERS = "uniform:percent=1"
#: Strategies that need another receiver model than :data:`RECEIVERS`: the content
#: filters (a content workload) and the virtual trees built from the subscribers.
CONTENT = "content:subs=50,dims=3,bits=16,dist=siena,preds=2,ops=2/1/1/1,values=100"
FREQUENCY = "frequency:subscribers=30"
STRATEGY_RECEIVERS = {
    **dict.fromkeys(("camus-bdd", "kundel-bitmask", "kundel-id", "pleroma-dz", "range-boxes"),
                    CONTENT),
    **dict.fromkeys(("vt-freq-relation", "vt-hybrid", "vt-relation"), FREQUENCY),
}
RSS_TARGET_MB = 4096.0
TIMEOUT_S = 900.0
#: Frame limit of the oversize policies used here: jumbo frames (strategies.frame_size).
JUMBO_BYTES = 9000


def strategy_params(name: str) -> dict[str, Any]:
    """The parameters a strategy runs with here.

    ``id_bits=16`` and ``bitmask_bits=64`` where it has them; where it has an
    ``on_oversize`` policy, ``on_oversize="split"`` with ``mtu_bytes=9000``
    (one jumbo packet per subtree of the publisher's switch) if its
    parameters accept the split, else ``on_oversize="jumbo"`` (the virtual
    trees: one frame of up to 9,000 B).
    """
    import dataclasses

    from strategies.base import STRATEGIES, load_builtin_strategies
    from topologies.registry import make_params

    load_builtin_strategies()
    cls = STRATEGIES.get(name)
    fields = {f.name for f in dataclasses.fields(cls.Params)}
    params: dict[str, Any] = {"id_bits": 16} if "id_bits" in fields else {}
    if "bitmask_bits" in fields:  # port bitmasks wide enough for a k=48 fat tree's switches
        params["bitmask_bits"] = 64
    if "on_oversize" in fields:
        split = {**params, "on_oversize": "split", "mtu_bytes": JUMBO_BYTES}
        try:
            make_params(cls.Params, dict(split), f"strategy {name!r}")
        except ValueError:  # the strategy has no split (its parameters say so)
            params["on_oversize"] = "jumbo"
        else:
            params = split
    return params


def all_strategies() -> tuple[str, ...]:
    from strategies.base import STRATEGIES, load_builtin_strategies

    load_builtin_strategies()
    return tuple(STRATEGIES.names())


def receivers_of(topology: str, strategy: str) -> str:
    """The receiver model of one run (module docstring)."""
    return STRATEGY_RECEIVERS.get(
        strategy, FATTREE_RECEIVERS if topology == FATTREE else RECEIVERS)


def run_one(topology: str, strategy: str, notifications: int) -> dict[str, Any]:
    """In this process: the cell's rows (call from a fresh process; see the module docstring)."""
    from experiments.cells.pipeline import cell_rows
    from experiments.cells.spec import parse_spec_dict

    data: dict[str, Any] = {
        "experiment": {"name": "bench-scaling", "notifications": notifications, "seeds": [1],
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": [strategy],
                 "receivers": [receivers_of(topology, strategy)]}}
    params = strategy_params(strategy)
    if params:
        data["strategy_params"] = {strategy: params}
    (cell,) = parse_spec_dict(data, "<bench scaling>").cells()
    return {"rows": len(cell_rows(cell))}


def measure(topology: str, strategy: str, notifications: int, timeout_s: float = TIMEOUT_S,
            cpu_limit_s: float | None = None) -> dict[str, Any]:
    """Run one (topology, strategy) in a child process: its status, max RSS (MB), wall
    and CPU time (s)."""
    cmd = [sys.executable, "-m", "experiments.bench.scaling", topology, strategy,
           str(notifications)]
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True,
                                preexec_fn=None if cpu_limit_s is None
                                else functools.partial(_limit_cpu, cpu_limit_s))
        status = ""
        while True:  # reap the child ourselves: os.wait4 gives its own rusage
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = code  # reaped: Popen must not wait for it again
                break
            if not status and time.perf_counter() - t0 > timeout_s:
                proc.kill()
                status = "timeout"
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    cpu = usage.ru_utime + usage.ru_stime
    exit_code = os.waitstatus_to_exitcode(code)
    if not status:
        over = cpu_limit_s is not None and (
            exit_code == -signal.SIGXCPU or (exit_code == -signal.SIGKILL and cpu >= cpu_limit_s))
        status = "ok" if exit_code == 0 else "cpu-limit" if over else "refused"
    rec: dict[str, Any] = {"topology": topology, "strategy": strategy, "status": status,
                           "wall_s": wall, "notifications": notifications,
                           "receivers": receivers_of(topology, strategy),
                           "params": strategy_params(strategy),
                           "max_rss_mb": usage.ru_maxrss / 1024.0,
                           "cpu_s": cpu,
                           "load": [load_before, os.getloadavg()[0]]}
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if lines:
        rec.update(json.loads(lines[-1]))
    if status == "refused":
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        rec["error"] = (tail[-1] if tail else f"exit status {exit_code}" if exit_code > 0
                        else f"killed by {signal.Signals(-exit_code).name}")
    ok = status == "ok"
    rec["target_met"] = (rec["max_rss_mb"] <= RSS_TARGET_MB) if ok else None
    return rec


def _limit_cpu(seconds: float) -> None:
    """In the child before it starts: SIGXCPU after ``seconds`` of CPU, SIGKILL 5 s later."""
    import resource

    soft = max(1, int(seconds))
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))


def planned_runs(sizes: Sequence[int], names: Sequence[str], fattree: bool
                 ) -> list[tuple[str, str]]:
    """(topology, strategy) of every run, in order: sizes ascending, then the fat tree."""
    runs = [(JELLYFISH.format(n=n), s) for n in sizes for s in names]
    if fattree:
        runs += [(FATTREE, s) for s in FATTREE_STRATEGIES if s in names]
    return runs


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file :func:`run_scaling` wrote (none if it is absent)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_scaling(sizes: Sequence[int] = SIZES, strategies: Iterable[str] | None = None,
                fattree: bool = True, notifications: int = 5, timeout_s: float = TIMEOUT_S,
                tick: Callable[[dict[str, Any]], None] = lambda rec: None,
                out: Path | None = None, cpu_limit_s: float | None = None
                ) -> dict[str, Any]:
    """Every (jellyfish size, strategy), then fattree:k=48 for :data:`FATTREE_STRATEGIES`.

    ``out``: a JSON-lines file; each record is appended as its run ends, and the
    runs (same topology, strategy and notifications) it already holds are not run
    again (``tick`` is called for them too).
    """
    names = tuple(strategies) if strategies is not None else all_strategies()
    done = {(r["topology"], r["strategy"], r["notifications"]): r
            for r in (read_records(out) if out is not None else [])}
    records = []
    for topology, strategy in planned_runs(sizes, names, fattree):
        rec = done.get((topology, strategy, notifications))
        if rec is None:
            rec = measure(topology, strategy, notifications, timeout_s, cpu_limit_s)
            if out is not None:
                with out.open("a") as f:
                    f.write(json.dumps(rec) + "\n")
        records.append(rec)
        tick(rec)
    return {"receivers": RECEIVERS, "fattree_receivers": FATTREE_RECEIVERS,
            "notifications": notifications, "rss_target_mb": RSS_TARGET_MB,
            "timeout_s": timeout_s, "cpu_limit_s": cpu_limit_s, "runs": records}


def verdict(rec: dict[str, Any]) -> str:
    """One cell of the table: ``RSS MB, wall s (CPU s)`` and the verdict against the
    target."""
    cpu = f" ({rec['cpu_s']:,.0f} s CPU)" if "cpu_s" in rec else ""
    if rec["status"] in ("timeout", "cpu-limit"):
        return (f"{rec['status']} after {rec['wall_s']:,.0f} s{cpu}, "
                f"{rec['max_rss_mb']:,.0f} MB so far")
    if rec["status"] == "refused":
        return "refused"
    mark = "ok" if rec["target_met"] else "OVER"
    return f"{rec['max_rss_mb']:,.0f} MB, {rec['wall_s']:,.0f} s{cpu} {mark}"


def _column(topology: str) -> str:
    if topology == FATTREE:
        return "fattree:k=48"
    n = int(topology.split("switches=")[1].split(",")[0])
    return f"{n:,} switches"


def format_scaling(result: dict[str, Any]) -> str:
    """Markdown: strategy x topology (max RSS, wall, verdict), then why runs were refused."""
    runs = result["runs"]
    columns = list(dict.fromkeys(_column(r["topology"]) for r in runs))
    strategies = list(dict.fromkeys(r["strategy"] for r in runs))
    cell = {(r["strategy"], _column(r["topology"])): r for r in runs}
    target = result["rss_target_mb"]
    lines = [f"{result['notifications']} notifications per cell; receivers "
             f"{result['receivers']} (fat tree: {result.get('fattree_receivers', '-')}, "
             "content filters and subscriber-built trees: their own model); "
             f"verdict: ok = max RSS at most {target:,.0f} MB, OVER = more; "
             "wall time (CPU time of the process)", "",
             "| strategy | " + " | ".join(columns) + " |",
             "| --- |" + " --- |" * len(columns)]
    refusals: dict[str, list[str]] = {}
    for s in strategies:
        row = []
        for c in columns:
            rec = cell.get((s, c))
            row.append("-" if rec is None else verdict(rec))
            if rec is not None and rec["status"] == "refused":
                refusals.setdefault(rec["error"][:200], []).append(f"{s} on {c}")
        lines.append(f"| {s} | " + " | ".join(row) + " |")
    if refusals:
        lines += ["", "Refused:"]
        lines += [f"- {', '.join(where)}: {why}" for why, where in refusals.items()]
    loads = [x for r in runs for x in r.get("load", ())]
    if loads:
        lines += ["", f"Load average during the runs: {min(loads):.1f} to {max(loads):.1f} "
                      f"(cores: {os.cpu_count()}); wall times include the interpreter start."]
    return "\n".join(lines)


def _child(argv: list[str]) -> int:
    topology, strategy, notifications = argv[0], argv[1], int(argv[2])
    t0 = time.perf_counter()
    try:
        rec = run_one(topology, strategy, notifications)
    except (ValueError, KeyError, RuntimeError) as exc:  # a strategy refusing the topology
        sys.stderr.write(f"{type(exc).__name__}: {exc}".splitlines()[0] + "\n")
        return 1
    rec["run_s"] = time.perf_counter() - t0
    sys.stdout.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))
