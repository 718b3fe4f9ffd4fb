"""``stackcast run`` on Spark: bad input and missing Java fail in one line, before Spark.

None of these tests starts a JVM: validation and the Java check come first.
"""

from __future__ import annotations

import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

import experiments.runners.spark as spark_runner
from experiments.cli.main import build_parser, main
from experiments.runners.spark_session import (
    JAVA_HINT,
    PYSPARK_HINT,
    build_code_zip,
    is_local_master,
    with_local_retries,
)

pytestmark = pytest.mark.spark

GOOD = """
[experiment]
name = "clitest"
notifications = 2
[grid]
topology = ["fattree:k=4"]
strategy = ["unicast"]
receivers = ["uniform:percent=20"]
"""


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make starting Spark a recorded event (it must not happen)."""
    started: list[str] = []

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        started.append("spark")
        raise AssertionError("Spark was started")

    monkeypatch.setattr(spark_runner, "spark_session", forbidden)
    return started


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    return rc, err


def test_spark_is_the_default_runner_and_local_star_the_default_master() -> None:
    args = build_parser().parse_args(["run", "quickstart"])
    assert args.runner == "spark" and args.master is None  # cli passes local[*]


def test_engine_is_the_older_name_of_runner() -> None:
    args = build_parser().parse_args(["run", "quickstart", "--engine", "local"])
    assert args.runner == "local"


@pytest.mark.parametrize(("body", "needle"), [
    (GOOD.replace('"unicast"', '"nosuch"'), "nosuch"),
    (GOOD + "[strategy_params.unicast]\nbogus = 1\n", "bogus"),
    (GOOD.replace("notifications = 2", "notifications = -1"), "notifications"),
    (GOOD.replace('"fattree:k=4"', '"fattree:k=3"'), "k"),
    (GOOD.replace('"uniform:percent=20"', '"uniform:percent=200"'), "percent"),
    (GOOD.replace("[grid]", "[grid\n"), "invalid TOML"),
])
def test_bad_spec_fails_before_spark_starts(tmp_path: Path, body: str, needle: str,
                                            no_spark: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(body)
    rc, err = _run(["run", str(spec), "--out", str(tmp_path / "out")], capsys)
    assert rc == 2
    assert err.startswith("stackcast: error: ") and "\n" not in err, err
    assert needle in err
    assert no_spark == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["missing.toml", "adir.toml"])
def test_unreadable_spec_file_fails_before_spark(tmp_path: Path, name: str,
                                                 no_spark: list[str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "adir.toml").mkdir()
    rc, err = _run(["run", str(tmp_path / name)], capsys)
    assert rc == 2 and "\n" not in err
    assert "cannot read spec" in err and name in err
    assert no_spark == []


def test_missing_java_is_one_line_saying_what_to_install(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         no_spark: list[str],
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    spec = tmp_path / "ok.toml"
    spec.write_text(GOOD)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rc, err = _run(["run", str(spec), "--out", str(tmp_path / "out")], capsys)
    assert rc == 2
    assert err == f"stackcast: error: {JAVA_HINT}"
    assert "openjdk-17-jre-headless" in err and "--runner local" in err
    assert no_spark == []


def test_missing_pyspark_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "ok.toml"
    spec.write_text(GOOD)
    monkeypatch.setitem(sys.modules, "pyspark", None)
    rc, err = _run(["run", str(spec), "--out", str(tmp_path / "out")], capsys)
    assert rc == 2 and err == f"stackcast: error: {PYSPARK_HINT}"


def test_out_must_be_a_filesystem_path(no_spark: list[str]) -> None:
    from experiments.cells.spec import parse_spec_dict

    spec = parse_spec_dict(tomllib.loads(GOOD), "ok.toml")
    with pytest.raises(ValueError, match="visible to every executor"):
        spark_runner.run_spark(spec, "s3://bucket/results")
    assert no_spark == []


@pytest.mark.parametrize(("master", "expected"), [
    ("local", "local[1,4]"), ("local[*]", "local[*,4]"), ("local[2]", "local[2,4]"),
    ("local[2,7]", "local[2,7]"), ("spark://h:7077", "spark://h:7077"), ("yarn", "yarn"),
])
def test_local_masters_get_task_retries(master: str, expected: str) -> None:
    assert with_local_retries(master) == expected
    assert is_local_master(master) == master.startswith("local")


def test_code_zip_holds_the_packages_and_their_data(tmp_path: Path) -> None:
    path = build_code_zip(dest=tmp_path)
    names = zipfile.ZipFile(path).namelist()
    for required in ("experiments/__init__.py", "experiments/runners/spark.py",
                     "experiments/specs/quickstart.toml", "topologies/__init__.py",
                     "strategies/__init__.py", "sim/__init__.py", "hil/__init__.py"):
        assert required in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert build_code_zip(dest=tmp_path) == path  # named by content: built once
