"""``stackcast deliver --workload``: every strategy on its own, through the cell pipeline."""

from __future__ import annotations

import json

import pytest

from experiments.cells.deliver import MEAN_KEYS, deliver_workload
from experiments.cells.pipeline import cell_rows
from experiments.cells.spec import Cell
from experiments.cells.workload import cell_workload
from experiments.cli.main import main
from strategies.base import STRATEGIES, load_builtin_strategies
from topologies.specs import load_topology

FABRIC = "fabric:pods=2,racks=2,hosts=2,planes=2,spines=2"
JELLYFISH = "jellyfish:switches=8,degree=3,seed=1"
FATTREE = "fattree:k=4"
CONTENT = "content:subs=20,publishers=4,subscribers=8,dims=2,bits=12,width=0.2,dist=zipf"
CLUSTERED = "clustered:scenario=nearby,churn=0,subscribers=60"

#: (topology, workload) per family of strategies. The fabric strategies
#: (strategies/virtual_tree/datacenter.py) need the datacenter fabric and a
#: workload with subscribers; the other virtual trees install from a population
#: (vt-relation, vt-clusters, ...) or ignore it; content filters need events.
FAMILIES = {
    "fabric": (FABRIC, "frequency:subscribers=50"),
    "virtual_tree": (JELLYFISH, CLUSTERED),
    "content": (FATTREE, CONTENT),
    "receiver-set": (JELLYFISH, "uniform:percent=30"),
    "clos": ("elmo:pods=2,leaves=4,hosts=4", "uniform:percent=30"),  # elmo: Clos tiers
}
_CONTENT_DATAPLANES = {"camus", "kundel", "prefix_filter", "range_filter"}
_RECEIVER_SET_DATAPLANES = {"source_routing", "neighbor_labels", "l2", "alm", "bier"}
#: Receiver-set strategies that deliver to hosts that did not ask (flooding);
#: the content filters may too (covering boxes, prefixes).
INEXACT = {"broadcast"}


def family(name: str) -> str:
    cls = STRATEGIES.get(name)
    if cls.__module__ == "strategies.virtual_tree.datacenter":
        return "fabric"
    if cls.dataplane == "virtual_tree":
        return "virtual_tree"
    if cls.dataplane == "elmo":
        return "clos"
    if cls.dataplane in _CONTENT_DATAPLANES:
        return "content"
    if cls.dataplane in _RECEIVER_SET_DATAPLANES:
        return "receiver-set"
    raise AssertionError(f"strategy {name!r} (data plane {cls.dataplane!r}): add its family "
                         f"to FAMILIES of this test")


def _strategies() -> list[str]:
    load_builtin_strategies()
    return STRATEGIES.names()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, err: str) -> None:
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("stackcast: error: "), err
    assert "Traceback" not in err


def test_there_are_at_least_32_strategies():
    assert len(_strategies()) >= 32


@pytest.mark.parametrize("strategy", _strategies())
def test_every_strategy_delivers_its_workload(capsys, strategy):
    topology, workload = FAMILIES[family(strategy)]
    code, out, err = run(capsys, "deliver", "--topology", topology, "--strategy", strategy,
                         "--workload", workload, "--notifications", "2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["strategy"], doc["topology"], doc["workload"], doc["seed"]) == \
        (strategy, topology, workload, 1)
    notes = doc["notifications"]
    assert len(notes) == 2
    assert sum(len(n["receivers"]) for n in notes) > 0  # the workload gave it something to do
    for n in notes:
        assert n["strategy"] == strategy
        assert n["false_negatives"] == 0
        assert all(n["delivered"].get(h, 0) >= 1 for h in n["receivers"])
        if strategy not in INEXACT and family(strategy) != "content":
            assert n["false_positives"] == 0
            assert set(n["delivered"]) == set(n["receivers"])
    mean = doc["mean"]
    assert set(mean) == {"notifications", *MEAN_KEYS} and mean["notifications"] == 2
    assert mean["receivers"] == sum(len(n["receivers"]) for n in notes) / 2
    assert mean["bytes"] == sum(n["bytes"] for n in notes) / 2
    assert mean["false_negatives"] == 0


@pytest.mark.parametrize("strategy", ["path", "threshold", "topo-based", "vt-tree"])
def test_fabric_strategies_refuse_other_topologies(capsys, strategy):
    code, _, err = run(capsys, "deliver", "--topology", JELLYFISH, "--strategy", strategy,
                       "--workload", "frequency:subscribers=50")
    assert_one_line(code, err)
    assert strategy in err and "fabric:" in err


def test_text_output_has_a_line_per_notification_and_a_mean(capsys):
    code, out, err = run(capsys, "deliver", "--topology", JELLYFISH, "--strategy",
                         "switch-bitmask", "--workload", "uniform:percent=30",
                         "--notifications", "3")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1 + 3 + 1
    assert lines[0].startswith("switch-bitmask on jellyfish:") and "(seed 1)" in lines[0]
    assert [ln.split()[0] for ln in lines[1:]] == ["#0", "#1", "#2", "mean"]
    assert all("FN 0" in ln for ln in lines[1:4])


def test_publisher_restricts_the_sender(capsys):
    cell = _cell("vt-relation", JELLYFISH, CLUSTERED, notifications=3)
    publisher = cell_workload(cell, load_topology(JELLYFISH)).population.publishers[-1]
    code, out, err = run(capsys, "deliver", "--topology", JELLYFISH, "--strategy",
                         "vt-relation", "--workload", CLUSTERED, "--notifications", "3",
                         "--publisher", publisher, "--json")
    assert code == 0, err
    assert [n["publisher"] for n in json.loads(out)["notifications"]] == [publisher] * 3


def test_publisher_not_of_the_workload(capsys):
    cell = _cell("vt-relation", JELLYFISH, CLUSTERED)
    topology = load_topology(JELLYFISH)
    publishers = cell_workload(cell, topology).population.publishers
    other = next(h for h in topology.hosts if h not in publishers)
    code, _, err = run(capsys, "deliver", "--topology", JELLYFISH, "--strategy", "vt-relation",
                       "--workload", CLUSTERED, "--publisher", other)
    assert_one_line(code, err)
    assert f"{other!r} is not a publisher" in err


def _cell(strategy: str, topology: str, workload: str, notifications: int = 1) -> Cell:
    return Cell(experiment="deliver", topology=topology, strategy=strategy, params=(),
                receivers=workload, payload_bytes=50, seed=1, notifications=notifications)


@pytest.mark.parametrize(("strategy", "topology", "workload"), [
    ("switch-bitmask", JELLYFISH, "uniform:percent=30"),  # a fast path in the rows
    ("vt-relation", JELLYFISH, CLUSTERED),
    ("range-boxes", FATTREE, CONTENT),
])
def test_figures_are_the_rows_of_the_same_cell(strategy, topology, workload):
    """deliver --workload is the cell pipeline: its figures are `stackcast run`'s rows."""
    cell = _cell(strategy, topology, workload, notifications=4)
    result = deliver_workload(cell)
    rows = cell_rows(cell)
    assert len(rows) == len(result.notifications) == 4
    for row, d in zip(rows, result.notifications, strict=True):
        figures = d.figures()
        assert row["publisher"] == d.item.notification.publisher
        for key in ("receivers", "header_entries", "header_bytes", "delivered",
                    "false_positives", "false_negatives", "frames", "bytes", "state_entries"):
            assert row[key] == figures[key], key


@pytest.mark.parametrize(("extra", "needle"), [
    ([], "give --receivers HOSTS"),
    (["--workload", "uniform:percent=30", "--publisher", "h1", "--receivers", "h2"],
     "not both"),
    (["--publisher", "h1", "--receivers", "h2", "--seed", "3"], "--seed draws from a workload"),
    (["--receivers", "h2"], "--receivers needs --publisher"),
    (["--workload", "unifrm:percent=30"], "unknown receiver model"),
    (["--workload", "uniform:percent=abc"], "must be a number"),
    (["--workload", "uniform:percent=30", "--notifications", "0"], "--notifications must be"),
    (["--workload", "uniform:percent=30", "--seed", "-1"], "--seed must be"),
    (["--workload", "uniform:percent=30", "--param", "nope=1"], "nope"),
])
def test_bad_input_is_one_line(capsys, extra, needle):
    code, _, err = run(capsys, "deliver", "--topology", JELLYFISH, "--strategy",
                       "switch-bitmask", *extra)
    assert_one_line(code, err)
    assert needle in err


def test_receivers_mode_says_to_use_a_workload(capsys):
    code, _, err = run(capsys, "deliver", "--topology", JELLYFISH, "--strategy", "vt-relation",
                       "--publisher", "h1", "--receivers", "h3")
    assert_one_line(code, err)
    assert "--workload MODEL" in err


#: ``stackcast deliver --receivers`` before ``--workload`` existed (its output must not change).
GOLDEN_RECEIVERS = """\
switch-bitmask on jellyfish:switches=8,degree=3,seed=1: h1 -> 2 receivers
  header 5 entries, 17 B
  delivered 2, false positives 0, false negatives 0, duplicates 0
  7 frames, 519 B on links; state 48 entries; worst delay 0.430 ms
"""


def test_receivers_mode_output_is_unchanged(capsys):
    argv = ["deliver", "--topology", JELLYFISH, "--strategy", "switch-bitmask",
            "--publisher", "h1", "--receivers", "h3,h5"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert out == GOLDEN_RECEIVERS
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["header"]["hex"], doc["frames"], doc["bytes"], doc["state"]["entries"]) == \
        ("0005000006030004040001060008020001", 7, 519, 48)
    assert doc["delivered"] == {"h3": 1, "h5": 1}
