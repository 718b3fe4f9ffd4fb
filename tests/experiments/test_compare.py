"""``stackcast run --fraction`` and ``stackcast compare``: the row check between revisions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from experiments.cli.main import main
from experiments.storage.compare import compare_results

SPEC = """
[experiment]
name = "comparetest"
notifications = 3
seeds = [1, 2, 3, 4]
payload_bytes = [50]

[grid]
topology = ["fattree:k=4"]
strategy = ["unicast", "switch-bitmask"]
receivers = ["uniform:percent=25", "uniform:percent=75"]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same half of the spec run twice, into two results directories."""
    root = tmp_path_factory.mktemp("compare")
    spec = root / "spec.toml"
    spec.write_text(SPEC)
    for name in ("a", "b"):
        assert main(["run", str(spec), "--runner", "local", "--fraction", "0.5", "--quiet",
                     "--out", str(root / name)]) == 0
    return root / "a", root / "b"


def _files(out: Path) -> list[Path]:
    return sorted((out / "data").glob("cell-*.parquet"))


def _copy(src: Path, dst: Path) -> Path:
    (dst / "data").mkdir(parents=True)
    for f in _files(src):
        (dst / "data" / f.name).write_bytes(f.read_bytes())
    return dst


def _edit(path: Path, column: str, row: int, value: object) -> None:
    """Rewrite one value of one cell file, keeping its schema and metadata."""
    table = pq.read_table(path)
    values = table[column].to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    table = table.set_column(i, table.schema.field(i), pa.array(values, table[column].type))
    pq.write_table(table, path)


def test_fraction_keeps_a_deterministic_part_and_the_same_rows(runs, capsys) -> None:
    a, b = runs
    assert 0 < len(_files(a)) < 16 and [f.name for f in _files(a)] == [f.name for f in _files(b)]
    capsys.readouterr()
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"identical: {len(_files(a))} cells") and "controller_wall_ms" in out


def test_a_changed_value_names_its_cell_row_and_column(runs, tmp_path: Path, capsys) -> None:
    a, _ = runs
    b = _copy(a, tmp_path / "b")
    target = _files(b)[1]
    before = pq.read_table(target)["frames"][2].as_py()
    _edit(target, "frames", 2, before + 1)
    capsys.readouterr()
    assert main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    cell = target.stem.removeprefix("cell-")
    assert f"1 of {len(_files(a))} shared cells differ" in out
    assert f"cell {cell}, row 2, frames: {before} against {before + 1}" in out


def test_missing_cells_extra_rows_and_ignored_columns(runs, tmp_path: Path, capsys) -> None:
    a, _ = runs
    b = _copy(a, tmp_path / "b")
    gone, longer, timed = _files(b)[0], _files(b)[1], _files(b)[2]
    gone.unlink()
    table = pq.read_table(longer)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), longer)
    _edit(timed, "controller_wall_ms", 0, 123.0)
    got = compare_results(a, b)
    assert not got.identical and got.only_left == (gone.stem.removeprefix("cell-"),)
    assert [(d.cell_id, d.column, d.left, d.right) for d in got.differences] == [
        (longer.stem.removeprefix("cell-"), "rows", 3, 4)]
    _edit(timed, "lookups", 0, -1)  # not ignored: now a second differing cell
    assert compare_results(a, b).cells_differing == 2
    assert compare_results(a, b, ignore=("controller_wall_ms", "lookups")).cells_differing == 1
    assert main(["compare", str(a), str(b), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["only_left"] == list(got.only_left)


def test_nan_equals_nan_but_not_a_number(runs, tmp_path: Path) -> None:
    a, _ = runs
    left, right = _copy(a, tmp_path / "l"), _copy(a, tmp_path / "r")
    for side in (left, right):
        _edit(_files(side)[0], "delay_worst_ms", 0, math.nan)
    assert compare_results(left, right).identical
    _edit(_files(right)[0], "delay_worst_ms", 0, 1.0)
    assert compare_results(left, right).differences[0].column == "delay_worst_ms"


@pytest.mark.parametrize("argv, message", [
    (["compare", "{a}", "{missing}"], "does not exist"),
    (["compare", "{a}", "{a}", "--ignore", "nope"], "--ignore: no column 'nope'"),
    (["run", "quickstart", "--fraction", "0", "--out", "{missing}"], "--fraction must be in"),
    (["run", "quickstart", "--fraction", "1.5", "--out", "{missing}"], "--fraction must be in"),
])
def test_bad_input_is_one_line(runs, tmp_path: Path, capsys, argv, message) -> None:
    a, _ = runs
    argv = [x.format(a=a, missing=tmp_path / "missing") for x in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "missing").exists()
