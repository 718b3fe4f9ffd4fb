"""The virtual-tree walk kernel's batch paths equal the Python walk.

``tests/sim/test_fast_paths.py`` proves :meth:`VirtualTreeFastPath.metrics` (the
kernel of :mod:`sim.dataplanes.virtual_tree.walk_kernel`, compiled and
interpreted) equal to the pass-by-pass reference on random cases. This module
forces the paths those cases rarely take, each on random topologies, strategies,
receiver sets and both implementations, against the Python walk
(``VirtualTreeFastPath._python_metrics``, itself tested against the reference):
queue and chain growth, the Python fallback when they would grow too far,
batches split anywhere, labels found by binary search (wider than the
direct-address region) or too wide for the kernel, stacks with a repeated
label, switches whose tables the walk cannot read, and the ``extract_port``
shortcut of :mod:`sim.dataplanes.virtual_tree.walk_tables`.

References
----------
shared/DESIGN.md "Data planes" (fast paths agree with the pass-by-pass model).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    Ternary,
)
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.packet import Encoding, Packet
from sim.dataplanes.virtual_tree import walk_batch
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.fast_path import VirtualTreeFastPath
from sim.dataplanes.virtual_tree.reference import (
    CHECK_TREE,
    EXTRACT_PORT,
    SET_PORT,
    SET_TREE_PORTS,
    extract_port_entries,
)
from sim.dataplanes.virtual_tree.walk_tables import WalkTables
from strategies.base import Knowledge, make_strategy
from tests.support.random_topologies import random_topology

#: Strategies of the family with receiver-scoped, per-publisher and topology-wide states.
NAMES = ("tree", "hybrid", "source-routed", "vt-broadcast")


def _case(name: str, params: dict[str, Any], n: int, extra: int, seed: int,
          notes: int) -> tuple[VirtualTreeFastPath, list[str], list[frozenset[str]],
                               list[ControlState]]:
    """A fast path and ``notes`` notifications (one install per notification)."""
    topo = random_topology(n, extra, seed, hosts=2)
    rng = np.random.default_rng(seed)
    strategy = make_strategy(name, params)
    pubs, sets, states = [], [], []
    for _ in range(notes):
        pub = topo.hosts[int(rng.integers(len(topo.hosts)))]
        others = [h for h in topo.hosts if h != pub]
        receivers = frozenset(h for h in others if rng.random() < 0.5)
        pubs.append(pub)
        sets.append(receivers)
        states.append(strategy.install(topo, Knowledge.for_notification(pub, receivers)))
    fast = strategy.fast_path(topo, DelayModel(pass_s=3e-6))
    assert isinstance(fast, VirtualTreeFastPath)
    return fast, pubs, sets, states


def _python(fast: VirtualTreeFastPath, pubs: list[str], sets: list[frozenset[str]],
            encodings: list[Any], states: list[ControlState]) -> list[dict[str, Any] | None]:
    return [fast._python_metrics(*args) for args in zip(pubs, sets, encodings, states,
                                                        strict=True)]


cases = st.tuples(st.sampled_from(NAMES), st.integers(2, 14), st.integers(0, 6),
                  st.integers(0, 2**16), st.sampled_from([8, 16, 24]))


@pytest.mark.parametrize("impl", ["jit", "python"])
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # each sets all three
@given(case=cases, batch=st.integers(1, 5), first=st.sampled_from([1, 2, 1024]),
       most=st.sampled_from([1, 4, 1 << 25]))
def test_batch_paths_equal_the_python_walk(impl, case, batch, first, most, monkeypatch):
    """Batches of any size, queues and chains that start tiny and grow, and walks left
    to the Python walk when they would grow past ``MAX_SCRATCH``: the same rows."""
    name, n, extra, seed, label_bits = case
    fast, pubs, sets, states = _case(name, {"label_bits": label_bits}, n, extra, seed, 6)
    if impl not in fast.implementations:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(walk_batch, "BATCH", batch)
    monkeypatch.setattr(walk_batch, "FIRST_QUEUE", first)
    monkeypatch.setattr(walk_batch, "MAX_SCRATCH", most)
    variant = fast.using(impl)
    encodings = variant.encodings(pubs, sets, 20, states)
    want = _python(fast, pubs, sets, encodings, states)
    assert variant.walk_metrics(pubs, sets, encodings, states) == want
    assert variant.walk_metrics(pubs, sets, encodings, states) == want  # scratch reused
    batch = variant._batch
    if batch is not None and batch._sc is not None:  # regions that start zero stay zero
        wk = walk_batch.wk
        nodes, pairs = len(batch.links.index), batch.links.n_pairs
        for region in wk.NODE_ZERO:
            assert not batch._sc[region * nodes:(region + 1) * nodes].any()
        frames = wk.NODE_REGIONS * nodes
        assert not batch._sc[frames:frames + pairs].any()
        dense = frames + wk.PAIR_REGIONS * pairs
        assert not batch._sc[dense:dense + (1 << label_bits) * (label_bits <= 16)].any()


def _forced(fmt: LabelFormat, labels: list[int]) -> Any:
    """An encoder that sends one stack of ``labels``, whatever the state."""
    def encode(topology, state, notification, receivers, payload):
        return Encoding((Packet(0, 1, fmt.ethertype, fmt.encode(labels), payload),),
                        header_entries=len(labels))
    return encode


@pytest.mark.parametrize("label_bits", [16, 24])
def test_repeated_label_is_declined(label_bits):
    """A stack holding a label twice is declined (found through the direct-address region
    at 16 bits, by sorting at 24), in the batch with the others counted."""
    topo = random_topology(5, 2, 3, hosts=1)
    strategy = make_strategy("tree", {"label_bits": label_bits})
    pub, receivers = topo.hosts[0], frozenset(topo.hosts[1:3])
    state = strategy.install(topo, Knowledge.for_notification(pub, receivers))
    fmt = strategy.fmt  # type: ignore[attr-defined]
    tree = fmt.label(3, 1)
    for labels, declined in (([tree, tree], True), ([tree, fmt.label(1, 0), tree], True),
                             ([tree], False)):
        fast = VirtualTreeFastPath(topo, DelayModel(), _forced(fmt, labels), fmt)
        for variant in (fast.using(i) for i in fast.implementations):
            got = variant.metrics([pub, pub], [receivers, receivers], 10, [state, state])
            assert got[0] == got[1]
            assert (got[0] is None) == declined
            assert (variant.delivery(state, _note(pub), receivers, b"") is None) == declined


def _note(pub: str) -> Any:
    from sim.dataplanes.packet import Notification

    return Notification(0, pub)


def test_labels_wider_than_the_kernel_take_the_python_walk():
    topo = random_topology(6, 3, 9, hosts=2)
    strategy = make_strategy("hybrid", {"label_bits": 64, "type_bits": 2})
    pub, receivers = topo.hosts[0], frozenset(topo.hosts[2:7])
    state = strategy.install(topo, Knowledge.for_notification(pub, receivers))
    fast = strategy.fast_path(topo, DelayModel())
    assert isinstance(fast, VirtualTreeFastPath)
    encodings = fast.encodings([pub], [receivers], 8, [state])
    got = fast.walk_metrics([pub], [receivers], encodings, [state])
    assert got == _python(fast, [pub], [receivers], encodings, [state])
    assert got[0] is not None and fast._batch is None  # the kernel never ran


def test_a_switch_whose_tables_are_not_exact_declines_only_when_visited():
    """``check_tree`` with a ternary entry: the Python walk declines a visit to that
    switch; the kernel too, and only then."""
    topo = random_topology(6, 0, 4, hosts=1)
    strategy = make_strategy("tree")
    pub, receivers = topo.hosts[0], frozenset(topo.hosts[1:4])
    state = strategy.install(topo, Knowledge.for_notification(pub, receivers))
    fast = strategy.fast_path(topo, DelayModel())
    assert isinstance(fast, VirtualTreeFastPath)
    for sw in topo.switches:  # one switch at a time gets a non-exact rule
        builder = StateBuilder(base=state)
        builder.add_entry(sw, TableEntry(CHECK_TREE, (("meta.label", Ternary(7, 7)),),
                                         SET_TREE_PORTS, (("ports", 0),), priority=1))
        bad = builder.build(topo.switches, state.publisher_info)
        for variant in (fast.using(i) for i in fast.implementations):
            encodings = variant.encodings([pub], [receivers], 8, [bad])
            got = variant.walk_metrics([pub], [receivers], encodings, [bad])
            assert got == _python(fast, [pub], [receivers], encodings, [bad])


@settings(max_examples=60, deadline=None)
@given(ports=st.lists(st.integers(1, 8), min_size=0, max_size=8, unique=True),
       shuffle=st.randoms(use_true_random=False), odd=st.sampled_from(
           [None, "mask", "priority", "twice", "exact"]))
def test_extract_port_answers_equal_the_installed_table(ports, shuffle, odd):
    """What the walk tables read for a port mask (the lowest-1-bit shortcut on the usual
    entries, the table itself otherwise) equals asking ``extract_port`` pass after pass."""
    fmt = LabelFormat(bitmask_bits=8)
    entries = extract_port_entries(fmt, ports)
    if ports and odd == "mask":  # an entry whose mask is wider: the table decides
        e = entries[0]
        wide = Ternary(e.match[0][1].value, 0xFF)  # type: ignore[union-attr]
        entries[0] = TableEntry(EXTRACT_PORT, ((e.match[0][0], wide),), SET_PORT, e.params,
                                priority=e.priority)
    elif ports and odd == "priority":
        entries = [TableEntry(e.table, e.match, e.action, e.params, priority=1) for e in entries]
    elif ports and odd == "twice":
        entries.append(TableEntry(EXTRACT_PORT, entries[0].match, SET_PORT, (("port", 9),),
                                  priority=100))
    elif odd == "exact":
        entries.append(TableEntry(EXTRACT_PORT, (("meta.remaining_ports", Exact(3)),), SET_PORT,
                                  (("port", 2),), priority=200))
    shuffle.shuffle(entries)
    config = SwitchConfig(tables={EXTRACT_PORT: tuple(entries)})
    answers = WalkTables(fmt)._extract_answers(config, config.tables[EXTRACT_PORT])
    for mask in range(1 << 9):
        want: list[int] | None = []
        rem = mask
        while rem and want is not None:
            hit = config.lookup(EXTRACT_PORT, rem)
            port = None if hit is None else hit.param("port")
            if port is None or not 1 <= port <= 8 or not rem & (1 << (port - 1)):
                want = None
            else:
                rem &= ~(1 << (port - 1))
                want.append(port)
        assert answers(mask) == (None if want is None else tuple(want)), mask


def test_a_kernel_compiled_from_other_sources_is_recompiled(monkeypatch):
    """The kernel answers STALE to a digest of other sources (its on-disk cache only
    tracks its own file); the batch then recompiles it once and runs it again."""
    from sim.dataplanes.virtual_tree import walk_kernel

    fast, pubs, sets, states = _case("tree", {}, 6, 2, 1, 3)
    encodings = fast.encodings(pubs, sets, 8, states)
    want = _python(fast, pubs, sets, encodings, states)
    calls: list[str] = []

    class Once:
        """The interpreted kernel, stale on its first call."""

        def __call__(self, digest, *args):
            calls.append("run")
            if len(calls) == 1:
                digest ^= 1
            return walk_kernel.walk_kernel(digest, *args)

        def recompile(self):
            calls.append("recompile")

    variant = fast.using("python")
    assert variant.walk_metrics(pubs, sets, encodings, states) == want
    monkeypatch.setattr(type(variant._batch), "kernel", lambda self: Once())
    assert variant.walk_metrics(pubs, sets, encodings, states) == want
    assert calls == ["run", "recompile", "run"]
    assert walk_kernel.walk_kernel(walk_kernel.SOURCE_DIGEST ^ 1, 0, 0, 0.0, 0.0, 0.0,
                                   *[[]] * 9) == walk_kernel.STALE



def test_the_compiled_kernel_counts_no_references(monkeypatch):
    """The kernel compiles without numba's runtime (``JIT_OPTIONS``): its code, helpers
    included, calls no ``NRT_incref`` / ``NRT_decref`` on the arrays it hands its helpers
    (that counting was most of the walk's time), and it still equals the Python walk.
    Compiled afresh here: a kernel loaded from numba's disk cache shows no code."""
    numba = pytest.importorskip("numba")
    from sim.dataplanes.virtual_tree import walk_kernel

    if walk_kernel.compiled() is None:  # also registers the helpers for numba
        pytest.skip("STACKCAST_NO_JIT is set")
    fresh = numba.njit(cache=False, **walk_kernel.JIT_OPTIONS)(walk_kernel.walk_kernel)
    monkeypatch.setattr(walk_batch, "compiled", lambda: fresh)
    fast, pubs, sets, states = _case("hybrid", {}, 8, 2, 3, 4)
    encodings = fast.encodings(pubs, sets, 8, states)
    assert fast.using("jit").walk_metrics(pubs, sets, encodings, states) == _python(
        fast, pubs, sets, encodings, states)
    (sig,) = fresh.signatures
    code = fresh.inspect_llvm(sig)
    assert "walk_kernel" in code
    assert "@NRT_incref" not in code and "@NRT_decref" not in code


@settings(max_examples=60, deadline=None)
@given(st.sampled_from((1, 2, 4, 8)), st.lists(st.tuples(
    st.booleans(), st.lists(st.integers(0, (1 << 62) - 1), max_size=6)), max_size=6))
def test_labels_read_from_header_bytes_equal_the_parsed_labels(width, packets):
    """``walk_batch._labels_array``: packets' labels given as the header's bytes (read at
    once) or as integers, mixed in any order, are the labels one by one."""
    from sim.dataplanes.virtual_tree.codec import LabelFormat

    fmt = LabelFormat(label_bits=8 * width, type_bits=2, size_bits=16,
                      bitmask_bits=8 * width)
    chunks: list[Any] = []
    want: list[int] = []
    for as_bytes, labels in packets:
        labels = [x % (1 << (8 * width)) for x in labels]
        want += labels
        header = fmt.encode(labels)
        chunks.append(header[fmt.size_bytes:] if as_bytes else tuple(labels))
    got = walk_batch._labels_array(chunks, width)
    assert got.dtype == np.int64
    assert got.tolist() == want
