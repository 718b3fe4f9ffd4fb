"""Synthetic result rows for report tests: full ROWS rows from a few given columns."""

from __future__ import annotations

import json

import pyarrow as pa

from experiments.cells.schema import ROWS


def _zero(t: pa.DataType) -> object:
    if pa.types.is_string(t):
        return ""
    if pa.types.is_floating(t):
        return 0.0
    return 0


def rows_table(rows: list[dict]) -> pa.Table:
    """Full ROWS rows from the given columns (everything else 0 / "")."""
    base = {f.name: _zero(f.type) for f in ROWS}
    full = []
    for i, r in enumerate(rows):
        row = {**base, "experiment": "synthetic", "cell_id": f"c{i}", "run": i, **r}
        row["params"] = json.dumps(r.get("params", {}), sort_keys=True)
        full.append(row)
    return pa.Table.from_pylist(full, schema=ROWS)
