"""``stackcast recommend`` (seed 000 §7.2): features, k-NN, cross-validation, CLI."""

from __future__ import annotations

import json

import pytest

import sim.workloads.clustered  # noqa: F401  (registers "clustered")
from experiments.cells.spec import parse_spec_dict
from experiments.cli.main import main
from experiments.reports.recommend import (
    KnnRecommender,
    cross_validate,
    network_features,
    training_set,
)
from experiments.runners.local import run_local
from topologies.registry import SpecError

LINE = "jellyfish:switches=12,degree=2,seed=1"  # a ring: no degree variance
MESH = "jellyfish:switches=12,degree=4,seed=1"
STAR = "fattree:k=4"


def rows(topo, scenario, churn, headers):
    return [{"topology": topo, "receivers_model": f"clustered:scenario={scenario},churn={churn}",
             "payload_bytes": 50, "strategy": s, "header_entries": h}
            for s, h in headers.items()]


def synthetic():
    out = []
    for topo in (LINE, MESH, STAR):
        for churn in (0, 10, 20, 80, 90, 100):
            # freq-relation wins at low churn, clusters at high churn
            fr, cl = (3, 6) if churn < 50 else (8, 5)
            out += rows(topo, "nearby", churn, {"vt-freq-relation": fr, "vt-clusters": cl,
                                                "source-routed": 9})
    out += [{"topology": LINE, "receivers_model": "uniform:percent=30", "payload_bytes": 50,
             "strategy": "source-routed", "header_entries": 1}]  # not clustered: ignored
    return out


def test_network_features_are_diameter_and_degree_variance():
    d, var, mean, n = network_features(LINE)
    assert (var, mean, n) == (0.0, 2.0, 12.0) and d == 6.0


def test_training_set_labels_the_smallest_mean_header():
    data = training_set(synthetic())
    assert len(data.labels) == 18
    assert data.labels.count("vt-freq-relation") == data.labels.count("vt-clusters") == 9
    assert cross_validate(data, k=1) == 1.0
    assert cross_validate(data, k=1, by_network=True) == 1.0
    model = KnnRecommender(1).fit(data)
    strategy, header = model.predict(data.x[0])
    assert strategy == data.labels[0] and header == data.headers[0][strategy]


def test_no_clustered_results_is_a_clear_error():
    with pytest.raises(SpecError, match="clustered"):
        training_set(synthetic()[-1:])


def test_cli_recommend_end_to_end(tmp_path, capsys):
    spec = parse_spec_dict({
        "experiment": {"name": "rec", "notifications": 2, "seeds": [1]},
        "grid": {"topology": ["zoo:Litnet", "zoo:VtlWavenet2008"],
                 "strategy": ["source-routed", "vt-freq-relation"],
                 "receivers": ["clustered:scenario=nearby,churn=0",
                               "clustered:scenario=nearby,churn=100"]},
    })
    run_local(spec, tmp_path / "res", resume=False, progress=False)
    code = main(["recommend", "--topology", "zoo:Dfn", "--scenario", "nearby", "--churn", "20",
                 "--results", str(tmp_path / "res"), "--k", "1", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategy"] in ("source-routed", "vt-freq-relation")
    assert out["training_points"] == 4 and out["networks"] == 2
    assert 0 <= out["accuracy_leave_one_network_out"] <= 1
    assert main(["recommend", "--topology", "zoo:Dfn", "--scenario", "nearby", "--churn", "20",
                 "--results", str(tmp_path / "missing")]) == 2
    assert main(["recommend", "--topology", "zoo:Dfn", "--scenario", "nearby", "--churn", "120",
                 "--results", str(tmp_path / "res")]) == 2
