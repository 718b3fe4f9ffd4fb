"""Metrics of the timed engine: percentiles and time-weighted occupancy.

Pure helpers (no SimPy): the engine feeds them simulated times.

- :func:`percentile` / :func:`summary`: order statistics of latencies
  (linear interpolation between closest ranks, numpy's default method).
- :class:`TimeWeighted`: the time average of a piecewise-constant level
  (queue length, table occupancy) and its peak, the standard queueing
  "time-weighted mean" (Ciw/SimPy monitor style): sum of level x time held,
  divided by the observed span.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

PERCENTILES = (50.0, 90.0, 99.0)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``; NaN when there are none."""
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100]; got {q}")
    if len(values) == 0:
        return math.nan
    return float(np.percentile(np.asarray(values, dtype=float), q))


def summary(values: Sequence[float], qs: Iterable[float] = PERCENTILES) -> dict[str, float]:
    """Count, mean, max and the percentiles ``qs`` (keys ``p50``, ``p99``, ...)."""
    arr = np.asarray(values, dtype=float)
    out = {"count": float(len(arr)),
           "mean": float(arr.mean()) if len(arr) else math.nan,
           "max": float(arr.max()) if len(arr) else math.nan}
    for q in qs:
        out[f"p{q:g}"] = percentile(values, q)
    return out


@dataclass(slots=True)
class TimeWeighted:
    """Time average and peak of a level that changes at given times.

    Call :meth:`set` whenever the level changes (times must not decrease);
    :meth:`mean` closes the observation at ``t_end``.
    """

    t0: float = 0.0
    level: float = 0.0
    peak: float = 0.0
    _area: float = 0.0
    _t: float = field(default=0.0)

    def __post_init__(self) -> None:
        self._t = self.t0
        self.peak = max(self.peak, self.level)

    @classmethod
    def restore(cls, *, t0: float, t: float, level: float, peak: float, area: float
                ) -> TimeWeighted:
        """The tracker as :meth:`set` calls would have left it (for servers that keep
        the same four numbers inline, see :class:`sim.engines.timed.switch.FifoServer`)."""
        tw = cls(t0=t0, level=level, peak=peak)
        tw._area = area
        tw._t = t
        return tw

    def set(self, t: float, level: float) -> None:
        if t < self._t:
            raise ValueError(f"time went backwards: {t} < {self._t}")
        self._area += self.level * (t - self._t)
        self._t = t
        self.level = level
        if level > self.peak:
            self.peak = level

    def add(self, t: float, delta: float) -> None:
        self.set(t, self.level + delta)

    def mean(self, t_end: float) -> float:
        """Time-weighted mean over [t0, t_end] (the current level held to t_end)."""
        span = t_end - self.t0
        if span <= 0:
            return self.level
        area = self._area + self.level * max(t_end - self._t, 0.0)
        return area / span
