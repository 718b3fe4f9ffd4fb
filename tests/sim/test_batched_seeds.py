"""``child_rngs`` seeds a cell's notification generators in one batch; every
generator must be exactly ``child_rng``'s (same PCG64 state, same draws)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.seeds import child_rng, child_rngs

ROOTS = [0, 1, 2**32 - 1, 2**32, 2**40 + 7, 2**63 - 1, 123456789012345678]


@pytest.mark.parametrize("root", ROOTS)
@pytest.mark.parametrize("component", ["notification", "population", ""])
def test_states_equal_child_rng(root, component):
    got = [g.bit_generator.state for g in child_rngs(root, component, 200)]
    assert got == [child_rng(root, component, r).bit_generator.state for r in range(200)]


@given(st.integers(0, 2**63 - 1), st.integers(0, 40))
def test_draws_equal_child_rng(root, runs):
    got, want = [], []
    for run, g in enumerate(child_rngs(root, "notification", runs)):
        got.append((int(g.integers(255)), g.choice(254, size=run % 77, replace=False).tolist(),
                    g.random(3).tolist()))
    for run in range(runs):
        g = child_rng(root, "notification", run)
        want.append((int(g.integers(255)), g.choice(254, size=run % 77, replace=False).tolist(),
                     g.random(3).tolist()))
    assert got == want


def test_batches_join_seamlessly():
    """Past the 4096-run batch the states still follow child_rng."""
    rngs = child_rngs(7, "notification", 4100)
    states = [g.bit_generator.state for g in rngs]
    assert len(states) == 4100
    for run in (0, 4095, 4096, 4099):
        assert states[run] == child_rng(7, "notification", run).bit_generator.state


def test_a_generator_is_reseeded_not_advanced():
    """A run's draws never depend on how much the previous run drew."""
    first = [int(g.integers(10**9)) for g in child_rngs(3, "x", 5)]
    for g in child_rngs(3, "x", 5):
        g.random(1000)
    again = [int(g.integers(10**9)) for g in child_rngs(3, "x", 5)]
    assert first == again == [int(child_rng(3, "x", r).integers(10**9)) for r in range(5)]
    assert not np.array_equal(first, first[::-1])
