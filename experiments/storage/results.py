"""Results on disk: a Parquet dataset, one file per cell, next to its reports.

Layout of a results directory ``OUT``::

    OUT/data/cell-<cell_id>.parquet   the dataset, one flat directory
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
whose file exists. Schema metadata carries the canonical cell and spec JSON,
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
from sim.dataplanes.seeds import canonical_json

log = logging.getLogger(__name__)

#: The dataset's directory inside a results directory.
DATA_DIR = "data"
#: The default report directory inside a results directory.
REPORT_DIR = "report"
_OLD_PARTITIONS = "experiment=*/strategy=*"


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


def is_done(out: str | Path, cell: Cell) -> bool:
    """Whether ``cell``'s file exists (complete by construction)."""
    return cell_path(out, cell).is_file()


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
    if table.schema not in (ROWS, TIMED_ROWS):
        table = table.cast(ROWS)
    table = table.replace_schema_metadata((prov or Provenance.of()).metadata(cell))
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
    if not any(data.glob("cell-*.parquet")):
        if root.name == DATA_DIR and any(root.glob("cell-*.parquet")):
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
    files = results_data(out).glob("cell-*.parquet")
    timed = all("timed" in pq.read_schema(f).names for f in files)
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
    for f in sorted(results_data(out).glob("cell-*.parquet")):
        raw = (pq.read_schema(f).metadata or {}).get(b"spec", b"")
        if not raw or raw in seen:
            continue
        seen.add(raw)
        spec = json.loads(raw)
        figures = tuple(spec.get("report", {}).get("figures", ()))
        name = spec.get("name", "")
        out_figures[name] = tuple(dict.fromkeys(out_figures.get(name, ()) + figures))
    return out_figures
