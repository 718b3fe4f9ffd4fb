"""Pick a virtual-tree strategy for a network from learned examples (seed 000 §7.2).

Chapter 7's first open problem: collect a network's diameter, degree
fluctuation, client distribution and churn, classify the scenario and pick
the strategy with the smallest expected header. ``stackcast recommend``
answers by simulation by default (:mod:`experiments.reports.recommend_simulate`);
this module is ``--method learned``. It learns the map from a small training
set shipped in the package (``recommend_training.json``, built by
:func:`build_training`, the simulated answers on the Table 6.1 networks), or
from results of a user's ch. 6 sweep (``--results``: ``ch6-best-strategies``,
``ch6-churn``, any spec with the ``clustered`` receiver model):

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
   figure for a network never seen). :func:`held_out_accuracy` scores the
   leave-one-network-out predictions against the simulated answer: exactly,
   and as "not separable from the simulated best".
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

from experiments.reports.recommend_simulate import CH6_STRATEGIES
from topologies.registry import SpecError, check, parse_spec
from topologies.specs import load_topology

#: The training set shipped with the package (``stackcast recommend --build-training``).
TRAINING_PATH = Path(__file__).with_name("recommend_training.json")

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
    #: per point, the strategies not separable from the best (best included);
    #: empty when unknown (sweep results): then only ``labels`` count.
    near_best: tuple[frozenset[str], ...] = ()


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


def _held_out_predictions(data: TrainingSet, k: int, by_network: bool
                          ) -> list[tuple[int, str]]:
    """(point, predicted strategy) for every point, its group left out of training."""
    n = len(data.labels)
    groups = data.networks if by_network else tuple(str(i) for i in range(n))
    out = []
    for g in sorted(set(groups)):
        test = np.array([i for i in range(n) if groups[i] == g])
        train = np.array([i for i in range(n) if groups[i] != g])
        if len(train) == 0:
            continue
        model = KnnRecommender(k).fit(data, train)
        out += [(int(i), model.predict(data.x[i])[0]) for i in test]
    return out


def cross_validate(data: TrainingSet, k: int = 3, by_network: bool = False) -> float:
    """Accuracy of leave-one-out (or leave-one-network-out) predictions."""
    pred = _held_out_predictions(data, k, by_network)
    return sum(p == data.labels[i] for i, p in pred) / len(pred) if pred else float("nan")


def held_out_accuracy(data: TrainingSet, k: int = 3) -> dict[str, Any]:
    """Leave-one-network-out accuracy against the simulated answer.

    ``exact``: the prediction is the simulated best; ``not_separable``: the
    prediction is the best or not separable from it (needs ``near_best``;
    else equal to ``exact``). Also the accuracy of always answering the most
    frequent label of the training set (``majority``, both ways), the bar to beat.
    """
    pred = _held_out_predictions(data, k, by_network=True)
    near = data.near_best or tuple(frozenset((lab,)) for lab in data.labels)
    tried = len(pred)
    majority = max(sorted(set(data.labels)), key=data.labels.count) if data.labels else ""
    return {
        "points": tried, "networks": len(set(data.networks)), "k": k,
        "exact": sum(p == data.labels[i] for i, p in pred) / tried if tried else float("nan"),
        "not_separable": sum(p in near[i] for i, p in pred) / tried if tried else float("nan"),
        "majority": majority,
        "majority_exact": data.labels.count(majority) / len(data.labels) if data.labels
        else float("nan"),
        "majority_not_separable": sum(majority in s for s in near) / len(near) if near
        else float("nan"),
    }


# -- the shipped training set ---------------------------------------------------------

#: The Table 6.1 networks of ``ch6-best-strategies.toml``.
TRAINING_NETWORKS = (
    "Chinanet", "Litnet", "Cernet", "Ntt", "Cesnet200706", "Carnet", "Dfn", "Telcove",
    "Forthnet", "Bellsouth", "Garr200902", "Arnes", "BeyondTheNetwork", "Uunet", "Tw",
    "Uninett", "Renater2010", "Surfnet", "Iris", "Palmetto", "BtLatinAmerica", "Bellcanada",
    "Sanet", "LambdaNet", "HiberniaGlobal", "Ntelos", "RedBestel", "VtlWavenet2008")
TRAINING_CHURN = (0, 100)
TRAINING_SUBSCRIBERS = (15.0, 30.0, 45.0)
TRAINING_SEEDS = 4


def training_points(index: int) -> list[tuple[str, int, float]]:
    """(scenario, churn, subscribers) of network ``index``: every scenario and
    churn level; the subscriber percentage rotates over networks and scenarios
    (so the churn levels of one layout share its plan and VT installs)."""
    return [(sc, ch, TRAINING_SUBSCRIBERS[(index + j) % len(TRAINING_SUBSCRIBERS)])
            for j, sc in enumerate(SCENARIOS) for ch in TRAINING_CHURN]


def _network_points(task: tuple[int, str, int, int]) -> list[dict[str, Any]]:
    """The simulated training points of one network (one worker task)."""
    from experiments.reports.recommend_simulate import simulate
    from sim.dataplanes.caches import Caches

    index, topology, seeds, notifications = task
    caches = Caches()
    out = []
    for scenario, churn, subscribers in training_points(index):
        r = simulate(topology, scenario, churn, subscribers, seeds=seeds,
                     notifications=notifications, candidates=CH6_STRATEGIES, caches=caches)
        out.append({
            "network": topology, "scenario": scenario, "churn": churn,
            "subscribers": subscribers,
            "x": [*network_features(topology), *workload_features(scenario, churn, subscribers)],
            "best": r.best, "not_separable": list(r.not_separable),
            "means": {s.strategy: round(s.mean, 4) for s in r.scores}})
    return out


def build_training(out: str | Path, *, networks: tuple[str, ...] | None = None,
                   seeds: int = TRAINING_SEEDS, notifications: int = 20, workers: int = 2,
                   progress: bool = False) -> dict[str, Any]:
    """Simulate the training networks and write the training set (JSON) to ``out``.

    Each network runs :func:`~experiments.reports.recommend_simulate.simulate`
    (the ch. 6 strategies, 40 rules) at every point of
    :func:`training_points`; networks run in ``workers`` processes. Returns
    the summary written beside the points.
    """
    import json
    import multiprocessing
    import time

    from tqdm import tqdm

    nets = tuple(f"zoo:{n}" for n in TRAINING_NETWORKS) if networks is None else networks
    check(workers >= 1, f"workers must be >= 1, got {workers}")
    for t in nets:
        load_topology(t)  # fail before any work on a bad name
    tasks = [(i, t, seeds, notifications) for i, t in enumerate(nets)]
    start = time.perf_counter()
    points: list[dict[str, Any]] = []
    bar = tqdm(total=len(tasks), desc="training networks", unit="net", disable=not progress)
    if workers == 1:
        for task in tasks:
            points += _network_points(task)
            bar.update()
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for got in pool.imap(_network_points, tasks):
                points += got
                bar.update()
    bar.close()
    summary = {
        "description": "stackcast recommend --method learned: simulated best VT strategy "
                       "(ch. 6 set, 40 rules) per network and clustered workload",
        "command": "stackcast recommend --build-training "
                   "experiments/reports/recommend_training.json",
        "features": list(FEATURES), "strategies": list(CH6_STRATEGIES),
        "seeds": seeds, "notifications": notifications, "networks": list(nets),
        "build_seconds": round(time.perf_counter() - start, 1),
    }
    data = training_from_points(points)
    summary["held_out"] = held_out_accuracy(data)
    Path(out).write_text(json.dumps({**summary, "points": points}, indent=1) + "\n")
    return summary


def training_from_points(points: list[dict[str, Any]]) -> TrainingSet:
    """The :class:`TrainingSet` of stored training points."""
    check(bool(points), "the training set holds no points")
    return TrainingSet(
        np.array([p["x"] for p in points], dtype=float), tuple(p["best"] for p in points),
        tuple(dict(p["means"]) for p in points), tuple(p["network"] for p in points),
        tuple(frozenset((p["best"], *p["not_separable"])) for p in points))


def load_training(path: str | Path = TRAINING_PATH) -> TrainingSet:
    """The training set stored at ``path`` (default: the one shipped).

    Raises
    ------
    SpecError
        If the file is missing or not a training set.
    """
    import json

    try:
        raw = json.loads(Path(path).read_text())
        return training_from_points(raw["points"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecError(f"cannot read the training set {str(path)!r}: {exc}") from None


def recommend(results: str | Path | None, topology: str, scenario: str, churn: float,
              subscribers: float = 30.0, k: int = 3) -> dict[str, Any]:
    """The learned recommendation for one network and workload, with its
    cross-validated accuracy; trained on ``results`` (a sweep's result
    directory) or, if None, on the shipped training set.

    Raises
    ------
    FileNotFoundError
        If ``results`` holds no result files.
    SpecError
        On a bad topology, scenario or percentage, or no usable results.
    """
    if results is None:
        data = load_training()
    else:
        from experiments.storage.results import read_results

        data = training_set(read_results(results))
    x = np.array((*network_features(topology), *workload_features(scenario, churn,
                                                                     subscribers)))
    strategy, header = KnnRecommender(k).fit(data).predict(x)
    held = held_out_accuracy(data, k)
    return {
        "method": "learned", "trained_on": "shipped" if results is None else str(results),
        "topology": topology, "scenario": scenario, "churn": churn,
        "subscribers": subscribers, "strategy": strategy,
        "expected_header_entries": header,
        "features": dict(zip(FEATURES, x.tolist(), strict=True)),
        "training_points": len(data.labels), "networks": len(set(data.networks)),
        "accuracy_leave_one_out": cross_validate(data, k),
        "accuracy_leave_one_network_out": held["exact"],
        "accuracy_leave_one_network_out_not_separable": held["not_separable"],
    }


__all__ = ["FEATURES", "TRAINING_PATH", "KnnRecommender", "SpecError", "TrainingSet",
           "build_training", "cross_validate", "held_out_accuracy", "load_training",
           "network_features", "recommend", "training_from_points", "training_set"]
