"""The Spark engine on the embedded master: same rows as the local engine, exactly once.

One ``local[2]`` SparkSession is shared by the module; the interrupted-run
test starts ``stackcast run`` (Spark is the default engine) in a separate
process and kills it.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from experiments.cells.schema import ROWS
from experiments.cells.spec import Cell, ExperimentSpec, parse_spec_dict
from experiments.reports.report import aggregate_local
from experiments.runners.local import run_local
from experiments.runners.spark_session import SparkUnavailableError, find_java, spark_session
from experiments.storage.results import (
    cell_path,
    data_dir,
    done_cells,
    read_results,
    write_cell,
)
from tests.support.spark_cells import fail_once

pytestmark = pytest.mark.spark
pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'stackcast[spark]')")
try:
    find_java()
except SparkUnavailableError as exc:  # pragma: no cover - CI has Java
    pytest.skip(f"no Java runtime: {exc}", allow_module_level=True)

from experiments.runners.spark import (  # noqa: E402  (after the skips)
    FileProgress,
    affinity,
    aggregate_spark,
    balance,
    family_chunks,
    group_cap,
    installs_per_workload,
    partition_count,
    read_results_spark,
    run_partition,
    run_spark,
    spark_schema,
)

WALL_CLOCK = ("controller_wall_ms",)
REPO = Path(__file__).resolve().parents[2]  # where ``tests.support`` is importable
SPEC = {
    "experiment": {"name": "sparktest", "notifications": 4, "seeds": [1, 2],
                   "payload_bytes": [50, 200]},
    "grid": {"topology": ["fattree:k=4", "jellyfish:switches=12,degree=3,seed=2"],
             "strategy": ["unicast", "broadcast", "multicast"],
             "receivers": ["uniform:percent=20", "uniform:percent=60"]},
}


def make_spec() -> ExperimentSpec:
    return parse_spec_dict(SPEC, "sparktest.toml")


def sorted_rows(out: Path) -> Any:
    table = read_results(out).sort_by([("cell_id", "ascending"), ("run", "ascending")])
    # measured wall-clock columns are documented as not reproducible
    return table.drop_columns([c for c in WALL_CLOCK if c in table.column_names])


def row_keys(out: Path) -> list[tuple[str, int]]:
    table = read_results(out)
    return list(zip(table["cell_id"].to_pylist(), table["run"].to_pylist(), strict=True))


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with spark_session("local[2]", app_name="stackcast-tests") as session:
        yield session


@pytest.fixture(scope="module")
def local_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local")
    run_local(make_spec(), out, progress=False)
    return out


# -- partitions (pure) --------------------------------------------------------------

def _cell(topology: str, seed: int, notifications: int = 10) -> Cell:
    return Cell(experiment="x", topology=topology, strategy="unicast", params=(),
                receivers="uniform:percent=10", payload_bytes=50, seed=seed,
                notifications=notifications)


def test_balance_is_lpt_and_keeps_every_cell_once() -> None:
    cells = ([_cell("jellyfish:switches=400,degree=4,seed=1", s) for s in range(2)]
             + [_cell("jellyfish:switches=20,degree=4,seed=1", s) for s in range(40)]
             + [_cell("fattree:k=8", s) for s in range(6)])
    parts = balance(cells, 6)
    assert len(parts) == 6
    flat = [c.cell_id for p in parts for c in p]
    assert sorted(flat) == sorted(c.cell_id for c in cells)
    loads = [sum(c.cost() for c in p) for p in parts]
    biggest = max(c.cost() for c in cells)
    # the two large cells sit alone-ish: no partition exceeds the mean by more than one cell
    assert max(loads) <= sum(loads) / len(loads) + biggest
    big = [p for p in parts if any("400" in c.topology for c in p)]
    assert len(big) == 2  # never both large cells in one partition
    assert balance(list(reversed(cells)), 6) == parts  # deterministic


def test_balance_never_makes_empty_partitions() -> None:
    cells = [_cell("fattree:k=4", s) for s in range(3)]
    assert [len(p) for p in balance(cells, 10)] == [1, 1, 1]
    with pytest.raises(ValueError, match="partitions"):
        balance(cells, 0)


def test_partition_count() -> None:
    assert partition_count(1, 8) == 1
    assert partition_count(100, 2) == 16  # 8 x 2 beats ceil(100 / 64)
    assert partition_count(1000, 2) == 16
    assert partition_count(1100, 2) == 18  # ceil(1100 / 64) beats 8 x 2
    assert partition_count(30, 4) == 30  # at most one per cell
    assert partition_count(10_000, 2) == 157
    assert group_cap(12, 2) == 2 and group_cap(132, 2) == 22 and group_cap(5, 8) == 1
    assert group_cap(24_750, 2) == 64  # MAX_CELLS_PER_PARTITION


def test_small_spec_is_one_task_per_cell_heaviest_first() -> None:
    """12 cells on 2 slots: 12 tasks of one cell, as a process pool hands them out,
    the heaviest first (Spark launches a stage's tasks in partition order)."""
    cells = ([_cell("jellyfish:switches=64,degree=4,seed=1", s) for s in range(10)]
             + [_cell("jellyfish:switches=64,degree=4,seed=1", s, 30) for s in range(10, 12)])
    parts = balance(cells, partition_count(12, 2), group_cap(12, 2))
    assert [len(p) for p in parts] == [1] * 12
    loads = [sum(c.cost() for c in p) for p in parts]
    assert loads == sorted(loads, reverse=True) and loads[0] > loads[-1]
    assert sorted(c.cell_id for p in parts for c in p) == sorted(c.cell_id for c in cells)
    # LPT over fewer partitions than cells: the third partition ends heaviest, runs first
    mixed = [_cell("jellyfish:switches=64,degree=4,seed=1", s, n)
             for s, n in enumerate((50, 40, 30, 30))]
    assert [[c.notifications for c in p] for p in balance(mixed, 3)] == [[30, 30], [50], [40]]


def test_each_partition_is_one_task(spark: Any) -> None:
    parts = balance(make_spec().cells(), 5)
    sizes = spark.sparkContext.parallelize(parts, numSlices=len(parts)).glom().map(len).collect()
    assert sizes == [1] * len(parts)


def test_file_progress_counts_new_and_replaced_files_only(tmp_path: Path) -> None:
    class Bar:
        n = 0

        def update(self, k: int = 1) -> None:
            self.n += k

    spec = make_spec()
    cells = spec.cells()[:4]
    from experiments.cells.pipeline import run_cell

    old = run_cell(cells[0])
    write_cell(tmp_path, cells[0], old)  # finished before the run: not progress
    bar = Bar()
    progress = FileProgress(tmp_path, cells, bar)
    assert progress.poll() == 0
    write_cell(tmp_path, cells[1], run_cell(cells[1]))
    assert progress.poll() == 1
    write_cell(tmp_path, cells[0], old)  # replaced during the run
    assert progress.poll() == 1
    assert progress.poll() == 0 and bar.n == 2


# -- schema -------------------------------------------------------------------------

def test_spark_schema_mirrors_the_arrow_schema() -> None:
    from pyspark.sql import types as T

    schema = spark_schema()
    assert [f.name for f in schema] == ROWS.names
    assert [f.nullable for f in schema] == [f.nullable for f in ROWS]
    kinds = {f.name: type(f.dataType) for f in schema}
    assert kinds["seed"] is T.LongType and kinds["payload_bytes"] is T.IntegerType
    assert kinds["delay_worst_ms"] is T.DoubleType and kinds["params"] is T.StringType


def test_spark_reads_the_dataset_back_with_the_same_schema(spark: Any, local_dir: Path) -> None:
    expected = [(f.name, f.dataType) for f in spark_schema()]
    inferred = spark.read.parquet(str(data_dir(local_dir))).schema  # the files as is
    assert [(f.name, f.dataType) for f in inferred] == expected
    explicit = read_results_spark(spark, local_dir)
    assert [(f.name, f.dataType) for f in explicit.schema] == expected
    assert explicit.count() == read_results(local_dir).num_rows


# -- runs ---------------------------------------------------------------------------

def test_local_and_spark_engines_give_identical_rows(spark: Any, local_dir: Path,
                                                     tmp_path: Path) -> None:
    spec = make_spec()
    counts = run_spark(spec, tmp_path, spark=spark, progress=False)
    assert counts == {"cells": len(spec.cells()), "ran": len(spec.cells()), "skipped": 0}
    assert sorted_rows(tmp_path).equals(sorted_rows(local_dir))
    # the same cells on disk (the local run gathers its 48 cells into one file; each
    # Spark task holds too few to gather), every file directly in the dataset directory
    assert done_cells(tmp_path) == done_cells(local_dir) == {c.cell_id for c in spec.cells()}
    assert {p.parent for p in tmp_path.rglob("*.parquet")} == {data_dir(tmp_path)}


def test_progress_bar_reaches_the_total(spark: Any, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    spec = parse_spec_dict({**SPEC, "grid": {**SPEC["grid"], "strategy": ["unicast"]}},
                           "small.toml")
    run_spark(spec, tmp_path, spark=spark, progress=True)
    err = capsys.readouterr().err
    n = len(spec.cells())
    assert f"{n}/{n}" in err and "cell/s" in err


def test_a_cell_failing_once_is_retried_and_written_once(spark: Any, local_dir: Path,
                                                        tmp_path: Path) -> None:
    spec = make_spec()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    armed = spec.cells()[::7]
    for cell in armed:
        (hooks / f"{cell.cell_id}.arm").touch()
    out = tmp_path / "out"

    counts = run_spark(spec, out, spark=spark, progress=False, around=fail_once(hooks))

    assert counts["ran"] == len(spec.cells())
    # every armed cell raised once (after writing its file) and then succeeded
    assert sorted(p.name for p in hooks.iterdir()) == sorted(
        f"{c.cell_id}.fired" for c in armed)
    keys = row_keys(out)
    assert len(keys) == len(set(keys))
    assert sorted_rows(out).equals(sorted_rows(local_dir))


def test_resume_skips_finished_cells(spark: Any, local_dir: Path, tmp_path: Path) -> None:
    spec = make_spec()
    cells = spec.cells()
    run_spark(spec, tmp_path, spark=spark, progress=False)
    removed = cells[1::4]
    for cell in removed:
        cell_path(tmp_path, cell).unlink()
    stamps = {c.cell_id: cell_path(tmp_path, c).stat().st_mtime_ns
              for c in cells if c not in removed}

    counts = run_spark(spec, tmp_path, resume=True, spark=spark, progress=False)

    assert counts == {"cells": len(cells), "ran": len(removed),
                      "skipped": len(cells) - len(removed)}
    assert {cid: cell_path(tmp_path, c).stat().st_mtime_ns for c in cells
            if (cid := c.cell_id) in stamps} == stamps
    assert sorted_rows(tmp_path).equals(sorted_rows(local_dir))
    assert run_spark(spec, tmp_path, resume=True, spark=spark)["ran"] == 0


def _settled_cell_count(out: Path, quiet_s: float = 2.0, limit_s: float = 60.0) -> int:
    """Cell files once none has appeared for ``quiet_s``.

    PySpark's worker daemon runs in a process group of its own, so killing the
    CLI's group leaves a worker that is inside a cell to finish it (and write its
    file) before it notices its JVM is gone.
    """
    last, since, start = -1, time.monotonic(), time.monotonic()
    while time.monotonic() - start < limit_s:
        count = len(list(out.rglob("cell-*.parquet")))
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return count
        time.sleep(0.1)
    raise AssertionError(f"cell files still appearing {limit_s} s after the kill")


def test_interrupted_run_resumed_ends_with_exactly_all_rows(spark: Any, local_dir: Path,
                                                            tmp_path: Path) -> None:
    spec_file = tmp_path / "sparktest.toml"
    spec_file.write_text(_toml(SPEC))
    out = tmp_path / "out"
    total = len(make_spec().cells())
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    # stackcast whose cells sleep 0.25 s each, so the run is still going at the kill
    cmd = [sys.executable, "-c", "import sys; from tests.support.spark_cells import main; "
           "sys.exit(main(sys.argv[1:]))", "0.25", "run", str(spec_file), "--out", str(out),
           "--master", "local[2]", "--quiet"]
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while len(list(out.rglob("cell-*.parquet"))) < 5:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the run never wrote a cell"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI, its JVM and its Python workers
        proc.wait(timeout=60)
        if proc.stderr:
            proc.stderr.close()
    done = _settled_cell_count(out)
    assert 0 < done < total

    counts = run_spark(make_spec(), out, resume=True, spark=spark, progress=False)

    assert counts == {"cells": total, "ran": total - done, "skipped": done}
    keys = row_keys(out)
    assert len(keys) == len(set(keys)) == read_results(local_dir).num_rows
    assert sorted_rows(out).equals(sorted_rows(local_dir))


# -- aggregation ----------------------------------------------------------------------

def test_spark_aggregation_equals_the_local_one(spark: Any, local_dir: Path) -> None:
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    remote = aggregate_spark(local_dir, spark=spark)
    assert spark.conf.get("spark.sql.shuffle.partitions") == shuffle  # set for the query only
    local = aggregate_local(read_results(local_dir))
    assert len(remote) == len(local) > 0
    for r, loc in zip(remote, local, strict=True):
        assert list(r) == list(loc)
        for key, value in loc.items():
            if isinstance(value, float):
                assert math.isclose(r[key], value, rel_tol=1e-9, abs_tol=1e-9) or (
                    math.isnan(r[key]) and math.isnan(value)), key
            else:
                assert r[key] == value and type(r[key]) is type(value), key
    singles = [r for r in remote if r["count"] == 1]
    assert all(r["bytes_std"] == 0.0 for r in singles)


def test_aggregate_spark_without_results_fails_before_spark(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no results"):
        aggregate_spark(tmp_path, master="local[1]")


# -- helpers ------------------------------------------------------------------------

def _toml(spec: dict[str, dict[str, Any]]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return f'"{v}"' if isinstance(v, str) else str(v)

    return "".join(f"[{table}]\n" + "".join(f"{k} = {value(v)}\n" for k, v in body.items())
                   for table, body in spec.items())


def test_balance_keeps_the_cells_of_one_network_and_seed_together() -> None:
    """A ch6-networks-like grid (every cell its own group, many per partition): the
    cells of one (topology, seed) fill one or two tasks of about equal size, so the
    worker's caches serve them all; every cell still runs once, heaviest task first."""
    topologies = ("zoo:Litnet", "zoo:Dfn", "zoo:Arnes")
    cells = [Cell(experiment="x", topology=t, strategy=s, params=(("max_rules", m),),
                  receivers="clustered:scenario=nearby,churn=0", payload_bytes=50, seed=seed,
                  notifications=20)
             for t in topologies for seed in range(1, 9)
             for s in ("vt-broadcast", "vt-cycles", "vt-relation") for m in (5, 10, 15, 20)]
    slots = 2
    parts = balance(cells, 8, group_cap(len(cells), slots))  # 36 cells per task on average
    assert sorted(c.cell_id for p in parts for c in p) == sorted(c.cell_id for c in cells)
    homes: dict[tuple[str, int], set[int]] = {}
    for i, p in enumerate(parts):
        for c in p:
            homes.setdefault((c.topology, c.seed), set()).add(i)
    assert all(len(h) == 1 for h in homes.values())  # 12 cells <= 36: one task each
    assert len(parts) == 8
    loads = [sum(c.cost() for c in p) for p in parts]
    assert loads == sorted(loads, reverse=True) and max(loads) - min(loads) <= 12 * 64 * 20
    # a family larger than a task's share is cut into equal chunks, not share + rest
    fam = [c for c in cells if c.seed == 1]  # 36 cells of 3 families (12 each)
    chunks = family_chunks({(*affinity(c), "0"): [c] for c in fam}, 5)
    assert sorted(len(v) for v in chunks.values()) == [4] * 9
    assert all(len({(c.topology, c.seed) for c in v}) == 1 for v in chunks.values())


def test_a_partition_runs_and_writes_its_cells_with_rare_collections(tmp_path: Path) -> None:
    """The collector stays at ``rare_gc``'s thresholds between the cells of a partition
    (their writes included) and gets its own back when the partition ends."""
    import gc

    from experiments.storage.results import Provenance
    from sim.engines.gc_thresholds import RUN_GC_THRESHOLDS

    cells = make_spec().cells()[:3]
    seen = []

    def around(cell: Cell, task: Any) -> int:
        seen.append(gc.get_threshold())
        rows = task()
        seen.append(gc.get_threshold())
        return rows

    before = gc.get_threshold()
    done = list(run_partition([cells[:2], cells[2:]], str(tmp_path), Provenance.of(), around))
    assert [cid for cid, _ in done] == [c.cell_id for c in cells]
    assert all(cell_path(tmp_path, c).exists() for c in cells)
    assert seen == [RUN_GC_THRESHOLDS] * 6 and gc.get_threshold() == before


def test_a_partition_freezes_what_each_cell_leaves_and_holds_it_at_its_end(
        tmp_path: Path) -> None:
    """Every cell after the first starts with the survivors of the cells before it
    frozen (collections skip them) and their garbage cycles freed, not frozen; the
    partition's end holds the freeze for the worker's next task (released here), and
    a freeze made by someone else before is left alone."""
    import gc
    import weakref

    from experiments.storage.results import Provenance
    from sim.engines.gc_thresholds import release_held

    cells = make_spec().cells()[:3]
    counts: list[int] = []
    cycles: list[weakref.ref[Any]] = []

    class Node:
        pass

    def leave_a_cycle(cell: Cell, task: Any) -> int:
        counts.append(gc.get_freeze_count())
        alive = [ref() is not None for ref in cycles]
        rows = task()
        node = Node()
        node.self = node  # type: ignore[attr-defined]  # garbage only the collector frees
        cycles.append(weakref.ref(node))
        return rows if not any(alive) else -1  # -1: a cycle of an earlier cell survived

    assert gc.get_freeze_count() == 0
    answered = list(run_partition([cells], str(tmp_path / "a"), Provenance.of(), leave_a_cycle))
    assert all(rows > 0 for _, rows in answered)  # every earlier cell's cycle was freed
    assert counts[0] == 0 and counts[1] > 0 and counts[2] > 0
    assert gc.get_freeze_count() > 0  # held for the next task
    release_held()
    assert gc.get_freeze_count() == 0
    counts.clear()
    gc.freeze()
    try:
        held = gc.get_freeze_count()
        list(run_partition([cells], str(tmp_path / "b"), Provenance.of(), leave_a_cycle))
        # nothing more frozen (refcounting may free some), nothing unfrozen
        assert len(counts) == 3 and all(0 < c <= held for c in counts)
        assert 0 < gc.get_freeze_count() <= held
    finally:
        gc.unfreeze()


def test_a_worker_holds_the_freeze_between_tasks_and_frees_held_cycles_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's tasks keep the freeze from one to the next, so a task's first
    collection skips what earlier tasks left; every ``HOLD_TASKS``-th task ends
    unfrozen, and the next task's first collection frees the cycles that frozen
    objects became meanwhile (here: one a cell kept alive, dropped after its task).
    A task of more than ``HOLD_MAX_CPU_S`` CPU seconds holds nothing."""
    import gc
    import weakref

    import sim.engines.gc_thresholds as gct
    from experiments.storage.results import Provenance

    monkeypatch.setattr(gct, "HOLD_TASKS", 3)
    gct.release_held()
    cell = make_spec().cells()[0]
    kept: list[Any] = []
    refs: list[weakref.ref[Any]] = []
    starts: list[int] = []

    class Node:
        pass

    def keep_a_cycle(_cell: Cell, task: Any) -> int:
        starts.append(gc.get_freeze_count())
        node = Node()
        node.self = node  # type: ignore[attr-defined]  # freed only by the collector
        kept.append(node)  # alive when frozen; dropped after the task
        refs.append(weakref.ref(node))
        return int(task())

    alive = []
    for i in range(4):
        list(run_partition([[cell]], str(tmp_path / str(i)), Provenance.of(), keep_a_cycle))
        kept.clear()
        alive.append([ref() is not None for ref in refs])
    assert starts[0] == 0 and starts[1] > 0 and starts[2] > 0  # held from task to task
    assert starts[3] == 0  # the third task ended unfrozen
    # the cycles of tasks 1-3 stay (frozen) until the fourth task's first collection
    assert alive[:3] == [[True], [True, True], [True, True, True]]
    assert alive[3] == [False, False, False, True]
    assert gc.get_freeze_count() > 0  # the fourth task holds again
    # a task longer than HOLD_MAX_CPU_S (here: any) ends unfrozen
    monkeypatch.setattr(gct, "HOLD_MAX_CPU_S", 0.0)
    list(run_partition([[cell]], str(tmp_path / "long"), Provenance.of(), keep_a_cycle))
    assert gc.get_freeze_count() == 0


def test_balance_keeps_churn_levels_of_one_seed_together() -> None:
    """Cells that differ only in the churn level share the worker's caches: one task."""
    levels = [f"clustered:scenario=nearby,churn={c}" for c in range(0, 101, 10)]
    cells = [Cell(experiment="x", topology="zoo:Litnet", strategy=s, params=(),
                  receivers=r, payload_bytes=50, seed=seed, notifications=20)
             for s in ("vt-clusters", "vt-broadcast") for seed in range(1, 7) for r in levels]
    parts = balance(cells, 12)
    assert sorted(c.cell_id for p in parts for c in p) == sorted(c.cell_id for c in cells)
    home = {}
    for i, p in enumerate(parts):
        for c in p:
            home.setdefault((c.strategy, c.seed), set()).add(i)
    assert all(len(v) == 1 for v in home.values())
    assert len(parts) == 12
    # a small spec is still spread: groups are split to at most their share
    few = [c for c in cells if c.seed == 1 and c.strategy == "vt-clusters"]
    assert len(balance(few, 6)) == 6
    # the runner's many small tasks keep the groups whole (group_cap, not the
    # partition count, bounds a group) and come heaviest first
    slots = 2
    parts = balance(cells, partition_count(len(cells), slots), group_cap(len(cells), slots))
    assert len(parts) == 12  # one task per group: fewer groups than 8 x 2 partitions
    assert all(len({(c.strategy, c.seed) for c in p}) == 1 and len(p) == len(levels)
               for p in parts)
    loads = [sum(c.cost() for c in p) for p in parts]
    assert loads == sorted(loads, reverse=True)


def test_balance_keeps_a_workload_install_in_one_task() -> None:
    """elmo installs all groups of its workload once per task: its slices stay in one
    task up to ``max_shared`` cells, while the other strategies' slices are split."""
    slices = [f"tenants:groups=1000,part={k},parts=100" for k in range(100)]
    cells = [Cell(experiment="x", topology="elmo", strategy=s, params=(), receivers=r,
                  payload_bytes=64, seed=1, notifications=100)
             for s in ("elmo", "unicast") for r in slices]
    assert installs_per_workload(cells[0]) and not installs_per_workload(cells[-1])
    slots = 2
    parts = balance(cells, partition_count(len(cells), slots), group_cap(len(cells), slots),
                    math.ceil(len(cells) / slots))
    assert sorted(c.cell_id for p in parts for c in p) == sorted(c.cell_id for c in cells)
    homes = {s: {i for i, p in enumerate(parts) for c in p if c.strategy == s}
             for s in ("elmo", "unicast")}
    assert len(homes["elmo"]) == 1 and len(homes["unicast"]) == 3  # group_cap 34: 34 + 34 + 32
    assert {c.strategy for c in parts[0]} == {"elmo"} and len(parts[0]) == 100  # first
    # beyond max_shared cells even a workload install is split
    parts = balance(cells, 16, group_cap(len(cells), slots), 40)
    assert sorted(len(p) for p in parts if p[0].strategy == "elmo") == [20, 40, 40]


def test_cost_counts_switches_notifications_and_content_subscriptions() -> None:
    """The balancing cost: a complete tree's switches, and a content install's
    subscriptions at SUBSCRIPTION_COST notifications each."""
    from experiments.cells.spec import SUBSCRIPTION_COST

    def cell(topology: str, receivers: str) -> Cell:
        return Cell(experiment="x", topology=topology, strategy="pleroma-dz", params=(),
                    receivers=receivers, payload_bytes=64, seed=1, notifications=300)

    tree = "regulartree:depth=4,fanout=5,hosts=7"  # 1 + 5 + 25 + 125 switches
    assert cell(tree, "uniform:percent=10").cost() == 156 * 300
    small, large = (cell("randomtree:switches=100,hosts=2000,seed=1",
                         f"content:subs={n},publishers=10,dims=6") for n in (1000, 8000))
    assert small.cost() == 100 * (300 + SUBSCRIPTION_COST * 1000)
    assert large.cost() > 5 * small.cost()
