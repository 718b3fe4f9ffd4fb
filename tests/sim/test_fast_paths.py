"""Every strategy's fast path equals the pass-by-pass reference exactly.

The strategies under test are found, not listed: every registered strategy
(:data:`strategies.base.STRATEGIES` after ``load_builtin_strategies()``)
whose :meth:`~strategies.base.Strategy.fast_path` hook returns a fast path
with its default parameters on a small network. A new family's fast path is
tested as soon as its strategy implements the hook. Strategies whose install
needs a workload's publishers and subscribers get a population (clustered or
frequency receivers), those that need the datacenter fabric run on a small
fabric (:func:`install_needs`); fast paths whose counts depend on the state
(``needs_states``, the virtual-tree labels) get it per notification, and
their label-count metrics must equal the strategy's extra metrics.

Random topologies (tests/support/random_topologies.py) with random link
delays, random publishers and receiver sets, random parameters (every
``Literal`` field of the strategy's parameters, and the widths and MTU
policies of :data:`FIELD_VALUES`), random delay constants and payloads:
:meth:`~sim.dataplanes.fast_path.FastPath.delivery` must equal
:func:`sim.engines.static.run_notification` field by field (deliveries,
first arrivals, frames and bytes per link, per-switch counts, drops,
encoding), and :meth:`~sim.dataplanes.fast_path.FastPath.metrics` must equal
:func:`sim.dataplanes.delivery.row_metrics` of the reference delivery, for
each of the fast path's implementations. The tree walk of
:mod:`sim.dataplanes.source_routing.fast_path` (switch-bitmask, switch-port,
hops) has its own tests at the end (batches, both implementations, what it
declines). The content filters' fast path, which evaluates each
notification's event, is tested in tests/sim/test_fast_content.py.

References
----------
shared/DESIGN.md "Data planes" (a fast path agrees with the pass-by-pass
model on randomized cases); seed 000 §3.3, §3.5.4, §4.2.1.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from sim.dataplanes.delivery import METRIC_KEYS, DelayModel, Delivery, row_metrics
from sim.dataplanes.fast_path import ColumnFastPath, FastPath
from sim.dataplanes.neighbor_labels.destinations_walk import DestinationsFastPath
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.dataplanes.source_routing import fast_path as tree_walk
from sim.dataplanes.source_routing.fast_path import TreeWalkFastPath
from sim.dataplanes.source_routing.fast_path_jit import batch_kernel
from sim.dataplanes.virtual_tree.fast_path import VirtualTreeFastPath
from sim.engines.static import choose_static_path, run_notification
from strategies.base import (
    HEADER_LABEL_FIELDS,
    STRATEGIES,
    Knowledge,
    Strategy,
    load_builtin_strategies,
    make_strategy,
)
from strategies.frame_size import OversizeError
from tests.support.fast_paths import implementations, strategy_parameters, with_delays
from tests.support.random_topologies import random_topology
from topologies.model import Topology
from topologies.registry import SpecError
from topologies.specs import load_topology

#: The fast paths that exist today; discovery must find at least these.
KNOWN = {"switch-bitmask", "switch-port", "switch-mcgroup", "mixed", "hops", "destinations",
         "unicast", "broadcast", "multicast", "alm-all", "alm-fork", "alm-mcgroup",
         # the virtual-tree labels (seed 000 ch. 4-6)
         "tree", "hybrid", "source-routed", "topo-based", "vt-tree", "threshold", "path",
         "vt-broadcast", "vt-random", "vt-random-variant", "vt-cycles", "vt-partitions",
         "vt-relation", "vt-freq-relation", "vt-clusters", "vt-hybrid",
         "elmo",  # Elmo's header walk (on a three-tier Clos)
         "bier"}  # BIER's copies (RFC 8279 §6.5, one pass per next hop)
#: The datacenter fabric (small) for strategies that need its roles.
FABRIC = "fabric:pods=2,racks=2,hosts=2,planes=2,spines=2"
#: A small three-tier Clos for strategies that need core/spine/leaf tiers (elmo).
CLOS = "elmo:pods=2,leaves=2,hosts=2"

#: Values drawn for parameter fields of these names (besides the default): field
#: widths, and MTUs small enough that stacks overflow (the reference's case).
FIELD_VALUES: dict[str, list[Any]] = {
    "mtu_bytes": [100, 300, 1500], "size_bits": [8, 16], "bitmask_bits": [8, 16, 24],
    "port_bits": [8, 16], "id_bits": [8, 16], "label_bits": [8, 16, 24],
    # switch-mcgroup's group field and port blocks; mixed's widths and mc-group switches
    "group_bits": [8, 16], "subsets": [1, 2, 3, 5], "value_bits": [8, 16, 24],
    "tag_bits": [8, 16], "mcgroup_max_ports": [0, 2, 3, 4, 8],
    "bsl_bits": [64, 128, 256],  # bier's bitstring length
    # elmo's clustering limits (R, H_max, K_max, s-rule capacities, default p-rule)
    "redundancy": [0, 1, 48], "spine_redundancy": [0, 2], "leaf_prules": [0, 1, 2],
    "spine_prules": [0, 1], "switches_per_prule": [1, 2], "leaf_srules": [0, 1],
    "spine_srules": [0, 1], "default_prule": [True, False],
}

#: Family-specific tightenings: a fast path of this class declines a notification only if
#: ``rule(receivers, reference_delivery)`` holds.
DECLINES_ONLY: dict[type, Callable[[frozenset[str], Delivery], bool]] = {
    # nothing to send, or a stack beyond the MTU split into packets per subtree
    TreeWalkFastPath: lambda receivers, ref: not receivers or len(ref.encoding.packets) > 1,
    DestinationsFastPath: lambda receivers, ref: not receivers or len(ref.encoding.packets) > 1,
    # the virtual-tree walk covers every notification the reference delivers here
    VirtualTreeFastPath: lambda receivers, ref: False,
}

_PROBE = random_topology(6, 2, 1, hosts=2)


def probe(name: str) -> FastPath | None:
    """The fast path of ``name`` (default parameters) on a small random network, else on
    the small Clos (strategies that need Clos tiers)."""
    strategy = make_strategy(name)
    return strategy.fast_path(_PROBE, DelayModel()) or strategy.fast_path(
        load_topology(CLOS), DelayModel())


def fast_path_strategies() -> tuple[str, ...]:
    """Registered strategies whose hook returns a fast path (default parameters), except
    those that evaluate events (``needs_notifications``, the content filters): their
    workloads need events, tests/sim/test_fast_content.py checks them."""
    load_builtin_strategies()
    out = []
    for name in STRATEGIES.names():
        cls = STRATEGIES.get(name)
        if cls.fast_path is Strategy.fast_path:
            continue
        try:
            found = probe(name)
        except SpecError:  # no usable defaults: not discoverable this way
            continue
        if found is not None and not getattr(found, "needs_notifications", False):
            out.append(name)
    return tuple(sorted(out))


FAST = fast_path_strategies()


def knowledge(need: str, topo: Topology, publisher: str, receivers: frozenset[str],
              seed: int) -> Knowledge:
    """What ``install`` is told: the notification's receivers, plus a population
    (clustered receivers, or frequency receivers on networks with few hosts) when
    the strategy ``need`` s one (:func:`install_needs`)."""
    know = Knowledge.for_notification(publisher, receivers)
    if need in ("", "clos"):
        return know
    spec = "clustered" if len(topo.hosts) >= 3 and seed % 2 else "frequency:subscribers=30"
    from sim.workloads.receivers import receiver_model

    pop = receiver_model(spec).population(topo, child_rng(seed, "population"))
    return dataclasses.replace(know, population=pop, seed=seed)


@functools.cache
def install_needs(name: str) -> str:
    """"" (the notification's receivers suffice), "population" (a workload's publishers
    and subscribers), "fabric" (those and the datacenter fabric's roles) or "clos" (the
    receivers on a three-tier Clos)."""
    strategy = make_strategy(name)
    for need in ("", "population", "fabric", "clos"):
        topo = load_topology({"fabric": FABRIC, "clos": CLOS}[need]) if need in (
            "fabric", "clos") else _PROBE
        try:
            strategy.install(topo, knowledge(need, topo, topo.hosts[0],
                                             frozenset(topo.hosts[1:3]), 1))
        except SpecError:
            continue
        return need
    raise AssertionError(f"{name}: no known way to install it")


def needs_states(name: str) -> bool:
    """Whether the fast path of ``name`` takes the installed state per notification."""
    return bool(getattr(probe(name), "needs_states", False))


#: Fast paths computed from the strategy alone, and those that read the state.
STATELESS = tuple(n for n in FAST if not needs_states(n))
STATEFUL = tuple(n for n in FAST if needs_states(n))


def fast_metrics(fast: FastPath, publishers: list[str], receiver_sets: list[frozenset[str]],
                 payload_bytes: int, states: list[Any]) -> list[dict[str, Any] | None]:
    """:meth:`FastPath.metrics`, with the states where the fast path takes them."""
    if getattr(fast, "needs_states", False):
        return fast.metrics(publishers, receiver_sets, payload_bytes,
                            states=states)  # type: ignore[call-arg]
    return fast.metrics(publishers, receiver_sets, payload_bytes)


def column_metrics(fast: FastPath, topo: Topology, publishers: list[str],
                   receiver_sets: list[frozenset[str]], payload_bytes: int
                   ) -> list[dict[str, Any] | None] | None:
    """:meth:`ColumnFastPath.metric_columns` of the notifications by host index, as rows
    (None: the fast path has no column form)."""
    if not isinstance(fast, ColumnFastPath):
        return None
    index = {h: i for i, h in enumerate(topo.hosts)}
    flat = [index[h] for rs in receiver_sets for h in sorted(rs)]
    offsets = np.cumsum([0, *map(len, receiver_sets)])
    return fast.metric_columns(np.array([index[p] for p in publishers], np.intp), offsets,
                               np.array(flat, np.intp), payload_bytes).rows()


def test_discovery_finds_the_known_fast_paths():
    assert set(FAST) >= KNOWN
    assert all(isinstance(probe(n), FastPath) for n in FAST)


def parameters(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Random parameters of strategy ``name``; each of the fields that vary keeps its default
    three times in four (most cases then have a fast path to compare)."""
    return strategy_parameters(name, FIELD_VALUES, 4)


@st.composite
def cases(draw, name: str):
    if install_needs(name) == "fabric":
        topo = load_topology(FABRIC)
    elif install_needs(name) == "clos":  # a fat-tree or an Elmo Clos of random shape
        spines = draw(st.integers(1, 2))
        topo = load_topology(draw(st.sampled_from([
            "fattree:k=2", "fattree:k=4",
            f"elmo:pods={draw(st.integers(1, 3))},leaves={draw(st.integers(1, 4))},"
            f"hosts={draw(st.integers(1, 3))},spines={spines},"
            f"cores={spines * draw(st.integers(1, 2))}"])))
    else:
        n = draw(st.integers(1, 24))
        topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                               hosts=draw(st.integers(1, 3)))
    if draw(st.booleans()):
        topo = with_delays(topo, draw(st.lists(st.sampled_from([0.0, 1e-6, 3.3e-4, 0.1]),
                                                min_size=1, max_size=4)))
    publisher = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != publisher]
    receivers = frozenset(draw(st.sets(st.sampled_from(others), max_size=len(others)))
                          if others else ())
    params = draw(parameters(name))
    delays = DelayModel(**{k: draw(st.sampled_from([0.0, 1e-5, 1e-4, 7.7e-3]))
                           for k in ("feed_in_s", "switch_s", "pass_s", "broker_s")})
    payload = draw(st.sampled_from([0, 8, 50, 500]))
    return topo, publisher, receivers, (name, params), delays, payload


@pytest.mark.parametrize("name", STATELESS)
@settings(max_examples=250, deadline=None)
@given(data=st.data())
def test_fast_path_equals_reference(name, data):
    check_case(name, data)


@pytest.mark.parametrize("name", STATEFUL)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_stateful_fast_path_equals_reference(name, data):
    """The same for fast paths that read the installed state (fewer examples: every
    case encodes, installs and runs the reference)."""
    check_case(name, data)


def check_case(name: str, data: Any) -> None:
    topo, publisher, receivers, (_, params), delays, payload_bytes = data.draw(cases(name))
    seed = data.draw(st.integers(0, 2**16))
    try:
        strategy = make_strategy(name, params)
        state = strategy.install(topo, knowledge(install_needs(name), topo, publisher,
                                                 receivers, seed))
    except ValueError:  # parameters that do not fit together or cannot address topo
        event(f"{name}: no state")  # (SpecError, FieldRangeError: nothing to compare)
        return
    fast = strategy.fast_path(topo, delays)
    if fast is None:  # not covered (e.g. Steiner trees): the reference runs
        event(f"{name}: no fast path")
        return
    note = Notification(3, publisher)
    payload = payload_for(note, payload_bytes)
    try:
        ref: Delivery | None = run_notification(topo, strategy, state, note, receivers,
                                                payload, delays)
    except OversizeError:
        ref = None  # the fast path must decline: the reference raises
    for variant in implementations(fast):
        got = variant.delivery(state, note, receivers, payload)
        metrics = fast_metrics(variant, [publisher], [receivers], payload_bytes, [state])[0]
        event(f"{name}: {'declined' if got is None else 'compared'}")
        if ref is None or got is None:
            assert got is None and metrics is None, variant.impl
            assert column_metrics(variant, topo, [publisher], [receivers], payload_bytes) in (
                None, [None]), variant.impl
            if ref is not None and type(fast) in DECLINES_ONLY:
                assert DECLINES_ONLY[type(fast)](receivers, ref), variant.impl
            continue
        assert metrics is not None, variant.impl
        assert column_metrics(variant, topo, [publisher], [receivers], payload_bytes) in (
            None, [metrics]), variant.impl
        assert got.switches == ref.switches, variant.impl
        assert got.links == ref.links, variant.impl
        assert got.first_arrival_s == ref.first_arrival_s, variant.impl
        assert got == ref, variant.impl
        assert list(metrics)[:len(METRIC_KEYS)] == list(METRIC_KEYS)
        assert {k: metrics[k] for k in METRIC_KEYS} == row_metrics(ref), variant.impl
        extra = strategy.extra_metrics(topo, state, note, receivers, ref)
        assert {f: metrics.get(f, 0) for f in HEADER_LABEL_FIELDS} == {
            f: getattr(extra, f) or 0 for f in HEADER_LABEL_FIELDS}, variant.impl


@pytest.mark.parametrize("name", FAST)
def test_jellyfish_255_cell_notifications(name):
    """The benchmark network itself (seed 000 ch. 3): 30 % receivers, 50 B; every
    discovered fast path covers these notifications (it is not a fast path that
    declines everything) and equals the reference on them. Strategies that need the
    datacenter fabric run on the ch. 6 fabric instead; those that read the state
    (slow references) on one notification."""
    need = install_needs(name)
    topo = load_topology({"fabric": "fabric:pods=8,racks=4,hosts=2,planes=4,spines=4",
                          "clos": "elmo:pods=4,leaves=16,hosts=4"}.get(
                             need, "jellyfish:switches=255,degree=4,hosts=1,seed=1"))
    strategy = make_strategy(name)
    rng = np.random.default_rng(5)
    fast = strategy.fast_path(topo, DelayModel())
    assert fast is not None
    for i in range(1 if name in STATEFUL else 3):
        pub = topo.hosts[int(rng.integers(len(topo.hosts)))]
        others = [h for h in topo.hosts if h != pub]
        receivers = frozenset(rng.choice(others, round(0.3 * len(topo.hosts)), replace=False))
        state = strategy.install(topo, knowledge(need, topo, pub, receivers, 1))
        note = Notification(i, pub)
        ref = run_notification(topo, strategy, state, note, receivers, payload_for(note, 50))
        for variant in implementations(fast):
            got = variant.delivery(state, note, receivers, payload_for(note, 50))
            assert got is not None and got == ref


@pytest.mark.parametrize("strategy,params", [*((n, {}) for n in FAST),
                                             ("switch-port", {"pruning": ["reactive"]}),
                                             ("multicast", {"tree": ["steiner"]})])
def test_cell_rows_identical_on_both_paths(strategy, params, monkeypatch):
    """Same cell, fast and reference path: identical rows (link delays and
    non-default delay constants included); covered cells never call the reference."""
    from experiments.cells import pipeline as cell_runner
    from experiments.cells.pipeline import cell_rows, cell_setup
    from experiments.cells.spec import parse_spec_dict

    need = install_needs(strategy)
    spec = parse_spec_dict({
        "experiment": {"name": "paths", "notifications": 12, "seeds": [4],
                       "payload_bytes": [50]},
        "grid": {"topology": [{"fabric": FABRIC, "clos": CLOS}.get(
                                  need, "jellyfish:switches=24,degree=3,hosts=2,seed=2")],
                 "strategy": [strategy],
                 "receivers": ["clustered" if need in ("population", "fabric")
                               else "uniform:percent=30"]},
        "strategy_params": {strategy: params} if params else {},
        "links": {"delay_s": 2.5e-5}, "delays": {"pass_s": 3e-6},
    }, "<paths>")
    (cell,) = spec.cells()
    ref = cell_rows(cell, "reference")
    topology, covered, delays = cell_setup(cell)
    if covered.fast_path(topology, delays) is not None:
        def no_reference(*args, **kwargs):
            raise AssertionError("the reference ran in a covered cell")

        monkeypatch.setattr(cell_runner, "run_notification", no_reference)
    fast = cell_rows(cell, "auto")
    assert len(fast) == 12 and fast == ref
    # broadcast reaches every host; the others exactly the receivers
    assert all(r["delivered"] - r["false_positives"] == r["receivers"] for r in ref)


def test_static_path_choice():
    topo = random_topology(6, 2, 1)
    bitmask = make_strategy("switch-bitmask")
    mcgroup = make_strategy("switch-mcgroup", {"groups": "used"})
    assert choose_static_path(topo, bitmask, DelayModel(), "auto") is not None
    assert choose_static_path(topo, bitmask, DelayModel(), "reference") is None
    assert choose_static_path(topo, mcgroup, DelayModel(), "auto") is None
    with pytest.raises(ValueError, match="strategy 'switch-mcgroup' has no fast path"):
        choose_static_path(topo, mcgroup, DelayModel(), "fast")
    with pytest.raises(ValueError, match="static_path must be one of auto, fast, reference"):
        choose_static_path(topo, bitmask, DelayModel(), "quick")


def test_subclasses_do_not_inherit_a_fast_path():
    """A subclass may change encode, host_receive or extra_metrics: no silent fast path."""
    topo = random_topology(6, 2, 1)
    for name in FAST:
        cls = STRATEGIES.get(name)
        sub = type("Sub" + cls.__name__, (cls,), {})
        assert sub().fast_path(topo, DelayModel()) is None, name


# -- the tree walk of switch-bitmask, switch-port and hops ----------------------------

TREE_WALKS = [("switch-bitmask", {}), ("switch-port", {}),
              ("switch-port", {"pruning": "reactive"}), ("hops", {}),
              ("switch-mcgroup", {"groups": "subsets", "subsets": 3}),
              ("mixed", {"fallback": "port", "mcgroup_max_ports": 4})]
#: Both implementations of the tree walk: numpy, and the numba kernel when numba is there.
IMPLS = ["numpy", pytest.param("jit", marks=pytest.mark.skipif(
    batch_kernel is None, reason="numba not installed (or STACKCAST_NO_JIT=1)"))]


def _tree_walk(name: str, params: dict[str, Any], topo: Topology, impl: str
               ) -> TreeWalkFastPath:
    fast = make_strategy(name, params).fast_path(topo, DelayModel())
    assert isinstance(fast, TreeWalkFastPath)
    return fast.using(impl)


@pytest.mark.parametrize("impl", IMPLS)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), kind=st.sampled_from(TREE_WALKS), count=st.integers(1, 12))
def test_batch_equals_one_by_one(impl, seed, kind, count):
    """A batch of notifications gives each one's metrics (offsets never leak), and both
    implementations agree."""
    topo = random_topology(14, 6, seed, hosts=2)
    fast = _tree_walk(*kind, topo, impl)
    assert fast.impl == impl
    rng = np.random.default_rng(seed)
    pubs = [topo.hosts[int(i)] for i in rng.integers(len(topo.hosts), size=count)]
    sets = [frozenset(h for h in topo.hosts if h != p and rng.random() < 0.4) for p in pubs]
    together = fast.metrics(pubs, sets, 50)
    assert together == [fast.metrics([p], [r], 50)[0] for p, r in zip(pubs, sets, strict=True)]
    assert together == fast.using("numpy").metrics(pubs, sets, 50)
    assert sum(m is not None for m in together) == sum(bool(r) for r in sets)
    assert column_metrics(fast, topo, pubs, sets, 50) == together  # by host index


@pytest.mark.parametrize("impl", IMPLS)
def test_batches_split_where_they_like(impl, monkeypatch):
    """Chunking a long list into batches (and reusing work buffers) changes nothing."""
    topo = random_topology(18, 9, 3, hosts=2)
    fast = _tree_walk("switch-bitmask", {}, topo, impl)
    rng = np.random.default_rng(1)
    pubs = [topo.hosts[int(i)] for i in rng.integers(len(topo.hosts), size=23)]
    sets = [frozenset(h for h in topo.hosts if h != p and rng.random() < 0.3) for p in pubs]
    whole = fast.metrics(pubs, sets, 50)
    monkeypatch.setattr(tree_walk, "BATCH", 4)
    assert fast.metrics(pubs, sets, 50) == whole
    assert column_metrics(fast, topo, pubs, sets, 50) == whole


def test_column_form_declines_what_the_named_form_declines():
    """By host index: no receivers, or the publisher among them (the names of
    :meth:`TreeWalkFastPath.metrics`: also anything that is no host)."""
    topo = random_topology(8, 3, 2, hosts=2)
    fast = _tree_walk("switch-bitmask", {}, topo, "numpy")
    h = topo.hosts
    pubs, sets = [h[0], h[1], h[2], h[3]], [frozenset(), frozenset(h[1:4]), frozenset(h[4:6]),
                                            frozenset(h[:2])]
    got = column_metrics(fast, topo, pubs, sets, 50)
    assert got is not None and [m is None for m in got] == [True, True, False, False]
    assert got == fast.metrics(pubs, sets, 50)
    assert fast.metrics([h[0], "nobody"], [frozenset({topo.switches[0]}), frozenset(h[1:2])],
                        50) == [None, None]


def test_oversized_and_uncovered_go_to_the_reference():
    topo = random_topology(60, 0, 7, hosts=3)  # a long tree: stacks beyond a small MTU
    small = make_strategy("switch-port", {"mtu_bytes": 80, "on_oversize": "split"})
    fast = small.fast_path(topo, DelayModel())
    assert fast is not None
    pub, receivers = topo.hosts[0], frozenset(topo.hosts[1:])
    assert fast.metrics([pub], [receivers], 50) == [None]
    assert fast.metrics([pub], [receivers | {pub}], 50) == [None]  # publisher as receiver
    for name, params in [("switch-port", {"tree": "steiner"}),
                         ("switch-bitmask", {"stack_order": "largest-first"}),
                         ("switch-mcgroup", {"groups": "used"}),
                         ("switch-mcgroup", {"groups": "used", "group_ids": "sequential"}),
                         ("mixed", {"groups": "used"}), ("mixed", {"tree": "steiner"}),
                         ("mixed", {"stack_order": "smallest-first"}),
                         ("multicast", {"tree": "steiner"})]:
        assert make_strategy(name, params).fast_path(topo, DelayModel()) is None, name
    with pytest.raises(ValueError, match="impl must be auto, jit or numpy"):
        _tree_walk("switch-bitmask", {}, topo, "cuda")


# -- tree tables with fewer rows than roots ---------------------------------------------

#: Every fast path that walks the tree tables (sim/dataplanes/tree_tables.py).
TABLE_WALKS = [*TREE_WALKS, ("broadcast", {}), ("multicast", {}), ("alm-all", {}),
               ("alm-fork", {}), ("alm-mcgroup", {})]


@pytest.mark.parametrize("slots", [1, 3])
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), kind=st.sampled_from(TABLE_WALKS), count=st.integers(1, 12))
def test_fewer_tree_table_rows_than_roots_change_nothing(slots, seed, kind, count):
    """With ``slots`` rows for the trees of many publishers' switches (roots take
    each other's rows, batches shrink to fit), metrics and deliveries equal those
    with a row for every root, in every implementation."""
    from sim.dataplanes import tree_tables as tt

    topo = random_topology(14, 6, seed, hosts=2)
    rng = np.random.default_rng(seed)
    pubs = [topo.hosts[int(i)] for i in rng.integers(len(topo.hosts), size=count)]
    sets = [frozenset(h for h in topo.hosts if h != p and rng.random() < 0.4) for p in pubs]

    def run() -> list[Any]:
        strategy = make_strategy(*kind)  # its own Caches: tables built afresh
        fast = strategy.fast_path(topo, DelayModel())
        assert fast is not None
        out: list[Any] = [tt.tree_tables(topo, fast.caches).capacity]  # the tables it uses
        for variant in implementations(fast):
            out.append(variant.metrics(pubs, sets, 50))
            for i, (p, r) in enumerate(zip(pubs, sets, strict=True)):
                note = Notification(i, p)
                state = strategy.install(topo, Knowledge.for_notification(p, r))
                out.append(variant.delivery(state, note, r, payload_for(note, 50)))
        return out

    full, *want = run()
    assert full == len(topo.switches)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tt, "default_slots", lambda n_switches, n_nodes: slots)
        bounded, *got = run()
    assert bounded == slots
    assert got == want
