"""Vectorised table lookup for large ternary/range tables (same result as ``SwitchConfig.lookup``).

Content-filter tables hold thousands of range/ternary entries with no exact
key to bucket on, so :meth:`sim.dataplanes.control_state.SwitchConfig.lookup` scans them one
by one. :func:`lookup` computes the same first match in precedence order
(higher priority first, then longer LPM prefixes, ties in insertion order:
exactly ``SwitchConfig``'s stable sort) with numpy over per-table arrays.
The arrays are built once per table and kept in the ``table_index`` store of
the :class:`sim.dataplanes.caches.Caches` the caller passes (the data plane
that owns it), keyed by the table's tuple of entries itself. Tables with an
exact field in every entry go to ``SwitchConfig.lookup`` (its buckets are
already small). A property test checks the two agree.
"""

from __future__ import annotations

import numpy as np

from sim.dataplanes.caches import Caches, Identity, or_fresh
from sim.dataplanes.control_state import Exact, Lpm, Range, SwitchConfig, TableEntry, Ternary


class _Index:
    def __init__(self, entries: tuple[TableEntry, ...]) -> None:
        order = sorted(range(len(entries)), key=lambda i: (
            -entries[i].priority,
            -sum(m.prefix_len for _, m in entries[i].match if isinstance(m, Lpm))))
        self.entries = [entries[i] for i in order]
        width = len(entries[0].match) if entries else 0
        n = len(order)
        self.lo = np.zeros((n, width), dtype=object)
        self.hi = np.zeros((n, width), dtype=object)
        self.mask = np.zeros((n, width), dtype=object)
        self.value = np.zeros((n, width), dtype=object)
        self.is_range = np.zeros((n, width), dtype=bool)
        for r, e in enumerate(self.entries):
            for c, (_, m) in enumerate(e.match):
                if isinstance(m, Range):
                    self.lo[r, c], self.hi[r, c], self.is_range[r, c] = m.low, m.high, True
                elif isinstance(m, Ternary):
                    self.mask[r, c], self.value[r, c] = m.mask, m.value & m.mask
                elif isinstance(m, Lpm):
                    shift = m.width - m.prefix_len
                    mask = ((1 << m.width) - 1) >> shift << shift
                    self.mask[r, c], self.value[r, c] = mask, m.value & mask
                else:  # Exact
                    self.mask[r, c], self.value[r, c] = -1, m.value
        # int64 fast path when every bound fits
        try:
            self.lo = self.lo.astype(np.int64)
            self.hi = self.hi.astype(np.int64)
            self.mask = self.mask.astype(np.int64)
            self.value = self.value.astype(np.int64)
        except OverflowError:
            pass

    def first(self, key: tuple[int, ...]) -> TableEntry | None:
        if not self.entries:
            return None
        k = np.asarray(key, dtype=self.lo.dtype)
        ok_range = (self.lo <= k) & (k <= self.hi)
        ok_tern = (k & self.mask) == self.value
        ok = np.asarray(np.where(self.is_range, ok_range, ok_tern).all(axis=1))
        i = int(np.argmax(ok))
        return self.entries[i] if ok[i] else None


def lookup(config: SwitchConfig, table: str, *key: int,
           caches: Caches | None = None) -> TableEntry | None:
    """``config.lookup(table, *key)``, vectorised for tables without an exact key field.

    Parameters
    ----------
    config : SwitchConfig
        The switch's installed state.
    table : str
        The table applied.
    *key : int
        One value per match field.
    caches : Caches, optional
        Holds the table's index (``caches.table_index``) between calls; None
        builds it for this call only (correct, slow).
    """
    entries = config.tables.get(table, ())
    if len(entries) < 32 or any(
            all(isinstance(e.match[i][1], Exact) for e in entries)
            for i in range(len(entries[0].match))):
        return config.lookup(table, *key)
    store = or_fresh(caches).table_index
    ck = (Identity(entries), table)
    index = store.get(ck)
    if index is None:
        index = store.put(ck, _Index(entries))
    return index.first(tuple(key))  # type: ignore[no-any-return]
