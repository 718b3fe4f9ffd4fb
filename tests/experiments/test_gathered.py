"""Cells of one task gathered into one file: same rows, exactly once, resumable."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from experiments.cells.pipeline import run_cell
from experiments.cells.spec import Cell, parse_spec_dict
from experiments.runners.local import run_local
from experiments.runners.spark import FileProgress, run_partition
from experiments.storage.compare import compare_results
from experiments.storage.gathered import cell_files, gathered_files, gathered_ids
from experiments.storage.results import (
    GATHER_MIN_CELLS,
    CellWriter,
    Provenance,
    cell_path,
    data_dir,
    done_cells,
    read_results,
    write_cell,
)

SPEC = {
    "experiment": {"name": "gathertest", "notifications": 3, "seeds": [1, 2, 3, 4, 5],
                   "payload_bytes": [50]},
    "grid": {"topology": ["fattree:k=4"], "strategy": ["unicast", "switch-bitmask"],
             "receivers": ["uniform:percent=25", "uniform:percent=75"]},
}


@pytest.fixture(scope="module")
def tables() -> list[tuple[Cell, pa.Table]]:
    spec = parse_spec_dict(SPEC, "gathertest.toml")
    return [(c, run_cell(c)) for c in spec.cells()]


def _rows(out: Path) -> pa.Table:
    table = read_results(out)
    return table.drop_columns(["controller_wall_ms"]).sort_by(
        [("cell_id", "ascending"), ("run", "ascending")])


def _write_each(out: Path, tables: list[tuple[Cell, pa.Table]]) -> None:
    for cell, table in tables:
        write_cell(out, cell, table)


def test_a_writer_gathers_its_cells_into_one_file_with_the_same_rows(tables, tmp_path) -> None:
    _write_each(tmp_path / "single", tables)
    writer = CellWriter(tmp_path / "gathered", Provenance.of("{}"), min_cells=3)
    for cell, table in tables:
        writer.write(cell, table)
        assert cell_path(tmp_path / "gathered", cell).is_file()  # progress sees it at once
    writer.close()
    data = data_dir(tmp_path / "gathered")
    (only,) = gathered_files(data)
    assert cell_files(data) == []
    assert gathered_ids(only) == [c.cell_id for c, _ in tables]  # in the order they ran
    assert pq.read_schema(only).metadata[b"spec"] == b"{}"
    assert _rows(tmp_path / "gathered").equals(_rows(tmp_path / "single"))
    assert done_cells(tmp_path / "gathered") == {c.cell_id for c, _ in tables}


def test_few_cells_stay_single_and_max_rows_cuts_the_same_chunks(tables, tmp_path) -> None:
    few = CellWriter(tmp_path / "few", Provenance.of(), min_cells=len(tables) + 1)
    for cell, table in tables:
        few.write(cell, table)
    few.close()
    assert len(cell_files(data_dir(tmp_path / "few"))) == len(tables)
    assert gathered_files(data_dir(tmp_path / "few")) == []

    rows = tables[0][1].num_rows
    names = []
    for _ in range(2):  # a retried task: the same chunks under the same names
        writer = CellWriter(tmp_path / "chunks", Provenance.of(), min_cells=2,
                            max_rows=4 * rows)
        for cell, table in tables:
            writer.write(cell, table)
        writer.close()
        names.append([f.name for f in gathered_files(data_dir(tmp_path / "chunks"))])
    assert names[0] == names[1] and len(names[0]) == len(tables) // 4
    assert all(len(gathered_ids(f)) == 4 for f in gathered_files(data_dir(tmp_path / "chunks")))
    assert _rows(tmp_path / "chunks").num_rows == len(tables) * rows  # no duplicates


def test_a_writer_stopped_while_gathering_leaves_no_duplicate(tables, tmp_path, monkeypatch):
    """Killed after the gathered file's rename, before removing the cell files."""
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: None)
    writer = CellWriter(tmp_path, Provenance.of(), min_cells=2)
    for cell, table in tables:
        writer.write(cell, table)
    writer.close()
    monkeypatch.undo()
    assert len(cell_files(data_dir(tmp_path))) == len(tables)  # both copies on disk
    assert _rows(tmp_path).num_rows == sum(t.num_rows for _, t in tables)
    assert cell_files(data_dir(tmp_path)) == []  # the reader removed the leftovers


def test_resume_and_rerun_with_gathered_files(tmp_path) -> None:
    spec = parse_spec_dict(SPEC, "gathertest.toml")
    cells = spec.cells()
    assert len(cells) >= GATHER_MIN_CELLS  # the local run gathers
    run_local(spec, tmp_path / "a", progress=False)
    run_local(spec, tmp_path / "b", progress=False)
    assert len(gathered_files(data_dir(tmp_path / "a"))) == 1
    assert run_local(spec, tmp_path / "a", resume=True, progress=False)["ran"] == 0

    class Part:  # a rerun of some cells (no --resume): their old rows must go
        name = spec.name

        @staticmethod
        def cells() -> list[Cell]:
            return cells[::4]

        @staticmethod
        def canonical() -> dict:
            return spec.canonical()

    before = os.stat(gathered_files(data_dir(tmp_path / "a"))[0]).st_ino
    run_local(Part(), tmp_path / "a", progress=False)
    (rewritten,) = gathered_files(data_dir(tmp_path / "a"))
    assert os.stat(rewritten).st_ino != before
    assert set(gathered_ids(rewritten)).isdisjoint(c.cell_id for c in Part.cells())
    assert {f.stem.removeprefix("cell-") for f in cell_files(data_dir(tmp_path / "a"))} == {
        c.cell_id for c in Part.cells()}
    assert compare_results(tmp_path / "a", tmp_path / "b").identical


def test_a_partition_gathers_and_progress_counts_gathered_cells(tables, tmp_path) -> None:
    class Bar:
        n = 0

        def update(self, k: int = 1) -> None:
            self.n += k

    cells = [c for c, _ in tables]
    bar = Bar()
    progress = FileProgress(tmp_path, cells, bar)
    assert progress.poll() == 0
    answered = list(run_partition([cells[:10], cells[10:]], str(tmp_path), Provenance.of()))
    assert [cid for cid, _ in answered] == [c.cell_id for c in cells]
    assert len(cells) >= GATHER_MIN_CELLS and len(gathered_files(data_dir(tmp_path))) == 1
    assert cell_files(data_dir(tmp_path)) == []
    assert progress.poll() == len(cells) and progress.poll() == 0 and bar.n == len(cells)
