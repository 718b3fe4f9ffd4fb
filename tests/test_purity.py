"""The pure layers import neither simpy, pyspark, scapy nor p4runtime_sh (DESIGN.md)."""

from __future__ import annotations

import subprocess
import sys

PURE = ["topologies", "topologies.specs", "strategies.base", "strategies.catalog",
        "sim.dataplanes", "sim.dataplanes.catalog", "sim.dataplanes.control_state",
        "sim.dataplanes.pipeline", "sim.dataplanes.trees", "sim.dataplanes.packet",
        "sim.dataplanes.delivery", "sim.engines.static", "sim.workloads.receivers",
        "sim.engines.timed.config", "sim.engines.timed.capacity", "sim.engines.timed.metrics"]
HEAVY = ["simpy", "pyspark", "scapy", "p4runtime_sh"]


def test_pure_packages_do_not_load_heavy_modules():
    code = (
        "import sys\n"
        f"for m in {PURE!r}: __import__(m)\n"
        "from strategies.base import load_builtin_strategies; load_builtin_strategies()\n"
        "from topologies.specs import _ensure_loaded; _ensure_loaded()\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
