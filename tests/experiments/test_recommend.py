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


# -- --method simulate (experiments/reports/recommend_simulate.py) ------------------------

import math  # noqa: E402

import numpy as np  # noqa: E402

from experiments.reports.recommend import (  # noqa: E402
    TrainingSet,
    held_out_accuracy,
    load_training,
    recommend,
)
from experiments.reports.recommend_simulate import (  # noqa: E402
    CH6_STRATEGIES,
    rank,
    simulate,
    t_interval,
    t_quantile_975,
)

SMALL = "jellyfish:switches=10,degree=3,seed=2"


def ring_gml(path, n=8):
    """A ring of ``n`` switches with one chord, as a GML file."""
    nodes = "".join(f"  node [ id {i} label \"s{i}\" ]\n" for i in range(n))
    edges = "".join(f"  edge [ source {i} target {(i + 1) % n} ]\n" for i in range(n))
    path.write_text(f"graph [\n{nodes}{edges}  edge [ source 0 target {n // 2} ]\n]\n")
    return f"file:{path}"


def test_t_quantiles_and_interval():
    assert t_quantile_975(1) == pytest.approx(12.7062, abs=1e-4)
    assert t_quantile_975(9) == pytest.approx(2.2622, abs=1e-4)
    assert t_quantile_975(31) == pytest.approx(2.0395, abs=1e-4)  # expansion, not table
    assert t_quantile_975(120) == pytest.approx(1.9799, abs=1e-4)
    mean, lo, hi = t_interval([10, 12, 14, 16])
    half = 3.182446 * math.sqrt(20 / 3) / 2
    assert (mean, lo, hi) == pytest.approx((13, 13 - half, 13 + half))
    with pytest.raises(SpecError, match="at least 2"):
        t_interval([1.0])


def test_rank_uses_the_paired_difference_not_marginal_overlap():
    base = [10.0, 12.0, 14.0, 16.0]
    scores = rank({
        "b-shifted": [v + 0.5 for v in base],             # worse on every seed by 0.5
        "a-best": base,
        "c-noisy": [v + d for v, d in zip(base, (1, -1, 1, -1), strict=True)],  # same mean
        "d-far": [v + 20 for v in base],
    })
    by = {s.strategy: s for s in scores}
    # ties on the mean go by name: a-best before c-noisy
    assert [s.strategy for s in scores] == ["a-best", "c-noisy", "b-shifted", "d-far"]
    assert not by["a-best"].separable and (by["a-best"].diff_low, by["a-best"].diff_high) == (0, 0)
    # the marginal CIs of a-best and b-shifted overlap, yet every seed separates them
    assert by["b-shifted"].ci_low < by["a-best"].ci_high
    assert by["b-shifted"].separable and by["b-shifted"].diff_low == pytest.approx(0.5)
    assert not by["c-noisy"].separable and by["c-noisy"].diff_low < 0 < by["c-noisy"].diff_high
    assert by["d-far"].separable and by["d-far"].n == 4
    with pytest.raises(SpecError, match="same seeds"):
        rank({"a": [1.0, 2.0], "b": [1.0, 2.0, 3.0]})


def test_simulate_ranks_with_cis_deterministically(tmp_path):
    topo = ring_gml(tmp_path / "ring.gml")
    r = simulate(topo, "nearby", 100, 30, seeds=3, notifications=4)
    assert [s.strategy for s in r.scores] != []
    assert {s.strategy for s in r.scores} == set(CH6_STRATEGIES)  # all ten apply
    assert [n for n, _ in r.skipped] == ["topo-based"]  # fabric only: skipped, with reason
    assert "fabric" in r.skipped[0][1]
    means = [s.mean for s in r.scores]
    assert means == sorted(means) and r.best == r.scores[0].strategy
    for s in r.scores:
        assert s.n == 3 and s.ci_low <= s.mean <= s.ci_high
        assert s.mean == pytest.approx(sum(s.per_seed) / 3)
        assert s.separable == (s.diff_low > 0 or s.diff_high < 0)
    assert r.seeds == (1, 2, 3) and r.notifications == 4
    again = simulate(topo, "nearby", 100, 30, seeds=3, notifications=4)
    assert again.to_json() == r.to_json()
    other = simulate(topo, "nearby", 100, 30, seeds=3, notifications=4, first_seed=7)
    assert other.seeds == (7, 8, 9)
    assert [s.per_seed for s in other.scores] != [s.per_seed for s in r.scores]


def test_cli_recommend_simulate(tmp_path, capsys):
    args = ["recommend", "--topology", SMALL, "--scenario", "distant", "--churn", "50",
            "--seeds", "2", "--notifications", "3"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "simulate" and out["strategy"] == out["ranking"][0]["strategy"]
    assert out["receivers"] == "clustered:scenario=distant,churn=50,subscribers=30"
    assert len(out["ranking"]) == 10 and out["skipped"][0]["strategy"] == "topo-based"
    assert set(out["not_separable_from_best"]) == {
        r["strategy"] for r in out["ranking"][1:] if not r["separable_from_best"]}
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "95 % CI" in text and f"answer: {out['strategy']}" in text


@pytest.mark.parametrize("extra, message", [
    (["--churn", "120"], "churn"),
    (["--churn", "12.5"], "whole percentage"),
    (["--churn", "10", "--seeds", "1"], "--seeds must be >= 2"),
    (["--churn", "10", "--subscribers", "0"], "subscribers"),
    (["--churn", "10", "--method", "simulate", "--results", "x"], "--results"),
    (["--churn", "10", "--notifications", "0"], "notifications"),
    ([], "--churn"),
])
def test_cli_recommend_bad_input_is_one_line(extra, message, capsys):
    code = main(["recommend", "--topology", SMALL, "--scenario", "nearby", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("topology", ["nosuch:x=1", "file:/no/such/net.gml"])
def test_cli_recommend_bad_topology_is_one_line(topology, capsys):
    code = main(["recommend", "--topology", topology, "--scenario", "nearby", "--churn", "0"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


# -- --method learned on the shipped training set -----------------------------------------

def test_held_out_accuracy_on_a_synthetic_case():
    # one point per network on a line; with k=1 each point's nearest other point answers
    data = TrainingSet(x=np.array([[0.0], [1.0], [10.0]]), labels=("p", "q", "r"),
                       headers=({"p": 1.0}, {"q": 1.0, "p": 1.1}, {"r": 1.0}),
                       networks=("A", "B", "C"),
                       near_best=(frozenset("p"), frozenset("qp"), frozenset("r")))
    got = held_out_accuracy(data, k=1)
    # A -> q (miss), B -> p (miss, but not separable from q), C -> q (miss)
    assert got["exact"] == 0.0 and got["not_separable"] == pytest.approx(1 / 3)
    assert (got["points"], got["networks"], got["majority"]) == (3, 3, "p")
    assert got["majority_exact"] == pytest.approx(1 / 3)
    plain = TrainingSet(data.x, data.labels, data.headers, data.networks)  # no near_best
    assert held_out_accuracy(plain, k=1)["not_separable"] == 0.0


def test_learned_answers_from_the_shipped_training_set(capsys):
    data = load_training()
    assert len(set(data.networks)) >= 20 and len(data.labels) >= 100
    assert set(data.labels) <= set(CH6_STRATEGIES)
    assert all(lab in near for lab, near in zip(data.labels, data.near_best, strict=True))
    out = recommend(None, SMALL, "nearby", 100, 30)
    assert out["method"] == "learned" and out["trained_on"] == "shipped"
    assert out["strategy"] in CH6_STRATEGIES and out["expected_header_entries"] > 0
    assert 0 <= out["accuracy_leave_one_network_out"] <= 1
    assert main(["recommend", "--topology", SMALL, "--scenario", "nearby", "--churn", "100",
                 "--method", "learned"]) == 0
    assert out["strategy"] in capsys.readouterr().out
    assert main(["recommend", "--evaluate", "--json"]) == 0
    held = json.loads(capsys.readouterr().out)["held_out"]
    assert held["exact"] == pytest.approx(held_out_accuracy(data)["exact"])
    assert held["exact"] <= held["not_separable"] <= 1


def test_build_training_writes_a_loadable_set(tmp_path):
    from experiments.reports.recommend import build_training

    out = tmp_path / "training.json"
    nets = (SMALL, "jellyfish:switches=10,degree=4,seed=3")
    summary = build_training(out, networks=nets, seeds=2, notifications=2, workers=1)
    data = load_training(out)
    assert len(data.labels) == 12 and set(data.networks) == set(nets)
    assert summary["held_out"]["points"] == 12 and summary["networks"] == list(nets)
    with pytest.raises(SpecError, match="cannot read"):
        load_training(tmp_path / "missing.json")
