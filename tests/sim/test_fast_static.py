"""The static engine's fast path equals the pass-by-pass reference exactly.

Random topologies (tests/support/random_topologies.py), random publishers and
receiver sets, every covered entry kind (switch-bitmask, switch-port with
predictive and reactive pruning, hops), random link and delay constants:
:meth:`sim.engines.fast_static.FastStatic.delivery` must equal
:func:`sim.engines.static.run_notification` field by field (deliveries, first
arrivals, frames and bytes per link, per-switch counts, drops, encoding), and
:meth:`~sim.engines.fast_static.FastStatic.metrics` must equal
:func:`sim.engines.fast_static.row_metrics` of the reference delivery.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.delivery import METRIC_KEYS, DelayModel, row_metrics
from sim.dataplanes.packet import Notification, payload_for
from sim.engines.fast_static import fast_static_for
from sim.engines.fast_static_jit import batch_kernel
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.frame_size import OversizeError
from tests.support.random_topologies import random_topology
from topologies.model import Topology
from topologies.registry import SpecError

KINDS = [("switch-bitmask", {}), ("switch-port", {}), ("switch-port", {"pruning": "reactive"}),
         ("hops", {})]
#: Both implementations of the fast path: numpy, and the numba kernel when numba is there.
IMPLS = ["numpy", pytest.param("jit", marks=pytest.mark.skipif(
    batch_kernel is None, reason="numba not installed (or STACKCAST_NO_JIT=1)"))]


def _with_delays(topo: Topology, delays: list[float]) -> Topology:
    links = tuple(dataclasses.replace(lk, delay_s=delays[i % len(delays)])
                  for i, lk in enumerate(topo.links))
    return Topology(name=topo.name + ",delays", switches=topo.switches, hosts=topo.hosts,
                    links=links)


@st.composite
def cases(draw):
    n = draw(st.integers(1, 24))
    topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                           hosts=draw(st.integers(1, 3)))
    if draw(st.booleans()):
        topo = _with_delays(topo, draw(st.lists(st.sampled_from([0.0, 1e-6, 3.3e-4, 0.1]),
                                                min_size=1, max_size=4)))
    publisher = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != publisher]
    receivers = frozenset(draw(st.sets(st.sampled_from(others), max_size=len(others)))
                          if others else ())
    name, params = draw(st.sampled_from(KINDS))
    params = {**params, **draw(widths(name))}
    delays = DelayModel(**{k: draw(st.sampled_from([0.0, 1e-5, 1e-4, 7.7e-3]))
                           for k in ("feed_in_s", "switch_s", "pass_s")})
    payload = draw(st.sampled_from([0, 8, 50, 500]))
    return topo, publisher, receivers, (name, params), delays, payload


@st.composite
def widths(draw, name):
    """Field widths and MTU policies (small MTUs make stacks overflow: the reference's case)."""
    out = {"mtu_bytes": draw(st.sampled_from([100, 300, 1500])),
           "on_oversize": draw(st.sampled_from(["error", "split", "jumbo"])),
           "size_bits": draw(st.sampled_from([8, 16]))}
    if name == "switch-bitmask":
        out["bitmask_bits"] = draw(st.sampled_from([8, 16, 24]))
    elif name == "switch-port":
        out["port_bits"] = draw(st.sampled_from([8, 16]))
    return out


@pytest.mark.parametrize("impl", IMPLS)
@settings(max_examples=300, deadline=None)
@given(case=cases())
def test_fast_path_equals_reference(impl, case):
    topo, publisher, receivers, (name, params), delays, payload_bytes = case
    strategy = make_strategy(name, params)
    try:
        state = strategy.install(topo, Knowledge())
    except SpecError:  # ports beyond the bitmask / port field: no state, nothing to compare
        assert fast_static_for(topo, strategy, delays) is None
        return
    fast = fast_static_for(topo, strategy, delays, impl)
    assert fast is not None and fast.impl == impl
    note = Notification(3, publisher)
    payload = payload_for(note, payload_bytes)
    got = fast.delivery(state, note, receivers, payload)
    metrics = fast.metrics([publisher], [receivers], payload_bytes)[0]
    try:
        ref = run_notification(topo, strategy, state, note, receivers, payload, delays)
    except OversizeError:
        assert got is None and metrics is None  # declined: the reference raises
        return
    if got is None:  # declined: nothing to send, or a stack beyond the MTU (split)
        assert metrics is None
        assert not receivers or len(ref.encoding.packets) > 1
        return
    assert metrics is not None
    assert got.switches == ref.switches
    assert got.links == ref.links
    assert got.first_arrival_s == ref.first_arrival_s
    assert got == ref
    assert list(metrics) == list(METRIC_KEYS)
    assert metrics == row_metrics(ref)


@pytest.mark.parametrize("impl", IMPLS)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), kind=st.sampled_from(KINDS), count=st.integers(1, 12))
def test_batch_equals_one_by_one(impl, seed, kind, count):
    """A batch of notifications gives each one's metrics (offsets never leak), and both
    implementations agree."""
    import numpy as np

    topo = random_topology(14, 6, seed, hosts=2)
    strategy = make_strategy(*kind)
    fast = fast_static_for(topo, strategy, impl=impl)
    rng = np.random.default_rng(seed)
    pubs = [topo.hosts[int(i)] for i in rng.integers(len(topo.hosts), size=count)]
    sets = [frozenset(h for h in topo.hosts if h != p and rng.random() < 0.4) for p in pubs]
    together = fast.metrics(pubs, sets, 50)
    assert together == [fast.metrics([p], [r], 50)[0] for p, r in zip(pubs, sets, strict=True)]
    assert together == fast_static_for(topo, strategy, impl="numpy").metrics(pubs, sets, 50)
    assert sum(m is not None for m in together) == sum(bool(r) for r in sets)


@pytest.mark.parametrize("impl", IMPLS)
def test_batches_split_where_they_like(impl, monkeypatch):
    """Chunking a long list into batches (and reusing work buffers) changes nothing."""
    import numpy as np

    from sim.engines import fast_static

    topo = random_topology(18, 9, 3, hosts=2)
    fast = fast_static_for(topo, make_strategy("switch-bitmask"), impl=impl)
    rng = np.random.default_rng(1)
    pubs = [topo.hosts[int(i)] for i in rng.integers(len(topo.hosts), size=23)]
    sets = [frozenset(h for h in topo.hosts if h != p and rng.random() < 0.3) for p in pubs]
    whole = fast.metrics(pubs, sets, 50)
    monkeypatch.setattr(fast_static, "BATCH", 4)
    assert fast.metrics(pubs, sets, 50) == whole


def test_oversized_and_uncovered_go_to_the_reference():
    topo = random_topology(60, 0, 7, hosts=3)  # a long tree: stacks beyond a small MTU
    small = make_strategy("switch-port", {"mtu_bytes": 80, "on_oversize": "split"})
    fast = fast_static_for(topo, small)
    pub, receivers = topo.hosts[0], frozenset(topo.hosts[1:])
    assert fast.metrics([pub], [receivers], 50) == [None]
    assert fast.metrics([pub], [receivers | {pub}], 50) == [None]  # publisher as receiver
    assert fast_static_for(topo, make_strategy("switch-port", {"tree": "steiner"})) is None
    assert fast_static_for(topo, make_strategy("switch-mcgroup")) is None
    assert fast_static_for(topo, make_strategy("unicast")) is None


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name,params", KINDS)
def test_jellyfish_255_cell_notifications(name, params, impl):
    """The benchmark network itself (seed 000 ch. 3): 30 % receivers, 50 B."""
    import numpy as np

    from topologies.specs import load_topology

    topo = load_topology("jellyfish:switches=255,degree=4,hosts=1,seed=1")
    strategy = make_strategy(name, params)
    state = strategy.install(topo, Knowledge())
    fast = fast_static_for(topo, strategy, impl=impl)
    rng = np.random.default_rng(5)
    for i in range(3):
        pub = topo.hosts[int(rng.integers(len(topo.hosts)))]
        others = [h for h in topo.hosts if h != pub]
        receivers = frozenset(rng.choice(others, round(0.3 * len(topo.hosts)), replace=False))
        note = Notification(i, pub)
        ref = run_notification(topo, strategy, state, note, receivers, payload_for(note, 50))
        assert fast.delivery(state, note, receivers, payload_for(note, 50)) == ref


@pytest.mark.parametrize("strategy,params", [("switch-bitmask", {}), ("switch-port", {}),
                                             ("switch-port", {"pruning": ["reactive"]}),
                                             ("hops", {}), ("unicast", {})])
def test_cell_rows_identical_on_both_paths(strategy, params, monkeypatch):
    """Same cell, fast and reference path: identical rows (link delays and
    non-default delay constants included); covered cells never call the reference."""
    from experiments.cells import pipeline as cell_runner
    from experiments.cells.pipeline import cell_rows
    from experiments.cells.spec import parse_spec_dict

    spec = parse_spec_dict({
        "experiment": {"name": "paths", "notifications": 12, "seeds": [4],
                       "payload_bytes": [50]},
        "grid": {"topology": ["jellyfish:switches=24,degree=3,hosts=2,seed=2"],
                 "strategy": [strategy], "receivers": ["uniform:percent=30"]},
        "strategy_params": {strategy: params} if params else {},
        "links": {"delay_s": 2.5e-5}, "delays": {"pass_s": 3e-6},
    }, "<paths>")
    (cell,) = spec.cells()
    ref = cell_rows(cell, "reference")
    if strategy != "unicast":
        def no_reference(*args, **kwargs):
            raise AssertionError("the reference ran in a covered cell")

        monkeypatch.setattr(cell_runner, "run_notification", no_reference)
    fast = cell_rows(cell, "auto")
    assert len(fast) == 12 and fast == ref
    assert all(r["delivered"] == r["receivers"] for r in ref)


def test_static_path_choice():
    from sim.engines.fast_static import choose_static_path

    topo = random_topology(6, 2, 1)
    bitmask, unicast = make_strategy("switch-bitmask"), make_strategy("unicast")
    assert choose_static_path(topo, bitmask, DelayModel(), "auto") is not None
    assert choose_static_path(topo, bitmask, DelayModel(), "reference") is None
    assert choose_static_path(topo, unicast, DelayModel(), "auto") is None
    with pytest.raises(ValueError, match="no fast path"):
        choose_static_path(topo, unicast, DelayModel(), "fast")
    with pytest.raises(ValueError, match="static_path must be one of auto, fast, reference"):
        choose_static_path(topo, bitmask, DelayModel(), "quick")
    with pytest.raises(ValueError, match="impl must be auto, jit or numpy"):
        fast_static_for(topo, bitmask, impl="cuda")
