"""Are two results directories' rows the same? (``stackcast compare``)

A speed-up or refactor must leave every row as it was. Run the same spec
(or the same ``--fraction`` of it) on two revisions and compare the two
results directories: cells are matched by ``cell_id`` and rows within a cell
by their order. Columns that measure the host rather than the model
(:data:`WALL_CLOCK`) are left out by default; so is the files' schema
metadata (commit, version), which is meant to differ.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from experiments.storage.results import read_results

#: Columns that time the controller on the host running the cell.
WALL_CLOCK: tuple[str, ...] = ("controller_wall_ms",)


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """The first difference found in one cell (or ``column`` "rows" for a row count)."""

    cell_id: str
    column: str
    row: int
    left: object
    right: object

    def describe(self) -> str:
        if self.column == "rows":
            return f"cell {self.cell_id}: {self.left} rows against {self.right}"
        return (f"cell {self.cell_id}, row {self.row}, {self.column}: "
                f"{self.left!r} against {self.right!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """What :func:`compare_results` found; ``identical`` when nothing differs."""

    cells: int
    rows: int
    ignored: tuple[str, ...]
    only_left: tuple[str, ...] = ()
    only_right: tuple[str, ...] = ()
    columns_only_left: tuple[str, ...] = ()
    columns_only_right: tuple[str, ...] = ()
    differences: tuple[Difference, ...] = ()
    cells_differing: int = 0

    @property
    def identical(self) -> bool:
        return not (self.only_left or self.only_right or self.columns_only_left
                    or self.columns_only_right or self.differences)


def _sorted_rows(out: str | Path) -> pa.Table:
    """Every row of ``out``, ordered by cell and, within a cell, as written."""
    table = read_results(out)
    table = table.append_column("__order", pa.array(np.arange(table.num_rows)))
    return table.sort_by([("cell_id", "ascending"), ("__order", "ascending")])


def _differs(left: pa.ChunkedArray, right: pa.ChunkedArray) -> np.ndarray:
    """Rows where two equal-length columns differ (NaN equals NaN)."""
    if left.equals(right):
        return np.zeros(len(left), dtype=bool)
    a, b = left.to_numpy(zero_copy_only=False), right.to_numpy(zero_copy_only=False)
    same = a == b
    if a.dtype.kind == "f":
        same |= np.isnan(a) & np.isnan(b)
    return ~np.asarray(same, dtype=bool)


def compare_results(left: str | Path, right: str | Path,
                    ignore: tuple[str, ...] = WALL_CLOCK, limit: int = 20) -> Comparison:
    """Compare the rows of two results directories (see the module docstring).

    Parameters
    ----------
    left, right
        Results directories (``stackcast run --out``).
    ignore
        Columns left out of the comparison.
    limit
        At most this many cells with differing rows are described (the first
        difference of each, in ``cell_id`` order); ``cells_differing`` counts
        them all.

    Raises
    ------
    FileNotFoundError
        If either directory holds no results.
    """
    a, b = _sorted_rows(left), _sorted_rows(right)
    cols_a = [c for c in a.column_names if c not in ignore and c != "__order"]
    cols_b = [c for c in b.column_names if c not in ignore and c != "__order"]
    shared = [c for c in cols_a if c in cols_b]
    count_a = Counter(a["cell_id"].to_pylist())
    count_b = Counter(b["cell_id"].to_pylist())
    both = sorted(count_a.keys() & count_b.keys())
    diffs = [Difference(cell_id=c, column="rows", row=0, left=count_a[c], right=count_b[c])
             for c in both if count_a[c] != count_b[c]]
    same_count = pa.array([c for c in both if count_a[c] == count_b[c]], pa.string())
    a = a.filter(pc.is_in(a["cell_id"], same_count))
    b = b.filter(pc.is_in(b["cell_id"], same_count))
    bad = np.zeros(a.num_rows, dtype=bool)
    first_col = np.full(a.num_rows, -1)
    for j, col in enumerate(shared):
        differs = _differs(a[col], b[col])
        first_col[differs & ~bad] = j
        bad |= differs
    cell_ids = a["cell_id"].to_pylist() if bad.any() else []
    start_of: dict[str, int] = {}
    for i, cell in enumerate(cell_ids):
        start_of.setdefault(cell, i)
    reported = {d.cell_id for d in diffs}
    for row in np.flatnonzero(bad):
        cell = cell_ids[row]
        if cell in reported:
            continue
        reported.add(cell)
        col = shared[first_col[row]]
        diffs.append(Difference(cell_id=cell, column=col, row=int(row) - start_of[cell],
                                left=a[col][int(row)].as_py(), right=b[col][int(row)].as_py()))
    diffs.sort(key=lambda d: d.cell_id)
    return Comparison(
        cells=len(both), rows=a.num_rows, ignored=tuple(ignore),
        only_left=tuple(sorted(count_a.keys() - count_b.keys())),
        only_right=tuple(sorted(count_b.keys() - count_a.keys())),
        columns_only_left=tuple(c for c in cols_a if c not in cols_b),
        columns_only_right=tuple(c for c in cols_b if c not in cols_a),
        differences=tuple(diffs[:limit]), cells_differing=len(diffs))
