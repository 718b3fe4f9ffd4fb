"""Hop mode against real BMv2, one strategy per program build (issue 7).

Needs ``simple_switch_grpc`` on PATH and root; run with
``PATH=/opt/p4/bin:$PATH`` where BMv2 is built outside the repo.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from support.bmv2 import BMV2_MODULE

from hil.compare import Report
from hil.hop import HopSwitch, Visit, model_visits
from hil.netns import PREFIX, namespaces
from hil.programs import PROGRAMS, program_for
from hil.validate import validate

pytestmark = BMV2_MODULE

SMALL = "jellyfish:switches=8,degree=3,seed=2"
FABRIC = "fabric:pods=2,racks=2,hosts=2,planes=2,spines=1"
CONTENT = "content:subs=40,publishers=3,subscribers=8,dims=2,bits=12,width=0.2,dist=zipf,churn=0"
UNIFORM = "uniform:percent=40"

#: (strategy, parameters, topology, receiver model): every program build in
#: hil/programs.py that the built-in strategies use.
CASES = [
    ("unicast", {}, SMALL, UNIFORM),                       # l2_multicast
    ("multicast", {}, SMALL, UNIFORM),                     # l2_multicast, groups
    ("tree", {}, SMALL, UNIFORM),                          # virtual_tree
    ("vt-cycles", {}, SMALL, UNIFORM),                     # virtual_tree, hop labels
    ("path", {}, FABRIC, "frequency:subscribers=30"),       # virtual_tree, fabric
    ("hops", {}, SMALL, UNIFORM),                          # neighbor_labels
    ("destinations", {}, SMALL, UNIFORM),                  # neighbor_labels
    ("switch-port", {}, SMALL, UNIFORM),                   # source_routing_port
    ("switch-bitmask", {}, SMALL, UNIFORM),                # source_routing_bitmask
    ("switch-mcgroup", {}, SMALL, UNIFORM),                # source_routing_mcgroup
    ("switch-mcgroup", {"groups": "subsets", "subsets": "2"}, SMALL, UNIFORM),  # _subsets
    ("mixed", {}, SMALL, UNIFORM),                         # source_routing_mixed
    ("pleroma-dz", {}, SMALL, CONTENT),                    # prefix_filter
    ("range-boxes", {}, SMALL, CONTENT),                   # range_filter_*
    ("kundel-id", {}, SMALL, CONTENT),                     # kundel_id_*
    ("kundel-bitmask", {}, SMALL, CONTENT),                # kundel_bitmask_*
    ("alm-fork", {}, SMALL, UNIFORM),                      # alm
    ("camus-bdd", {}, SMALL, CONTENT),                     # camus_bdd_*
    ("camus-bdd", {"table": "one-big-table"}, SMALL, CONTENT),  # camus_flat_*
    ("bier", {}, SMALL, UNIFORM),                          # bier_bsl64
    ("elmo", {"leaf_prules": 1, "leaf_srules": 0, "spine_srules": 0}, "fattree:k=4", UNIFORM),
]


def _id(case: tuple) -> str:
    name, params = case[0], case[1]
    return name + "".join(f"-{k}={v}" for k, v in params.items())


def test_cases_cover_every_program_family():
    from strategies.base import STRATEGIES, load_builtin_strategies

    load_builtin_strategies()
    covered = {STRATEGIES.get(name).dataplane for name, *_ in CASES}
    assert set(PROGRAMS) <= covered, f"families without a BMv2 test: {set(PROGRAMS) - covered}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_hop_mode_agrees_with_the_model(case):
    name, params, topology, receivers = case
    report = validate(topology, name, 3, mode="hop", receivers=receivers, params=params)
    assert report.notifications == 3
    assert report.switch_visits > 0
    assert report.mismatches == [], report.format_text()
    assert report.match_rate == 1.0
    assert not [n for n in namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]


def test_a_wrong_expectation_is_reported():
    """The comparison can fail: a visit whose expected passes and frames are off."""
    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell
    from hil.validate import strategy_params

    cell = Cell(experiment="t", topology=SMALL, strategy="tree", params=(), receivers=UNIFORM,
                payload_bytes=50, seed=1, notifications=1)
    topo, strategy, _ = cell_setup(cell)
    item = next(cell_notifications(cell, topo, strategy))
    _, visits = model_visits(topo, strategy, item)
    v = next(v for v in visits if v.emits)
    wrong = dataclasses.replace(v, passes=v.passes + 1, emits=v.emits + v.emits[:1])
    program = program_for(strategy.dataplane, "tree", strategy_params(strategy))
    report = Report("hop", SMALL, "tree", program.name)
    with HopSwitch(program, 8, retry_quiet_s=0.1) as hop:
        hop.load(v.config)
        hop.check(v, report)
        hop.check(wrong, report)
    assert report.switch_visits == 2 and report.visits_matched == 1
    assert report.retries == 1  # the disagreeing visit was replayed once
    assert report.retry_reasons == {"missing frames": 1, "passes": 1}
    kinds = sorted(m.what for m in report.mismatches)
    assert kinds == ["frames", "passes"]
    frames = next(m for m in report.mismatches if m.what == "frames")
    assert frames.port == v.emits[0][0] and frames.switch == v.switch
    assert isinstance(v, Visit)


def test_cli_json_contract(capsys):
    import json

    from experiments.cli.main import main

    rc = main(["hil", "validate", "--topology", SMALL, "--strategy", "hops",
               "--notifications", "2", "--json", "--no-progress"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert doc["notifications"] == 2 and doc["switch_visits"] > 0
    assert doc["match_rate"] == 1.0 and doc["mismatches"] == []
    assert doc["mode"] == "hop" and doc["program"] == "neighbor_labels"
