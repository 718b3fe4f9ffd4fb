"""Camus's BDD compiler with each state's value partition remembered across compilations.

:func:`strategies.camus.bdd.compile_bdd` stays the reference. Under churn a
switch is compiled again on every update (under ``TR`` every switch: one
subscription changes the filter set of each), but most of the BDD's states
are the same residual functions as before: a state at level ``l`` is the set
of rules (their intervals on fields ``l..`` and their labels) still to be
decided, and its field table, the maximal intervals of field ``l``'s domain
with the residual each one leads to, depends on that set alone.
:class:`BddCompiler` keeps that partition per residual (keyed by the set of
interned projections, so equal residuals of any switch and any compilation
share it) and runs the reference's numbering walk over the levels unchanged:
the states are numbered in the same order (level by level, states by number,
intervals by value), so the pipeline is the reference's, entry for entry.

The reference tells residuals apart by a 62-bit Zobrist hash of their sets;
this compiler compares the sets themselves. The two agree unless two distinct
residuals of one level collide in the hash (probability below ``n**2 / 2**62``
for ``n`` residuals; ``tests/strategies/test_camus_memo.py`` checks equality
on random filter sets and update sequences).

Memory: partitions are kept for the residuals of the current and the
previous round (:meth:`BddCompiler.next_round`, one round per control-plane
build), interned projections for as long as the compiler lives (a handful
per subscription).

References
----------
Seed 003 §5.2 (BDD, Algorithm 2); digest seed002-003 B.5, D20 (Camus
recompiles from scratch: the memo changes the controller's cost, not its
output).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from strategies.camus.bdd import Conj, Interval, Pipeline, _entries_for, field_order

#: one maximal interval of a state's field table and the residual it leads to
Part = tuple[int, int, frozenset[int]]


class BddCompiler:
    """:func:`~strategies.camus.bdd.compile_bdd` with partitions remembered (module doc)."""

    def __init__(self) -> None:
        #: field order (names and widths) -> its namespace of projections
        self._spaces: dict[tuple[tuple[str, int], ...], int] = {}
        #: (namespace, level, interval suffix, label) -> projection id (ids never reused, so
        #: a set of ids names one residual of one level of one field order)
        self._ids: dict[tuple[int, int, Conj, frozenset[int]], int] = {}
        #: projection id -> (its first interval, the id of the rest; or the label at the leaf)
        self._rows: list[tuple[Interval, int] | frozenset[int]] = []
        self._parts: dict[frozenset[int], tuple[Part, ...]] = {}
        self._older: dict[frozenset[int], tuple[Part, ...]] = {}
        self.hits = 0
        self.misses = 0

    def next_round(self) -> None:
        """Start a round (one control-plane build): partitions that neither this round
        nor the previous one uses are forgotten."""
        self._older, self._parts = self._parts, {}

    def _intern(self, ns: int, level: int, conj: Conj, label: frozenset[int]) -> int:
        key = (ns, level, conj, label)
        hit = self._ids.get(key)
        if hit is None:
            row: tuple[Interval, int] | frozenset[int] = \
                (conj[0], self._intern(ns, level + 1, conj[1:], label)) if conj else label
            hit = self._ids[key] = len(self._rows)
            self._rows.append(row)
        return hit

    def _partition(self, top: int, residual: frozenset[int]) -> tuple[Part, ...]:
        """The maximal intervals of ``[0, top]`` and the residual each leads to (the
        reference's sweep in :func:`~strategies.camus.bdd.compile_bdd`, sets compared
        exactly)."""
        key = residual
        hit = self._parts.get(key)
        if hit is None:
            hit = self._older.get(key)
            if hit is not None:
                self._parts[key] = hit
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        rows = self._rows
        events: dict[int, list[tuple[int, int]]] = {}
        for p in residual:
            (lo, hi), q = rows[p]  # type: ignore[misc]
            events.setdefault(lo, []).append((q, 1))
            events.setdefault(hi + 1, []).append((q, -1))
        counts: dict[int, int] = {}
        active: set[int] = set()
        points = sorted(events)
        if not points or points[0] != 0:
            points = [0, *points]
        parts: list[Part] = []
        current: frozenset[int] = frozenset()
        for j, x in enumerate(points):
            if x > top:
                break
            changed = False
            for q, delta in events.get(x, ()):
                c = counts[q] = counts.get(q, 0) + delta
                if c == 0:
                    active.discard(q)
                    changed = True
                elif c == delta:  # from 0
                    active.add(q)
                    changed = True
            if changed:
                current = frozenset(active)
            end = min((points[j + 1] - 1) if j + 1 < len(points) else top, top)
            if parts and parts[-1][2] == current:
                parts[-1] = (parts[-1][0], end, current)
            else:
                parts.append((x, end, current))
        out = self._parts[key] = tuple(parts)
        return out

    def compile(self, rules: Sequence[tuple[Conj, frozenset[int]]],
                fields: Sequence[tuple[str, int]],
                order: Literal["annotation", "constants"] = "annotation") -> Pipeline:
        """The pipeline :func:`~strategies.camus.bdd.compile_bdd` builds for the same input."""
        perm = field_order([c for c, _ in rules], fields, order)
        ofields = tuple(fields[k] for k in perm)
        tops = tuple((1 << w) - 1 for _, w in ofields)
        n = len(ofields)
        ns = self._spaces.setdefault(ofields, len(self._spaces))
        base = frozenset(self._intern(ns, 0, tuple(c[k] for k in perm), lab) for c, lab in rules)
        next_id = 2  # 0 = root, 1 = dead
        level_states: dict[frozenset[int], int] = {base: 0} if base else {}
        pipe = Pipeline(fields=ofields, tables=[], leaf={})
        for level in range(n):
            nxt_states: dict[frozenset[int], int] = {}
            table = []
            top = tops[level]
            for residual, u in sorted(level_states.items(), key=lambda kv: kv[1]):
                parts = self._partition(top, residual)
                targets = []
                single = len(parts) == 1
                for lo, hi, res in parts:
                    if not res:
                        targets.append((lo, hi, 1))
                        continue
                    v = nxt_states.get(res)
                    if v is None:
                        if single:  # the field is not tested here: keep the state
                            v = nxt_states[res] = u
                        else:
                            v = nxt_states[res] = next_id
                            next_id += 1
                    targets.append((lo, hi, v))
                table.extend(_entries_for(u, targets))
            pipe.tables.append(table)
            pipe.states_per_field.append(len(level_states))
            level_states = nxt_states
        rows = self._rows
        for residual, u in level_states.items():
            label: set[int] = set()
            for p in residual:
                label |= rows[p]  # type: ignore[arg-type]
            if label:
                pipe.leaf[u] = frozenset(label)
        pipe.states = next_id
        return pipe
