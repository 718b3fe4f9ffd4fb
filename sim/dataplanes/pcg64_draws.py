"""numpy's PCG64 ``Generator`` draws, reproduced bit for bit for compiled batches.

A cell draws each notification from its own generator, ``child_rng(seed,
"notification", run)`` (:mod:`sim.dataplanes.seeds`): the publisher
(``rng.integers(n)``), then, under the uniform receiver model, the receivers
(``rng.choice(m, k, replace=False)``). Through numpy that costs tens of
microseconds per run (a generator re-seeded, two Python calls, index
arrays). :data:`publisher_and_sample` draws every run of a cell in one
compiled loop, on the PCG64 states :func:`sim.dataplanes.seeds.seed_words`
computes in one batch (:data:`publisher_and_index` and :data:`samples` do the same
for the ``tenants`` model: a publisher, then one of its groups; each drawn
group's members from the group's own stream), with numpy's algorithms (numpy 2.x,
``numpy/random/_generator.pyx``, ``src/distributions/distributions.c``,
``src/pcg64/pcg64.h``) consuming the stream exactly as numpy does:

PCG64 (XSL-RR 128/64)
    State and increment are 128-bit integers, here (high, low) pairs of
    uint64 words. A 64-bit draw steps the state (``state * MULT + inc``
    mod 2**128) and outputs ``rotr64(high ^ low, state >> 122)``. A 32-bit
    draw (``next_uint32``) returns the low half of a 64-bit draw and keeps
    the high half for the next 32-bit draw (``has_uint32``/``uinteger``).
    Seeding (``pcg64_set_seed`` of the SeedSequence's four uint64 words
    ``s0, s1, i0, i1``): ``inc = (i << 1) | 1``, ``state = inc + s``, one step.
``integers(0, n)`` (int64, ``random_bounded_uint64_fill``)
    range ``r = n - 1``: nothing drawn when ``r = 0``, else Lemire's
    multiply-and-reject on 32-bit draws (``buffered_bounded_lemire_uint32``;
    every range here is below 2**32).
``choice(pop, k, replace=False)`` (no ``p``, ``shuffle=True``)
    Floyd's algorithm when ``pop <= 10000`` or ``k <= pop // 50``: for ``j``
    in ``[pop - k, pop)`` draw ``v = random_bounded_uint64(0, j)`` (Lemire as
    above, nothing drawn for ``j = 0``) and take ``v``, or ``j`` if ``v`` was
    taken before; then shuffle the picks in place (``_shuffle_int(k, 1)``: for
    ``i = k - 1 .. 1`` swap ``i`` with ``random_bounded_uint64(0, i)``).
    Otherwise the tail shuffle: ``_shuffle_int(pop, max(pop - k, 1))`` over
    ``arange(pop)``, keeping the last ``k``.

numba is optional: :data:`publisher_and_sample` is None without it (or with
``STACKCAST_NO_JIT=1``), and callers draw through numpy's own generators
(:func:`sim.dataplanes.seeds.child_rngs`), which define the result.
``tests/sim/test_pcg64_draws.py`` checks the kernel against numpy over many
seeds, populations and sample sizes, both branches of ``choice`` included;
:func:`kernel_agrees` repeats a small check at run time, so a numpy whose
algorithms changed falls back to numpy instead of changing rows.

References
----------
shared/STYLE.md "Seeds by name"; numpy's ``Generator.integers`` and
``Generator.choice`` (NEP 19 stream compatibility is not promised across
numpy versions, hence :func:`kernel_agrees`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import numpy as np


def _numba_njit() -> Callable[..., Any] | None:
    """``numba.njit(cache=True, nogil=True)``; None without numba or with ``STACKCAST_NO_JIT=1``."""
    if os.environ.get("STACKCAST_NO_JIT", "") not in ("", "0"):
        return None
    try:
        import numba
    except ImportError:  # optional: callers draw through numpy
        return None
    return numba.njit(cache=True, nogil=True)  # type: ignore[no-any-return]


_NJIT = _numba_njit()
#: Whether the draws below are compiled.
JIT = _NJIT is not None


def _kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled (the kernels call each other compiled), or ``fn`` itself."""
    return fn if _NJIT is None else _NJIT(fn)


_M32 = np.uint64(0xFFFFFFFF)
_MULT_HI = np.uint64(2549297995355413924)
_MULT_LO = np.uint64(4865540595714422341)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_S32 = np.uint64(32)
#: above this population ``choice`` may take the tail shuffle (numpy's heuristic)
FLOYD_MAX_POP = 10_000
#: ``choice``'s cutoff with ``shuffle=True``
_CUTOFF = 50

# The state of one generator: a uint64 array [state high, state low, inc high, inc low,
# has_uint32, uinteger].


@_kernel
def _mulhi(a: np.uint64, b: np.uint64) -> np.uint64:
    """High 64 bits of the 128-bit product ``a * b``."""
    a0, a1 = a & _M32, a >> _S32
    b0, b1 = b & _M32, b >> _S32
    w0 = a0 * b0
    t = a1 * b0 + (w0 >> _S32)
    w1 = (t & _M32) + a0 * b1
    return a1 * b1 + (t >> _S32) + (w1 >> _S32)


@_kernel
def _step(st: np.ndarray) -> None:
    """``state = state * MULT + inc`` (mod 2**128)."""
    hi, lo = st[0], st[1]
    low = lo * _MULT_LO
    high = _mulhi(lo, _MULT_LO) + hi * _MULT_LO + lo * _MULT_HI
    new_lo = low + st[3]
    carry = _ONE if new_lo < low else _ZERO
    st[0] = high + st[2] + carry
    st[1] = new_lo


@_kernel
def _next64(st: np.ndarray) -> np.uint64:
    _step(st)
    hi = st[0]
    x = hi ^ st[1]
    rot = hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@_kernel
def _next32(st: np.ndarray) -> np.uint64:
    if st[4] != _ZERO:
        st[4] = _ZERO
        return st[5]
    v = _next64(st)
    st[4] = _ONE
    st[5] = v >> _S32
    return v & _M32


@_kernel
def _seed(st: np.ndarray, words: np.ndarray, run: int) -> None:
    """``pcg64_set_seed`` with the SeedSequence words ``words[:, run]`` (s0, s1, i0, i1)."""
    s0, s1, i0, i1 = words[0, run], words[1, run], words[2, run], words[3, run]
    inc_hi = (i0 << _ONE) | (i1 >> np.uint64(63))
    inc_lo = (i1 << _ONE) | _ONE
    lo = inc_lo + s1  # one step from 0 gives inc; add the seed
    carry = _ONE if lo < inc_lo else _ZERO
    st[0] = inc_hi + s0 + carry
    st[1] = lo
    st[2] = inc_hi
    st[3] = inc_lo
    st[4] = _ZERO
    st[5] = _ZERO
    _step(st)


@_kernel
def _bounded(st: np.ndarray, rng: int) -> np.int64:
    """``random_bounded_uint64(0, rng)`` for ``rng < 2**32 - 1`` (Lemire, 32-bit draws)."""
    if rng == 0:
        return np.int64(0)
    r = np.uint64(rng)
    excl = r + _ONE
    m = _next32(st) * excl
    leftover = m & _M32
    if leftover < excl:
        threshold = (_M32 - r) % excl
        while leftover < threshold:
            m = _next32(st) * excl
            leftover = m & _M32
    return np.int64(m >> _S32)


@_kernel
def _shuffle(st: np.ndarray, data: np.ndarray, n: int, first: int) -> None:
    """numpy's ``_shuffle_int(n, first)``: for i = n - 1 .. first, swap i with a draw in [0, i]."""
    for i in range(n - 1, first - 1, -1):
        j = _bounded(st, i)
        data[i], data[j] = data[j], data[i]


@_kernel
def _choice(st: np.ndarray, pop: int, k: int, out: np.ndarray, taken: np.ndarray,
            work: np.ndarray) -> None:
    """``choice(pop, k, replace=False)`` into ``out[:k]``; ``taken`` (``pop`` zeros) is
    left zeroed, ``work`` holds ``pop`` integers for the tail shuffle."""
    if pop > FLOYD_MAX_POP and k > pop // _CUTOFF:
        for i in range(pop):
            work[i] = i
        _shuffle(st, work, pop, max(pop - k, 1))
        for i in range(k):
            out[i] = work[pop - k + i]
        return
    for j in range(pop - k, pop):
        v = _bounded(st, j)
        if taken[v] != 0:
            v = j
        taken[v] = 1
        out[j - pop + k] = v
    for i in range(k):
        taken[out[i]] = 0
    _shuffle(st, out, k, 1)


@_kernel
def _publisher_and_sample(words: np.ndarray, publishers: int, pop: int, k: int,
                          drawn: np.ndarray, picks: np.ndarray) -> None:
    """Run r (column r of ``words``): ``drawn[r] = integers(publishers)``, then
    ``picks[r] = choice(pop, k, replace=False)`` (k = 0: nothing drawn)."""
    st = np.zeros(6, np.uint64)
    taken = np.zeros(max(pop, 1), np.uint8)
    work = np.zeros(max(pop, 1), np.int64)
    for r in range(words.shape[1]):
        _seed(st, words, r)
        drawn[r] = _bounded(st, publishers - 1)
        if k > 0:
            _choice(st, pop, k, picks[r], taken, work)


@_kernel
def _publisher_and_index(words: np.ndarray, publishers: int, key: np.ndarray,
                         ranges: np.ndarray, drawn: np.ndarray, index: np.ndarray) -> None:
    """Run r (column r of ``words``): ``drawn[r] = integers(publishers)``, then
    ``index[r] = integers(ranges[key[drawn[r]]])`` (a second draw whose range the
    first one picks; ranges >= 1)."""
    st = np.zeros(6, np.uint64)
    for r in range(words.shape[1]):
        _seed(st, words, r)
        a = _bounded(st, publishers - 1)
        drawn[r] = a
        index[r] = _bounded(st, ranges[key[a]] - 1)


@_kernel
def _samples(words: np.ndarray, pops: np.ndarray, ks: np.ndarray, offsets: np.ndarray,
             out: np.ndarray) -> None:
    """Column i of ``words``: ``choice(pops[i], ks[i], replace=False)`` into
    ``out[offsets[i]:offsets[i + 1]]`` (``ks[i] = 0``: nothing drawn)."""
    top = 1
    for i in range(pops.shape[0]):
        top = max(top, pops[i])
    st = np.zeros(6, np.uint64)
    taken = np.zeros(top, np.uint8)
    work = np.zeros(top, np.int64)
    for i in range(words.shape[1]):
        if ks[i] > 0:
            _seed(st, words, i)
            _choice(st, pops[i], ks[i], out[offsets[i]:offsets[i + 1]], taken, work)


#: The compiled :func:`_publisher_and_sample` (None without numba or with ``STACKCAST_NO_JIT=1``).
publisher_and_sample: Callable[..., Any] | None = (
    _publisher_and_sample if JIT else None)  # type: ignore[assignment]
#: The compiled :func:`_publisher_and_index` (None like :data:`publisher_and_sample`).
publisher_and_index: Callable[..., Any] | None = (
    _publisher_and_index if JIT else None)  # type: ignore[assignment]
#: The compiled :func:`_samples` (None like :data:`publisher_and_sample`).
samples: Callable[..., Any] | None = _samples if JIT else None  # type: ignore[assignment]


@functools.cache
def kernel_agrees() -> bool:
    """Whether the compiled draws equal this numpy's on a few seeds and sizes, both
    branches of ``choice`` included (False without numba); checked once per process."""
    if publisher_and_sample is None:
        return False
    from sim.dataplanes.seeds import child_rngs, seed_words

    for root, pubs, pop, k in ((1, 255, 254, 76), (2**40 + 3, 1, 5, 5), (7, 30, 20_000, 900),
                               (9, 2, 20_000, 3)):
        runs = 3
        words = seed_words(root, "check", runs)
        drawn = np.empty(runs, np.int64)
        picks = np.empty((runs, k), np.int64)
        publisher_and_sample(words, pubs, pop, k, drawn, picks)
        for r, g in enumerate(child_rngs(root, "check", runs)):
            if int(g.integers(pubs)) != drawn[r] or \
                    g.choice(pop, size=k, replace=False).tolist() != picks[r].tolist():
                return False
    # the two-step draw and per-stream samples (the tenants model's batches)
    words = seed_words(5, "check", 4)
    key, ranges = np.array([1, 0, 1], np.int64), np.array([1, 7], np.int64)
    pops, ks = np.array([6, 20_000, 9, 20_000], np.int64), np.array([5, 1_000, 0, 2], np.int64)
    offsets = np.concatenate(([0], np.cumsum(ks)))
    drawn, index, out = (np.empty(4, np.int64), np.empty(4, np.int64),
                         np.empty(offsets[-1], np.int64))
    publisher_and_index(words, 3, key, ranges, drawn, index)  # type: ignore[misc]
    samples(words, pops, ks, offsets, out)  # type: ignore[misc]
    for r, g in enumerate(child_rngs(5, "check", 4)):
        a = int(g.integers(3))
        if a != drawn[r] or int(g.integers(ranges[key[a]])) != index[r]:
            return False
    for r, g in enumerate(child_rngs(5, "check", 4)):
        if ks[r] and g.choice(pops[r], size=ks[r], replace=False).tolist() != \
                out[offsets[r]:offsets[r + 1]].tolist():
            return False
    return True


__all__ = ["FLOYD_MAX_POP", "JIT", "kernel_agrees", "publisher_and_index",
           "publisher_and_sample", "samples"]
