"""``replacement``: one publisher's subscribers replaced step by step (seed 000 Fig. 4.8).

The population fixes, from the cell's workload generator,

- one publisher (uniform over the hosts) and its subscribers:
  ``round(percent% x |hosts|)`` other hosts, uniformly (as ``uniform``);
- their roles: ``round_half_up((100 - ratio_dynamic)% x n)`` of them, drawn
  uniformly, are *stable* (reached by the hybrid's stored tree T'), the
  others *dynamic* (reached by hop labels);
- one replacement sequence over all n original subscribers, drawn under the
  policy ``HEAD`` (dynamic first), ``RULE`` (stable first) or ``RAND`` (a
  fair coin between the two categories, or uniform over all with
  ``rand_mode="uniform"``). A replaced subscriber's role goes to its
  replacement, drawn uniformly from the current non-subscribers (publisher
  excluded). The draws are those of
  :func:`strategies.virtual_tree.hybrid_churn.draw_replacements`, which
  :func:`strategies.virtual_tree.hybrid_churn.churn_updates` replays too, so
  the same generator gives the same sequence there and here.

Notification number ``run`` (0, 1, ...) sees the subscribers after
``min(run x step, 100)%`` of the original subscribers were replaced (the
steps are nested: each extends the previous one), and all current
subscribers receive it; ``stable(publisher, run)`` is the current stable
set, which runners pass to the strategy as ``Knowledge.stable``. With the
``hybrid`` strategy (T' from ``Knowledge.stable``) the row's
``control_writes`` is then the number of P4Runtime writes between
consecutive steps, and its running sum over ``run`` is the y-axis of
Fig. 4.8 against ``run x step`` on the x-axis.

The runners call ``receivers(publisher, rng)`` once per notification in
order and do not pass the notification number, so the population counts
its calls; pass ``run=`` explicitly where it is known.

References
----------
Seed 000 §4.4.3 (Fig. 4.8: hybrid 30:70, HEAD / RULE / RAND, rule updates
against the share of replaced subscribers); shared/notes/seed000-ch1-4.md
§5.3, §7.15.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from sim.workloads.receivers import (
    Population,
    PopulationBase,
    StepAxis,
    register_receiver_model,
)
from topologies.model import Topology
from topologies.registry import check

Policy = Literal["HEAD", "RULE", "RAND"]
RandMode = Literal["coin", "uniform"]


def round_half_up(numerator: int, denominator: int) -> int:
    """``round(numerator / denominator)`` with halves rounded up, in integers.

    The same rounding as ``strategies.virtual_tree.labels.round_half_up`` (the
    hybrid's stable share), repeated here so that this module does not load
    the strategy layer at import time.
    """
    return (2 * numerator + denominator) // (2 * denominator)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplacementParams:
    """Parameters of the ``replacement`` receiver model.

    Parameters
    ----------
    percent : float
        Subscribers of the publisher, in percent of all hosts (default 30).
    ratio_dynamic : int
        Share of the subscribers that are dynamic (hop labels), in percent;
        the rest are stable (stored tree). 30 for the thesis's 30:70 hybrid.
    policy : {"HEAD", "RULE", "RAND"}
        Which original subscriber is replaced next.
    step : int
        Percent of the original subscribers replaced per notification; must
        divide 100 (10 gives 0, 10, ..., 100 % over 11 notifications).
    rand_mode : {"coin", "uniform"}
        ``RAND`` variant: a fair coin between the categories (the text's
        reading, digest §7.15) or uniform over all remaining originals.
    """

    percent: float = 30.0
    ratio_dynamic: int = 30
    policy: Policy = "HEAD"
    step: int = 10
    rand_mode: RandMode = "coin"

    def __post_init__(self) -> None:
        check(0 < self.percent < 100, f"percent must be in (0, 100), got {self.percent}")
        check(0 <= self.ratio_dynamic <= 100,
              f"ratio_dynamic must be in [0, 100], got {self.ratio_dynamic}")
        check(0 < self.step <= 100 and 100 % self.step == 0,
              f"step must be a percentage that divides 100, got {self.step}")


@dataclass(frozen=True, slots=True)
class Replacement:
    """One replacement: ``victim`` leaves, ``new`` takes over its role."""

    victim: str
    new: str
    stable: bool


@dataclass(frozen=True)
class ReplacementPlan:
    """A publisher's original subscribers, their roles and the replacement order."""

    publisher: str
    subscribers: tuple[str, ...]
    stable: frozenset[str]
    replacements: tuple[Replacement, ...]

    def after(self, k: int) -> tuple[frozenset[str], frozenset[str]]:
        """(subscribers, stable subscribers) after the first ``k`` replacements."""
        check(0 <= k <= len(self.replacements),
              f"k must be in 0..{len(self.replacements)}, got {k}")
        current, stable = set(self.subscribers), set(self.stable)
        for r in self.replacements[:k]:
            current.remove(r.victim)
            current.add(r.new)
            if r.stable:
                stable.remove(r.victim)
                stable.add(r.new)
        return frozenset(current), frozenset(stable)


def replacement_plan(topology: Topology, publisher: str, subscribers: frozenset[str] | list[str],
                     *, policy: Policy, rng: np.random.Generator, tree_percent: int = 70,
                     rand_mode: RandMode = "coin") -> ReplacementPlan:
    """Draw the stable split and the full replacement sequence.

    The draws, and the SpecError on bad input, are those of
    :func:`strategies.virtual_tree.hybrid_churn.draw_replacements`, the
    sequence :func:`strategies.virtual_tree.hybrid_churn.churn_updates`
    replays, so the same generator gives the same replacements in both.

    References
    ----------
    Seed 000 §4.4.3 (Fig. 4.8); shared/notes/seed000-ch1-4.md §7.15.
    """
    from strategies.virtual_tree.hybrid_churn import draw_replacements  # strategy layer, on demand

    subs, stable, steps = draw_replacements(topology, publisher, subscribers, policy=policy,
                                            rng=rng, tree_percent=tree_percent,
                                            rand_mode=rand_mode)
    return ReplacementPlan(publisher, subs, stable,
                           tuple(Replacement(victim, new, is_stable)
                                 for victim, new, is_stable in steps))


class ReplacementPopulation(PopulationBase):
    """One publisher whose subscribers are replaced ``step`` percent per notification.

    Stateful only in counting ``receivers`` calls (see the module docstring);
    :meth:`draw` passes the notification number. Knows its stable subscribers
    (:meth:`stable`).
    """

    def __init__(self, plan: ReplacementPlan, step: int) -> None:
        self.plan = plan
        self.step = step
        self.publishers: tuple[str, ...] = (plan.publisher,)
        self._calls = 0

    def replaced_at(self, run: int) -> int:
        """Original subscribers replaced before notification ``run``."""
        check(run >= 0, f"run must be >= 0, got {run}")
        share = min(run * self.step, 100)
        return round_half_up(share * len(self.plan.subscribers), 100)

    def _check(self, publisher: str) -> None:
        check(publisher == self.plan.publisher,
              f"this population's publisher is {self.plan.publisher}, not {publisher}")

    def receivers(self, publisher: str, rng: np.random.Generator,
                  run: int | None = None) -> frozenset[str]:
        """Every current subscriber; ``run`` defaults to the number of earlier calls."""
        self._check(publisher)
        if run is None:
            run = self._calls
        self._calls = run + 1
        return self.plan.after(self.replaced_at(run))[0]

    def draw(self, publisher: str, run: int, rng: np.random.Generator
             ) -> tuple[None, frozenset[str]]:
        """No event; every subscriber at notification ``run``."""
        return None, self.receivers(publisher, rng, run=run)

    def stable(self, publisher: str, run: int) -> frozenset[str]:
        """The stable subscribers at notification ``run``."""
        self._check(publisher)
        return self.plan.after(self.replaced_at(run))[1]


@register_receiver_model(
    "replacement", ReplacementParams,
    "one publisher, percent% subscribers (ratio_dynamic% dynamic), step% replaced per "
    "notification under HEAD/RULE/RAND (seed 000 Fig. 4.8)",
    steps=StepAxis("subscribers replaced", "%",
                   lambda params, run: float(min(run * params.step, 100))))
def _replacement(params: ReplacementParams, topology: Topology, rng: np.random.Generator
                 ) -> Population:
    hosts = topology.hosts
    check(len(hosts) >= 3, "replacement needs at least 3 hosts")
    publisher = hosts[int(rng.integers(len(hosts)))]
    others = [h for h in hosts if h != publisher]
    # keep at least one non-subscriber so that every subscriber can be replaced
    k = max(1, min(round(params.percent / 100 * len(hosts)), len(others) - 1))
    subs = frozenset(others[int(i)] for i in rng.choice(len(others), size=k, replace=False))
    plan = replacement_plan(topology, publisher, subs, policy=params.policy, rng=rng,
                            tree_percent=100 - params.ratio_dynamic, rand_mode=params.rand_mode)
    return ReplacementPopulation(plan, params.step)
