"""A static cell's batched draws and its rows built as columns equal the per-notification ones.

- :func:`experiments.cells.workload.draw_runs` (the uniform model's batched
  draws, compiled or through numpy) gives the publishers and receivers the
  per-run draws give (:func:`draw_notifications` with batching turned off),
  in batches of any size and with ``publisher`` forced.
- The column path of the cell pipeline (``_column_table``: host-index
  draws, the fast path's ``metric_columns``, :func:`rows_table`) gives the
  rows of the per-notification path (``_cell_rows``), declined notifications
  included (run on the reference), for every strategy whose fast path has
  the column form.
- A ``cell_invariant`` strategy's install reads nothing of the cell: the same
  state whatever the population, seed and receivers, so runners may share it
  (switch-mcgroup and mixed with every group installed among them: their
  ``state_scope`` is the topology although their ``scope`` is the receivers).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import experiments.cells.pipeline as pipeline
import experiments.cells.workload as workload
from experiments.cells.pipeline import cell_rows, cell_setup, run_cell
from experiments.cells.spec import Cell
from sim.dataplanes import pcg64_draws
from sim.dataplanes.caches import Caches
from sim.dataplanes.fast_path import ColumnFastPath
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import PopulationBase, UniformPopulation, receiver_model
from strategies.base import STRATEGIES, Knowledge, load_builtin_strategies, make_strategy
from tests.support.random_topologies import random_topology
from topologies.specs import load_topology

TOPOLOGIES = ["jellyfish:switches=24,degree=3,hosts=2,seed=2", "fattree:k=4",
              "jellyfish:switches=12,degree=3,hosts=1,seed=5"]


def per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn the batched draws off: every population draws run by run."""
    monkeypatch.setattr(UniformPopulation, "draw_runs", PopulationBase.draw_runs)


def numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batched draws through numpy's generators instead of the compiled kernel."""
    monkeypatch.setattr(pcg64_draws, "publisher_and_sample", None)


@settings(max_examples=30, deadline=None)
@given(topo_seed=st.integers(0, 2**16), n=st.integers(1, 20), hosts=st.integers(1, 3),
       percent=st.sampled_from([0, 1, 30, 99, 100]), seed=st.integers(0, 2**40),
       count=st.integers(0, 30), batch=st.integers(1, 9), force=st.booleans(),
       compiled=st.booleans())
def test_batched_draws_equal_per_run_draws(topo_seed, n, hosts, percent, seed, count, batch,
                                           force, compiled):
    topo = random_topology(n, n // 3, topo_seed, hosts=hosts)
    pop = receiver_model(f"uniform:percent={percent}").population(topo, child_rng(1, "p"))
    wl = workload.CellWorkload(pop, seed)
    publisher = topo.hosts[seed % len(topo.hosts)] if force else None

    def draws() -> list[Any]:
        return [(d.run, d.notification, d.receivers, d.view is pop, d.stable)
                for d in workload.draw_notifications(wl, count, publisher)]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(workload, "RUNS_PER_BATCH", batch)
        if not compiled:
            numpy_only(mp)
        batched = draws()
        drawn = workload.draw_runs(wl, count, publisher)
        assert drawn is not None and len(drawn) == count
        per_run(mp)
        assert workload.draw_runs(wl, count, publisher) is None
        assert batched == draws()
    assert [(drawn.publisher(r), drawn.receiver_set(r)) for r in range(count)] == \
        [(b[1].publisher, b[2]) for b in batched]


def column_strategies() -> list[str]:
    """Registered strategies whose state does not depend on the receivers and whose fast
    path (default parameters) has the column form: the cells that run as columns."""
    load_builtin_strategies()
    topo = random_topology(6, 2, 1, hosts=2)
    out = []
    for name in STRATEGIES.names():
        try:
            fast = make_strategy(name).fast_path(topo, pipeline.DelayModel())
        except ValueError:
            continue
        if isinstance(fast, ColumnFastPath) and make_strategy(name).state_scope() != "receivers":
            out.append(name)
    return out


COLUMN = column_strategies()


def test_the_tree_walks_have_the_column_form():
    assert {"switch-bitmask", "switch-port", "hops", "switch-mcgroup", "mixed"} <= set(COLUMN)


def cell(strategy: str, params: dict[str, Any], topology: str, percent: int, seed: int,
         notifications: int, payload: int = 50) -> Cell:
    return Cell(experiment="columns", topology=topology, strategy=strategy,
                params=tuple(sorted(params.items())), receivers=f"uniform:percent={percent}",
                payload_bytes=payload, seed=seed, notifications=notifications,
                delays=(("pass_s", 3e-6),), links=(("delay_s", 2.5e-5),))


def both_paths(c: Cell, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The cell's table through the column path (which must be taken) and through the
    per-notification path."""
    taken = []
    inner = pipeline._column_table

    def spy(*args: Any) -> Any:
        table = inner(*args)
        taken.append(table is not None)
        return table

    monkeypatch.setattr(pipeline, "_column_table", spy)
    columns = run_cell(c)
    assert taken == [True]
    monkeypatch.setattr(pipeline, "_column_table", lambda *args: None)
    return columns, run_cell(c)


@pytest.mark.parametrize("strategy", COLUMN)
@settings(max_examples=6, deadline=None)
@given(topology=st.sampled_from(TOPOLOGIES), percent=st.sampled_from([0, 10, 30, 90]),
       seed=st.integers(0, 2**20), count=st.integers(0, 40), batch=st.integers(1, 50),
       payload=st.sampled_from([0, 50, 1400]))
def test_column_rows_equal_per_notification_rows(strategy, topology, percent, seed, count,
                                                 batch, payload):
    c = cell(strategy, {}, topology, percent, seed, count, payload)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(workload, "RUNS_PER_BATCH", batch)
        mp.setattr(pipeline, "RUNS_PER_BATCH", batch)
        columns, rows = both_paths(c, mp)
    assert columns.schema == rows.schema and columns.num_rows == count
    assert columns.to_pylist() == rows.to_pylist()


@pytest.mark.parametrize(("strategy", "params"), [
    # stacks beyond the MTU are split into packets per subtree: some of the 25 (3 to 21)
    ("switch-port", {"mtu_bytes": 130, "on_oversize": "split"}),
    ("switch-bitmask", {"mtu_bytes": 150, "on_oversize": "split"}),
    ("hops", {"on_oversize": "split", "mtu_bytes": 130})])
def test_declined_notifications_run_on_the_reference_in_columns(strategy, params, monkeypatch):
    c = cell(strategy, params, "jellyfish:switches=40,degree=3,hosts=1,seed=3", 40, 9, 25)
    seen = []
    inner = pipeline.run_notification
    monkeypatch.setattr(pipeline, "run_notification", lambda *a: seen.append(1) or inner(*a))
    columns, rows = both_paths(c, monkeypatch)
    # each path runs the same declined notifications on the reference
    assert 0 < len(seen) // 2 < 25, "all or none declined: the case tests less than it should"
    assert columns.to_pylist() == rows.to_pylist()


def test_compiled_and_numpy_draws_give_the_same_rows(monkeypatch):
    c = cell("switch-bitmask", {}, TOPOLOGIES[0], 30, 11, 30)
    compiled = cell_rows(c)
    numpy_only(monkeypatch)
    assert cell_rows(c) == compiled
    per_run(monkeypatch)
    assert cell_rows(c) == compiled


def invariant_strategies() -> list[str]:
    load_builtin_strategies()
    return [n for n in STRATEGIES.names() if STRATEGIES.get(n).cell_invariant]


@pytest.mark.parametrize("name", invariant_strategies())
@pytest.mark.parametrize("topology", ["fattree:k=4", "jellyfish:switches=20,degree=3,seed=4"])
def test_cell_invariant_installs_read_nothing_of_the_cell(name, topology):
    """Installed with different populations, seeds and receiver sets (or none): one state."""
    topo = load_topology(topology)
    strategy = make_strategy(name)
    assert strategy.state_scope() == "topology"
    states = [strategy.install(topo, Knowledge())]
    for spec, seed in (("uniform:percent=30", 1), ("frequency:subscribers=50", 7),
                       ("clustered", 3)):
        pop = receiver_model(spec).population(topo, child_rng(seed, "population"))
        states.append(make_strategy(name).install(topo, dataclasses.replace(
            Knowledge.for_notification(topo.hosts[0], frozenset(topo.hosts[1:4])),
            population=pop, seed=seed)))
    assert all(s == states[0] for s in states[1:])


def test_cells_share_an_invariant_install_and_fast_path_only_through_one_caches():
    cells = [cell("switch-bitmask", {}, TOPOLOGIES[1], 30, seed, 5) for seed in (1, 2, 3)]
    shared = Caches()
    warm = [cell_rows(c, caches=shared) for c in cells]
    assert warm == [cell_rows(c, caches=Caches()) for c in cells]
    assert (shared.cell_states.hits, shared.cell_states.misses) == (2, 1)
    assert (shared.fast_paths.hits, shared.fast_paths.misses) == (2, 1)
    topology, strategy, _ = cell_setup(cells[0])
    assert strategy.cell_invariant and len(shared.cell_states) == 1
    other = cell("tree", {}, TOPOLOGIES[1], 30, 1, 3)  # receivers-scoped: nothing shared
    cell_rows(other, caches=shared)
    assert len(shared.cell_states) == len(shared.fast_paths) == 1


@settings(max_examples=40, deadline=None)
@given(count=st.integers(0, 30), text=st.text(max_size=12), data=st.data())
def test_rows_table_equals_from_pylist(count, text, data):
    """Columns given as arrays, lists or one value: the table ``from_pylist`` makes of the
    same rows (unicode and empty strings, the narrow int32 columns' range included)."""
    from experiments.cells.rows import IDENTITY_COLUMNS, rows_table
    from experiments.cells.schema import EXTRA_COLUMNS, ROWS

    identity = {f.name: (text if f.type == pa.string() else data.draw(st.integers(0, 2**31 - 1)))
                for f in ROWS if f.name in IDENTITY_COLUMNS}
    columns: dict[str, Any] = {}
    for f in ROWS:
        if f.name in IDENTITY_COLUMNS or (f.name in EXTRA_COLUMNS and data.draw(st.booleans())):
            continue
        if f.type == pa.string():
            values: Any = data.draw(st.lists(st.text(max_size=5), min_size=count, max_size=count))
        elif pa.types.is_floating(f.type):
            values = data.draw(st.lists(st.floats(allow_nan=False), min_size=count,
                                        max_size=count))
        else:
            top = 2**31 - 1 if f.type == pa.int32() else 2**62
            values = data.draw(st.lists(st.integers(-top, top), min_size=count, max_size=count))
        form = data.draw(st.sampled_from(["list", "numpy", "arrow", "one"]))
        if form == "one" and values:
            values = values[0]
        elif form == "numpy" and f.type != pa.string():
            values = np.array(values, np.float64 if pa.types.is_floating(f.type) else np.int64)
        elif form == "arrow":
            values = pa.array(values, f.type)
        columns[f.name] = values
    rows = [{f.name: identity[f.name] if f.name in identity else (
        columns[f.name][i].as_py() if isinstance(columns.get(f.name), pa.Array) else
        columns[f.name][i].item() if isinstance(columns.get(f.name), np.ndarray) else
        columns[f.name][i] if isinstance(columns.get(f.name), list) else
        columns.get(f.name, EXTRA_COLUMNS.get(f.name))) for f in ROWS} for i in range(count)]
    assert rows_table(identity, columns, count).equals(pa.Table.from_pylist(rows, schema=ROWS))
