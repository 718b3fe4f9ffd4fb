"""``stackcast hil calibrate`` against real BMv2 (issue 7).

Needs ``simple_switch_grpc`` on PATH and root; run with
``PATH=/opt/p4/bin:$PATH`` where BMv2 is built outside the repo.
"""

from __future__ import annotations

import json
import os

from support.bmv2 import BMV2_MODULE

from experiments.cli.main import main
from hil.netns import PREFIX, namespaces

pytestmark = BMV2_MODULE


def test_calibrate_times_real_visits_and_fits_a_positive_pass_cost(capsys):
    rc = main(["hil", "calibrate", "--topology", "jellyfish:switches=6,degree=3,seed=2",
               "--strategies", "switch-port,switch-mcgroup", "--notifications", "8",
               "--reps", "2", "--no-progress", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["visits"] == sum(out["visits_per_strategy"].values()) > 10
    assert set(out["visits_per_strategy"]) == {"switch-port", "switch-mcgroup"}
    timed = out["timed"]
    assert timed["switch_latency_s"] + timed["pass_s"] > 0
    assert all(v >= 0 for v in timed.values())
    assert out["held_out"]["visits"] > 0
    # removed again (names carry the creating process's pid)
    assert not [n for n in namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]
