"""Results on disk: a Parquet dataset of cell files, next to its reports.

Layout of a results directory ``OUT``::

    OUT/data/cell-<cell_id>.parquet   the dataset, one flat directory: one cell's rows,
    OUT/data/cells-<hash>.parquet     or the cells of one task gathered (gathered.py)
    OUT/report/                       reports (stackcast report)

Every file holds every column of its rows, ``experiment`` and ``strategy``
included, and there are no hive ``key=value`` directories (whose values
readers would turn into dictionary columns, or not see at all, and which
Spark does not descend into unless they are partitions), so ``OUT/data``
reads as is with ``pandas.read_parquet``, ``pyarrow.parquet.read_table``,
``pyarrow.dataset.dataset``, DuckDB (``read_parquet('OUT/data/*.parquet')``)
and Spark (``spark.read.parquet``), all with the same columns and types.
Reports live outside the dataset, so a report never breaks a later read or
resume.

Each cell's rows are written to a hidden temporary name and renamed into
place, so a file is either complete or absent: a retried or repeated cell
replaces its own file and never duplicates rows, and ``--resume`` skips cells
that have a file or are in a gathered one (:func:`done_cells`). A task that
wrote at least :data:`GATHER_MIN_CELLS` cells gathers them into one file
(:class:`CellWriter`), so a big sweep leaves hundreds of files, not tens of
thousands. Schema metadata carries the canonical cell and spec JSON,
the package version and the git commit (:class:`Provenance`, computed once on
the driver and passed to every writer).

The layout before this one (``OUT/experiment=X/strategy=Y/cell-<id>.parquet``,
the same files) is migrated in place the first time a directory is run or
read (:func:`migrate_layout`).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from experiments.cells.schema import ROWS, TIMED_ROWS
from experiments.cells.spec import Cell
from experiments.storage.gathered import (
    cell_files,
    drop_leftovers,
    forget_cells,
    gathered_files,
    gathered_ids,
    write_gathered,
)
from sim.dataplanes.seeds import canonical_json

log = logging.getLogger(__name__)

#: The dataset's directory inside a results directory.
DATA_DIR = "data"
#: The default report directory inside a results directory.
REPORT_DIR = "report"
_OLD_PARTITIONS = "experiment=*/strategy=*"
#: A writer that wrote at least this many cells gathers them into one file.
GATHER_MIN_CELLS = 16
#: A gathered file holds at most about this many rows (the writer keeps them in memory).
GATHER_MAX_ROWS = 200_000


@lru_cache(maxsize=1)
def provenance() -> dict[str, str]:
    """Package version and git commit of the code running in this process.

    Call it on the driver only: an executor imports the code from a shipped
    zip, outside any git checkout (see :class:`Provenance`).

    Returns
    -------
    dict
        ``{"stackcast_version": ..., "git_commit": ...}``; ``"unknown"`` for
        what cannot be found.
    """
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


@dataclass(frozen=True, slots=True)
class Provenance:
    """What every cell file of one run records in its schema metadata.

    Built once on the driver (:meth:`of`) and passed, pickled, to every
    writer, so local and Spark files of the same code carry the same values.

    Attributes
    ----------
    spec : str
        Canonical JSON of the spec (``""`` when written outside a spec run).
    stackcast_version : str
        Installed package version, or ``"unknown"``.
    git_commit : str
        ``git rev-parse HEAD`` of the driver's checkout, or ``"unknown"``.
    """

    spec: str
    stackcast_version: str
    git_commit: str

    @classmethod
    def of(cls, spec_json: str = "") -> Provenance:
        """The provenance of this process's code for a spec's canonical JSON."""
        return cls(spec=spec_json, **provenance())

    def metadata(self, cell: Cell) -> dict[bytes, bytes]:
        """Schema metadata of ``cell``'s file: cell and spec JSON, version, commit."""
        meta = {"cell": canonical_json(cell.canonical()), "spec": self.spec,
                "stackcast_version": self.stackcast_version, "git_commit": self.git_commit}
        return {k.encode(): v.encode() for k, v in meta.items()}


def data_dir(out: str | Path) -> Path:
    """The dataset directory of results directory ``out`` (``out/data``)."""
    return Path(out) / DATA_DIR


def report_dir(out: str | Path, report: str | Path | None = None) -> Path:
    """Where a report of results directory ``out`` goes (by default ``out/report``).

    Raises
    ------
    ValueError
        If ``report`` lies inside the dataset ``out/data``.
    """
    path = Path(report) if report is not None else Path(out) / REPORT_DIR
    data = data_dir(out).resolve()
    if path.resolve() == data or data in path.resolve().parents:
        raise ValueError(f"the report directory {str(path)!r} must not be inside the "
                         f"dataset {str(data_dir(out))!r}")
    return path


def cell_path(out: str | Path, cell: Cell) -> Path:
    """The file of ``cell``'s rows in results directory ``out``."""
    return data_dir(out) / f"cell-{cell.cell_id}.parquet"


def result_files(out: str | Path) -> list[Path]:
    """Every file of the dataset of ``out``: single cells, then gathered files."""
    data = data_dir(out)
    return cell_files(data) + gathered_files(data)


def done_cells(out: str | Path) -> set[str]:
    """Ids of the cells that have rows under ``out`` (files are complete by construction)."""
    data = data_dir(out)
    return ({f.stem.removeprefix("cell-") for f in cell_files(data)}
            | {cid for f in gathered_files(data) for cid in gathered_ids(f)})


def prepare_run(out: str | Path, cells: list[Cell], resume: bool) -> list[Cell]:
    """The cells a run into ``out`` must run, with ``out`` made ready for them.

    An old layout is migrated and leftovers of a stopped gathering removed;
    with ``resume`` the cells that have rows are skipped, otherwise the cells
    are taken out of gathered files first (they are written anew).
    """
    migrate_layout(out)
    data = data_dir(out)
    if not data.is_dir():
        return list(cells)
    drop_leftovers(data)
    if resume:
        done = done_cells(out)
        return [c for c in cells if c.cell_id not in done]
    if forget_cells(data, {c.cell_id for c in cells}):
        log.warning("cells run again were taken out of the gathered files of %s", data)
    return list(cells)


def as_rows(table: pa.Table) -> pa.Table:
    """``table`` with the :data:`ROWS` or :data:`TIMED_ROWS` schema (others cast to ROWS)."""
    return table if table.schema in (ROWS, TIMED_ROWS) else table.cast(ROWS)


def write_cell(out: str | Path, cell: Cell, table: pa.Table,
               prov: Provenance | None = None) -> Path:
    """Atomically write one cell's rows (replacing an earlier copy of the same cell).

    Parameters
    ----------
    out
        Results directory.
    cell
        The cell the rows belong to.
    table
        Its rows (:data:`ROWS` or :data:`TIMED_ROWS`; other schemas are cast to ROWS).
    prov
        Provenance computed on the driver; by default that of this process
        with an empty spec (never rely on the default on a Spark executor).

    Returns
    -------
    Path
        The cell's file.
    """
    table = as_rows(table).replace_schema_metadata((prov or Provenance.of()).metadata(cell))
    path = cell_path(out, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path


def migrate_layout(out: str | Path) -> int:
    """Move the cell files of the old layout into ``out/data``; returns how many moved.

    The old layout, ``out/experiment=X/strategy=Y/cell-<id>.parquet``, held
    the very same files (every column inside) in hive partitions directly
    under ``out``. Each file is renamed into ``out/data``; leftover hidden
    temporary files and the emptied directories are removed. Idempotent and
    safe to interrupt (a rename is atomic; run it again to finish).
    """
    root = Path(out)
    moved = 0
    for leaf in sorted(p for p in root.glob(_OLD_PARTITIONS) if p.is_dir()):
        for f in sorted(leaf.glob("cell-*.parquet")):
            data_dir(root).mkdir(parents=True, exist_ok=True)
            os.replace(f, data_dir(root) / f.name)
            moved += 1
        for tmp in leaf.glob(".cell-*.tmp"):
            tmp.unlink(missing_ok=True)
        for d in (leaf, leaf.parent):
            try:
                d.rmdir()
            except OSError:  # not empty: something else lives there; leave it
                pass
    if moved:
        log.warning("moved %d cell files of the old layout (%s) into %s", moved,
                    _OLD_PARTITIONS, data_dir(root))
    return moved


def results_data(out: str | Path) -> Path:
    """The dataset directory of ``out``, migrating an old layout first.

    Raises
    ------
    FileNotFoundError
        If ``out`` holds no cell file (one line; it names ``out``'s parent
        when ``out`` is itself a dataset directory).
    """
    root = Path(out)
    migrate_layout(root)
    data = data_dir(root)
    if data.is_dir():
        drop_leftovers(data)
    if not result_files(root):
        if root.name == DATA_DIR and result_files(root.parent):
            raise FileNotFoundError(f"{str(root)!r} is the dataset of a results directory: "
                                    f"give the results directory {str(root.parent)!r}")
        raise FileNotFoundError(f"no results under {str(root)!r}")
    return data


def dataset_schema(out: str | Path) -> pa.Schema:
    """:data:`TIMED_ROWS` when every cell under ``out`` is timed, else :data:`ROWS`.

    A mix of static and timed experiments reads the shared :data:`ROWS`
    columns. Only file footers are read, and a static dataset stops at its
    first file.
    """
    results_data(out)
    timed = all("timed" in pq.read_schema(f).names for f in result_files(out))
    return TIMED_ROWS if timed else ROWS


def read_results(out: str | Path) -> pa.Table:
    """Every row of results directory ``out``, with the :func:`dataset_schema` columns."""
    schema = dataset_schema(out)
    dataset = ds.dataset(data_dir(out), format="parquet", schema=schema,
                         exclude_invalid_files=True)
    return dataset.to_table()



def declared_figures(out: str | Path) -> dict[str, tuple[str, ...]]:
    """Experiment name -> the figure replicas its spec declares (``[report] figures``).

    Read from the spec JSON in the cell files' schema metadata (footers only;
    each distinct spec parsed once); experiments without the key declare none.
    """
    seen: set[bytes] = set()
    out_figures: dict[str, tuple[str, ...]] = {}
    results_data(out)
    for f in result_files(out):
        raw = (pq.read_schema(f).metadata or {}).get(b"spec", b"")
        if not raw or raw in seen:
            continue
        seen.add(raw)
        spec = json.loads(raw)
        figures = tuple(spec.get("report", {}).get("figures", ()))
        name = spec.get("name", "")
        out_figures[name] = tuple(dict.fromkeys(out_figures.get(name, ()) + figures))
    return out_figures


class CellWriter:
    """Writes the cells of one task (or local run); gathers them into one file at the end.

    :meth:`write` writes a cell's own file at once (progress, ``--resume``
    and a crash see it); the writer keeps its rows, and once they reach
    ``max_rows``, or at :meth:`close` when it holds at least ``min_cells``
    cells, writes them as one gathered file and removes their cell files
    (:mod:`experiments.storage.gathered`). Fewer cells stay one file each.
    Chunks depend only on the order and sizes of the cells, so a retried
    task gathers the same cells under the same name.
    """

    def __init__(self, out: str | Path, prov: Provenance, *,
                 min_cells: int = GATHER_MIN_CELLS, max_rows: int = GATHER_MAX_ROWS) -> None:
        self.out, self.prov = Path(out), prov
        self.min_cells, self.max_rows = min_cells, max_rows
        self._held: list[tuple[Cell, pa.Table]] = []
        self._rows = 0

    def write(self, cell: Cell, table: pa.Table) -> Path:
        """Write ``cell``'s file (see :func:`write_cell`) and keep its rows for gathering."""
        table = as_rows(table)
        path = write_cell(self.out, cell, table, self.prov)
        if self._held and table.schema != self._held[0][1].schema:
            self._gather()  # one schema per file (a mixed run: static and timed cells)
        self._held.append((cell, table))
        self._rows += table.num_rows
        if self._rows >= self.max_rows:
            self._gather()
        return path

    def close(self) -> None:
        """Gather what is held if it is at least ``min_cells`` cells."""
        if len(self._held) >= self.min_cells:
            self._gather()
        self._held, self._rows = [], 0

    def _gather(self) -> None:
        if len(self._held) > 1:
            cells = [c for c, _ in self._held]
            meta = {k: v for k, v in self.prov.metadata(cells[0]).items() if k != b"cell"}
            write_gathered(data_dir(self.out), [c.cell_id for c in cells],
                           pa.concat_tables([t for _, t in self._held]), meta)
            for cell in cells:
                cell_path(self.out, cell).unlink(missing_ok=True)
        self._held, self._rows = [], 0
