"""Weighted draws, as NumPy's ``Generator.choice`` makes them.

``Generator.choice(n, size=k, replace=False, p=p)`` draws in rounds: ``k - m``
uniform doubles (``random``), the weights of the ``m`` items found so far set
to 0, the cumulative sum of the weights divided by its last value, and each
double looked up in it (``searchsorted``, right side); the new items of a
round are taken in the order they first occur. Every call also validates
``p`` with several array passes, which cost far more than the draws for the
small populations of the clustered workload (a few dozen hosts: about 0.2 ms
a call, most of a ch. 6 cell's workload).

:func:`choice_without_replacement` makes the same rounds on Python floats:
the cumulative sum in order (``np.cumsum`` adds sequentially), the same
division and the same lookup (:func:`bisect.bisect_right`), so the picks and
the generator's state afterwards are NumPy's (``tests/sim/test_weighted_draws.py``
compares them with ``Generator.choice`` itself). Weights that are not all
positive and finite, or do not sum to 1 (well within NumPy's tolerance), go
to NumPy (its checks and errors).

:func:`choice_one` is ``Generator.choice(n, p=p)`` (one item, with
replacement: one double looked up in the same normalised cumulative sum),
which k-means++ seeding draws (:func:`sim.dataplanes.switch_clusters.kmeans`);
zero weights are allowed there, as NumPy allows them.

References
----------
NumPy ``numpy/random/_generator.pyx``, ``Generator.choice`` (the ``p`` branch
without replacement).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import accumulate

import numpy as np


def choice_without_replacement(rng: np.random.Generator, p: np.ndarray, k: int) -> list[int]:
    """``rng.choice(len(p), size=k, replace=False, p=p).tolist()``, drawing the same.

    Parameters
    ----------
    rng : numpy.random.Generator
    p : numpy.ndarray
        Item probabilities (float64, summing to 1 as NumPy requires).
    k : int
        Items to draw (at most the number of items).
    """
    weights = p.tolist()
    if k <= 0 or k > len(weights) or not _finite(weights) or min(weights) <= 0 \
            or not abs(math.fsum(weights) - 1.0) <= _SUM_TOLERANCE:
        return rng.choice(len(weights), size=k, replace=False, p=p).tolist()  # type: ignore[no-any-return]
    found: list[int] = []
    while len(found) < k:
        draws = rng.random(k - len(found)).tolist()
        for i in found:
            weights[i] = 0.0
        cdf = normalised_cdf(weights)
        new: list[int] = []
        for x in draws:
            i = bisect_right(cdf, x)
            if i not in new:
                new.append(i)
        found.extend(new)
    return found


def choice_one(rng: np.random.Generator, p: np.ndarray) -> int:
    """``int(rng.choice(len(p), p=p))``, drawing the same.

    Probabilities that are negative, not finite or do not sum to 1 within
    NumPy's tolerance go to NumPy (its errors).
    """
    weights = p.tolist()
    if not weights or not _finite(weights) or min(weights) < 0 \
            or not abs(math.fsum(weights) - 1.0) <= _SUM_TOLERANCE:
        return int(rng.choice(len(weights), p=p))
    return bisect_right(normalised_cdf(weights), rng.random())


#: well inside the tolerance NumPy accepts for ``sum(p) == 1`` (sqrt of float64's eps)
_SUM_TOLERANCE = 1e-12


def _finite(weights: list[float]) -> bool:
    """No weight is infinite or NaN: their sum is finite (or else sent to NumPy, which
    decides alike when finite weights overflow the sum)."""
    return math.isfinite(sum(weights))


def normalised_cdf(weights: list[float]) -> list[float]:
    """``c = np.cumsum(weights); c /= c[-1]`` on Python floats, bit for bit."""
    cdf = list(accumulate(weights))
    last = cdf[-1]
    return [c / last for c in cdf]
