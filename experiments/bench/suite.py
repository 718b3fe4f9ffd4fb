"""``stackcast bench``: the speed suite of issue 9, each figure beside a same-run reference.

Items (each the median of ``reps`` repetitions; references and subjects
alternate, so a background load hits both alike):

static
    Static-engine notifications per second on the 255-switch jellyfish of
    seed 000 ch. 3 at 30 % receivers, 50 B payload, for switch-bitmask,
    switch-port and hops: their fast path (the strategy's
    :meth:`~strategies.base.Strategy.fast_path` hook, here the tree walk of
    :mod:`sim.dataplanes.source_routing.fast_path` with its numba kernel where
    numba is installed, on ``notifications`` at once) against
    the pass-by-pass reference
    (:func:`sim.engines.static.run_notification` on the first ``ref_notifications``).
    The fast figures are only reported if the fast path's metrics equal the
    reference's on those notifications. One process: per second of CPU time
    is per core. Also the whole cell runner (workload draw, rows) per second.
encoder
    ``strategy.encode`` per second on zoo:Dfn, 40 rules per switch, nearby
    clusters, for vt-freq-relation and vt-clusters, against the
    ``source-routed`` encoder (hop labels only) on the same notifications.
timed, timed-1000
    Model events per second against one raw SimPy process's timeouts per
    second (the verdict; the ratio at the model's queue depth is printed
    beside it), on the 255-switch jellyfish and on the 1,000-switch one
    (:mod:`experiments.bench.timed`).
spark
    Cells per second of a CPU-bound sweep on local[2] against local[1]
    (:mod:`experiments.bench.spark`).
bound (opt-in)
    Engine cost per notification (CPU time of the strategy's fast path over
    ``notifications`` at once) against the lower bound of issue 9 item 1: a
    hand-written networkx computation of the same delivery (a cached BFS
    predecessor map per publisher root, built before timing, plus the union
    of the root-to-receiver paths), timed alternately in the same run, on
    jellyfish:switches=255 and 1000 (degree 4, 30 % receivers, 50 B), for
    every strategy of :data:`BOUND_STRATEGIES`, and for the content filters
    (:data:`CONTENT_BOUND_STRATEGIES`) on the content workloads of
    :data:`CONTENT_BOUND_WORKLOADS` (the bound's receivers: the hosts whose
    subscriptions match each event; the fast path gets each notification's
    event and the one installed state); prints the ratio (target: at most
    3x). Exactness is the property tests' (tests/sim/test_fast_paths.py,
    tests/sim/test_fast_content.py); a fast path that declines a
    notification is reported, not timed.
cells
    Whole cells through :func:`experiments.cells.pipeline.run_cell` (workload
    draw, installs, control writes, engine, rows), rows per CPU second, with
    the :class:`~sim.dataplanes.caches.Caches` a runner shares between the
    cells of a partition: one switch-bitmask cell of ``cell_notifications``
    notifications on the static item's jellyfish at 30 % receivers, beside
    the fast path alone on the same notifications (the ceiling a whole cell
    can reach) and the same cell with cold caches; and 20-notification
    virtual-tree cells (``tree`` on uniform 30 % receivers, ``vt-clusters``
    with 40 rules on nearby clusters, as in ch. 5/6) on zoo:Dfn, over
    ``vt_cells`` seeds each, one fresh ``Caches`` per repetition.
ch6 (opt-in)
    Wall time of ``experiments/specs/ch6-churn.toml`` on Spark ``local[2]``.
    ``fraction`` < 1 runs a deterministic subset (:class:`SubsetSpec`: that
    fraction of the groups a real run keeps in one task, churn levels of one
    seed together) and *extrapolates*: session start
    + worker warm-up (one cell) + subset time x cells / subset cells; the
    output says so. Reference: the local engine (one warm process) on a few
    cells of the same subset.

Nothing here runs in the default test run; figures depend on the machine.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from experiments.cells.spec import SPEC_DIR
from sim.dataplanes.seeds import stable_seed

STATIC_TOPOLOGY = "jellyfish:switches=255,degree=4,hosts=1,seed=1"
STATIC_STRATEGIES = ("switch-bitmask", "switch-port", "hops")
ENCODER_TOPOLOGY = "zoo:Dfn"
ENCODER_STRATEGIES = ("vt-freq-relation", "vt-clusters")
ENCODER_REFERENCE = "source-routed"
CH6_SPEC = SPEC_DIR / "ch6-churn.toml"
BOUND_TOPOLOGIES = ("jellyfish:switches=255,degree=4,hosts=1,seed=1",
                    "jellyfish:switches=1000,degree=4,hosts=1,seed=1")
BOUND_STRATEGIES = ("switch-bitmask", "switch-port", "switch-mcgroup", "mixed", "hops",
                    "destinations", "unicast", "broadcast",
                    "multicast", "alm-all", "alm-fork", "alm-mcgroup",
                    # virtual-tree labels: the engine's time includes the strategy's encoder
                    "tree", "hybrid", "source-routed", "vt-broadcast", "vt-random",
                    "vt-random-variant", "vt-cycles", "vt-partitions", "vt-relation",
                    "vt-freq-relation", "vt-clusters", "vt-hybrid")
#: The content filters, on content workloads (their receivers: the hosts whose
#: subscriptions match each event; ``{hosts}``: one subscription per host on average):
#: "dense", Siena-like half-plane filters on one attribute (about 32 % of the hosts
#: receive), and "sparse", equality filters on both attributes over 7 x 7 values (2 %).
CONTENT_BOUND_STRATEGIES = ("pleroma-dz", "range-boxes", "camus-bdd", "kundel-id",
                            "kundel-bitmask")
CONTENT_BOUND_WORKLOADS = {
    "dense": "content:subs={hosts},publishers=2,dims=2,bits=12,dist=siena,preds=1,"
             "ops=0/1/1/0,values=8",
    "sparse": "content:subs={hosts},publishers=2,dims=2,bits=12,dist=siena,preds=2,"
              "ops=1/0/0/0,values=7,zipf=0",
}
CELL_TOPOLOGY = STATIC_TOPOLOGY
VT_CELL_TOPOLOGY = "zoo:Dfn"
#: (strategy, its parameters, receiver model) of the 20-notification VT cells
VT_CELLS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("tree", {}, "uniform:percent=30"),
    ("vt-clusters", {"max_rules": 40}, "clustered:scenario=nearby,churn=0"))
ITEMS = ("static", "encoder", "timed", "timed-1000", "spark", "cells", "ch6", "bound")
DEFAULT_ITEMS = ("static", "encoder", "timed", "timed-1000", "spark", "cells")

#: Issue 9 targets: (item, figure) -> (threshold, "min" or "max", unit).
TARGETS: dict[tuple[str, str], tuple[float, str, str]] = {
    ("static", "switch-bitmask"): (20_000.0, "min", "notifications/s/core"),
    ("encoder", "vt-freq-relation"): (2_000.0, "min", "encodes/s"),
    ("encoder", "vt-clusters"): (2_000.0, "min", "encodes/s"),
    ("timed", "events_to_raw"): (0.50, "min", "x raw SimPy, one process"),
    ("timed-1000", "events_to_raw"): (0.40, "min", "x raw SimPy, one process"),
    ("spark", "speedup"): (1.7, "min", "x local[1]"),
    ("cells", "switch-bitmask"): (50_000.0, "min", "rows/s"),
    ("cells", "tree"): (20_000.0, "min", "rows/s"),
    ("cells", "vt-clusters"): (20_000.0, "min", "rows/s"),
    ("ch6", "wall_s"): (900.0, "max", "s"),
    ("bound", "ratio"): (3.0, "max", "x the networkx lower bound"),
}


def _median(xs: Iterable[float]) -> float:
    return float(statistics.median(list(xs)))


def _rate(fn: Callable[[], int]) -> tuple[float, float]:
    """(items per wall second, items per CPU second) of ``fn`` (which returns its count)."""
    w0, c0 = time.perf_counter(), time.process_time()
    count = fn()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return count / max(wall, 1e-9), count / max(cpu, 1e-9)


def _judge(item: str, figure: str, value: float) -> dict[str, Any] | None:
    target = TARGETS.get((item, figure))
    if target is None:
        return None
    threshold, sense, unit = target
    met = value >= threshold if sense == "min" else value <= threshold
    return {"threshold": threshold, "sense": sense, "unit": unit, "met": bool(met)}


# -- 1. static engine ------------------------------------------------------------


def static_workload(notifications: int, topology: str = STATIC_TOPOLOGY, percent: float = 30.0,
                    seed: int = 1) -> tuple[Any, Any, list[tuple[str, frozenset[str]]]]:
    """The topology, population and (publisher, receivers) pairs of the static item."""
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    from topologies.specs import load_topology

    topo = load_topology(topology)
    pop = receiver_model(f"uniform:percent={percent:g}").population(
        topo, child_rng(seed, "population"))
    cases = []
    for i in range(notifications):
        rng = child_rng(seed, "bench-static", i)
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        cases.append((pub, pop.receivers(pub, rng)))
    return topo, pop, cases


def bench_static(reps: int = 3, notifications: int = 400, ref_notifications: int = 10,
                 strategies: Iterable[str] = STATIC_STRATEGIES, payload_bytes: int = 50,
                 tick: Callable[[], None] = lambda: None,
                 topology: str = STATIC_TOPOLOGY) -> dict[str, Any]:
    """Fast path vs reference, notifications per second (see the module docstring)."""
    from sim.dataplanes.delivery import DelayModel, row_metrics
    from sim.dataplanes.packet import Notification, payload_for
    from sim.engines.static import run_notification
    from strategies.base import Knowledge, make_strategy

    if ref_notifications < 1 or notifications < ref_notifications:
        raise ValueError("static bench: need 1 <= ref_notifications <= notifications; got "
                         f"{ref_notifications} and {notifications}")
    topo, _, cases = static_workload(notifications, topology)
    pubs, sets = [p for p, _ in cases], [r for _, r in cases]
    notes = [Notification(i, p) for i, p in enumerate(pubs)]
    out: dict[str, Any] = {"topology": topology, "receivers": "uniform:percent=30",
                           "payload_bytes": payload_bytes, "notifications": notifications,
                           "ref_notifications": ref_notifications, "strategies": {}}
    for name in strategies:
        strategy = make_strategy(name)
        state = strategy.install(topo, Knowledge())
        fast = strategy.fast_path(topo, DelayModel())
        if fast is None:
            raise ValueError(f"static bench: {name!r} has no fast path")
        refs: list[Any] = []

        def reference(strategy: Any = strategy, state: Any = state, refs: list[Any] = refs
                      ) -> int:
            refs[:] = [run_notification(topo, strategy, state, notes[i], sets[i],
                                        payload_for(notes[i], payload_bytes))
                       for i in range(ref_notifications)]
            return ref_notifications

        def fast_batch(fast: Any = fast) -> int:
            done = fast.metrics(pubs, sets, payload_bytes)
            return sum(m is not None for m in done)

        fast_batch()  # warm: the per-root tree tables are built on first use
        ref_w, ref_c, fast_w, fast_c = [], [], [], []
        for _ in range(reps):
            w, c = _rate(reference)
            ref_w.append(w)
            ref_c.append(c)
            w, c = _rate(fast_batch)
            fast_w.append(w)
            fast_c.append(c)
            tick()
        got = fast.metrics(pubs[:ref_notifications], sets[:ref_notifications], payload_bytes)
        if got != [row_metrics(d) for d in refs]:
            raise RuntimeError(f"static bench: the fast path disagrees with the reference on "
                               f"{name}; not reporting its speed")
        fast_per_cpu = _median(fast_c)
        out["strategies"][name] = {
            "impl": fast.impl, "fast_per_s": _median(fast_w), "fast_per_cpu_s": fast_per_cpu,
            "reference_per_s": _median(ref_w), "reference_per_cpu_s": _median(ref_c),
            "ratio": fast_per_cpu / _median(ref_c),
            "target": _judge("static", name, fast_per_cpu),
        }
    out["cell_rows"] = _cell_rate(notifications, reps, topology)
    tick()
    return out


def _cell_rate(notifications: int, reps: int, topology: str) -> dict[str, Any]:
    """Whole switch-bitmask cell (workload draw, state, fast path, rows) per second."""
    from experiments.cells.pipeline import run_cell
    from experiments.cells.spec import parse_spec_dict

    spec = parse_spec_dict({
        "experiment": {"name": "bench-static", "notifications": notifications, "seeds": [1],
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": ["switch-bitmask"],
                 "receivers": ["uniform:percent=30"]},
    }, "<bench static>")
    (cell,) = spec.cells()
    run_cell(cell)  # topology, tables and compiled kernels warm (caches: fresh per cell)
    rates = [_rate(lambda: run_cell(cell, "auto").num_rows)[1] for _ in range(reps)]
    return {"strategy": "switch-bitmask", "notifications": notifications,
            "per_cpu_s": _median(rates)}


def paired_bound(bound: Callable[[], int], engine: Callable[[], int], reps: int,
                 impl: str, walk: Callable[[], int] | None = None) -> dict[str, Any]:
    """The bound item's figures of one engine: CPU us per notification of ``engine`` and
    ``bound`` (and ``walk``, the engine without its encoder, where given) timed
    alternately ``reps`` times, medians and their ratio, judged."""
    bound_us, engine_us, walk_us = [], [], []
    for _ in range(reps):
        bound_us.append(1e6 / _rate(bound)[1])
        engine_us.append(1e6 / _rate(engine)[1])
        if walk is not None:
            walk_us.append(1e6 / _rate(walk)[1])
    ratio = _median(engine_us) / _median(bound_us)
    out = {"impl": impl, "engine_us": _median(engine_us), "bound_us": _median(bound_us),
           "ratio": ratio, "target": _judge("bound", "ratio", ratio)}
    if walk_us:
        out.update(walk_us=_median(walk_us), walk_ratio=_median(walk_us) / _median(bound_us))
    return out


def _lower_bound(topo: Any, cases: list[tuple[str, frozenset[str]]]) -> Callable[[], int]:
    """The issue's lower bound: networkx BFS predecessors per root (cached, built here)
    and the union of the paths to the receivers, per notification."""
    import networkx as nx

    graph = nx.Graph()
    for node in (*topo.switches, *topo.hosts):
        graph.add_edges_from((node, p.neighbor) for p in topo.ports(node).values())
    preds = {root: dict(nx.bfs_predecessors(graph, root))
             for root in {topo.host_switch(p) for p, _ in cases}}
    roots = [topo.host_switch(p) for p, _ in cases]

    def run() -> int:
        for root, (_, receivers) in zip(roots, cases, strict=True):
            pred = preds[root]
            union = {root}
            for node in receivers:
                while node not in union:
                    union.add(node)
                    node = pred[node]
        return len(cases)

    return run


def _bound_states(topo: Any, strategy: Any, fast: Any,
                  cases: list[tuple[str, frozenset[str]]]) -> dict[str, Any]:
    """``states=`` for a fast path that reads the installed state (``needs_states``): one
    install told every receiver set and a frequency population (30 subscribers)."""
    if not getattr(fast, "needs_states", False):
        return {}
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    from strategies.base import Knowledge

    sets: dict[str, list[frozenset[str]]] = {}
    for pub, receivers in cases:
        sets.setdefault(pub, []).append(receivers)
    pop = receiver_model("frequency:subscribers=30").population(topo, child_rng(1, "population"))
    state = strategy.install(topo, Knowledge(population=pop, seed=1, receiver_sets={
        p: tuple(r) for p, r in sets.items()}))
    return {"states": [state] * len(cases)}


def _walk_alone(fast: Any, pubs: list[str], sets: list[frozenset[str]], payload_bytes: int,
                kw: dict[str, Any]) -> Callable[[], int] | None:
    """The fast path's walk on encodings made beforehand, for fast paths that split the two
    (``encodings`` / ``walk_metrics``, the virtual-tree labels); else None."""
    if not hasattr(fast, "walk_metrics"):
        return None
    states = kw["states"]
    encodings = fast.encodings(pubs, sets, payload_bytes, states)

    def run() -> int:
        fast.walk_metrics(pubs, sets, encodings, states)
        return len(pubs)

    return run


def bench_bound(reps: int = 3, notifications: int = 400,
                strategies: Iterable[str] = BOUND_STRATEGIES,
                topologies: Iterable[str] = BOUND_TOPOLOGIES, payload_bytes: int = 50,
                tick: Callable[[], None] = lambda: None,
                content_strategies: Iterable[str] = CONTENT_BOUND_STRATEGIES,
                content_workloads: dict[str, str] | None = None) -> dict[str, Any]:
    """Engine cost per notification against the lower bound (see the module docstring);
    the content filters on :data:`CONTENT_BOUND_WORKLOADS` (or ``content_workloads``)."""
    from sim.dataplanes.delivery import DelayModel
    from strategies.base import make_strategy

    workloads = CONTENT_BOUND_WORKLOADS if content_workloads is None else content_workloads
    content_strategies = tuple(content_strategies)
    out: dict[str, Any] = {"receivers": "uniform:percent=30", "payload_bytes": payload_bytes,
                           "notifications": notifications, "topologies": {},
                           "content_workloads": dict(workloads) if content_strategies else {}}
    for topology in topologies:
        topo, _, cases = static_workload(notifications, topology)
        pubs, sets = [p for p, _ in cases], [r for _, r in cases]
        bound = _lower_bound(topo, cases)
        res: dict[str, Any] = {}
        for name in strategies:
            strategy = make_strategy(name)
            fast = strategy.fast_path(topo, DelayModel())
            if fast is None:
                res[name] = {"skipped": "no fast path on this topology"}
                continue
            try:
                kw = _bound_states(topo, strategy, fast, cases)
            except ValueError as exc:  # e.g. the datacenter strategies off their fabric
                res[name] = {"skipped": f"no state: {exc}"}
                continue

            def engine(fast: Any = fast, pubs: list[str] = pubs,
                       sets: list[frozenset[str]] = sets, kw: dict[str, Any] = kw) -> int:
                fast.metrics(pubs, sets, payload_bytes, **kw)
                return notifications

            declined = sum(m is None for m in fast.metrics(pubs, sets, payload_bytes, **kw))
            if declined:
                res[name] = {"skipped": f"the fast path declines {declined} notifications"}
                continue
            walk = _walk_alone(fast, pubs, sets, payload_bytes, kw)
            res[name] = paired_bound(bound, engine, reps, fast.impl, walk)
            tick()
        if content_strategies:
            from experiments.bench.content_bound import bound_content

            res.update(bound_content(topology, reps, notifications, payload_bytes,
                                     content_strategies, workloads, tick))
        out["topologies"][topology] = res
    return out


# -- whole cells ------------------------------------------------------------------


def _spec_cells(topology: str, strategy: str, params: dict[str, Any], receivers: str,
                notifications: int, seeds: list[int]) -> list[Any]:
    from experiments.cells.spec import parse_spec_dict

    data: dict[str, Any] = {
        "experiment": {"name": "bench-cells", "notifications": notifications, "seeds": seeds,
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": [strategy], "receivers": [receivers]}}
    if params:
        data["strategy_params"] = {strategy: params}
    return list(parse_spec_dict(data, "<bench cells>").cells())


def bench_cells(reps: int = 3, cell_notifications: int = 2000, vt_cells: int = 10,
                topology: str = CELL_TOPOLOGY, vt_topology: str = VT_CELL_TOPOLOGY,
                vt: Iterable[tuple[str, dict[str, Any], str]] = VT_CELLS,
                tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Whole-cell rows per CPU second (see the module docstring).

    Cells run as a runner runs them (:func:`experiments.cells.pipeline.run_cell`
    with one :class:`~sim.dataplanes.caches.Caches` for the cells of a
    partition): the switch-bitmask cell with the partition's warm caches (its
    topology-wide install and fast path built by an earlier cell), and cold
    (a fresh ``Caches``: the first cell of a partition) as extra information;
    each repetition's virtual-tree cells share one fresh ``Caches``. The
    reference is the fast path alone on the same notifications
    (``metric_columns`` on the drawn host indices, what the cell calls).
    """
    from experiments.cells.pipeline import _fast_path, cell_setup, run_cell
    from experiments.cells.workload import cell_workload, draw_runs
    from sim.dataplanes.caches import Caches

    (cell,) = _spec_cells(topology, "switch-bitmask", {}, "uniform:percent=30",
                          cell_notifications, [1])
    warm = Caches()
    run_cell(cell, caches=warm)  # the partition's earlier cell: install, tables, kernels
    topo, strategy, delays = cell_setup(cell)
    fast = _fast_path(topo, strategy, delays, "auto", warm)
    drawn = draw_runs(cell_workload(cell, topo, warm), cell_notifications)
    if fast is None or drawn is None or not hasattr(fast, "metric_columns"):
        raise ValueError("cells bench: switch-bitmask has no column fast path here")

    def kernel() -> int:
        got = fast.metric_columns(drawn.publishers, drawn.offsets, drawn.receivers,
                                  cell.payload_bytes)
        return int(got.taken.sum())

    vt = list(vt)
    groups = [(name, _spec_cells(vt_topology, name, params, receivers, 20,
                                 list(range(1, vt_cells + 1))))
              for name, params, receivers in vt]
    for _, cs in groups:
        run_cell(cs[0], caches=Caches())  # warm: topology, compiled kernels
    whole, cold, ref = [], [], []
    vt_rates: dict[str, list[float]] = {name: [] for name, _ in groups}
    for _ in range(reps):
        whole.append(_rate(lambda: run_cell(cell, caches=warm).num_rows)[1])
        ref.append(_rate(kernel)[1])
        cold.append(_rate(lambda: run_cell(cell, caches=Caches()).num_rows)[1])
        for name, cs in groups:
            partition = Caches()
            vt_rates[name].append(_rate(lambda cs=cs, partition=partition: sum(  # type: ignore[misc]
                run_cell(c, caches=partition).num_rows for c in cs))[1])
        tick()
    rate, kernel_rate = _median(whole), _median(ref)
    out: dict[str, Any] = {
        "switch_bitmask": {"topology": topology, "receivers": "uniform:percent=30",
                           "notifications": cell_notifications, "rows_per_cpu_s": rate,
                           "cold_rows_per_cpu_s": _median(cold),
                           "kernel_per_cpu_s": kernel_rate, "to_kernel": rate / kernel_rate,
                           "target": _judge("cells", "switch-bitmask", rate)},
        "vt": {"topology": vt_topology, "notifications": 20, "cells": vt_cells,
               "strategies": {}},
    }
    for name, params, receivers in vt:
        r = _median(vt_rates[name])
        out["vt"]["strategies"][name] = {"params": params, "receivers": receivers,
                                         "rows_per_cpu_s": r, "ms_per_cell": 20e3 / r,
                                         "target": _judge("cells", name, r)}
    return out


# -- 2. virtual-tree encoder ------------------------------------------------------


def bench_encoder(reps: int = 3, notifications: int = 300, max_rules: int = 40,
                  strategies: Iterable[str] = ENCODER_STRATEGIES,
                  tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """``strategy.encode`` per CPU second against the source-routed encoder."""
    from sim.dataplanes.packet import Notification, payload_for
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    from strategies.base import Knowledge, make_strategy
    from topologies.specs import load_topology

    topo = load_topology(ENCODER_TOPOLOGY)
    pop = receiver_model("clustered:scenario=nearby").population(topo, child_rng(1, "population"))
    rng = child_rng(1, "bench-encoder")
    notes: list[tuple[Notification, frozenset[str], bytes]] = []
    while len(notes) < notifications:
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        recv = pop.receivers(pub, rng)
        if recv:
            note = Notification(len(notes), pub)
            notes.append((note, recv, payload_for(note, 50)))
    knowledge = Knowledge(population=pop, seed=1)

    def encoder(name: str) -> Callable[[], int]:
        strategy = make_strategy(name, {"max_rules": max_rules})
        state = strategy.install(topo, knowledge)
        strategy.encode(topo, state, *notes[0])  # compile what the encoder caches

        def run() -> int:
            for note, recv, payload in notes:
                strategy.encode(topo, state, note, recv, payload)
            return len(notes)
        return run

    runs = {name: encoder(name) for name in (ENCODER_REFERENCE, *strategies)}
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            rates[name].append(_rate(run)[1])
        tick()
    ref = _median(rates[ENCODER_REFERENCE])
    return {"topology": ENCODER_TOPOLOGY, "max_rules": max_rules, "notifications": notifications,
            "reference": {"strategy": ENCODER_REFERENCE, "per_cpu_s": ref},
            "strategies": {name: {"per_cpu_s": _median(rates[name]),
                                  "ratio": _median(rates[name]) / ref,
                                  "target": _judge("encoder", name, _median(rates[name]))}
                           for name in strategies}}


# -- 3. timed engine and 4. Spark: the existing benchmarks --------------------------


def bench_timed_item(reps: int = 3, tick: Callable[[], None] = lambda: None,
                     **model: Any) -> dict[str, Any]:
    """The timed-engine figures, judged against one SimPy process (issue 9: >= 0.5x on
    the 255-switch jellyfish, >= 0.4x on :data:`experiments.bench.timed.TOPOLOGY_1000`);
    the ratio to SimPy at the model's queue depth is extra information
    (:mod:`experiments.bench.timed`)."""
    from experiments.bench.timed import TOPOLOGY_1000, run_bench_timed

    result = run_bench_timed(reps=reps, tick=tick, **model)
    figure = "timed-1000" if model.get("topology") == TOPOLOGY_1000 else "timed"
    result["target"] = _judge(figure, "events_to_raw", result["events_to_raw_ratio"])
    return result


def bench_spark_item(reps: int = 3, cells: int = 12,
                     tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
    from experiments.bench.spark import run_bench_spark
    from experiments.runners.spark_session import SparkUnavailableError

    try:
        result = run_bench_spark(cells=cells, reps=reps)
    except SparkUnavailableError as exc:
        tick()
        return {"skipped": str(exc)}
    tick()
    result["target"] = _judge("spark", "speedup", result["speedup"]["ratio"])
    return result


# -- 5. end to end: ch6-churn --------------------------------------------------------


class SubsetSpec:
    """A spec restricted to a deterministic ``fraction`` of its groups of related cells.

    A group is what a real run keeps together in one task so that its caches
    hit (:func:`experiments.runners.spark.affinity`: e.g. the churn levels of
    one seed); a group is kept when the 63-bit :func:`~sim.dataplanes.seeds.stable_seed`
    of its key falls in the first ``fraction`` of that range, so the subset is
    spread over the whole grid and never splits a group. ``fraction`` 0 keeps
    the one cell with the smallest id (a warm-up). Only what the runners read
    (``name``, ``cells()``, ``canonical()``) is provided.
    """

    def __init__(self, spec: Any, fraction: float) -> None:
        from experiments.runners.spark import affinity

        if not 0 <= fraction <= 1:
            raise ValueError(f"--fraction must be in (0, 1]; got {fraction}")
        self.spec, self.fraction, self.name = spec, fraction, spec.name
        everything = spec.cells()
        limit = fraction * 2 ** 63
        keep = [c for c in everything if stable_seed(list(affinity(c))) < limit] or [
            min(everything, key=lambda c: c.cell_id)]
        self.total, self._cells = len(everything), keep

    def cells(self) -> list[Any]:
        return list(self._cells)

    def canonical(self) -> dict[str, Any]:
        return dict(self.spec.canonical())


def bench_ch6(fraction: float = 1.0, master: str = "local[2]", ref_cells: int = 16,
              spec_path: Path = CH6_SPEC, progress: bool = True,
              work_dir: str | Path | None = None) -> dict[str, Any]:
    """Wall time of ch6-churn on Spark (a subset extrapolated when ``fraction`` < 1)."""
    from experiments.cells.pipeline import run_cell
    from experiments.cells.spec import load_spec
    from experiments.runners.spark import run_spark
    from experiments.runners.spark_session import require_spark, spark_session

    subset = SubsetSpec(load_spec(spec_path), fraction)
    cells = subset.cells()
    require_spark()
    with tempfile.TemporaryDirectory(prefix="stackcast-bench-ch6-", dir=work_dir) as tmp:
        w0 = time.perf_counter()
        with spark_session(master, app_name="stackcast bench ch6") as spark:
            start_s = time.perf_counter() - w0
            t0 = time.perf_counter()  # Python workers started, project imported: once per run
            run_spark(SubsetSpec(subset.spec, 0), Path(tmp) / "warm", spark=spark,
                      progress=False)
            warm_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            run_spark(subset, Path(tmp) / "out", spark=spark, progress=progress)
            run_s = time.perf_counter() - t0
    run_cell(cells[-1])  # warm this process too
    sample = cells[::max(1, len(cells) // max(1, ref_cells))][:ref_cells]  # spread over the grid
    local_rate = _rate(lambda: sum(1 for c in sample if run_cell(c).num_rows >= 0))[0]
    spark_rate = len(cells) / run_s
    scale = subset.total / len(cells)
    wall = start_s + warm_s + run_s * scale
    return {
        "spec": str(spec_path), "master": master, "fraction": fraction,
        "cells_total": subset.total, "cells_run": len(cells),
        "extrapolated": len(cells) < subset.total,
        "session_start_s": start_s, "warm_s": warm_s, "subset_wall_s": run_s, "wall_s": wall,
        "spark_cells_per_s": spark_rate,
        "reference": {"engine": "local (one process)", "cells": len(sample),
                      "cells_per_s": local_rate},
        "ratio": spark_rate / local_rate,
        "target": _judge("ch6", "wall_s", wall),
    }


# -- the suite --------------------------------------------------------------------------


def run_suite(items: Iterable[str] = DEFAULT_ITEMS, reps: int = 3, fraction: float = 1.0,
              progress: bool = True, static_notifications: int = 400,
              spark_cells: int = 12, strategies: Iterable[str] | None = None
              ) -> dict[str, Any]:
    """Run the chosen items; returns ``{"cpus", "load_avg", "reps", "items": {...}}``."""
    items = list(items)
    bound_strategies = BOUND_STRATEGIES if strategies is None else tuple(
        n for n in strategies if n not in CONTENT_BOUND_STRATEGIES)
    bound_content = CONTENT_BOUND_STRATEGIES if strategies is None else tuple(
        n for n in strategies if n in CONTENT_BOUND_STRATEGIES)
    unknown = [i for i in items if i not in ITEMS]
    if unknown:
        raise ValueError(f"unknown bench item {unknown[0]!r}; known: {', '.join(ITEMS)}")
    if reps < 1:
        raise ValueError(f"--reps must be >= 1; got {reps}")
    from tqdm import tqdm

    steps = {"static": reps * len(STATIC_STRATEGIES) + 1, "encoder": reps, "timed": reps + 1,
             "timed-1000": reps + 1,
             "spark": 1, "cells": reps, "ch6": 0,
             "bound": len(BOUND_TOPOLOGIES) * (len(bound_strategies) + len(
                 bound_content) * len(CONTENT_BOUND_WORKLOADS))}
    bar = tqdm(total=sum(steps[i] for i in items), desc="stackcast bench", unit="step",
               disable=not progress, dynamic_ncols=True)
    out: dict[str, Any] = {"cpus": os.cpu_count(), "load_avg": list(os.getloadavg()),
                           "reps": reps, "items": {}}
    try:
        for item in items:
            bar.set_description(f"stackcast bench: {item}")
            if item == "static":
                res = bench_static(reps=reps, notifications=static_notifications,
                                   ref_notifications=min(10, static_notifications),
                                   tick=lambda: bar.update(1))
            elif item == "encoder":
                res = bench_encoder(reps=reps, tick=lambda: bar.update(1))
            elif item == "timed":
                res = bench_timed_item(reps=reps, tick=lambda: bar.update(1))
            elif item == "timed-1000":
                from experiments.bench.timed import DURATION_1000_S, PARAMS_1000, TOPOLOGY_1000

                res = bench_timed_item(reps=reps, tick=lambda: bar.update(1),
                                       topology=TOPOLOGY_1000, params=PARAMS_1000,
                                       duration_s=DURATION_1000_S)
            elif item == "spark":
                res = bench_spark_item(reps=reps, cells=spark_cells, tick=lambda: bar.update(1))
            elif item == "cells":
                res = bench_cells(reps=reps, tick=lambda: bar.update(1))
            elif item == "bound":
                res = bench_bound(reps=reps, notifications=static_notifications,
                                  strategies=bound_strategies, tick=lambda: bar.update(1),
                                  content_strategies=bound_content)
            else:
                res = bench_ch6(fraction=fraction, progress=progress)
            out["items"][item] = res
    finally:
        bar.close()
    out["load_avg_end"] = list(os.getloadavg())
    return out


def _mark(target: dict[str, Any] | None) -> str:
    if target is None:
        return ""
    sign = ">=" if target["sense"] == "min" else "<="
    return (f"  [target {sign} {target['threshold']:,g} {target['unit']}: "
            f"{'met' if target['met'] else 'NOT met'}]")


def format_suite(result: dict[str, Any]) -> str:
    """Human-readable summary of :func:`run_suite`."""
    lines = [f"stackcast bench: {result['cpus']} CPUs, median of {result['reps']} repetitions, "
             f"load average {result['load_avg'][0]:.1f} at start, "
             f"{result['load_avg_end'][0]:.1f} at end (rates per CPU-second unless noted)"]
    items = result["items"]
    if "static" in items:
        s = items["static"]
        lines.append(f"static engine  {s['topology']}, {s['receivers']}, {s['payload_bytes']} B "
                     f"({s['notifications']} notifications fast, {s['ref_notifications']} "
                     "reference)")
        for name, r in s["strategies"].items():
            lines.append(f"  {name:<16} fast ({r.get('impl', 'numpy')}) "
                         f"{r['fast_per_cpu_s']:>9,.0f}/s "
                         f"(wall {r['fast_per_s']:,.0f}/s)  reference "
                         f"{r['reference_per_cpu_s']:>7,.1f}/s  = {r['ratio']:,.0f}x"
                         + _mark(r["target"]))
        c = s["cell_rows"]
        lines.append(f"  whole cell runner ({c['strategy']}, {c['notifications']} "
                     f"notifications): {c['per_cpu_s']:,.0f} rows/s")
    if "encoder" in items:
        e = items["encoder"]
        lines.append(f"vt encoder     {e['topology']}, {e['max_rules']} rules, "
                     f"{e['notifications']} notifications; reference "
                     f"{e['reference']['strategy']} {e['reference']['per_cpu_s']:,.0f}/s")
        for name, r in e["strategies"].items():
            lines.append(f"  {name:<16} {r['per_cpu_s']:>9,.0f} encodes/s = {r['ratio']:.2f}x "
                         "reference" + _mark(r["target"]))
    for t in (items[k] for k in ("timed", "timed-1000") if k in items):
        lines.append(f"timed engine   {t['model']['topology']}: {t['run']['events_per_s']:,.0f} "
                     f"events/s vs one SimPy process {t['raw_simpy_timeouts_per_s']:,.0f} "
                     f"timeouts/s (wall) = {t['events_to_raw_ratio']:.2f}x" + _mark(t["target"]))
        lines.append(f"  (at the model's queue depth, {t['queue_depth']:.0f} pending: "
                     f"{t['raw_simpy_at_depth_per_s']:,.0f} timeouts/s = "
                     f"{t['events_to_raw_at_depth_ratio']:.2f}x; extra information)")
    if "spark" in items:
        sp = items["spark"]
        if "skipped" in sp:
            lines.append(f"spark          skipped: {sp['skipped']}")
        else:
            s2 = sp["speedup"]
            lines.append(f"spark          local[2] {s2['local2_s']:.2f} s vs local[1] "
                         f"{s2['local1_s']:.2f} s (wall, {s2['cells']} cells) = "
                         f"{s2['ratio']:.2f}x; machine offers {s2['machine_ratio']:.2f}x"
                         + _mark(sp["target"]))
    if "cells" in items:
        c = items["cells"]
        sb = c["switch_bitmask"]
        lines.append(f"whole cells    switch-bitmask, {sb['topology']}, {sb['receivers']}, "
                     f"{sb['notifications']} notifications: {sb['rows_per_cpu_s']:,.0f} rows/s; "
                     f"fast path alone {sb['kernel_per_cpu_s']:,.0f}/s = "
                     f"{sb['to_kernel']:.2f}x" + _mark(sb["target"]))
        if "cold_rows_per_cpu_s" in sb:
            lines.append(f"  (first cell of a partition, install and tables built: "
                         f"{sb['cold_rows_per_cpu_s']:,.0f} rows/s; extra information)")
        v = c["vt"]
        for name, r in v["strategies"].items():
            lines.append(f"  {name:<16} {v['topology']}, {v['cells']} cells of "
                         f"{v['notifications']} notifications: {r['rows_per_cpu_s']:>8,.0f} "
                         f"rows/s ({r['ms_per_cell']:.1f} ms/cell)" + _mark(r["target"]))
    if "ch6" in items:
        c6 = items["ch6"]
        how = (f"EXTRAPOLATED from {c6['cells_run']:,} of {c6['cells_total']:,} cells "
               f"(fraction {c6['fraction']:g})" if c6["extrapolated"]
               else f"all {c6['cells_total']:,} cells")
        lines.append(f"ch6-churn      {c6['master']}: {c6['wall_s']:,.0f} s wall, {how}; "
                     f"session start {c6['session_start_s']:.1f} s, worker warm-up "
                     f"{c6.get('warm_s', 0.0):.1f} s; "
                     f"{c6['spark_cells_per_s']:.2f} cells/s = {c6['ratio']:.2f}x the local "
                     f"engine ({c6['reference']['cells_per_s']:.2f} cells/s)"
                     + _mark(c6["target"]))
    if "bound" in items:
        bd = items["bound"]
        lines.append(f"engine vs lower bound  {bd['receivers']}, {bd['payload_bytes']} B, "
                     f"{bd['notifications']} notifications; CPU us per notification, the "
                     "bound a cached networkx BFS predecessor map + union of paths")
        for kind, spec in bd.get("content_workloads", {}).items():
            lines.append(f"  content filters ({kind}): receivers = hosts whose subscriptions "
                         f"match the event, {spec}")
        for topology, res in bd["topologies"].items():
            lines.append(f"  {topology}")
            for name, r in res.items():
                if "skipped" in r:
                    lines.append(f"    {name:<16} skipped: {r['skipped']}")
                    continue
                walk = (f"  (walk alone {r['walk_us']:.1f} us = {r['walk_ratio']:.2f}x)"
                        if "walk_us" in r else "")
                share = (f"  ({r['receivers_pct']:.1f} % receivers)" if "receivers_pct" in r
                         else "")
                lines.append(f"    {name:<16} engine ({r['impl']}) {r['engine_us']:>7.1f} us  "
                             f"bound {r['bound_us']:>6.1f} us  = {r['ratio']:.2f}x"
                             + share + _mark(r["target"]) + walk)
    return "\n".join(lines)
