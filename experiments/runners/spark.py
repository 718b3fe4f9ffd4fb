"""The Spark engine: cells in cost-balanced partitions, one Parquet file per cell.

Design
------
Distribution
    The driver expands the (already validated) spec into cells, drops those
    already finished when resuming, and packs the rest into partitions with
    greedy longest-processing-time scheduling on :meth:`Cell.cost` (largest
    first, always into the lightest partition), so one large topology does
    not leave a straggler behind. The units placed are groups of related
    cells (:func:`affinity`: e.g. the churn levels of one seed, topology and
    strategy), which then run one after the other in one task and reuse the
    worker process's caches (population plans, virtual-tree installs, table
    lookups); a group is split only when it exceeds its share of
    ``GROUP_SHARES_PER_SLOT`` x ``defaultParallelism`` equal parts of the
    spec (:func:`group_cap`), so a small spec still spreads over every slot;
    the cells of a strategy that installs once for its whole workload (elmo's
    million groups) only beyond a slot's share, so the install runs once.
    Where a partition holds several groups anyway (more groups than
    partitions), the groups of one family (same topology, links and seed) are
    first merged into chunks of at most a partition's share
    (:func:`family_chunks`), so the cells that share a topology's rules, a
    seed's populations and workload-independent installs run in one task.
    There are ``TASKS_PER_SLOT`` x ``defaultParallelism`` partitions (at least
    one per ``MAX_CELLS_PER_PARTITION`` cells, at most one per group): many
    short tasks, handed to the slots heaviest first (Spark launches a stage's
    tasks in partition order), so the slots finish together instead of one
    idling while the other runs the last long task. Each partition is one
    element of ``sc.parallelize(partitions, numSlices=len(partitions))``,
    i.e. one task, and runs with ``mapPartitions``.

Output and exactly-once rows
    Each task runs its cells with :func:`experiments.cells.pipeline.run_cell` (the
    same function as the local engine, hence identical rows) and writes each
    cell itself through a :class:`~experiments.storage.results.CellWriter`: a
    temporary file renamed into ``OUT/data/cell-<id>.parquet``. A cell's file
    name depends only on the cell, and the rename is atomic, so a retried
    task, a speculative copy, a lost executor or a rerun replaces the file
    with identical content. A task that wrote at least
    ``GATHER_MIN_CELLS`` cells then gathers them into one
    ``cells-<hash>.parquet`` (named by its cell ids, so a retry replaces it
    too) and removes their cell files (:mod:`experiments.storage.gathered`):
    every cell has exactly one row set, never zero after success, never two.
    Tasks return only ``(cell_id, rows)``; the driver checks that every cell
    answered and has rows on disk. ``resume=True`` skips cells that have rows
    (files are complete by construction; hidden ``.cell-*.tmp`` left by a
    killed writer are ignored by Spark and pyarrow); a run without it first
    takes its cells out of earlier gathered files.
    ``OUT`` must be a path every executor sees at the same place (the local
    disk for ``local[*]``; NFS or another shared mount on a cluster).

Schema
    :func:`spark_schema` maps :data:`experiments.cells.schema.ROWS` to a
    ``StructType`` in one function; Spark reads the dataset with it, so both
    engines see the same columns and types (Spark reports every column of a
    file source as nullable). Every column, ``experiment`` and ``strategy``
    included, lives in the files; the directories are not hive partitions.

Aggregation
    :func:`aggregate_spark` groups by :data:`POINT_COLUMNS` with Spark SQL
    (``count``, ``avg``, ``stddev_samp``, ``max``; std 0 when a point has one row;
    ``ci95 = 1.96 std / sqrt(n)``) and returns the list of dicts of
    :func:`experiments.reports.report.aggregate_local`, in the same order.

Progress
    A driver thread polls the expected cell files and the gathered files (a
    cell counts once its file, or a gathered file listing it, is new or
    replaced since the run started) and drives a tqdm bar: cells done /
    total, rate and ETA.

Wrapping cells
    ``run_spark(..., around=f)`` calls ``f(cell, task)`` on the executor for
    every cell instead of ``task()``, where ``task`` runs the cell, writes its
    file and returns its row count: a place to instrument cells (timing,
    logging) or, in tests, to inject failures and delays
    (``tests/support/spark_cells.py``). ``f`` travels to the executors
    pickled with the task, so it must be picklable there.
"""

from __future__ import annotations

import heapq
import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from experiments.cells.pipeline import run_cell
from experiments.cells.schema import ROWS, TIMED_ROWS, metric_columns, point_columns
from experiments.cells.spec import Cell
from experiments.runners.spark_session import DEFAULT_MASTER, require_spark, spark_session
from experiments.storage.gathered import gathered_files, gathered_ids
from experiments.storage.results import (
    CellWriter,
    Provenance,
    cell_path,
    data_dir,
    dataset_schema,
    done_cells,
    prepare_run,
    results_data,
)
from sim.dataplanes.caches import Caches
from sim.dataplanes.seeds import canonical_json
from sim.engines.gc_thresholds import frozen_survivors, rare_gc
from sim.workloads.receivers import step_model_names

log = logging.getLogger(__name__)

#: Tasks per task slot: the last tasks of a run are short, so the slots finish together.
TASKS_PER_SLOT = 8
#: A group of related cells is split only beyond ``1 / (GROUP_SHARES_PER_SLOT x slots)``
#: of the cells (:func:`group_cap`).
GROUP_SHARES_PER_SLOT = 3
MAX_CELLS_PER_PARTITION = 64

#: Runs one cell and writes its file; returns the number of rows written.
CellTask = Callable[[], int]
#: Called as ``around(cell, task)`` in place of ``task()`` for every cell (see "Wrapping cells").
CellWrapper = Callable[[Cell, CellTask], int]


# -- schema -------------------------------------------------------------------------

def spark_type(arrow_type: pa.DataType) -> Any:
    """The Spark SQL type of an Arrow type (the types :data:`ROWS` may use)."""
    from pyspark.sql import types as T

    simple = {
        pa.string(): T.StringType(), pa.large_string(): T.StringType(),
        pa.bool_(): T.BooleanType(), pa.int8(): T.ByteType(), pa.int16(): T.ShortType(),
        pa.int32(): T.IntegerType(), pa.int64(): T.LongType(), pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(), pa.binary(): T.BinaryType(),
    }
    if arrow_type in simple:
        return simple[arrow_type]
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = arrow_type.value_field
        return T.ArrayType(spark_type(item.type), containsNull=item.nullable)
    raise TypeError(f"no Spark type for Arrow type {arrow_type}")


def spark_schema(schema: pa.Schema = ROWS) -> Any:
    """The ``StructType`` of an Arrow schema (by default the result rows)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, spark_type(f.type), nullable=f.nullable)
                         for f in schema])


# -- partitions ---------------------------------------------------------------------

def affinity(cell: Cell) -> tuple[str, ...]:
    """What a cell shares with others through the per-process caches of a worker.

    Cells that differ only in their receiver level (e.g. the churn levels of
    one seed, whose workload seed is the same) share the population's plan
    and, for virtual-tree strategies, the installed state; cells of one
    topology, workload and seed share the plan. Returns (shared workload,
    shared state) keys; see :func:`balance`.
    """
    workload = (cell.topology, canonical_json(dict(cell.links)),
                str(_workload_seed(cell)), str(cell.seed))
    return (*workload, cell.strategy, cell.params_json, str(cell.payload_bytes),
            canonical_json(dict(cell.delays)), cell.engine, canonical_json(dict(cell.timed)))


def _workload_seed(cell: Cell) -> int:
    from sim.workloads.receivers import receiver_model

    try:
        return cell.workload_seed_for(receiver_model(cell.receivers))
    except Exception:  # an invalid receiver spec fails in the cell, with its message
        return cell.workload_seed


def balance(cells: Sequence[Cell], partitions: int, max_group: int | None = None,
            max_shared: int | None = None) -> list[list[Cell]]:
    """Greedy LPT over groups of related cells, each into the lightest partition.

    A group is the cells with the same :func:`affinity` (e.g. the churn levels
    of one seed, topology and strategy), so they run one after the other in
    one task and reuse the worker's caches; groups are placed by decreasing
    cost (sum of :meth:`Cell.cost`), each into the currently lightest
    partition, and a partition runs its groups ordered by workload, then
    strategy. The partitions are returned heaviest first (Spark hands a
    stage's tasks to free slots in partition order: longest processing time
    first). Deterministic (ties broken by key and partition index); empty
    partitions are dropped, so at most ``min(partitions, len(cells))`` remain.
    A group holds at most ``max_group`` cells (default ``ceil(cells /
    partitions)``; larger ones are split), so a spec with few groups still
    spreads over every slot. A group whose strategy installs once for the whole
    workload (:func:`installs_per_workload`: elmo's million groups, minutes of
    CPU) is split only beyond ``max_shared`` cells (default: never), since
    every part would pay the install again.
    """
    if partitions < 1:
        raise ValueError(f"partitions must be >= 1; got {partitions}")
    related: dict[tuple[str, ...], list[Cell]] = {}
    for cell in sorted(cells, key=lambda c: (c.receivers, c.cell_id)):
        related.setdefault(affinity(cell), []).append(cell)
    cap = max(1, max_group or math.ceil(len(cells) / partitions))
    shared_cap = max(1, max_shared or len(cells))
    split: dict[tuple[str, ...], list[Cell]] = {}
    for key, members in related.items():
        size = shared_cap if installs_per_workload(members[0]) else cap
        split.update({(*key, str(i)): members[i:i + size]
                      for i in range(0, len(members), size)})
    groups = family_chunks(split, max(1, len(cells) // partitions))
    bins: list[list[tuple[tuple[str, ...], list[Cell]]]] = [
        [] for _ in range(min(partitions, len(groups)))]
    loads = [0.0] * len(bins)
    heap = [(0.0, i) for i in range(len(bins))]
    for key, group in sorted(groups.items(),
                             key=lambda kv: (-sum(c.cost() for c in kv[1]), kv[0])):
        load, i = heapq.heappop(heap)
        bins[i].append((key, group))
        loads[i] = load + sum(c.cost() for c in group)
        heapq.heappush(heap, (loads[i], i))
    order = sorted(range(len(bins)), key=lambda i: (-loads[i], i))
    return [[c for _, group in sorted(bins[i], key=lambda kv: kv[0]) for c in group]
            for i in order if bins[i]]


def installs_per_workload(cell: Cell) -> bool:
    """Whether ``cell``'s strategy installs once for every cell of its workload seed
    (:attr:`strategies.base.Strategy.workload_install`)."""
    from strategies.base import STRATEGIES, load_builtin_strategies

    load_builtin_strategies()
    return cell.strategy in STRATEGIES and STRATEGIES.get(cell.strategy).workload_install


def family_chunks(groups: dict[tuple[str, ...], list[Cell]], share: int
                  ) -> dict[tuple[str, ...], list[Cell]]:
    """Groups of one family (same topology, links and seed: :func:`affinity`'s key
    without the workload seed and the rest) merged, in key order, into chunks of
    about equal size and at most ``share`` cells (a partition's share of the spec);
    a larger group stays alone. Keyed by their first group's key.

    When a partition holds several groups anyway, holding related ones costs no
    balance and lets the worker's caches serve them all: the topology's
    per-label-format rules, the population plans of the seed, and the installs
    that depend on neither the workload nor the rule budget (e.g. 28 networks x
    25 seeds of ch6-networks: the 73 cells of one network and seed in two
    tasks instead of 73).
    """
    families: dict[tuple[str, ...], list[tuple[tuple[str, ...], list[Cell]]]] = {}
    for key, members in sorted(groups.items()):
        families.setdefault((key[0], key[1], key[3]), []).append((key, members))
    out: dict[tuple[str, ...], list[Cell]] = {}
    for family in families.values():
        size = sum(len(m) for _, m in family)
        target = math.ceil(size / math.ceil(size / share))  # equal chunks of <= share
        chunk: list[Cell] = []
        first: tuple[str, ...] = ()
        for key, members in family:
            if chunk and len(chunk) + len(members) > target:
                out[first] = chunk
                chunk = []
            if not chunk:
                first = key
            chunk = [*chunk, *members]
        out[first] = chunk
    return out


def partition_count(cells: int, parallelism: int) -> int:
    """How many partitions to cut ``cells`` cells into for ``parallelism`` task slots."""
    wanted = max(TASKS_PER_SLOT * max(1, parallelism),
                 math.ceil(cells / MAX_CELLS_PER_PARTITION))
    return max(1, min(cells, wanted))


def group_cap(cells: int, parallelism: int) -> int:
    """The most cells a group of related cells keeps in one task (larger ones are split):
    its share of ``GROUP_SHARES_PER_SLOT`` parts per slot, at most ``MAX_CELLS_PER_PARTITION``."""
    share = math.ceil(cells / (GROUP_SHARES_PER_SLOT * max(1, parallelism)))
    return max(1, min(MAX_CELLS_PER_PARTITION, share))


# -- the task -----------------------------------------------------------------------

def run_partition(groups: Iterable[list[Cell]], out: str, prov: Provenance,
                  around: CellWrapper | None = None) -> Iterator[tuple[str, int]]:
    """Run and write every cell of one partition; yields ``(cell_id, rows)``.

    ``around`` wraps each cell's run and write (see "Wrapping cells"). The
    cyclic collector stays at :func:`~sim.engines.gc_thresholds.rare_gc`'s
    thresholds for the whole partition, not only inside each cell: restoring
    CPython's defaults between cells made every cell pay one collection of
    everything it left young (about 5-15 % of a small ch. 6 cell). What a cell
    leaves alive (the caches it filled) is frozen before the next one
    (:func:`~sim.engines.gc_thresholds.frozen_survivors`), so collections do not
    rescan the caches of earlier cells (about a fifth of a large ch. 6 family).
    The freeze is held from one task of the worker to the next (``hold=True``,
    unfrozen every :data:`~sim.engines.gc_thresholds.HOLD_TASKS` tasks), so a task's
    first collection does not rescan the whole process (a fifth of a small ch. 6 task).
    """
    caches = Caches()  # shared by the cells of this partition (churn groups stay together)
    writer = CellWriter(out, prov)  # the partition's cells end in one gathered file
    with rare_gc(), frozen_survivors(hold=True) as settle:
        for group in groups:
            for cell in group:
                task = partial(run_and_write, cell, writer, caches)
                rows = task() if around is None else around(cell, task)
                settle()
                yield cell.cell_id, rows
    writer.close()


def run_and_write(cell: Cell, writer: CellWriter, caches: Caches | None = None) -> int:
    """Run ``cell`` and write its file with ``writer``; returns its row count."""
    table = run_cell(cell, caches=caches)
    writer.write(cell, table)
    return table.num_rows


# -- progress -----------------------------------------------------------------------

def _signature(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


class FileProgress:
    """Counts cells whose file, or a gathered file holding them, appeared or was
    replaced since construction."""

    def __init__(self, out: str | Path, cells: Sequence[Cell], bar: Any,
                 interval_s: float = 0.5) -> None:
        self._pending = {c.cell_id: cell_path(out, c) for c in cells}
        self._before = {cid: _signature(p) for cid, p in self._pending.items()}
        self._data = data_dir(out)
        self._gathered = {f: _signature(f) for f in gathered_files(self._data)}
        self._bar = bar
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stackcast-progress",
                                        daemon=True)

    def poll(self) -> int:
        done = [cid for cid, p in self._pending.items()
                if (sig := _signature(p)) is not None and sig != self._before[cid]]
        for f in gathered_files(self._data):
            sig = _signature(f)
            if sig is not None and sig != self._gathered.get(f):
                self._gathered[f] = sig
                try:
                    done += [cid for cid in gathered_ids(f) if cid in self._pending]
                except OSError:  # replaced or removed while being read: the next poll sees it
                    del self._gathered[f]
        done = list(dict.fromkeys(done))
        for cid in done:
            del self._pending[cid]
        if done:
            self._bar.update(len(done))
        return len(done)

    def _loop(self) -> None:
        # a poll stats every pending file: poll less often while many are pending, so
        # the driver does not take CPU from the workers (~1 stat per ms at most)
        while not self._stop.wait(max(self._interval_s, len(self._pending) / 1000)):
            self.poll()

    def __enter__(self) -> FileProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.poll()


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, desc: str) -> None:
        pass

    def reset(self, total: int | None = None) -> None:
        pass

    def close(self) -> None:
        pass


# -- the run ------------------------------------------------------------------------

def _local_path(out: str | Path) -> Path:
    text = str(out)
    if text.startswith("file://"):
        text = text[len("file://"):]
    elif "://" in text:
        raise ValueError(f"--out must be a filesystem path visible to every executor "
                         f"(a shared mount on clusters); got {text!r}")
    return Path(text).expanduser().resolve()


class CellSource(Protocol):
    """What :func:`run_spark` reads of a spec: its name, cells and canonical form
    (an :class:`~experiments.cells.spec.ExperimentSpec`, or a subset of one)."""

    @property
    def name(self) -> str: ...

    def cells(self) -> list[Cell]: ...

    def canonical(self) -> dict[str, Any]: ...


def run_spark(spec: CellSource, out: str | Path, resume: bool = False,
              master: str | None = DEFAULT_MASTER, progress: bool = True, *,
              spark: Any = None, around: CellWrapper | None = None) -> dict[str, int]:
    """Run every cell of ``spec`` on Spark into ``out``.

    Parameters
    ----------
    spec
        A validated spec (:func:`experiments.cells.spec.load_spec`).
    out
        Results directory; must be visible at the same path to every executor.
    resume
        Skip cells whose file exists.
    master
        Spark master URL; ``None`` uses the one given to ``spark-submit``.
    progress
        Draw a progress bar (cells done / total, rate, ETA) on stderr.
    spark
        An existing ``SparkSession`` to use (left running); by default one is
        created for the run and stopped afterwards.
    around
        Called as ``around(cell, task)`` on the executors in place of each
        cell's ``task()`` (run and write, returns the rows); must be picklable.

    Returns
    -------
    dict
        ``{"cells": all cells, "ran": cells run now, "skipped": cells already done}``.
    """
    root = _local_path(out)
    cells = list({c.cell_id: c for c in spec.cells()}.values())
    todo = prepare_run(root, cells, resume)
    counts = {"cells": len(cells), "ran": len(todo), "skipped": len(cells) - len(todo)}
    log.info("%s: %d cells, %d to run", spec.name, len(cells), len(todo))
    if not todo:
        return counts
    require_spark()  # one clear line before any JVM starts
    prov = Provenance.of(canonical_json(spec.canonical()))  # on the driver, for every file
    bar: Any = _NoBar()
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"{spec.name} (starting Spark)", unit="cell",
                   dynamic_ncols=True)
    try:
        if spark is not None:
            _run_cells(spark, todo, root, prov, around, bar, spec.name)
        else:
            with spark_session(master, app_name=f"stackcast {spec.name}") as session:
                _run_cells(session, todo, root, prov, around, bar, spec.name)
    finally:
        bar.close()
    return counts


def _run_cells(spark: Any, todo: list[Cell], root: Path, prov: Provenance,
               around: CellWrapper | None, bar: Any, name: str) -> None:
    sc = spark.sparkContext
    slots = sc.defaultParallelism
    parts = balance(todo, partition_count(len(todo), slots), group_cap(len(todo), slots),
                    math.ceil(len(todo) / max(1, slots)))
    log.info("%d cells in %d partitions (costs %s)", len(todo), len(parts),
             [round(sum(c.cost() for c in p)) for p in parts])
    bar.set_description(name)
    bar.reset(total=len(todo))  # rate and ETA from here, not from the JVM start
    task = partial(run_partition, out=str(root), prov=prov, around=around)
    sc.setJobDescription(f"stackcast {name}: {len(todo)} cells")
    with FileProgress(root, todo, bar):
        answered = sc.parallelize(parts, numSlices=len(parts)).mapPartitions(task).collect()
    got = {cid for cid, _ in answered}
    done = done_cells(root)
    missing = [c.cell_id for c in todo if c.cell_id not in got or c.cell_id not in done]
    if missing:
        raise RuntimeError(f"{len(missing)} cells produced no result file, e.g. {missing[0]}")
    log.info("%d cells, %d rows written under %s", len(got), sum(n for _, n in answered), root)


# -- reading and aggregation ------------------------------------------------------------

def _results_root(results_dir: str | Path) -> Path:
    root = _local_path(results_dir)
    results_data(root)  # migrates an old layout; one line when there is nothing to read
    return root


def read_results_spark(spark: Any, results_dir: str | Path) -> Any:
    """The results dataset as a DataFrame with the explicit :func:`spark_schema`."""
    root = _results_root(results_dir)
    schema, data = dataset_schema(root), str(data_dir(root))
    frame = spark.read.schema(spark_schema(schema)).option("basePath", data).parquet(data)
    return frame.select(*schema.names)


def aggregate_frame(df: Any) -> list[dict[str, Any]]:
    """Per parameter point: count, mean, std (0 for n == 1) and 95 % CI half-width.

    Step models are aggregated per point and run, with ``control_writes_cum``
    (as :func:`experiments.reports.report.aggregate_local`).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    schema = TIMED_ROWS if "timed" in df.columns else ROWS
    points, metrics = point_columns(schema), metric_columns(schema)
    session = df.sparkSession
    # step models (a declared StepAxis): one group per run, plus the running sum
    stepped = F.split(F.col("receivers_model"), ":").getItem(0).isin(*sorted(step_model_names()))
    cum = F.sum(F.col("control_writes").cast("double")).over(
        Window.partitionBy("cell_id").orderBy("run"))
    df = (df.withColumn("_run", F.when(stepped, F.col("run")).otherwise(F.lit(-1)))
          .withColumn("control_writes_cum", F.when(stepped, cum)))
    n = F.count(F.lit(1))
    aggs = [n.alias("count")]
    for m in [*metrics, "control_writes_cum"]:
        std = F.when(n > 1, F.stddev_samp(F.col(m).cast("double"))).otherwise(F.lit(0.0))
        aggs += [F.avg(F.col(m).cast("double")).alias(f"{m}_mean"), std.alias(f"{m}_std"),
                 (F.lit(1.96) * std / F.sqrt(n.cast("double"))).alias(f"{m}_ci95"),
                 F.max(F.col(m).cast("double")).alias(f"{m}_max")]
    # Two shuffles (the running sum, the groups) of a few hundred MB at most: Spark's
    # default of 200 shuffle partitions made them 400 tiny tasks (half the aggregation's
    # time on 2 slots); two per slot, set for this query only.
    before = session.conf.get("spark.sql.shuffle.partitions")
    session.conf.set("spark.sql.shuffle.partitions",
                     str(2 * max(1, session.sparkContext.defaultParallelism)))
    try:
        rows = df.groupBy(*points, "_run").agg(*aggs).collect()
    finally:
        session.conf.set("spark.sql.shuffle.partitions", before)
    out = []
    for row in rows:
        rec = row.asDict()
        run = int(rec.pop("_run"))
        rec["count"] = int(rec["count"])
        rec["payload_bytes"] = int(rec["payload_bytes"])
        if run < 0:  # not a step model: no running sum
            rec = {k: v for k, v in rec.items() if not k.startswith("control_writes_cum_")}
        out.append({k: rec[k] for k in points} | ({"run": run} if run >= 0 else {})
                   | {"count": rec["count"]}
                   | {k: float(v) for k, v in rec.items()
                      if k not in points and k != "count"})
    out.sort(key=lambda r: (*(r[c] for c in points), r.get("run", -1)))
    return out


def aggregate_spark(results_dir: str | Path, master: str | None = DEFAULT_MASTER, *,
                    spark: Any = None) -> list[dict[str, Any]]:
    """Aggregate a results directory with Spark; same output as ``aggregate_local``."""
    if spark is not None:
        return aggregate_frame(read_results_spark(spark, results_dir))
    _results_root(results_dir)  # fail before any JVM starts
    with spark_session(master, app_name="stackcast report") as session:
        return aggregate_frame(read_results_spark(session, results_dir))
