"""Gathered files: the cells of one task in one Parquet file.

A sweep of 50,000 small cells wrote 50,000 files, and every reader paid
for each one: Spark about 4-8 ms a file to open and plan, the report a
footer read or two per file. A task therefore writes each cell's own file as
it finishes (so progress, ``--resume`` and a crash lose nothing) and, once
it has written enough of them, gathers them into one file
``cells-<hash>.parquet`` and removes the cell files
(:class:`experiments.storage.results.CellWriter`).

A gathered file holds complete cells only, in the order they ran, with every
column; its schema metadata lists the cells (``cell_ids``: JSON list) beside
the run's provenance. Its name is a hash of those ids, so a retried task
gathers the same cells under the same name and replaces the file. Between
the rename of a gathered file and the removal of its cell files a cell has
two files for a moment; a writer killed right there leaves them behind, and
:func:`drop_leftovers` (run before every run and read) removes them.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

#: File names of gathered files inside the dataset directory.
GATHERED_GLOB = "cells-*.parquet"
#: File names of single cells inside the dataset directory.
CELL_GLOB = "cell-*.parquet"
#: Schema metadata key of a gathered file: JSON list of its cell ids.
IDS_KEY = b"cell_ids"


def gathered_files(data: Path) -> list[Path]:
    """The gathered files of dataset directory ``data``, by name."""
    return sorted(data.glob(GATHERED_GLOB))


def cell_files(data: Path) -> list[Path]:
    """The single-cell files of dataset directory ``data``, by name."""
    return sorted(data.glob(CELL_GLOB))


def gathered_ids(path: Path) -> list[str]:
    """The cell ids a gathered file holds (read from its footer)."""
    return list(json.loads((pq.read_schema(path).metadata or {})[IDS_KEY]))


def gathered_name(cell_ids: Iterable[str]) -> str:
    """The file name of a gathered file holding ``cell_ids`` (in this order)."""
    digest = hashlib.sha256("\n".join(cell_ids).encode()).hexdigest()[:24]
    return f"cells-{digest}.parquet"


def write_gathered(data: Path, cell_ids: list[str], table: pa.Table,
                   metadata: dict[bytes, bytes]) -> Path:
    """Atomically write the rows of ``cell_ids`` (``table``) as one gathered file."""
    meta = {**metadata, IDS_KEY: json.dumps(cell_ids).encode()}
    path = data / gathered_name(cell_ids)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table.replace_schema_metadata(meta), tmp)
    os.replace(tmp, path)
    return path


def drop_leftovers(data: Path) -> int:
    """Remove cell files whose cell a gathered file holds; returns how many.

    Such files are left by a writer stopped between writing a gathered file
    and removing the cell files it replaced; their rows are in the gathered
    file. Idempotent; safe beside a running writer (it removes the same files).
    """
    gathered = {cid for f in gathered_files(data) for cid in gathered_ids(f)}
    removed = 0
    for f in cell_files(data):
        if f.stem.removeprefix("cell-") in gathered:
            f.unlink(missing_ok=True)
            removed += 1
    return removed


def forget_cells(data: Path, cell_ids: set[str]) -> int:
    """Take ``cell_ids`` out of the gathered files of ``data`` before they run again.

    A rerun writes those cells anew (and a single cell file replaces its own
    file by name), so their old rows must not stay in a gathered file. A
    gathered file that holds only such cells is removed; one that holds
    others too is rewritten (atomically) without them. Returns the number of
    gathered files changed.
    """
    changed = 0
    for f in gathered_files(data):
        ids = gathered_ids(f)
        if not cell_ids.intersection(ids):
            continue
        changed += 1
        keep = [cid for cid in ids if cid not in cell_ids]
        if keep:
            table = pq.read_table(f)
            table = table.filter(pc.is_in(table["cell_id"], pa.array(keep, pa.string())))
            write_gathered(data, keep, table, dict(table.schema.metadata or {}))
        f.unlink(missing_ok=True)
    return changed
