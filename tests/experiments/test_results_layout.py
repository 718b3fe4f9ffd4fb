"""The results layout: ``DIR/data`` reads as is everywhere, reports live beside it.

One tiny spec runs with the local engine and with Spark ``local[1]``; each
results directory is read with pandas, ``pyarrow.parquet.read_table``,
``pyarrow.dataset``, DuckDB and Spark, which must all see the same rows and
values. Reports, resumes and re-reads follow one another; an old-layout
directory is migrated; every file carries the driver's provenance.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from experiments.cells.schema import ROWS
from experiments.cells.spec import ExperimentSpec, parse_spec_dict
from experiments.cli.main import main
from experiments.runners.local import run_local
from experiments.runners.spark_session import SparkUnavailableError, find_java, spark_session
from experiments.storage.results import cell_path, data_dir, provenance, read_results

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'stackcast[spark]')")
duckdb = pytest.importorskip("duckdb", reason="duckdb is a dev dependency")
pd = pytest.importorskip("pandas", reason="pandas is needed to check pandas.read_parquet")
try:
    find_java()
except SparkUnavailableError as exc:  # pragma: no cover - CI has Java
    pytest.skip(f"no Java runtime: {exc}", allow_module_level=True)

from experiments.runners.spark import run_spark  # noqa: E402  (after the skips)

REPO = Path(__file__).resolve().parents[2]
WALL_CLOCK = "controller_wall_ms"  # measured, documented as not reproducible
SPEC_TOML = """\
[experiment]
name = "layout"
notifications = 2
seeds = [1]

[grid]
topology = ["fattree:k=4"]
strategy = ["unicast", "multicast"]
receivers = ["uniform:percent=30"]
"""
SPEC = {"experiment": {"name": "layout", "notifications": 2, "seeds": [1]},
        "grid": {"topology": ["fattree:k=4"], "strategy": ["unicast", "multicast"],
                 "receivers": ["uniform:percent=30"]}}


def make_spec() -> ExperimentSpec:
    return parse_spec_dict(SPEC, "layout.toml")


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with spark_session("local[1]", app_name="stackcast-layout-tests") as session:
        yield session


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> dict[str, Path]:
    """The spec's results directory written by each engine."""
    local, on_spark = tmp_path_factory.mktemp("local"), tmp_path_factory.mktemp("spark")
    run_local(make_spec(), local, progress=False)
    run_spark(make_spec(), on_spark, progress=False, spark=spark)
    return {"local": local, "spark": on_spark}


# -- the five readers, each giving rows as plain dicts ----------------------------------

def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars from pandas
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def _canonical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [{k: _plain(v) for k, v in r.items() if k != WALL_CLOCK} for r in rows]
    return sorted(out, key=lambda r: (r["cell_id"], r["run"]))


def read_pandas(data: Path, spark: Any) -> list[dict[str, Any]]:
    frame = pd.read_parquet(data)
    assert frame["experiment"].dtype != "category"
    return frame.to_dict(orient="records")


def read_table(data: Path, spark: Any) -> list[dict[str, Any]]:
    table = pq.read_table(data)
    assert table.schema.names == ROWS.names
    assert table.schema.field("experiment").type == pa.string()
    return table.to_pylist()


def read_dataset(data: Path, spark: Any) -> list[dict[str, Any]]:
    return ds.dataset(data).to_table().to_pylist()


def read_duckdb(data: Path, spark: Any) -> list[dict[str, Any]]:
    result = duckdb.sql(f"SELECT * FROM read_parquet('{data}/*.parquet')")
    return [dict(zip(result.columns, row, strict=True)) for row in result.fetchall()]


def read_spark(data: Path, spark: Any) -> list[dict[str, Any]]:
    return [row.asDict() for row in spark.read.parquet(str(data)).collect()]


READERS: dict[str, Callable[[Path, Any], list[dict[str, Any]]]] = {
    "pandas": read_pandas, "pyarrow.parquet": read_table, "pyarrow.dataset": read_dataset,
    "duckdb": read_duckdb, "spark": read_spark}


def assert_every_reader_agrees(out: Path, spark: Any) -> None:
    expected = _canonical(read_results(out).to_pylist())
    assert len(expected) == 2 * 2  # 2 strategies x 2 notifications
    assert {r["strategy"] for r in expected} == {"unicast", "multicast"}
    assert {r["experiment"] for r in expected} == {"layout"}
    for name, reader in READERS.items():
        rows = _canonical(reader(data_dir(out), spark))
        assert len(rows) == len(expected), name
        assert rows == expected, name


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_every_reader_reads_the_dataset_as_is(runs: dict[str, Path], spark: Any,
                                              engine: str) -> None:
    assert_every_reader_agrees(runs[engine], spark)


def test_engines_write_the_same_rows(runs: dict[str, Path]) -> None:
    local, on_spark = (_canonical(read_results(runs[e]).to_pylist()) for e in ("local", "spark"))
    assert local == on_spark


def test_provenance_is_the_drivers_and_the_same_on_both_engines(runs: dict[str, Path]) -> None:
    keys = (b"cell", b"spec", b"stackcast_version", b"git_commit")
    in_git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True, check=False).stdout.strip()
    for cell in make_spec().cells():
        local, on_spark = (pq.read_schema(cell_path(runs[e], cell)).metadata
                           for e in ("local", "spark"))
        assert {k: local[k] for k in keys} == {k: on_spark[k] for k in keys}
        assert b'"name":"layout"' in local[b"spec"].replace(b" ", b"")
        assert on_spark[b"git_commit"].decode() == provenance()["git_commit"]  # the driver's
        if in_git:  # (HEAD may have moved since the run)
            assert on_spark[b"git_commit"] != b"unknown"


def test_report_then_resume_and_spark_report(runs: dict[str, Path], spark: Any,
                                             tmp_path: Path) -> None:
    out = tmp_path / "res"
    shutil.copytree(runs["spark"], out)
    spec = tmp_path / "layout.toml"
    spec.write_text(SPEC_TOML)
    assert main(["report", str(out)]) == 0
    assert (out / "report" / "report.md").is_file()
    assert main(["run", str(spec), "--out", str(out), "--resume", "--report", "--quiet",
                 "--master", "local[1]"]) == 0
    assert main(["report", str(out), "--runner", "spark"]) == 0
    assert main(["run", str(spec), "--out", str(out), "--resume", "--report", "--quiet",
                 "--runner", "local"]) == 0
    assert sorted({p.suffix for p in data_dir(out).rglob("*") if p.is_file()}) == [".parquet"]
    assert_every_reader_agrees(out, spark)


def test_a_report_may_not_go_into_the_dataset(runs: dict[str, Path],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = runs["local"]
    assert main(["report", str(out), "--out", str(data_dir(out) / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("stackcast: error:") and "inside the dataset" in err
    assert "\n" not in err
    assert main(["report", str(data_dir(out))]) == 2
    err = capsys.readouterr().err.strip()
    assert f"give the results directory {str(out)!r}" in err and "\n" not in err


@pytest.mark.parametrize("via", ["resume", "spark report"])
def test_an_old_layout_is_migrated(runs: dict[str, Path], spark: Any, tmp_path: Path,
                                   via: str) -> None:
    """``DIR/experiment=X/strategy=Y/cell-*.parquet`` (same files) moves to ``DIR/data``."""
    old = tmp_path / "old"
    for f in data_dir(runs["local"]).glob("cell-*.parquet"):
        strategy = pq.read_table(f, columns=["strategy"])["strategy"][0]
        leaf = old / "experiment=layout" / f"strategy={strategy}"
        leaf.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, leaf / f.name)
    (leaf / f".cell-x.parquet.{'0' * 32}.tmp").write_bytes(b"left by a killed writer")
    (old / "report").mkdir()
    (old / "report" / "report.md").write_text("old report\n")
    if via == "resume":
        counts = run_local(make_spec(), old, resume=True, progress=False)
        assert counts["ran"] == 0 and counts["skipped"] == 2
    else:
        assert main(["report", str(old), "--runner", "spark"]) == 0
        assert "old report" not in (old / "report" / "report.md").read_text()
    assert sorted(p.name for p in old.iterdir()) == ["data", "report"]
    assert_every_reader_agrees(old, spark)
