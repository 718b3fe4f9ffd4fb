"""Pick a virtual-tree strategy for a network by simulating it (seed 000 §7.2).

``stackcast recommend`` (default ``--method simulate``) answers for any
topology spec, ``file:PATH`` included, without a prior sweep:

1. Candidates: the ch. 6 strategies of ``ch6-best-strategies.toml``
   (``source-routed`` and the nine ``vt-*``; 40 rules per switch) and the
   fabric-only ``topo-based`` of ch. 5. A candidate whose
   :meth:`~strategies.base.Strategy.check_applicable` refuses the topology or
   workload is skipped with its reason.
2. Workload: the ``clustered`` receiver model at the given scenario, churn
   and subscriber percentage, ``seeds`` x ``notifications`` (default 20 x
   20), through the one cell pipeline
   (:func:`experiments.cells.pipeline.cell_rows`) with one shared
   :class:`~sim.dataplanes.caches.Caches`. The workload of a seed depends only
   on the topology, receiver model and seed (:mod:`experiments.cells.spec`),
   so every strategy sees the same notifications.
3. Statistic: per strategy, the mean ``header_entries`` of each seed; the
   estimate is the mean of the per-seed means with a two-sided 95 %
   Student-t interval (n - 1 degrees of freedom; deterministic, no
   resampling).
4. Separability: because the strategies are measured on the same
   notifications, a strategy is compared with the best by the paired 95 %
   t-interval of the per-seed differences (strategy - best). If that interval
   contains 0 the strategy is "not separable from the best". The marginal
   intervals of step 3 are shown too, but their overlap is not the test: the
   seed-to-seed spread of the workload, shared by all strategies, makes them
   overlap even when every seed ranks two strategies the same way.

Deviations: the thesis only names automated selection as future work; the
candidate set, the workload size and the paired test are this module's
choices. ``header_entries`` counts as in the rows of ``stackcast run``
(one hop label per receiver host link included, the same for every
strategy).

References
----------
Seed 000 §7.2 (automated strategy selection), §6.5-6.6 (ch. 6 evaluation:
40 rules, 30 % publishers, clustered migration scenarios); digest ch. 5-7
§6-7.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from experiments.cells.pipeline import cell_rows
from experiments.cells.spec import ExperimentSpec, parse_spec_dict, validate_cells
from sim.dataplanes.caches import Caches
from topologies.registry import SpecError, check

#: The ch. 6 strategies (``experiments/specs/ch6-best-strategies.toml``).
CH6_STRATEGIES = ("source-routed", "vt-broadcast", "vt-random", "vt-random-variant",
                  "vt-cycles", "vt-partitions", "vt-clusters", "vt-relation",
                  "vt-freq-relation", "vt-hybrid")
#: Candidates: the ch. 6 set and the fabric-only VT strategy of ch. 5.
CANDIDATES = (*CH6_STRATEGIES, "topo-based")
#: VT entries per switch (ch. 6, Fig. 6.14/6.15).
MAX_RULES = 40
SCENARIOS = ("uniform", "nearby", "distant")
DEFAULT_SEEDS = 20
DEFAULT_NOTIFICATIONS = 20

# Two-sided 95 % quantiles of Student's t, t_{0.975}(df), df = 1..30.
_T975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
         2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
         2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
         2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272)
_Z975 = 1.959963985


def t_quantile_975(df: int) -> float:
    """t_{0.975}(df): the table for df <= 30, a Cornish-Fisher expansion above
    (error < 1e-5)."""
    check(df >= 1, f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the two-sided 95 % Student-t interval of the mean.

    Raises
    ------
    SpecError
        With fewer than two values (no spread to estimate).
    """
    n = len(values)
    check(n >= 2, f"a confidence interval needs at least 2 seeds, got {n}")
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyScore:
    """One strategy's mean header entries (per-seed means, their 95 % interval)
    and its paired 95 % interval of (this - best)."""

    strategy: str
    mean: float
    ci_low: float
    ci_high: float
    n: int
    diff_low: float
    diff_high: float
    separable: bool
    per_seed: tuple[float, ...]


def rank(per_seed: Mapping[str, Sequence[float]]) -> tuple[StrategyScore, ...]:
    """Rank strategies by mean of per-seed mean header entries (ties: name).

    ``per_seed[s][i]`` is strategy ``s``'s mean at seed ``i``; every strategy
    has the same seeds in the same order (paired). The best has a zero
    difference interval and ``separable=False``.

    Raises
    ------
    SpecError
        If no strategy is given, the seed counts differ or are below two.
    """
    check(bool(per_seed), "no strategy to rank")
    counts = {len(v) for v in per_seed.values()}
    check(len(counts) == 1, f"every strategy needs the same seeds; got counts {sorted(counts)}")
    stats = {s: t_interval(v) for s, v in per_seed.items()}
    order = sorted(per_seed, key=lambda s: (stats[s][0], s))
    best = per_seed[order[0]]
    out = []
    for s in order:
        diffs = [a - b for a, b in zip(per_seed[s], best, strict=True)]
        _, lo, hi = t_interval(diffs)
        out.append(StrategyScore(strategy=s, mean=stats[s][0], ci_low=stats[s][1],
                                 ci_high=stats[s][2], n=len(diffs), diff_low=lo, diff_high=hi,
                                 separable=lo > 0 or hi < 0,
                                 per_seed=tuple(float(v) for v in per_seed[s])))
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Ranking:
    """The answer of ``--method simulate``: scores best first, skipped candidates."""

    topology: str
    receivers: str
    seeds: tuple[int, ...]
    notifications: int
    scores: tuple[StrategyScore, ...]
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def best(self) -> str:
        return self.scores[0].strategy

    @property
    def not_separable(self) -> tuple[str, ...]:
        """Strategies other than the best whose difference from it is not significant."""
        return tuple(s.strategy for s in self.scores[1:] if not s.separable)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": "simulate", "topology": self.topology, "receivers": self.receivers,
            "seeds": list(self.seeds), "notifications": self.notifications,
            "strategy": self.best, "not_separable_from_best": list(self.not_separable),
            "interval": "95 % Student-t over per-seed means; separability: paired t over "
                        "per-seed differences from the best",
            "ranking": [{"strategy": s.strategy, "mean_header_entries": s.mean,
                         "ci95": [s.ci_low, s.ci_high], "n": s.n,
                         "diff_from_best_ci95": [s.diff_low, s.diff_high],
                         "separable_from_best": s.separable} for s in self.scores],
            "skipped": [{"strategy": n, "reason": r} for n, r in self.skipped],
        }


def receivers_spec(scenario: str, churn: float, subscribers: float) -> str:
    """The ``clustered`` receiver spec of a scenario, churn and subscriber percentage."""
    check(scenario in SCENARIOS, f"scenario must be one of {', '.join(SCENARIOS)}; "
                                 f"got {scenario!r}")
    check(0 <= churn <= 100 and float(churn).is_integer(),
          f"churn must be a whole percentage in [0, 100], got {churn:g}")
    check(0 < subscribers <= 100, f"subscribers must be in (0, 100], got {subscribers:g}")
    return f"clustered:scenario={scenario},churn={int(churn)},subscribers={subscribers:g}"


def recommendation_spec(topology: str, receivers: str, seeds: Sequence[int],
                        notifications: int, candidates: Sequence[str] = CANDIDATES
                        ) -> tuple[ExperimentSpec, tuple[tuple[str, str], ...]]:
    """The validated spec of the applicable candidates and the skipped ones.

    Raises
    ------
    SpecError
        On a bad topology, receiver spec, seeds or notifications, or if no
        candidate applies.
    """
    check(len(seeds) >= 2, f"--seeds must be >= 2 for a confidence interval, got {len(seeds)}")
    base = parse_spec_dict({
        "experiment": {"name": "recommend", "notifications": notifications,
                       "seeds": list(seeds)},
        "grid": {"topology": [topology], "strategy": ["source-routed"],
                 "receivers": [receivers]},
    }, "stackcast recommend")
    applicable, skipped = [], []
    for name in candidates:
        params = {name: {"max_rules": MAX_RULES}} if name != "source-routed" else {}
        try:
            validate_cells(replace(base, strategies=(name,), strategy_params=params))
        except SpecError as exc:
            skipped.append((name, str(exc).split(f"{receivers}: ", 1)[-1]))
            continue
        applicable.append(name)
    check(bool(applicable), f"no candidate strategy applies to {topology}: "
                            + "; ".join(f"{n}: {r}" for n, r in skipped))
    params = {n: {"max_rules": MAX_RULES} for n in applicable if n != "source-routed"}
    return replace(base, strategies=tuple(applicable), strategy_params=params), tuple(skipped)


def simulate(topology: str, scenario: str, churn: float, subscribers: float = 30.0, *,
             seeds: int = DEFAULT_SEEDS, notifications: int = DEFAULT_NOTIFICATIONS,
             first_seed: int = 1, candidates: Sequence[str] = CANDIDATES,
             caches: Caches | None = None, progress: bool = False) -> Ranking:
    """Simulate the applicable candidates on ``topology`` and rank them.

    Seeds ``first_seed .. first_seed + seeds - 1``; the answer is a function
    of the arguments only (``caches`` never changes a row).

    Raises
    ------
    SpecError
        On bad input (see :func:`recommendation_spec`, :func:`receivers_spec`).
    """
    check(first_seed >= 0, f"--seed must be >= 0, got {first_seed}")
    receivers = receivers_spec(scenario, churn, subscribers)
    spec, skipped = recommendation_spec(topology, receivers,
                                        tuple(range(first_seed, first_seed + seeds)),
                                        notifications, candidates)
    from tqdm import tqdm

    caches = caches if caches is not None else Caches()
    means: dict[str, dict[int, float]] = defaultdict(dict)
    for cell in tqdm(spec.cells(), desc="recommend", unit="cell", disable=not progress):
        rows = cell_rows(cell, caches=caches)
        means[cell.strategy][cell.seed] = math.fsum(r["header_entries"] for r in rows) / len(rows)
    per_seed = {s: [means[s][k] for k in spec.seeds] for s in spec.strategies}
    return Ranking(topology=topology, receivers=receivers, seeds=spec.seeds,
                   notifications=spec.notifications, scores=rank(per_seed), skipped=skipped)


def format_ranking(r: Ranking) -> str:
    """The ranking as a text table and the answer."""
    lines = [f"{r.topology}, {r.receivers}: {len(r.seeds)} seeds x {r.notifications} "
             "notifications per strategy",
             f"  {'strategy':<18} {'mean entries':>12}  {'95 % CI':>17}  {'n':>3}  vs best"]
    for s in r.scores:
        mark = "best" if s is r.scores[0] else ("not separable" if not s.separable
                                                else f"+{s.diff_low:.2f}..{s.diff_high:.2f}")
        lines.append(f"  {s.strategy:<18} {s.mean:>12.2f}  [{s.ci_low:>7.2f}, {s.ci_high:>7.2f}]"
                     f"  {s.n:>3}  {mark}")
    for name, reason in r.skipped:
        lines.append(f"  skipped {name}: {reason}")
    tied = r.not_separable
    lines.append(f"answer: {r.best}" + (f" (not separable from the best: {', '.join(tied)})"
                                        if tied else " (separable from every other strategy)"))
    lines.append("  95 % CI: Student t over per-seed means; 'not separable': the paired 95 % "
                 "t-interval of the per-seed differences from the best contains 0")
    return "\n".join(lines)


__all__ = ["CANDIDATES", "CH6_STRATEGIES", "MAX_RULES", "Ranking", "StrategyScore",
           "format_ranking", "rank", "receivers_spec", "recommendation_spec", "simulate",
           "t_interval", "t_quantile_975"]
