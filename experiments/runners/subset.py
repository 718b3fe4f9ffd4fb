"""A deterministic fraction of a spec's cells, kept in whole groups.

``stackcast run --fraction`` (quick checks, row comparisons between two
revisions) and ``stackcast bench ch6 --fraction`` (extrapolated wall time)
run a :class:`SubsetSpec` instead of the whole spec.
"""

from __future__ import annotations

from typing import Any

from experiments.cells.spec import Cell
from experiments.runners.spark import affinity
from sim.dataplanes.seeds import stable_seed


class SubsetSpec:
    """A spec restricted to a deterministic ``fraction`` of its groups of related cells.

    A group is what a real run keeps together in one task so that its caches
    hit (:func:`experiments.runners.spark.affinity`: e.g. the churn levels of
    one seed); a group is kept when the 63-bit :func:`~sim.dataplanes.seeds.stable_seed`
    of its key falls in the first ``fraction`` of that range, so the subset is
    spread over the whole grid, never splits a group and is the same on every
    machine and revision. ``fraction`` 0 keeps the one cell with the smallest
    id (a warm-up); a subset that would be empty keeps that cell too. Only
    what the runners read (``name``, ``cells()``, ``canonical()``) is provided.

    Raises
    ------
    ValueError
        If ``fraction`` is outside [0, 1].
    """

    def __init__(self, spec: Any, fraction: float) -> None:
        if not 0 <= fraction <= 1:
            raise ValueError(f"--fraction must be in (0, 1]; got {fraction}")
        self.spec, self.fraction, self.name = spec, fraction, spec.name
        everything = spec.cells()
        limit = fraction * 2 ** 63
        keep = [c for c in everything if stable_seed(list(affinity(c))) < limit] or [
            min(everything, key=lambda c: c.cell_id)]
        self.total, self._cells = len(everything), keep

    def cells(self) -> list[Cell]:
        return list(self._cells)

    def canonical(self) -> dict[str, Any]:
        return dict(self.spec.canonical())
