"""Seed 000 Table 6.1, all five columns, and the ``preprocess=table61`` option."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from experiments.cli.main import main
from topologies.model import TopologyError
from topologies.registry import SpecError
from topologies.specs import load_topology
from topologies.zoo import THESIS_TABLE_6_1
from topologies.zoo_table import THESIS_PAD_NODES, THESIS_ROWS, compare, table_row

ZOO_DIR = os.environ.get("STACKCAST_ZOO_DIR", "")
needs_zoo = pytest.mark.skipif(not ZOO_DIR or not Path(ZOO_DIR).is_dir(),
                               reason="STACKCAST_ZOO_DIR (shared/data/topology-zoo) not available")


def test_thesis_rows_agree_with_the_loader_table() -> None:
    assert len(THESIS_ROWS) == 28 and THESIS_PAD_NODES == 88
    assert {r.name: (r.nodes, r.links, r.diameter) for r in THESIS_ROWS} == THESIS_TABLE_6_1


def test_degree_columns_pad_to_88_nodes() -> None:
    """A 4-node path: degrees 1, 2, 2, 1 plus 84 zeros (thesis) or alone (textbook)."""
    path = [(0, 1), (1, 2), (2, 3)]
    thesis = table_row("p4", range(4), path)
    assert thesis.mean_degree == pytest.approx(6 / 88)
    assert thesis.degree_variance == pytest.approx(10 / 88 - (6 / 88) ** 2)
    textbook = table_row("p4", range(4), path, pad_to=None)
    assert (textbook.mean_degree, textbook.degree_variance) == (1.5, 0.25)
    assert (textbook.nodes, textbook.links, textbook.diameter) == (4, 3, 3)
    with pytest.raises(ValueError, match="smaller than"):
        table_row("p4", range(4), path, pad_to=3)


@needs_zoo
def test_table_6_1_all_five_columns() -> None:
    """24 rows match in |V|, |E|, <k>, sigma_k^2 and d; Dfn with table61; 3 differ."""
    rows = {c.thesis.name: c for c in compare()}
    assert sorted(n for n, c in rows.items() if c.status == "matches") == sorted(
        set(THESIS_TABLE_6_1) - {"Dfn", "Arnes", "Ntt", "Uninett"})
    dfn = rows["Dfn"]
    assert dfn.status == "matches with preprocess=table61"
    assert dfn.ours.key() == (58, 87, 1.98, 6.86, 6)  # the default is unchanged
    assert dfn.option is not None and dfn.option.key() == dfn.thesis.key()
    assert {n for n, c in rows.items() if c.status == "differs"} == {"Arnes", "Ntt", "Uninett"}
    assert rows["Ntt"].ours.key() == (32, 63, 1.43, 6.43, 6)
    # the textbook mean degree is not the thesis's (digest §4.2.1 [BUG])
    assert round(rows["Litnet"].textbook.mean_degree, 2) == 2.0


@needs_zoo
def test_table61_option_loads_dfn_with_the_thesis_size() -> None:
    topo = load_topology("zoo:Dfn,preprocess=table61")
    assert (len(topo.switches), topo.switch_graph.number_of_edges()) == (50, 78)
    labels = {topo.node_attrs[s]["label"] for s in topo.switches}
    assert not labels & {"BAY", "DeCix", "Geant", "Telia", "Telekom", "GC"}
    assert len(load_topology("zoo:Dfn").switches) == 58
    litnet = load_topology("zoo:Litnet,preprocess=table61")  # matches without a fit
    assert litnet.summary()["links"] == load_topology("zoo:Litnet").summary()["links"]


@needs_zoo
@pytest.mark.parametrize(("spec", "match"), [
    ("zoo:Ntt,preprocess=table61", "no preprocessing reproduces Ntt"),
    ("zoo:Arnes,preprocess=table61", "no preprocessing reproduces Arnes"),
    ("zoo:Uninett,preprocess=table61", "no preprocessing reproduces Uninett"),
    ("zoo:Abilene,preprocess=table61", "'Abilene' is not one of them"),
    ("zoo:Dfn,preprocess=drop", "preprocess' must be one of lcc, table61"),
    ("zoo:Dfn,name=Litnet", "name given twice"),
])
def test_table61_option_errors_are_one_line(spec: str, match: str) -> None:
    with pytest.raises((TopologyError, SpecError), match=match) as e:
        load_topology(spec)
    assert "\n" not in str(e.value)


@needs_zoo
def test_cli_prints_table_6_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "table61"]) == 0
    out = capsys.readouterr().out
    assert "24 of 28 match by default, 1 more with preprocess=table61" in out
    assert main(["topology", "table61", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc) == 28 and doc[6]["network"] == "Dfn"
    assert doc[6]["ours_table61"] == doc[6]["thesis"]


def test_cli_table61_without_zoo_dir(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("STACKCAST_ZOO_DIR", raising=False)
    assert main(["topology", "table61"]) == 2
    assert "set STACKCAST_ZOO_DIR" in capsys.readouterr().err
