"""Pick a virtual-tree strategy for a network from sweep results (seed 000 §7.2).

Chapter 7's first open problem: collect a network's diameter, degree
fluctuation, client distribution and churn, classify the scenario and pick
the strategy with the smallest expected header. This module learns that map
from results of the ch. 6 sweeps (``ch6-best-strategies``, ``ch6-churn``, any
spec with the ``clustered`` receiver model):

1. Every (topology, receiver model, payload) point of the results is one
   training example; its label is the strategy with the smallest mean
   ``header_entries`` (ties: name), and the mean header of every strategy is
   kept.
2. Features: the switch graph's diameter, degree variance (σ_k², the
   thesis's "node degree fluctuation"), mean degree and size; the migration
   scenario (one-hot), churn and subscriber percentages.
3. Classifier: k-nearest neighbours on standardised features (inverse
   distance weights; ties: smaller mean header). Accuracy is reported by
   leave-one-out and by leave-one-network-out cross-validation (the honest
   figure for a network never seen).
4. The expected header of the chosen strategy is the neighbours' weighted
   mean header for it.

No third-party learning library is needed (numpy only).

Deviations: the thesis only names the problem; the features, the k-NN model
and the cross-validation scheme are this module's choices. Labels are noisy
when a sweep has few notifications per point.

References
----------
Seed 000 §7.2 (automated strategy selection), §6.6.2 (Fig. 6.15: best
strategy per network against d and σ_k²); digest ch. 5-7 §7 item 1.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from topologies.registry import SpecError, check, parse_spec
from topologies.specs import load_topology

SCENARIOS = ("uniform", "nearby", "distant")
FEATURES = ("diameter", "degree_variance", "mean_degree", "switches",
            *(f"scenario_{s}" for s in SCENARIOS), "churn", "subscribers")


@lru_cache(maxsize=256)
def network_features(topology_spec: str) -> tuple[float, float, float, float]:
    """(diameter, degree variance, mean degree, switches) of the switch graph."""
    sg = load_topology(topology_spec).switch_graph
    degrees = np.array([d for _, d in sg.degree()], dtype=float)
    return (float(nx.diameter(sg)), float(degrees.var()), float(degrees.mean()),
            float(len(degrees)))


def workload_features(scenario: str, churn: float, subscribers: float) -> tuple[float, ...]:
    check(scenario in SCENARIOS, f"scenario must be one of {', '.join(SCENARIOS)}; "
                                 f"got {scenario!r}")
    check(0 <= churn <= 100, f"churn must be in [0, 100], got {churn}")
    check(0 <= subscribers <= 100, f"subscribers must be in [0, 100], got {subscribers}")
    return (*(1.0 if scenario == s else 0.0 for s in SCENARIOS), float(churn),
            float(subscribers))


def receiver_features(receivers_model: str) -> tuple[float, ...] | None:
    """Workload features of a ``clustered`` receiver spec (None for other models)."""
    kind, raw = parse_spec(receivers_model)
    if kind != "clustered":
        return None
    return workload_features(raw.get("scenario", "nearby"), float(raw.get("churn", 0)),
                             float(raw.get("subscribers", 30)))


@dataclass(frozen=True)
class TrainingSet:
    """One row per result point: features, best strategy, mean header per strategy."""

    x: np.ndarray
    labels: tuple[str, ...]
    headers: tuple[dict[str, float], ...]
    networks: tuple[str, ...]


def training_set(rows: Any) -> TrainingSet:
    """Build the training set from result rows (a pyarrow table or a list of dicts).

    Raises
    ------
    SpecError
        If no row uses the ``clustered`` receiver model.
    """
    records = rows.to_pylist() if hasattr(rows, "to_pylist") else list(rows)
    sums: dict[tuple[str, str, int], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [0.0, 0.0]))
    for r in records:
        key = (r["topology"], r["receivers_model"], int(r["payload_bytes"]))
        acc = sums[key][r["strategy"]]
        acc[0] += r["header_entries"]
        acc[1] += 1
    xs, labels, headers, nets = [], [], [], []
    for (topo, recv, _), per in sorted(sums.items()):
        wl = receiver_features(recv)
        if wl is None:
            continue
        means = {s: total / count for s, (total, count) in per.items() if count}
        best = min(sorted(means), key=lambda s: means[s])
        xs.append((*network_features(topo), *wl))
        labels.append(best)
        headers.append(means)
        nets.append(topo)
    check(bool(xs), "no results of the clustered receiver model to learn from "
                    "(run experiments/specs/ch6-best-strategies.toml or ch6-churn.toml)")
    return TrainingSet(np.array(xs, dtype=float), tuple(labels), tuple(headers), tuple(nets))


class KnnRecommender:
    """k-nearest-neighbour strategy recommender on standardised features."""

    def __init__(self, k: int = 3) -> None:
        check(k >= 1, f"k must be >= 1, got {k}")
        self.k = k

    def fit(self, data: TrainingSet, index: np.ndarray | None = None) -> KnnRecommender:
        idx = np.arange(len(data.labels)) if index is None else index
        self.data = data
        self.idx = idx
        x = data.x[idx]
        self.mu = x.mean(axis=0)
        self.sd = np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
        self.z = (x - self.mu) / self.sd
        return self

    def predict(self, x: np.ndarray) -> tuple[str, float]:
        """(strategy, expected mean header entries) for one feature vector."""
        d = np.sqrt((((x - self.mu) / self.sd - self.z) ** 2).sum(axis=1))
        near = np.argsort(d, kind="stable")[: self.k]
        weight: dict[str, float] = defaultdict(float)
        for j in near:
            weight[self.data.labels[self.idx[j]]] += 1.0 / (d[j] + 1e-9)

        def expected(strategy: str) -> float:
            vals = [(self.data.headers[self.idx[j]].get(strategy), 1.0 / (d[j] + 1e-9))
                    for j in near]
            vals = [(v, w) for v, w in vals if v is not None]
            return sum(v * w for v, w in vals) / sum(w for _, w in vals) if vals else float("inf")

        best = max(sorted(weight), key=lambda s: (weight[s], -expected(s)))
        return best, expected(best)


def cross_validate(data: TrainingSet, k: int = 3, by_network: bool = False) -> float:
    """Accuracy of leave-one-out (or leave-one-network-out) predictions."""
    n = len(data.labels)
    groups = data.networks if by_network else tuple(str(i) for i in range(n))
    hits = tried = 0
    for g in sorted(set(groups)):
        test = np.array([i for i in range(n) if groups[i] == g])
        train = np.array([i for i in range(n) if groups[i] != g])
        if len(train) == 0:
            continue
        model = KnnRecommender(k).fit(data, train)
        for i in test:
            hits += model.predict(data.x[i])[0] == data.labels[i]
            tried += 1
    return hits / tried if tried else float("nan")


def recommend(results: str | Path, topology: str, scenario: str, churn: float,
              subscribers: float = 30.0, k: int = 3) -> dict[str, Any]:
    """The recommendation for one network and workload, with its cross-validated accuracy.

    Raises
    ------
    FileNotFoundError
        If ``results`` holds no result files.
    SpecError
        On a bad topology, scenario or percentage, or no usable results.
    """
    from experiments.storage.results import read_results

    data = training_set(read_results(results))
    x = np.array((*network_features(topology), *workload_features(scenario, churn,
                                                                     subscribers)))
    strategy, header = KnnRecommender(k).fit(data).predict(x)
    return {
        "topology": topology, "scenario": scenario, "churn": churn,
        "subscribers": subscribers, "strategy": strategy,
        "expected_header_entries": header,
        "features": dict(zip(FEATURES, x.tolist(), strict=True)),
        "training_points": len(data.labels), "networks": len(set(data.networks)),
        "accuracy_leave_one_out": cross_validate(data, k),
        "accuracy_leave_one_network_out": cross_validate(data, k, by_network=True),
    }


__all__ = ["FEATURES", "KnnRecommender", "SpecError", "TrainingSet", "cross_validate",
           "network_features", "recommend", "training_set"]
