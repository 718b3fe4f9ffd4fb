"""The content filters' fast path equals the pass-by-pass reference exactly.

:mod:`sim.dataplanes.content_fast_path` serves ``pleroma-dz``, ``range-boxes``,
``camus-bdd``, ``kundel-id`` and ``kundel-bitmask``: their tables evaluated on
each event in one walk. Hypothesis draws random topologies (random trees with
chords and 1-3 hosts per switch, or fat trees, whose layers Camus routes on),
random link delays and delay constants, a random content workload (attribute
space, distribution, subscriptions, publishers, churn between notifications)
and random strategy parameters (every ``Literal`` field and the widths, flow
limits and capacities of :data:`FIELD_VALUES`). Two instances of the strategy
see the same installs and updates:

- the first runs the reference notification by notification (install,
  :func:`sim.engines.static.run_notification`, row metrics, extra metrics);
  after the last update its fast path's :meth:`delivery` must equal each
  reference :class:`~sim.dataplanes.delivery.Delivery` (deliveries, first
  arrivals bit for bit, frames and bytes per link, passes and lookups per
  switch, drops, encoding), so nothing leaks from later states;
- the second installs every state first and then takes all notifications in
  one :meth:`metrics` call, as the cell pipeline does: each row must equal
  :func:`~sim.dataplanes.delivery.row_metrics` of the reference, and its
  ``extra`` the strategy's :meth:`extra_metrics` (all but the wall clock).

Both kernel implementations (numba and the interpreted one) are checked. The
engine's generic fast-path test (tests/sim/test_fast_paths.py) leaves these
strategies to this file (its notifications carry no events).

References
----------
shared/DESIGN.md "Data planes" (a fast path agrees with the pass-by-pass model
on randomized cases); seeds 001-004 (the data planes).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from sim.dataplanes import content_fast_path
from sim.dataplanes.content_fast_path import ContentFastPath
from sim.dataplanes.delivery import DelayModel, Delivery, row_metrics
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.prefix_filter.fast_path import DzKey
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.workloads.receivers import receiver_model
from strategies.base import STRATEGIES, Knowledge, Strategy, load_builtin_strategies, make_strategy
from strategies.prefix_filter.dz import bit_shifts, dz_to_ipv4, dz_to_ipv6, event_dz
from tests.support.fast_paths import implementations, strategy_parameters, with_delays
from tests.support.random_topologies import random_topology
from topologies.model import Topology
from topologies.specs import load_topology

CONTENT = ("pleroma-dz", "range-boxes", "camus-bdd", "kundel-id", "kundel-bitmask")

#: Values drawn for parameter fields of these names (besides the default).
FIELD_VALUES: dict[str, list[Any]] = {
    # pleroma-dz
    "dz_bits": [0, 3, 8], "max_dz": [0, 1, 3], "flow_limit": [0, 2, 4, 9],
    "global_every": [0, 2], "window": [20, 60], "sampling": [1.0, 0.5],
    "self_eval": [0.0, 0.2], "reserve_slot": [True, False], "dims": [(), (0,)],
    # range-boxes, kundel
    "value_bits": [0, 16, 32, 64], "redundancy_queue": [True, False], "capacity": [0, 3],
    "id_bits": [8, 16, 24], "n_max": [32, 64], "slots": [0, 3, 5],
    # camus
    "alpha": [1, 3, 40], "max_entries": [3, 200_000],
    # every content filter: latency model and capacities
    "latency_base_us": [6.4, 0.3], "tcam_capacity": [0, 3], "group_capacity": [0, 1],
}

_FATTREES = ("fattree:k=2", "fattree:k=4")


def parameters(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Random parameters of strategy ``name``; each of the fields that vary keeps its default
    two times in three."""
    return strategy_parameters(name, FIELD_VALUES, 3)


@st.composite
def workloads(draw: st.DrawFn) -> tuple[Topology, str]:
    """A topology and a ``content`` receiver model on it."""
    if draw(st.integers(0, 3)) == 0:
        topo = load_topology(draw(st.sampled_from(_FATTREES)))
    else:
        n = draw(st.integers(1, 14))
        topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                               hosts=draw(st.integers(2 if n == 1 else 1, 3)))
    if draw(st.booleans()):
        topo = with_delays(topo, draw(st.lists(st.sampled_from([0.0, 1e-6, 3.3e-4, 0.1]),
                                                min_size=1, max_size=4)))
    dims = draw(st.integers(1, 3))
    dist = draw(st.sampled_from(["uniform", "zipf", "siena"]))
    extra = f",preds={draw(st.integers(1, dims))},values=6" if dist == "siena" else ""
    publishers = draw(st.integers(1, min(2, len(topo.hosts) - 1)))
    spec = (f"content:subs={draw(st.integers(0, 14))},publishers={publishers},"
            f"dims={dims},bits={draw(st.integers(2, 10))},"
            f"width={draw(st.sampled_from([0.1, 0.3, 0.6]))},dist={dist}{extra},"
            f"churn={draw(st.integers(0, 2))},"
            f"churn_mode={draw(st.sampled_from(['replace', 'add']))}")
    return topo, spec


def _builds(strategy: Strategy, topo: Topology, pop: Any, runs: int, seed: int
            ) -> list[Any]:
    """The states ``strategy`` installs (run 0) and updates (later runs) on ``pop``."""
    states: list[Any] = []
    for run in range(runs):
        know = Knowledge(population=pop.at(run), seed=seed)
        states.append(strategy.install(topo, know) if not states
                      else strategy.update(topo, states[-1], know))
    return states


def _notifications(topo: Topology, pop: Any, runs: int, seed: int, arbitrary: list[bool]
                   ) -> list[tuple[Notification, frozenset[str]]]:
    """One event per run; receivers are the matching hosts, or (``arbitrary[run]``) any
    hosts, the publisher perhaps among them (the counts must hold for any set)."""
    out = []
    for run in range(runs):
        rng = child_rng(seed, "notes", run)
        view = pop.at(run)
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        ev, receivers = view.draw(pub, run, rng)
        if arbitrary[run]:
            receivers = frozenset(h for h in topo.hosts if rng.random() < 0.4)
        out.append((Notification(run, pub, event=ev), receivers))
    return out


def _declinable(strategy: Strategy, state: Any) -> bool:
    """Tables the kernel cannot hold: IPv6 prefixes beyond 63 bits (dz beyond 47 bits)."""
    key = strategy.record_of(state).content.event_key  # type: ignore[attr-defined]
    return isinstance(key, DzKey) and key.family == 6 and key.length > 47


def check_case(name: str, data: Any) -> None:
    topo, spec = data.draw(workloads())
    params = data.draw(parameters(name))
    delays = DelayModel(**{k: data.draw(st.sampled_from([0.0, 1e-5, 1e-4, 7.7e-3]))
                           for k in ("feed_in_s", "switch_s", "pass_s", "broker_s")})
    payload_bytes = data.draw(st.sampled_from([0, 8, 50]))
    runs = data.draw(st.integers(1, 4))
    seed = data.draw(st.integers(0, 2**16))
    arbitrary = data.draw(st.lists(st.integers(0, 3).map(lambda x: x == 0), min_size=runs,
                                   max_size=runs))
    try:
        pop = receiver_model(spec).population(topo, child_rng(seed, "population"))
        ref_strategy, batch_strategy = make_strategy(name, params), make_strategy(name, params)
        states = _builds(ref_strategy, topo, pop, runs, seed)
    except ValueError:  # parameters that do not fit the workload (SpecError included)
        event(f"{name}: no state")
        return
    notes = _notifications(topo, pop, runs, seed, arbitrary)
    refs: list[tuple[Delivery, dict[str, Any], Any]] = []
    for state, (note, receivers) in zip(states, notes, strict=True):
        # the reference sees each state right after its install, as a cell does
        d = run_notification(topo, ref_strategy, state, note, receivers,
                             payload_for(note, payload_bytes), delays)
        refs.append((d, row_metrics(d), ref_strategy.extra_metrics(topo, state, note,
                                                                   receivers, d)))
    fast = ref_strategy.fast_path(topo, delays)
    assert isinstance(fast, ContentFastPath)
    for variant in implementations(fast):  # after the last update: per-state records only
        for state, (note, receivers), (d, _, _) in zip(states, notes, refs, strict=True):
            got = variant.delivery(state, note, receivers, payload_for(note, payload_bytes))
            if got is None:
                assert _declinable(ref_strategy, state), variant.impl
                event(f"{name}: declined")
                continue
            assert got.switches == d.switches, variant.impl
            assert got.links == d.links, variant.impl
            assert got.first_arrival_s == d.first_arrival_s, variant.impl
            assert got == d, variant.impl
    # the pipeline's way: every state installed first, then one batch
    batch_states = _builds(batch_strategy, topo, pop, runs, seed)
    batch = batch_strategy.fast_path(topo, delays)
    assert isinstance(batch, ContentFastPath)
    for k, variant in enumerate(implementations(batch)):
        if k:  # the first rows of each state again (wall time, deployment peak)
            for state in batch_states:
                batch_strategy.record_of(state).fresh = True  # type: ignore[attr-defined]
        rows = variant.metrics([n.publisher for n, _ in notes], [r for _, r in notes],
                               payload_bytes, states=batch_states,
                               notifications=[n for n, _ in notes])
        for row, state, (_, metrics, extra) in zip(rows, batch_states, refs, strict=True):
            if row is None:
                assert _declinable(batch_strategy, state), variant.impl
                continue
            got_extra = row.pop("extra")
            assert row == metrics, variant.impl
            assert dataclasses.replace(got_extra, controller_wall_ms=0.0) == \
                dataclasses.replace(extra, controller_wall_ms=0.0), variant.impl
            event(f"{name}: compared")


@pytest.mark.parametrize("name", CONTENT)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fast_path_equals_reference(name: str, data: Any) -> None:
    check_case(name, data)


def test_every_content_filter_has_the_fast_path() -> None:
    """The five content filters answer the hook, mark their needs, and subclasses (which may
    change encode or the metrics) do not inherit it."""
    load_builtin_strategies()
    topo = random_topology(6, 2, 1)
    for name in CONTENT:
        fast = make_strategy(name).fast_path(topo, DelayModel())
        assert isinstance(fast, ContentFastPath), name
        assert fast.needs_states and fast.needs_notifications
        cls = STRATEGIES.get(name)
        assert type("Sub" + cls.__name__, (cls,), {})().fast_path(topo, DelayModel()) is None


def _cell_spec(strategy: str, params: dict[str, Any], receivers: str, topology: str,
               notifications: int = 10) -> Any:
    from experiments.cells.spec import parse_spec_dict

    return parse_spec_dict({
        "experiment": {"name": "content-paths", "notifications": notifications, "seeds": [4],
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": [strategy], "receivers": [receivers]},
        "strategy_params": {strategy: params} if params else {},
        "links": {"delay_s": 2.5e-5}, "delays": {"pass_s": 3e-6},
    }, "<content paths>")


CELLS = [("pleroma-dz", {"flow_limit": 5, "algorithm": "history", "window": 40}),
         ("pleroma-dz", {}), ("range-boxes", {"priority": "inverse-volume"}),
         ("camus-bdd", {"order": "constants"}), ("camus-bdd", {"table": "one-big-table"}),
         ("kundel-id", {}), ("kundel-bitmask", {"priority": "volume"})]


@pytest.mark.parametrize("strategy,params", CELLS)
def test_cell_rows_identical_on_both_paths(strategy, params, monkeypatch):
    """A churning cell (one subscription replaced per notification): identical rows on the
    fast path and the reference (wall clock aside), and the reference never runs."""
    from experiments.cells import pipeline as cell_runner
    from experiments.cells.pipeline import cell_rows

    (cell,) = _cell_spec(strategy, params, "content:subs=14,publishers=2,dims=2,bits=8,"
                         "width=0.3,dist=zipf,churn=1", "fattree:k=4").cells()
    ref = cell_rows(cell, "reference")

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference ran in a covered cell")

    monkeypatch.setattr(cell_runner, "run_notification", no_reference)
    fast = cell_rows(cell, "fast")
    for rows in (ref, fast):
        for r in rows:
            r.pop("controller_wall_ms")
    assert len(fast) == 10 and fast == ref
    assert sum(r["false_positives"] + r["false_negatives"] for r in fast) >= 0


def test_declined_states_run_on_the_reference_with_the_same_rows():
    """IPv6 destinations with a dz beyond 47 bits (prefixes beyond 63 key bits): the fast
    path declines, the pipeline runs the reference on states built earlier, rows equal."""
    from experiments.cells.pipeline import cell_rows

    (cell,) = _cell_spec("pleroma-dz", {"encoding": "ipv6", "max_dz": 2},
                         "content:subs=6,publishers=1,dims=2,bits=30,width=0.3,churn=1",
                         "jellyfish:switches=8,degree=3,hosts=1,seed=3", 5).cells()
    ref, fast = cell_rows(cell, "reference"), cell_rows(cell, "fast")
    for rows in (ref, fast):
        for r in rows:
            r.pop("controller_wall_ms")
    assert fast == ref


def test_decline_without_events_states_or_hosts():
    topo = load_topology("fattree:k=4")
    pop = receiver_model("content:subs=8,dims=2,bits=8").population(topo, child_rng(1, "p"))
    strategy = make_strategy("range-boxes")
    state = strategy.install(topo, Knowledge(population=pop.at(0), seed=1))
    fast = strategy.fast_path(topo, DelayModel())
    pub = pop.publishers[0]
    ev, receivers = pop.at(0).draw(pub, 0, np.random.default_rng(1))
    note = Notification(0, pub, event=ev)
    assert fast.metrics([pub], [receivers], 50) == [None]  # no states, no notifications
    assert fast.metrics([pub], [receivers], 50, states=[state]) == [None]
    assert fast.metrics([pub], [receivers], 50, states=[state],
                        notifications=[Notification(0, pub)]) == [None]  # no event
    assert fast.delivery(state, note, receivers | {"s1"}, b"") is None  # a switch receiving
    assert fast.delivery(state, Notification(0, "s1", event=ev), receivers, b"") is None
    other = make_strategy("range-boxes")  # a state another instance built: no record
    assert fast.metrics([pub], [receivers], 50, states=[
        other.install(topo, Knowledge(population=pop.at(0), seed=1))],
        notifications=[note]) == [None]
    assert fast.metrics([pub], [receivers], 50, states=[state], notifications=[note])[0]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), size=st.integers(1, 5), count=st.integers(1, 9))
def test_batches_split_where_they_like(seed, size, count):
    """Kernel batches of any size give each notification's metrics, for both
    implementations (offsets and work arrays never leak between notifications)."""
    topo = random_topology(10, 4, seed, hosts=2)
    pop = receiver_model("content:subs=12,publishers=2,dims=2,bits=8,width=0.4,churn=1"
                         ).population(topo, child_rng(seed, "p"))
    strategy = make_strategy("camus-bdd")
    states = _builds(strategy, topo, pop, 3, seed)
    notes = _notifications(topo, pop, 3, seed, [False, True, False]) * 3
    notes = notes[:count]
    sts = [states[n.notification_id] for n, _ in notes]
    fast = strategy.fast_path(topo, DelayModel())
    args = ([n.publisher for n, _ in notes], [r for _, r in notes], 50)
    for state in states:
        strategy.record_of(state).fresh = False  # no first rows: results repeat
    whole = [fast.metrics(*args, states=sts, notifications=[n for n, _ in notes])
             for fast in implementations(fast)]
    old = content_fast_path.BATCH
    content_fast_path.BATCH = size
    try:
        split = [fast.metrics(*args, states=sts, notifications=[n for n, _ in notes])
                 for fast in implementations(fast)]
    finally:
        content_fast_path.BATCH = old
    assert split == whole
    assert all(w == whole[0] for w in whole)


@settings(max_examples=200, deadline=None)
@given(dims=st.integers(1, 4), bits=st.lists(st.integers(1, 32), min_size=4, max_size=4),
       dz_bits=st.integers(0, 112), family=st.sampled_from([4, 6]), seed=st.integers(0, 99))
def test_dz_keys_are_the_encoders_addresses(dims, bits, dz_bits, family, seed):
    """:class:`DzKey` computes what pleroma-dz's encoder writes: the dz of ``event_dz``
    in 225.128.0.0/9 or ff0e::/16 (IPv6: the top 63 bits), and the dz itself."""
    from sim.dataplanes.content_space import AttributeSpace

    space = AttributeSpace(tuple(f"a{i}" for i in range(dims)), tuple(bits[:dims]))
    cap = 23 if family == 4 else 112
    length = min(dz_bits or cap, cap, sum(space.bits))
    key = DzKey(family, length, bit_shifts(space, length), dims)
    rng = np.random.default_rng(seed)
    events = [tuple(int(rng.integers(0, 1 << b)) for b in space.bits) for _ in range(5)]
    values = np.asarray(events, np.int64)
    dz = [event_dz(e, space, length) for e in events]
    if family == 4:
        assert key.addresses(values).tolist() == [dz_to_ipv4(z)[0] for z in dz]
    else:
        assert key.addresses(values).tolist() == [dz_to_ipv6(z)[0] >> 65 for z in dz]
    if length <= 62:
        assert key.dz_values(values).tolist() == [int(z, 2) if z else 0 for z in dz]


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-5, 5), max_size=12), x=st.integers(-7, 7),
       cut=st.tuples(st.integers(0, 12), st.integers(0, 12)))
def test_first_at_least_is_searchsorted(values, x, cut):
    """The walk's binary search (Camus's BDD tables) is ``lo + np.searchsorted(a[lo:hi], x)``,
    both sides (``side="right"`` as the first value at least ``x + 1``)."""
    from sim.dataplanes.content_walk import _first_at_least

    a = np.asarray(sorted(values), np.int64)
    lo, hi = min(cut[0], len(a)), min(cut[1], len(a))
    lo, hi = min(lo, hi), max(lo, hi)
    assert _first_at_least(a, lo, hi, x) == lo + int(np.searchsorted(a[lo:hi], x))
    assert _first_at_least(a, lo, hi, x + 1) == lo + int(np.searchsorted(a[lo:hi], x, "right"))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3),
                               st.sampled_from([0.0, 1.5, 2.25])), max_size=12),
       cuts=st.lists(st.integers(0, 12), max_size=4))
def test_row_extras_are_row_extra_in_order(rows, cuts):
    """A state's extra metrics for a batch of rows (the fast path's one call per batch) are
    those of :meth:`StateRecord.row_extra` row by row: the first row served by the state
    gets the controller's wall time and the deployment peak, wherever batches split."""
    from strategies.base import ExtraMetrics
    from strategies.content_filter import StateRecord

    def record() -> StateRecord:
        return StateRecord(content=None, extra=ExtraMetrics(flows_max=7),  # type: ignore[arg-type]
                           wall_ms=3.5, peak=11)

    one = record()
    want = [one.row_extra(*r) for r in rows]
    batched = record()
    got: list[Any] = []
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    for a, b in zip(bounds, bounds[1:], strict=False):
        part = rows[a:b]
        got += batched.row_extras([r[0] for r in part], [r[1] for r in part],
                                  [r[2] for r in part])
    assert got == want
    assert all(e.controller_wall_ms == (3.5 if i == 0 else 0.0) for i, e in enumerate(got))
    assert all(e.flows_peak == (11 if i == 0 else 0) for i, e in enumerate(got))
