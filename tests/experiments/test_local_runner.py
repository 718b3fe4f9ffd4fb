"""The local engine's per-cell files: resume skips finished cells, reruns replace files."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc

from experiments.cells.spec import ExperimentSpec, parse_spec_dict
from experiments.runners.local import run_local
from experiments.storage.results import cell_path, read_results

WALL_CLOCK = ("controller_wall_ms",)
SPEC = {
    "experiment": {"name": "localtest", "notifications": 4, "seeds": [1, 2],
                   "payload_bytes": [50]},
    "grid": {"topology": ["fattree:k=4"], "strategy": ["unicast", "broadcast"],
             "receivers": ["uniform:percent=25", "uniform:percent=75"]},
}


def _spec() -> ExperimentSpec:
    return parse_spec_dict(SPEC, "localtest.toml")


def _sorted_rows(out: Path):
    table = read_results(out).sort_by([("cell_id", "ascending"), ("run", "ascending")])
    # measured wall-clock columns are documented as not reproducible
    return table.drop_columns([c for c in WALL_CLOCK if c in table.column_names])


def _keys(out: Path) -> list[tuple[str, int]]:
    table = read_results(out)
    return list(zip(table["cell_id"].to_pylist(), table["run"].to_pylist(), strict=True))


def test_resume_runs_only_missing_cells_and_never_duplicates(tmp_path: Path) -> None:
    spec = _spec()
    cells = spec.cells()
    first = run_local(spec, tmp_path, progress=False)
    assert first == {"cells": len(cells), "ran": len(cells), "skipped": 0}
    reference = _sorted_rows(tmp_path)
    removed = cells[::3]
    for cell in removed:
        cell_path(tmp_path, cell).unlink()
    kept = {c.cell_id: cell_path(tmp_path, c).stat().st_mtime_ns
            for c in cells if c not in removed}

    again = run_local(spec, tmp_path, resume=True, progress=False)

    assert again == {"cells": len(cells), "ran": len(removed),
                     "skipped": len(cells) - len(removed)}
    assert {cid: cell_path(tmp_path, c).stat().st_mtime_ns
            for c in cells if (cid := c.cell_id) in kept} == kept  # untouched
    keys = _keys(tmp_path)
    assert len(keys) == len(set(keys)) == len(cells) * spec.notifications
    assert _sorted_rows(tmp_path).equals(reference)


def test_resume_of_a_finished_run_does_nothing(tmp_path: Path) -> None:
    spec = _spec()
    run_local(spec, tmp_path, progress=False)
    counts = run_local(spec, tmp_path, resume=True, progress=False)
    assert counts["ran"] == 0 and counts["skipped"] == len(spec.cells())


def test_rerun_without_resume_replaces_each_cell_file(tmp_path: Path) -> None:
    spec = _spec()
    cells = spec.cells()
    run_local(spec, tmp_path, progress=False)
    before = {c.cell_id: cell_path(tmp_path, c).stat().st_ino for c in cells}
    reference = _sorted_rows(tmp_path)

    counts = run_local(spec, tmp_path, progress=False)

    assert counts["ran"] == len(cells)
    after = {c.cell_id: cell_path(tmp_path, c).stat().st_ino for c in cells}
    assert all(after[cid] != ino for cid, ino in before.items())  # rewritten, not appended
    assert len(list(tmp_path.rglob("cell-*.parquet"))) == len(cells)
    assert not list(tmp_path.rglob("*.tmp"))
    table = _sorted_rows(tmp_path)
    assert table.num_rows == len(cells) * spec.notifications
    assert table.equals(reference)


def test_each_cell_file_holds_exactly_its_own_rows(tmp_path: Path) -> None:
    spec = _spec()
    run_local(spec, tmp_path, progress=False)
    table = read_results(tmp_path)
    for cell in spec.cells():
        rows = table.filter(pc.equal(table["cell_id"], cell.cell_id))
        assert sorted(rows["run"].to_pylist()) == list(range(spec.notifications))
        assert set(rows["strategy"].to_pylist()) == {cell.strategy}
