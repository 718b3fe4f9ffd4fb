"""A real standalone Spark cluster on loopback: one master, two workers, separate JVMs.

The module starts the cluster with pyspark's own ``bin/spark-class`` (each
daemon in its own process group, so it can be killed with everything it
spawned), runs a sweep through ``spark-submit`` and through ``--master``
from this process, kills one worker (with its executor and Python workers)
in the middle of a run, and stops the cluster at the end. Tests run in file
order: the worker kill comes last.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from experiments.cells.spec import ExperimentSpec, parse_spec_dict
from experiments.runners.local import run_local
from experiments.runners.spark_session import SparkUnavailableError, find_java, spark_session
from experiments.storage.results import read_results

pytestmark = pytest.mark.spark
pyspark = pytest.importorskip("pyspark",
                              reason="pyspark is not installed (pip install 'stackcast[spark]')")
try:
    find_java()
except SparkUnavailableError as exc:  # pragma: no cover - CI has Java
    pytest.skip(f"no Java runtime: {exc}", allow_module_level=True)

from experiments.runners.spark import run_spark  # noqa: E402
from tests.support.spark_cells import slow_cells  # noqa: E402

SPARK_HOME = Path(pyspark.__file__).resolve().parent
WALL_CLOCK = ("controller_wall_ms",)
SPEC = {
    "experiment": {"name": "clustertest", "notifications": 3, "seeds": [1, 2, 3],
                   "payload_bytes": [50]},
    "grid": {"topology": ["fattree:k=4"], "strategy": ["unicast", "multicast"],
             "receivers": ["uniform:percent=25", "uniform:percent=50"]},
}
SPEC_TOML = """
[experiment]
name = "clustertest"
notifications = 3
seeds = [1, 2, 3]
payload_bytes = [50]
[grid]
topology = ["fattree:k=4"]
strategy = ["unicast", "multicast"]
receivers = ["uniform:percent=25", "uniform:percent=50"]
"""


def make_spec() -> ExperimentSpec:
    return parse_spec_dict(SPEC, "clustertest.toml")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    """Master and workers started with ``bin/spark-class``, one process group each."""

    def __init__(self, root: Path, workers: int = 2) -> None:
        self.root = root
        self.port, self.ui_port = _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
                    "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(root / "logs"),
                    "SPARK_NO_DAEMONIZE": "1"}
        self.master = self._start("master", "org.apache.spark.deploy.master.Master",
                                  "--host", "127.0.0.1", "--port", str(self.port),
                                  "--webui-port", str(self.ui_port))
        self._wait(lambda s: s.get("status") == "ALIVE", "master")
        self.workers = [
            self._start(f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                        "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
                        "--webui-port", str(_free_port()),
                        "--work-dir", str(root / f"work{i}"), self.url)
            for i in range(workers)]
        self._wait(lambda s: s.get("aliveworkers") == workers, f"{workers} workers")

    def _start(self, name: str, cls: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115  (closed with the process)
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), cls, *args],
                                env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def state(self) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/",
                                        timeout=5) as resp:
                return dict(json.load(resp))
        except OSError:
            return {}

    def _wait(self, ready: Any, what: str, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while not ready(self.state()):
            if self.master.poll() is not None or time.monotonic() > deadline:
                logs = (self.root / "master.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"standalone cluster: no {what}\n{logs}")
            time.sleep(0.3)

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the daemon's process group: the JVM, its executor, its Python workers."""
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)

    def stop(self) -> None:
        for proc in [*self.workers, self.master]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in [*self.workers, self.master]:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill(proc)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    c = StandaloneCluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("local")
    run_local(make_spec(), out, progress=False)
    return _sorted(out)


def _sorted(out: Path) -> Any:
    table = read_results(out).sort_by([("cell_id", "ascending"), ("run", "ascending")])
    # measured wall-clock columns are documented as not reproducible
    return table.drop_columns([c for c in WALL_CLOCK if c in table.column_names])


def _keys(out: Path) -> list[tuple[str, int]]:
    t = read_results(out)
    return list(zip(t["cell_id"].to_pylist(), t["run"].to_pylist(), strict=True))


def test_spark_submit_runs_the_sweep_on_the_cluster(cluster: StandaloneCluster, reference: Any,
                                                    tmp_path: Path) -> None:
    spec = tmp_path / "clustertest.toml"
    spec.write_text(SPEC_TOML)
    out = tmp_path / "out"
    import experiments.cli.spark_submit as entry

    proc = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", cluster.url,
         "--conf", "spark.executor.memory=512m", entry.__file__, str(spec), "--out", str(out),
         "--quiet"],
        env={**cluster.env, "PYSPARK_DRIVER_PYTHON": sys.executable},
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "clustertest: 12 cells run, 0 skipped" in proc.stdout
    assert _sorted(out).equals(reference)
    # it ran on the cluster (the master of spark-submit), not on an embedded local master
    apps = [a.get("name") for a in cluster.state().get("completedapps", [])]
    assert "stackcast clustertest" in apps, apps


@pytest.fixture(scope="module")
def cluster_spark(cluster: StandaloneCluster) -> Iterator[Any]:
    with spark_session(cluster.url, app_name="stackcast-cluster-test",
                       conf={"spark.executor.memory": "512m"}) as session:
        sc = session.sparkContext
        deadline = time.monotonic() + 120
        # wait until both executors (plus the driver) are registered
        while sc._jsc.sc().getExecutorMemoryStatus().size() < 3:
            assert time.monotonic() < deadline, "executors did not register"
            time.sleep(0.3)
        yield session


def test_executors_are_separate_and_import_the_shipped_zip(cluster_spark: Any) -> None:
    def where(_: Any) -> Iterator[tuple[int, str]]:
        import experiments.runners.spark as runner

        time.sleep(0.5)  # keep both executors busy so each gets a task
        yield os.getpid(), runner.__file__

    seen = cluster_spark.sparkContext.parallelize(range(4), 4).mapPartitions(where).collect()
    pids = {pid for pid, _ in seen}
    assert os.getpid() not in pids and len(pids) >= 2
    assert all("stackcast-code-" in f and ".zip" in f for _, f in seen), seen


def test_master_url_sweep_equals_the_local_engine(cluster_spark: Any, cluster: StandaloneCluster,
                                                  reference: Any, tmp_path: Path) -> None:
    spec = make_spec()
    counts = run_spark(spec, tmp_path, master=cluster.url, spark=cluster_spark, progress=False)
    assert counts == {"cells": 12, "ran": 12, "skipped": 0}
    assert _sorted(tmp_path).equals(reference)


def test_killed_worker_mid_run_leaves_exactly_one_row_set(cluster_spark: Any,
                                                          cluster: StandaloneCluster,
                                                          reference: Any, tmp_path: Path) -> None:
    slow = slow_cells(0.5)  # 12 cells x 0.5 s over two 1-core workers
    spec = make_spec()
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["counts"] = run_spark(spec, tmp_path, spark=cluster_spark, progress=False,
                                         around=slow)
        except BaseException as exc:  # noqa: BLE001  (reported by the assertion below)
            result["error"] = exc

    tracker = cluster_spark.sparkContext.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup())
    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while len(list(tmp_path.rglob("cell-*.parquet"))) < 2:
        assert thread.is_alive() and time.monotonic() < deadline, result
        time.sleep(0.05)
    cluster.kill(cluster.workers[1])
    done_at_kill = len(list(tmp_path.rglob("cell-*.parquet")))
    thread.join(timeout=240)

    assert not thread.is_alive(), "the run did not finish after the worker was killed"
    assert "error" not in result, result.get("error")
    assert done_at_kill < 12  # the kill happened mid-run
    assert result["counts"]["ran"] == 12
    keys = _keys(tmp_path)
    assert len(keys) == len(set(keys)) == 12 * spec.notifications
    assert _sorted(tmp_path).equals(reference)
    assert len(list(tmp_path.rglob("cell-*.parquet"))) == 12
    jobs = set(tracker.getJobIdsForGroup()) - jobs_before
    failed = sum(stage.numFailedTasks for job in jobs
                 for sid in tracker.getJobInfo(job).stageIds
                 if (stage := tracker.getStageInfo(sid)) is not None)
    assert failed >= 1  # the lost executor's task was retried elsewhere
