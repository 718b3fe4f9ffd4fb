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
        cols = [[_columns(m) for _, m in e.match] for e in entries]
        keys = [(-e.priority, -sum(c[5] for c in row)) for e, row in zip(entries, cols,
                                                                         strict=True)]
        order = sorted(range(len(entries)), key=keys.__getitem__)  # stable: ties keep order
        self.entries = [entries[i] for i in order]
        width = len(entries[0].match) if entries else 0
        shape = (len(order), width)
        lo, hi, mask, value, is_range = (
            [[c[j] for c in cols[i]] for i in order] for j in range(5))
        self.is_range = np.array(is_range, dtype=bool).reshape(shape)
        self.lo, self.hi, self.mask, self.value = (_int_array(x, shape)
                                                   for x in (lo, hi, mask, value))

    def first(self, key: tuple[int, ...]) -> TableEntry | None:
        if not self.entries:
            return None
        try:
            k = np.asarray(key, dtype=self.lo.dtype)
        except OverflowError:  # a key wider than int64 against int64 bounds
            k = np.asarray(key, dtype=object)
        ok_range = (self.lo <= k) & (k <= self.hi)
        ok_tern = (k & self.mask) == self.value
        ok = np.asarray(np.where(self.is_range, ok_range, ok_tern).all(axis=1))
        i = int(np.argmax(ok))
        return self.entries[i] if ok[i] else None


def _columns(m: Exact | Ternary | Lpm | Range) -> tuple[int, int, int, int, bool, int]:
    """(low, high, mask, value, is_range, prefix length) of one match field (unused: 0)."""
    if isinstance(m, Range):
        return m.low, m.high, 0, 0, True, 0
    if isinstance(m, Ternary):
        return 0, 0, m.mask, m.value & m.mask, False, 0
    if isinstance(m, Lpm):
        shift = m.width - m.prefix_len
        mask = ((1 << m.width) - 1) >> shift << shift
        return 0, 0, mask, m.value & mask, False, m.prefix_len
    return 0, 0, -1, m.value, False, 0  # Exact


def _int_array(rows: list[list[int]], shape: tuple[int, int]) -> np.ndarray:
    """int64 when every value fits, else Python ints (object)."""
    try:
        return np.array(rows, dtype=np.int64).reshape(shape)
    except OverflowError:
        return np.array(rows, dtype=object).reshape(shape)


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
