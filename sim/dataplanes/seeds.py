"""Seeds by name: stable seeds from canonical parameters, child generators by component.

``stable_seed(obj)`` hashes the canonical JSON of ``obj`` (sorted keys) with
SHA-256, never Python's ``hash()``, so a cell gets the same seed on every
machine and engine. ``child_rng(root, "component", *path)`` derives an
independent ``numpy.random.Generator`` per component name, so adding a
component never shifts another component's stream.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: the identity of a config."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def stable_seed(obj: Any) -> int:
    """A 63-bit seed from the canonical JSON of ``obj``."""
    digest = hashlib.sha256(canonical_json(obj).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def child_rng(root: int, component: str, *path: int) -> np.random.Generator:
    """Generator for ``component`` (and optional integer path, e.g. run index)."""
    seq = np.random.SeedSequence([root, *path], spawn_key=(zlib.crc32(component.encode()),))
    return np.random.Generator(np.random.PCG64(seq))


# -- many runs of one component: child_rng's generators, seeded in one batch --------
#
# ``child_rng(root, component, run)`` builds a SeedSequence and a PCG64 per run
# (about 14 us). :func:`child_rngs` computes the same PCG64 states for a range of
# runs at once: numpy's SeedSequence hash (``numpy/random/bit_generator.pyx``,
# ``mix_entropy`` and ``generate_state``) vectorised over the runs, then PCG64's
# seeding (``pcg64_set_seed``: state = 0, inc = 2 seq + 1, step, add, step). The
# generators are bit for bit those of child_rng (tests/sim/test_seeds.py).

_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_M32 = 0xFFFFFFFF
_POOL = 4
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
_M128 = (1 << 128) - 1


def _uint32_words(value: int) -> list[int]:
    """numpy's ``_int_to_uint32_array``: little-endian 32-bit words, [0] for 0."""
    if value == 0:
        return [0]
    words = []
    while value > 0:
        words.append(value & _M32)
        value >>= 32
    return words


def seed_words(root: int, component: str, runs: int, start: int = 0) -> np.ndarray:
    """The SeedSequence words of ``child_rng(root, component, run)`` for run = ``start`` ..
    ``start + runs - 1``.

    A ``(4, runs)`` uint64 array: column ``i`` is run ``start + i``'s
    ``SeedSequence.generate_state(4, np.uint64)``, the words PCG64 seeds
    itself with (:func:`_pcg64_states`; the compiled draws of
    :mod:`sim.dataplanes.pcg64_draws`). Runs must be below 2**32.
    """
    if start < 0 or runs < 0 or start + runs > 1 << 32:
        raise ValueError(f"seed_words: runs must lie in [0, 2**32), got {start} + {runs}")
    return seed_words_of(root, component, np.arange(start, start + runs, dtype=np.int64))


def seed_words_of(root: int, component: str, runs: np.ndarray) -> np.ndarray:
    """:func:`seed_words` of the runs listed in ``runs`` (any order, each in [0, 2**32))."""
    runs = np.asarray(runs, dtype=np.int64)
    if len(runs) and (runs.min() < 0 or runs.max() >= 1 << 32):
        raise ValueError("seed_words_of: runs must lie in [0, 2**32)")
    root_words = _uint32_words(root)
    prefix = len(root_words) + 1  # every run below 2**32 is one word
    entropy = np.zeros((max(prefix, _POOL) + 1, len(runs)), dtype=np.uint32)
    for i, w in enumerate(root_words):
        entropy[i] = w
    entropy[len(root_words)] = runs.astype(np.uint32)
    entropy[-1] = zlib.crc32(component.encode())  # the spawn key, after padding to the pool
    hash_const = _INIT_A

    def hashmix(value: np.ndarray) -> np.ndarray:
        nonlocal hash_const
        value = value ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_A) & _M32
        value = value * np.uint32(hash_const)
        return value ^ (value >> np.uint32(16))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result: np.ndarray = np.uint32(_MIX_MULT_L) * x - np.uint32(_MIX_MULT_R) * y
        return result ^ (result >> np.uint32(16))

    pool = [hashmix(entropy[i]) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL, len(entropy)):
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(entropy[src]))
    words = []
    hash_const = _INIT_B
    for i in range(8):  # generate_state(4, uint64): 8 uint32 words, two per uint64
        value = pool[i % _POOL] ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_B) & _M32
        value = value * np.uint32(hash_const)
        words.append((value ^ (value >> np.uint32(16))).astype(np.uint64))
    return np.stack([(words[2 * k + 1] << np.uint64(32)) | words[2 * k] for k in range(4)])


def _pcg64_states(root: int, component: str, runs: range) -> list[tuple[int, int]]:
    """PCG64 (state, inc) of ``child_rng(root, component, run)`` for each run in ``runs``
    (a range of step 1; ``pcg64_set_seed`` of :func:`seed_words`)."""
    words = seed_words(root, component, len(runs), runs.start)
    out = []
    for s0, s1, i0, i1 in zip(*(w.tolist() for w in words), strict=True):
        inc = (((i0 << 64) | i1) << 1 | 1) & _M128
        state = (inc + ((s0 << 64) | s1)) & _M128  # one step from 0 gives inc; add the seed
        out.append(((state * _PCG_MULT + inc) & _M128, inc))  # and step again
    return out


@dataclass(frozen=True, slots=True)
class RunStreams:
    """The generators ``child_rng(root, component, run)`` of runs ``start`` ..
    ``start + count - 1``.

    What a batched draw needs (:meth:`sim.workloads.receivers.Population.draw_runs`):
    the generators themselves (:meth:`generators`, numpy draws) or their
    seed words (:meth:`words`, the compiled draws of
    :mod:`sim.dataplanes.pcg64_draws`), which give the same numbers.
    """

    root: int
    component: str
    count: int
    #: the first run
    start: int = 0

    def generators(self) -> Iterator[np.random.Generator]:
        """:func:`child_rngs` of these runs (draw from each before asking for the next)."""
        return child_rngs(self.root, self.component, self.count, self.start)

    def words(self) -> np.ndarray:
        """:func:`seed_words` of these runs."""
        return seed_words(self.root, self.component, self.count, self.start)


def child_rngs(root: int, component: str, runs: int, start: int = 0
               ) -> Iterator[np.random.Generator]:
    """``child_rng(root, component, run)`` for run = ``start``, ..., ``start + runs - 1``, in order.

    One generator, re-seeded per run with exactly the state child_rng would
    give it: draw from each before asking for the next (the previous one is
    the same object, now at the next run's state). Its ``bit_generator.seed_seq``
    is not the run's SeedSequence: callers that ``spawn`` need :func:`child_rng`.
    """
    stop = start + runs
    if stop > 1 << 32:  # two-word runs: not batched
        yield from (child_rng(root, component, run) for run in range(start, stop))
        return
    bits = np.random.PCG64(0)
    rng = np.random.Generator(bits)
    batch = 4096
    for first in range(start, stop, batch):
        for state, inc in _pcg64_states(root, component, range(first, min(stop, first + batch))):
            bits.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                          "has_uint32": 0, "uinteger": 0}
            yield rng
