"""``stackcast bench scaling``: peak memory and time of every strategy as networks grow.

Each (topology, strategy) runs in a fresh Python process: one static cell of
``notifications`` notifications (uniform 30 % receivers, or the receiver
model a strategy needs, :data:`STRATEGY_RECEIVERS`; 50 B payload, seed 1)
through :func:`experiments.cells.pipeline.cell_rows`, the path every runner
takes (topology, install, fast path or reference, rows). The parent waits
for the child with :func:`os.wait4` and reports the child's maximum resident
set size (``ru_maxrss``: the whole process, interpreter and numba included),
its wall time and ``run_s``, the cell alone (imports excluded). Topologies:
``jellyfish:switches=N,degree=4,seed=1`` for each ``N`` of ``sizes``, and
``fattree:k=48`` (27,648 hosts) for :data:`FATTREE_STRATEGIES`. A strategy
with an ``id_bits`` parameter runs with ``id_bits=16`` (8 bits name at most
255 switches), port bitmasks are 64 bits wide (48-port switches), and
stacks go out as jumbo frames (:func:`strategy_params`). On the fat tree 1 %
of the hosts receive (:data:`FATTREE_RECEIVERS`): at 30 % (8,294 receivers)
a switch-bitmask stack is 12 kB per subtree of the root, beyond any MTU.

A strategy that refuses a topology (a header width it cannot fit, say)
exits with its one-line error, reported as ``refused``; a run over
``timeout_s`` is killed and reported as ``timeout``. Targets (issue 9 item
3): at most :data:`RSS_TARGET_MB` for every strategy that accepts the
4,000-switch jellyfish, and fattree:k=48 loads and runs the four strategies of
:data:`FATTREE_STRATEGIES`.

Nothing here runs in the default test run; figures depend on the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

SIZES = (50, 255, 1000, 4000)
JELLYFISH = "jellyfish:switches={n},degree=4,seed=1"
FATTREE = "fattree:k=48"
FATTREE_STRATEGIES = ("unicast", "multicast", "switch-bitmask", "tree")
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


def strategy_params(name: str) -> dict[str, Any]:
    """The parameters a strategy runs with here: ``id_bits=16``, ``bitmask_bits=64``
    and ``on_oversize="jumbo"`` (stacks up to 9,000 B) where it has them."""
    import dataclasses

    from strategies.base import STRATEGIES, load_builtin_strategies

    load_builtin_strategies()
    fields = {f.name for f in dataclasses.fields(STRATEGIES.get(name).Params)}
    params: dict[str, Any] = {"id_bits": 16} if "id_bits" in fields else {}
    if "bitmask_bits" in fields:  # port bitmasks wide enough for a k=48 fat tree's switches
        params["bitmask_bits"] = 64
    if "on_oversize" in fields:
        params["on_oversize"] = "jumbo"
    return params


def all_strategies() -> tuple[str, ...]:
    from strategies.base import STRATEGIES, load_builtin_strategies

    load_builtin_strategies()
    return tuple(STRATEGIES.names())


def run_one(topology: str, strategy: str, notifications: int) -> dict[str, Any]:
    """In this process: the cell's rows (call from a fresh process; see the module docstring)."""
    from experiments.cells.pipeline import cell_rows
    from experiments.cells.spec import parse_spec_dict

    receivers = STRATEGY_RECEIVERS.get(
        strategy, FATTREE_RECEIVERS if topology == FATTREE else RECEIVERS)
    data: dict[str, Any] = {
        "experiment": {"name": "bench-scaling", "notifications": notifications, "seeds": [1],
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": [strategy], "receivers": [receivers]}}
    params = strategy_params(strategy)
    if params:
        data["strategy_params"] = {strategy: params}
    (cell,) = parse_spec_dict(data, "<bench scaling>").cells()
    return {"rows": len(cell_rows(cell))}


def measure(topology: str, strategy: str, notifications: int, timeout_s: float = TIMEOUT_S
            ) -> dict[str, Any]:
    """Run one (topology, strategy) in a child process: its status, max RSS (MB), wall (s)."""
    cmd = [sys.executable, "-m", "experiments.bench.scaling", topology, strategy,
           str(notifications)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        status = ""
        while True:  # reap the child ourselves: os.wait4 gives its own rusage
            pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = code  # reaped: Popen must not wait for it again
                break
            if time.perf_counter() - t0 > timeout_s:
                proc.kill()
                status = "timeout"
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if not status:
        status = "ok" if os.waitstatus_to_exitcode(code) == 0 else "refused"
    rec: dict[str, Any] = {"topology": topology, "strategy": strategy, "status": status,
                           "wall_s": wall, "notifications": notifications,
                           "params": strategy_params(strategy),
                           "max_rss_mb": usage.ru_maxrss / 1024.0}
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if lines:
        rec.update(json.loads(lines[-1]))
    if status == "refused":
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        rec["error"] = tail[-1] if tail else f"exit status {code}"
    return rec


def run_scaling(sizes: Sequence[int] = SIZES, strategies: Iterable[str] | None = None,
                fattree: bool = True, notifications: int = 5, timeout_s: float = TIMEOUT_S,
                tick: Callable[[dict[str, Any]], None] = lambda rec: None) -> dict[str, Any]:
    """Every (jellyfish size, strategy), then fattree:k=48 for :data:`FATTREE_STRATEGIES`."""
    names = tuple(strategies) if strategies is not None else all_strategies()
    runs = [(JELLYFISH.format(n=n), s) for n in sizes for s in names]
    if fattree:
        runs += [(FATTREE, s) for s in FATTREE_STRATEGIES if s in names]
    records = []
    for topology, strategy in runs:
        rec = measure(topology, strategy, notifications, timeout_s)
        ok = rec["status"] == "ok"
        rec["target_met"] = (rec["max_rss_mb"] <= RSS_TARGET_MB) if ok else None
        records.append(rec)
        tick(rec)
    return {"receivers": RECEIVERS, "notifications": notifications,
            "rss_target_mb": RSS_TARGET_MB, "runs": records}


def format_scaling(result: dict[str, Any]) -> str:
    """A Markdown table of the runs."""
    lines = [f"{result['notifications']} notifications per cell, {result['receivers']} "
             f"receivers; max RSS target {result['rss_target_mb']:.0f} MB", "",
             "| topology | strategy | status | max RSS (MB) | wall (s) |",
             "| --- | --- | --- | ---: | ---: |"]
    for r in result["runs"]:
        status = r["status"] if r["status"] != "refused" else f"refused: {r['error'][:80]}"
        lines.append(f"| {r['topology']} | {r['strategy']} | {status} | "
                     f"{r['max_rss_mb']:,.0f} | {r['wall_s']:.1f} |")
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
