"""``hybrid``'s compiled header labels against the definition (``hybrid_stacks``).

:func:`header_labels` below (``label_counts`` then ``out_labels`` of
:mod:`strategies.virtual_tree.hybrid_kernel`, compiled and interpreted) must give the labels of
:func:`strategies.virtual_tree.hybrid.hybrid_stacks` on random topologies (one
or two hosts per switch), publishers, receivers and stable sets (inside or
outside the receivers), and ``Hybrid.encode`` the same packets with the kernel
as with the definition alone, split packets included; where it cannot answer
(labels that do not fit, a node the root's row does not reach) it says so.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import random_topology

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.tree_tables import TreeTables
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import tree_label
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.hybrid import Hybrid, hybrid_stacks
from strategies.virtual_tree.hybrid_kernel import (
    OK,
    UNREACHABLE,
    EdgeTable,
    header_stack,
    hybrid_labels,
    kernel,
    label_counts,
    out_labels,
    pack_header,
    packer,
)

FMT = LabelFormat()
IMPLS = {"python": hybrid_labels, "kernel": kernel()}


@st.composite
def cases(draw, max_switches=14):
    n = draw(st.integers(1, max_switches))
    topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                           draw(st.sampled_from([1, 2])))
    pub = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != pub]
    recv = frozenset(draw(st.sets(st.sampled_from(others), max_size=len(others)))) if others \
        else frozenset()
    inside = draw(st.booleans())
    pool = sorted(recv) if inside else others
    stable = frozenset(draw(st.sets(st.sampled_from(pool), max_size=len(pool)))) if pool \
        else frozenset()
    return topo, pub, recv, stable


def header_labels(rows, edges, root, receivers, stable, run=None):
    """The stop and hop labels of one notification and whether its tree label leads them
    (``label_counts`` then ``out_labels``, as ``Hybrid.encode`` reads them), or None."""
    got = label_counts(rows, edges, root, receivers, stable, run)
    if got is None:
        return None
    n_stops, n_hops, used = got
    return out_labels(edges, n_stops, n_hops), used


def nodes(edges, hosts):
    return np.array([edges.gid[h] for h in sorted(hosts)], np.int64)


@pytest.mark.parametrize("impl", sorted(IMPLS))
@settings(max_examples=150, deadline=None)
@given(cases(), st.integers(1, 40))
def test_labels_equal_the_definition(impl, case, tree_id):
    topo, pub, recv, stable = case
    edges = EdgeTable(topo, FMT)
    rows = TreeTables(topo, slots=2)  # few slots: roots take each other's rows
    want, _ = hybrid_stacks(topo, FMT, pub, recv, stable, tree_id)
    for _ in range(2):  # again on the same buffers (the marks are reset)
        got = header_labels(rows, edges, topo.host_switch(pub), nodes(edges, recv),
                            nodes(edges, stable), IMPLS[impl])
        assert got is not None
        rest, used = got
        assert ([tree_label(FMT, tree_id)] if used else []) + rest == want
    assert not edges.mark.any()


@settings(max_examples=60, deadline=None)
@given(cases(max_switches=10), st.sampled_from([60, 70, 90, 1500]), st.sampled_from([16, 64]))
def test_encode_equals_the_definition_alone(case, mtu, label_bits):
    topo, pub, recv, stable = case
    params = {"mtu_bytes": mtu, "on_oversize": "split", "label_bits": label_bits}
    note = Notification(0, pub)
    payload = payload_for(note, 10)

    def encode():
        strategy = make_strategy("hybrid", params)  # fresh caches
        state = strategy.install(topo, Knowledge(stable={pub: stable}))
        try:
            return strategy.encode(topo, state, note, recv, payload)
        except Exception as exc:  # noqa: BLE001 - both must raise the same
            return type(exc).__name__

    fast = encode()
    with definition_alone():
        assert encode() == fast


@contextmanager
def definition_alone():
    """``Hybrid.encode`` without the kernel (the definition only)."""
    original = Hybrid._kernel_counts
    Hybrid._kernel_counts = lambda *a, **k: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hybrid._kernel_counts = original  # type: ignore[method-assign]


@settings(max_examples=40, deadline=None)
@given(st.lists(cases(max_switches=10), min_size=1, max_size=3),
       st.lists(st.tuples(st.integers(0, 2), st.booleans(), st.integers(0, 2**16)),
                min_size=1, max_size=12),
       st.sampled_from([16, 24, 32, 40]), st.sampled_from([8, 16, 24]),
       st.sampled_from([90, 1500]))
def test_one_encoder_over_many_states_equals_the_definition(topos, sends, label_bits,
                                                            size_bits, mtu):
    # one strategy (and its per-state memo) over notifications of several topologies
    # and states, stable subscribers known or drawn per receiver set (ratio), against
    # a fresh strategy with the definition alone
    params = {"mtu_bytes": mtu, "on_oversize": "split", "label_bits": label_bits,
              "size_bits": size_bits, "ratio": "50:50"}
    installed = []
    for topo, pub, recv, stable in topos:
        half = frozenset(sorted(recv)[:len(recv) // 2 + 1])  # a second set, its own T'
        knows = [Knowledge(stable={pub: stable}),
                 Knowledge(receiver_sets={pub: (recv, half)} if recv else {})]
        installed.append([(topo, pub, recv, k) for k in knows])
    strategy = make_strategy("hybrid", params)
    states = {}

    def encode(s, i, which, pick):
        topo, pub, recv, know = installed[i][which]
        if (i, which) not in states:  # the state is made once
            states[i, which] = make_strategy("hybrid", params).install(topo, know)
        if which == 0 and pick and recv:  # a receiver subset under the same T'
            recv = frozenset(sorted(recv)[:1 + pick % len(recv)])
        if which == 1 and pick % 2 and recv:  # the second receiver set
            recv = frozenset(sorted(recv)[:len(recv) // 2 + 1])
        note = Notification(pick, pub)
        try:
            return s.encode(topo, states[i, which], note, recv, payload_for(note, 10))
        except Exception as exc:  # noqa: BLE001 - both must raise the same
            return type(exc).__name__

    for i, which, pick in sends:
        i %= len(installed)
        fast = encode(strategy, i, int(which), pick)
        with definition_alone():
            assert encode(make_strategy("hybrid", params), i, int(which), pick) == fast


@pytest.mark.parametrize("pack", [pack_header, packer()])
@settings(max_examples=100, deadline=None)
@given(st.sampled_from([8, 16, 24, 32, 48, 56]), st.sampled_from([8, 16, 24, 32]),
       st.data())
def test_the_header_bytes_are_the_codecs(pack, label_bits, size_bits, data):
    fmt = LabelFormat(label_bits=label_bits, type_bits=3, size_bits=size_bits)
    topo = random_topology(6, 3, seed=1)
    edges = EdgeTable(topo, fmt)
    half = len(edges.mark)
    label = st.integers(0, (1 << label_bits) - 1)
    stops = data.draw(st.lists(label, max_size=half))
    hops = data.draw(st.lists(label, max_size=half))
    tree = data.draw(st.one_of(st.just(-1), label))
    edges.out[:len(stops)] = stops
    edges.out[half:half + len(hops)] = hops
    want = fmt.encode(([tree] if tree >= 0 else []) + stops + hops)
    assert header_stack(edges, len(stops), len(hops), tree, fmt, pack) == want


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_an_unreachable_node_is_left_to_the_definition(impl):
    # a row whose root (node 0) reaches node 1 only: nodes 2 and 3 keep position 0
    # (topologies are connected; a row filled only as far as its root reaches looks so)
    node, parent, pos_of = (np.array(a, np.int32) for a in ([0, 1], [-1, 0], [0, 1, 0, 0]))
    start, nb = np.array([0, 1, 2, 2, 2]), np.array([1, 0])
    labels = np.array([7, 7])
    mark, touched, out = np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(8, np.int64)

    def run(recv, stable):
        got = IMPLS[impl](node, parent, pos_of, np.array(recv + stable, np.int64), len(recv),
                          start, nb, labels, labels, mark, touched, out)
        assert not mark.any()
        return got

    assert run([1, 2], [])[0] == UNREACHABLE
    assert run([1], [3])[0] == UNREACHABLE
    assert run([1], []) == (OK, 0, 1, 0)
    assert out[4] == 7  # the hop labels start half-way


def test_labels_that_do_not_fit_are_left_to_the_definition():
    topo = random_topology(12, 8, seed=3)
    narrow = LabelFormat(label_bits=8, type_bits=5)  # edge ids up to 7
    edges = EdgeTable(topo, narrow)
    assert not edges.valid
    assert header_labels(TreeTables(topo), edges, "s1", nodes(edges, {"h2"}),
                         nodes(edges, set())) is None
    assert EdgeTable(topo, FMT).valid
