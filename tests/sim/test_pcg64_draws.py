"""The compiled draws of ``sim.dataplanes.pcg64_draws`` are numpy's own, bit for bit.

Each run r of a batch must draw what ``child_rng(root, component, r)`` draws
through numpy: ``integers(publishers)`` then ``choice(pop, k, replace=False)``,
both branches of ``choice`` (Floyd's algorithm with its in-place shuffle, and
the tail shuffle numpy takes for populations above 10,000), and the generator
left where numpy leaves it (the next draws agree too).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes import pcg64_draws
from sim.dataplanes.seeds import RunStreams, child_rng, child_rngs, seed_words, seed_words_of

needs_jit = pytest.mark.skipif(pcg64_draws.publisher_and_sample is None,
                               reason="numba not installed (or STACKCAST_NO_JIT=1)")


def numpy_draws(root: int, component: str, runs: int, publishers: int, pop: int, k: int,
                start: int = 0) -> tuple[list[int], list[list[int]]]:
    drawn, picks = [], []
    for g in child_rngs(root, component, runs, start):
        drawn.append(int(g.integers(publishers)))
        picks.append(g.choice(pop, size=k, replace=False).tolist() if k else [])
    return drawn, picks


def kernel_draws(root: int, component: str, runs: int, publishers: int, pop: int, k: int,
                 start: int = 0) -> tuple[list[int], list[list[int]]]:
    drawn = np.full(runs, -1, np.int64)
    picks = np.full((runs, k), -1, np.int64)
    assert pcg64_draws.publisher_and_sample is not None
    pcg64_draws.publisher_and_sample(seed_words(root, component, runs, start), publishers, pop, k,
                                     drawn, picks)
    return drawn.tolist(), picks.tolist()


@given(root=st.integers(0, 2**63 - 1), start=st.integers(0, 2**32 - 8),
       component=st.sampled_from(["notification", "population", ""]))
def test_seed_words_are_the_seed_sequences_words(root, start, component):
    got = seed_words(root, component, 5, start)
    for i in range(5):
        seq = np.random.SeedSequence([root, start + i], spawn_key=(zlib.crc32(component.encode()),))
        assert got[:, i].tolist() == seq.generate_state(4, np.uint64).tolist()


@needs_jit
@settings(max_examples=150)
@given(root=st.integers(0, 2**63 - 1), publishers=st.integers(1, 400),
       pop=st.integers(1, 400), data=st.data())
def test_small_populations_draw_as_numpy(root, publishers, pop, data):
    k = data.draw(st.integers(0, pop))
    start = data.draw(st.integers(0, 10**6))
    assert kernel_draws(root, "notification", 4, publishers, pop, k, start) == \
        numpy_draws(root, "notification", 4, publishers, pop, k, start)


@needs_jit
@settings(max_examples=25)
@given(root=st.integers(0, 2**63 - 1), pop=st.integers(10_001, 30_000), data=st.data())
def test_large_populations_take_both_branches_as_numpy(root, pop, data):
    """Above 10,000, ``choice`` keeps Floyd's algorithm for k <= pop // 50 and takes the
    tail shuffle beyond."""
    k = data.draw(st.one_of(st.integers(1, pop // 50), st.integers(pop // 50 + 1, pop)))
    assert kernel_draws(root, "x", 2, 7, pop, k) == numpy_draws(root, "x", 2, 7, pop, k)


@needs_jit
@pytest.mark.parametrize(("publishers", "pop", "k"), [
    (1, 1, 1), (1, 5, 0), (2, 2, 2), (255, 254, 254), (255, 254, 76), (2**31, 3, 1),
    (3, 10_000, 10_000), (3, 10_001, 200), (3, 10_001, 201), (3, 10_001, 10_001)])
def test_edges_draw_as_numpy(publishers, pop, k):
    for root in (0, 1, 2**63 - 1):
        assert kernel_draws(root, "notification", 3, publishers, pop, k) == \
            numpy_draws(root, "notification", 3, publishers, pop, k)


def test_run_streams_give_child_rngs_generators_and_words():
    runs = RunStreams(99, "notification", 6, start=10)
    states = [g.bit_generator.state["state"] for g in runs.generators()]
    every = [g.bit_generator.state["state"] for g in child_rngs(99, "notification", 16)]
    assert states == every[10:]
    assert runs.words().tolist() == seed_words(99, "notification", 16)[:, 10:].tolist()


def test_kernel_agrees_with_this_numpy():
    assert pcg64_draws.kernel_agrees() is (pcg64_draws.publisher_and_sample is not None)


@given(root=st.integers(0, 2**63 - 1),
       runs=st.lists(st.integers(0, 2**32 - 1), min_size=0, max_size=6))
def test_seed_words_of_listed_runs_are_their_seed_sequences_words(root, runs):
    got = seed_words_of(root, "members", np.array(runs, np.int64))
    assert got.shape == (4, len(runs))
    for i, run in enumerate(runs):
        assert got[:, i].tolist() == seed_words(root, "members", 1, run)[:, 0].tolist()


def test_seed_words_of_refuses_runs_outside_32_bits():
    with pytest.raises(ValueError, match="runs must lie in"):
        seed_words_of(1, "members", np.array([2**32], np.int64))


@needs_jit
@settings(max_examples=100)
@given(root=st.integers(0, 2**63 - 1), keys=st.lists(st.integers(0, 5), min_size=1, max_size=40),
       ranges=st.lists(st.integers(1, 3000), min_size=6, max_size=6))
def test_a_draw_whose_range_the_first_picks_draws_as_numpy(root, keys, ranges):
    key, span = np.array(keys, np.int64), np.array(ranges, np.int64)
    runs = 30
    drawn, index = np.full(runs, -1, np.int64), np.full(runs, -1, np.int64)
    assert pcg64_draws.publisher_and_index is not None
    pcg64_draws.publisher_and_index(seed_words(root, "notification", runs), len(key), key, span,
                                    drawn, index)
    for r, g in enumerate(child_rngs(root, "notification", runs)):
        a = int(g.integers(len(key)))
        assert (drawn[r], index[r]) == (a, int(g.integers(span[key[a]])))


@needs_jit
@settings(max_examples=60)
@given(root=st.integers(0, 2**63 - 1), data=st.data(),
       pops=st.lists(st.sampled_from([1, 2, 7, 50, 400, 9_999, 10_001, 30_000]), min_size=1,
                     max_size=5))
def test_samples_of_many_streams_draw_as_numpy(root, data, pops):
    """Every stream's ``choice``, both of numpy's branches (Floyd, tail shuffle)."""
    ks = [data.draw(st.sampled_from(sorted({0, 1, p // 60, p // 40, p}))) for p in pops]
    ids = data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=len(pops), max_size=len(pops),
                             unique=True))
    offsets = np.concatenate(([0], np.cumsum(ks))).astype(np.int64)
    out = np.full(offsets[-1], -1, np.int64)
    assert pcg64_draws.samples is not None
    pcg64_draws.samples(seed_words_of(root, "members", np.array(ids, np.int64)),
                        np.array(pops, np.int64), np.array(ks, np.int64), offsets, out)
    for i, run in enumerate(ids):
        want = child_rng(root, "members", run).choice(pops[i], size=ks[i], replace=False)
        assert out[offsets[i]:offsets[i + 1]].tolist() == want.tolist()
