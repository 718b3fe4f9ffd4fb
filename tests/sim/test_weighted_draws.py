"""Weighted draws without replacement equal NumPy's ``Generator.choice`` exactly.

:func:`sim.dataplanes.weighted_draws.choice_without_replacement` must pick the
same items in the same order as ``rng.choice(n, size=k, replace=False, p=p)``
and leave the generator where NumPy leaves it, for random weights (skewed,
as the clustered workload's dense/sparse weights, or not), sizes and seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.weighted_draws import (
    choice_one,
    choice_without_replacement,
    normalised_cdf,
)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 80), data=st.data())
def test_choice_without_replacement_is_numpys(seed, n, data):
    weights = np.array(data.draw(st.lists(
        st.one_of(st.sampled_from([1.0, 9.0]), st.floats(0.0, 100.0)), min_size=n, max_size=n)))
    if weights.sum() <= 0:
        weights[0] = 1.0
    p = weights / weights.sum()
    k = data.draw(st.integers(0, n))
    want_rng, got_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    try:
        want = want_rng.choice(n, size=k, replace=False, p=p).tolist()
    except ValueError:  # fewer positive weights than k: NumPy's error
        want = "error"
    try:
        got = choice_without_replacement(got_rng, p, k)
    except ValueError:
        got = "error"
    assert got == want
    assert got_rng.random() == want_rng.random()  # the generator's state after


@settings(max_examples=300, deadline=None)
@given(weights=st.lists(st.one_of(st.just(0.0), st.floats(1e-9, 1e3)), min_size=1, max_size=80))
def test_normalised_cdf_is_numpys_bit_for_bit(weights):
    """The lookup table of each round (zeroed weights included), as NumPy computes it."""
    if sum(weights) <= 0:
        weights[-1] = 1.0
    p = np.array(weights) / np.sum(weights)
    want = np.cumsum(p)
    want /= want[-1]
    assert normalised_cdf(p.tolist()) == want.tolist()


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       weights=st.lists(st.one_of(st.just(0.0), st.floats(0.0, 1e3)), min_size=1, max_size=80))
def test_choice_one_is_numpys(seed, weights):
    """One weighted item with replacement (zero weights allowed), as k-means++ draws it."""
    if sum(weights) <= 0:
        weights[0] = 1.0
    p = np.array(weights) / np.sum(weights)
    want_rng, got_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    assert choice_one(got_rng, p) == int(want_rng.choice(len(p), p=p))
    assert got_rng.random() == want_rng.random()


def test_a_draw_on_a_cumulative_value_takes_the_next_item():
    """A double equal to a value of the cumulative sum picks the item after it (NumPy's
    ``searchsorted(side="right")``): p = [x, 1 - x] for the first double x >= 0.5 a
    seed draws (then 1 - x is exact and the sum is 1)."""
    seed = next(s for s in range(100) if np.random.default_rng(s).random() >= 0.5)
    x = np.random.default_rng(seed).random()
    p = np.array([x, 1.0 - x])
    assert normalised_cdf(p.tolist())[0] == x
    want = int(np.random.default_rng(seed).choice(2, p=p))
    assert want == 1
    assert choice_one(np.random.default_rng(seed), p) == want
    assert choice_without_replacement(np.random.default_rng(seed), p, 1) == \
        np.random.default_rng(seed).choice(2, size=1, replace=False, p=p).tolist()


@pytest.mark.parametrize("p", [[0.5, float("nan"), 0.5], [0.5, float("inf")], [1.5, -0.5],
                               [float("-inf"), 1.0], [0.3, 0.3]])
def test_weights_numpy_refuses_raise_numpys_error(p):
    """NaN, infinite or negative weights, or ones not summing to 1: NumPy decides."""
    p = np.array(p)
    for draw, numpy_draw in ((lambda g: choice_one(g, p), lambda g: g.choice(len(p), p=p)),
                             (lambda g: choice_without_replacement(g, p, 1),
                              lambda g: g.choice(len(p), size=1, replace=False, p=p))):
        with pytest.raises(ValueError) as want:
            numpy_draw(np.random.default_rng(1))
        with pytest.raises(ValueError) as got:
            draw(np.random.default_rng(1))
        assert str(got.value) == str(want.value)
