"""Results on disk: a hive-partitioned Parquet dataset, one file per cell.

Layout: ``OUT/experiment=NAME/strategy=NAME/cell-<cell_id>.parquet``. Each
cell's rows are written to a temporary name and renamed into place, so a
file is either complete or absent: a retried or repeated cell replaces its
own file and never duplicates rows, and ``--resume`` skips cells whose file
exists. Schema metadata carries the canonical spec JSON, the package version
and the git commit.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from experiments.cells.schema import ROWS, TIMED_ROWS
from experiments.cells.spec import Cell
from sim.dataplanes.seeds import canonical_json


@lru_cache(maxsize=1)
def provenance() -> dict[str, str]:
    """Package version and git commit of the code producing results."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("stackcast")
    except PackageNotFoundError:
        ver = "unknown"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=5, check=False).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return {"stackcast_version": ver, "git_commit": commit}


def cell_path(out: str | Path, cell: Cell) -> Path:
    return (Path(out) / f"experiment={cell.experiment}" / f"strategy={cell.strategy}"
            / f"cell-{cell.cell_id}.parquet")


def is_done(out: str | Path, cell: Cell) -> bool:
    return cell_path(out, cell).is_file()


def write_cell(out: str | Path, cell: Cell, table: pa.Table, spec_json: str = "") -> Path:
    """Atomically write one cell's rows (replacing an earlier copy of the same cell)."""
    if table.schema not in (ROWS, TIMED_ROWS):
        table = table.cast(ROWS)
    meta = {"cell": canonical_json(cell.canonical()), "spec": spec_json, **provenance()}
    table = table.replace_schema_metadata({k: v.encode() for k, v in meta.items()})
    path = cell_path(out, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def dataset_schema(out: str | Path) -> pa.Schema:
    """:data:`TIMED_ROWS` when every experiment under ``out`` is timed, else :data:`ROWS`.

    One file per ``experiment=`` directory is inspected (an experiment is timed
    or not as a whole); a mix of static and timed experiments reads the shared
    :data:`ROWS` columns.
    """
    root = Path(out)
    firsts = [next(d.rglob("cell-*.parquet"), None) for d in root.glob("experiment=*")]
    firsts = [f for f in firsts if f is not None]
    if not firsts:
        raise FileNotFoundError(f"no results under {str(root)!r}")
    timed = all("timed" in pq.read_schema(f).names for f in firsts)
    return TIMED_ROWS if timed else ROWS


def read_results(out: str | Path) -> pa.Table:
    """Every row under ``out`` (partition columns restored as strings)."""
    root = Path(out)
    dataset = ds.dataset(root, format="parquet", partitioning="hive",
                         schema=dataset_schema(root), exclude_invalid_files=True)
    return dataset.to_table()
