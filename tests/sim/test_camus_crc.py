"""Camus's ECMP hash over a batch of events: ``crc32_rows`` is ``zlib.crc32`` row by row.

The content fast path buckets each event by the CRC32 of its header
(:meth:`sim.dataplanes.camus.fast_path.CamusFamily.hashes`, seed 004 §4.2);
:func:`~sim.dataplanes.camus.fast_path.crc32_rows` computes it for all
events at once and must equal zlib's CRC32 of each header's bytes.
"""

from __future__ import annotations

import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.camus.fast_path import crc32_rows
from sim.dataplanes.event_header import PubsubLayout


@settings(max_examples=200, deadline=None)
@given(rows=st.integers(0, 9), width=st.integers(0, 24), seed=st.integers(0, 2**32 - 1))
def test_crc32_rows_is_zlib(rows: int, width: int, seed: int) -> None:
    data = np.random.default_rng(seed).integers(0, 256, (rows, width), dtype=np.uint8)
    assert crc32_rows(data).tolist() == [zlib.crc32(r.tobytes()) for r in data]


@settings(max_examples=100, deadline=None)
@given(dims=st.integers(1, 4), value_bits=st.sampled_from([8, 16, 32, 64]),
       seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6))
def test_hashes_are_the_packed_headers_crc32(dims: int, value_bits: int, seed: int,
                                            n: int) -> None:
    """The family's hashes: CRC32 of :meth:`PubsubLayout.pack` of each event."""
    from types import SimpleNamespace

    from sim.dataplanes.camus.fast_path import CamusFamily

    layout = PubsubLayout(dims, value_bits)
    top = min(value_bits, 63)
    values = np.random.default_rng(seed).integers(0, 1 << top, (n, dims), dtype=np.int64)
    info = SimpleNamespace(model=SimpleNamespace(layout=layout))
    got = CamusFamily.hashes(None, info, values)  # type: ignore[arg-type]
    assert got.tolist() == [zlib.crc32(layout.pack(v)) for v in values.tolist()]
