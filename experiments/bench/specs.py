"""``stackcast bench specs``: every shipped spec end to end, wall time against 15 minutes.

Each spec of ``experiments/specs/`` (or those named) runs as a user runs it,
in a fresh process::

    stackcast run SPEC --runner spark --master MASTER --out TMP --report --quiet

(``MASTER`` default ``local[2]``), one spec after the other. Measured per
spec: the wall time of the whole command (session start, every cell, the
report), its cells, and the peak resident memory of the command's process
tree (the driver, Spark's JVM and its Python workers), read from
``/proc`` every ``POLL_S`` seconds: the largest single process and the
largest sum at one moment. The load average before and after each spec is
recorded, because a figure taken on a busy machine is not the figure of an
idle one. Target (issue 16 item 7): at most :data:`TARGET_S` per spec on
``local[2]`` on an idle 2-core machine.

Results go to a JSON file after every spec (``out``); ``resume`` skips the
specs already in it, so a run of several hours can be continued. Nothing here
runs in the default test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from experiments.cells.spec import SPEC_DIR

TARGET_S = 900.0
POLL_S = 0.5
MASTER = "local[2]"


def shipped_specs() -> dict[str, Path]:
    """Shipped spec name -> file (``experiments/specs/*.toml``, reduced copies excluded)."""
    return {p.stem: p for p in sorted(SPEC_DIR.glob("*.toml"))}


def _children(pids: set[int]) -> set[int]:
    """Every live descendant of ``pids`` (``/proc/<pid>/stat`` parent links)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may hold spaces: the fields after it follow its last ')'
        fields = stat[stat.rindex(b")") + 2:].split()
        parent[int(entry)] = int(fields[1])
    tree, grew = set(pids), True
    while grew:
        new = {pid for pid, ppid in parent.items() if ppid in tree and pid not in tree}
        tree |= new
        grew = bool(new)
    return tree


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _cells(path: Path) -> int:
    from experiments.cells.spec import load_spec

    return len(load_spec(path, force=True).cells())


def run_spec(name: str, path: Path, master: str = MASTER, timeout_s: float | None = None,
             work_dir: str | None = None) -> dict[str, Any]:
    """Run one spec as a user does (see the module docstring) and measure it."""
    cmd = [sys.executable, "-m", "experiments.cli.main", "run", str(path), "--runner", "spark",
           "--master", master, "--report", "--quiet"]
    load0 = os.getloadavg()[0]
    peak_one = peak_sum = 0.0
    with tempfile.TemporaryDirectory(prefix=f"stackcast-bench-{name}-", dir=work_dir) as tmp, \
            tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([*cmd, "--out", str(Path(tmp) / "out")],
                                stdout=subprocess.DEVNULL, stderr=err, text=True)
        status = ""
        while proc.poll() is None:
            rss = [_rss_mb(pid) for pid in _children({proc.pid})]
            peak_one, peak_sum = max(peak_one, *rss, 0.0), max(peak_sum, sum(rss))
            if timeout_s is not None and time.perf_counter() - t0 > timeout_s:
                for pid in _children({proc.pid}):
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
                proc.wait()
                status = "timeout"
                break
            time.sleep(POLL_S)
        wall = time.perf_counter() - t0
        err.seek(0)
        tail = [ln for ln in err.read().splitlines() if ln.strip()]
    if not status:
        status = "ok" if proc.returncode == 0 else "failed"
    rec: dict[str, Any] = {
        "spec": name, "command": " ".join(["stackcast", *cmd[3:], "--out", "DIR"]),
        "cells": _cells(path), "status": status, "wall_s": wall,
        "peak_process_mb": peak_one, "peak_tree_mb": peak_sum,
        "load_before": load0, "load_after": os.getloadavg()[0],
        "met": status == "ok" and wall <= TARGET_S,
    }
    if status == "failed":
        rec["error"] = tail[-1] if tail else f"exit status {proc.returncode}"
    return rec


def run_specs(names: Iterable[str] | None = None, master: str = MASTER,
              out: str | Path | None = None, resume: bool = False,
              timeout_s: float | None = None,
              tick: Callable[[dict[str, Any]], None] = lambda rec: None) -> dict[str, Any]:
    """Run the named shipped specs (default: all) one after the other; see the module
    docstring. ``out``: the JSON file written after every spec; ``resume``: keep the
    specs already in it."""
    specs = shipped_specs()
    wanted = list(specs) if names is None else list(names)
    unknown = [n for n in wanted if n not in specs]
    if unknown:
        raise ValueError(f"unknown spec {unknown[0]!r} (shipped: {', '.join(specs)})")
    result: dict[str, Any] = {"master": master, "cpus": os.cpu_count(), "target_s": TARGET_S,
                              "specs": {}}
    if resume and out is not None and Path(out).exists():
        result["specs"] = json.loads(Path(out).read_text()).get("specs", {})
    for name in wanted:
        if name in result["specs"] and result["specs"][name]["status"] == "ok":
            tick(result["specs"][name])
            continue
        rec = run_spec(name, specs[name], master, timeout_s)
        result["specs"][name] = rec
        if out is not None:  # after every spec, replaced whole: never half written
            tmp = Path(f"{out}.tmp")
            tmp.write_text(json.dumps(result, indent=2))
            tmp.replace(out)
        tick(rec)
    return result


def format_specs(result: dict[str, Any]) -> str:
    """The table of :func:`run_specs` (Markdown, as docs/BENCHMARKS.md lists it)."""
    lines = [f"stackcast bench specs: {result['master']}, {result['cpus']} CPUs, target "
             f"<= {result['target_s'] / 60:.0f} min per spec (wall, report included)", "",
             "| spec | cells | wall | peak process / tree | load before, after | met |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for rec in result["specs"].values():
        minutes, seconds = divmod(round(rec["wall_s"]), 60)
        met = "yes" if rec["met"] else ("**no**" if rec["status"] == "ok" else
                                       f"**{rec['status']}**")
        lines.append(f"| {rec['spec']} | {rec['cells']:,} | {minutes} min {seconds:02d} s | "
                     f"{rec['peak_process_mb']:,.0f} / {rec['peak_tree_mb']:,.0f} MB | "
                     f"{rec['load_before']:.1f}, {rec['load_after']:.1f} | {met} |")
        if rec.get("error"):
            lines.append(f"|   | | {rec['error']} | | | |")
    return "\n".join(lines)
