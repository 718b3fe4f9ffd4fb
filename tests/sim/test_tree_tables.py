"""The compiled tree-table rows equal the readable build from ``bfs_parents`` (issue 16).

:func:`sim.dataplanes.tree_tables.build_row` fills a root's row from the
topology's adjacency arrays; the readable definition is the dict build below
(:func:`sim.dataplanes.trees.bfs_parents`, hosts under their switch, children
sorted by ``port_to``, preorder), which the tables were filled with before.
Both the compiled kernel and the plain-Python loop are compared, every root.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sim.dataplanes import tree_tables as tt
from sim.dataplanes.trees import bfs_parents
from topologies.model import Topology
from topologies.registry import SpecError
from topologies.specs import load_topology


def readable_row(topology: Topology, r: int) -> dict[str, np.ndarray]:
    """One root's row, built with dicts from the definition (module docstring)."""
    names = (*topology.switches, *topology.hosts)
    gid = {x: i for i, x in enumerate(names)}
    n = len(names)
    out = {k: np.zeros(n, np.int32) for k in ("node", "parent", "end", "depth", "pos_of")}
    out["delay"] = np.zeros(n, np.float64)
    root = topology.switches[r]
    par = dict(bfs_parents(topology, root))
    for h in topology.hosts:
        par[h] = topology.host_switch(h)
    kids: dict[str, list[str]] = {}
    for c, p in par.items():
        kids.setdefault(p, []).append(c)
    for p, cs in kids.items():
        cs.sort(key=partial(topology.port_to, p))
    preorder: list[str] = []
    stack = [root]
    while stack:
        x = stack.pop()
        preorder.append(x)
        stack.extend(reversed(kids.get(x, ())))
    num = {x: k for k, x in enumerate(preorder)}
    size: dict[str, int] = {}
    for x in reversed(preorder):
        size[x] = 1 + sum(size[c] for c in kids.get(x, ()))
    for i, x in enumerate(preorder):
        up = par.get(x)
        out["node"][i] = gid[x]
        out["pos_of"][gid[x]] = i
        out["end"][i] = i + size[x]
        if up is None:
            out["parent"][i] = -1
        else:
            out["parent"][i] = num[up]
            out["depth"][i] = out["depth"][num[up]] + 1
            out["delay"][i] = topology.ports(x)[topology.port_to(x, up)].link.delay_s
    return out


def assert_rows_equal(topology: Topology, tables: tt.TreeTables,
                      roots: np.ndarray | None = None) -> None:
    """The rows of ``roots`` (default: every switch) after one :meth:`ensure` call."""
    if roots is None:
        roots = np.arange(len(topology.switches))
    slots = tables.ensure(roots)
    assert slots.shape == roots.shape
    for r, k in zip(roots.tolist(), slots.tolist(), strict=True):
        assert tables.root_of[k] == r and tables.slot_of[r] == k
        want = readable_row(topology, r)
        for name, values in want.items():
            got = getattr(tables, name)[k]
            assert np.array_equal(got, values), (r, name)
        assert np.array_equal(tables.is_switch[k], want["node"] < len(topology.switches))


def with_delays(topology: Topology, seed: int, cut: float = 0.0) -> Topology:
    """``topology`` with a distinct delay on every link (they are 0 by default) and,
    with ``cut``, about that fraction of its switch-to-switch links removed (parts of
    the network then cannot reach each other)."""
    rng = np.random.default_rng(seed)
    links = tuple(dataclasses.replace(lk, delay_s=float(rng.integers(1, 1000)) * 1e-6)
                  for lk in topology.links
                  if topology.is_host(lk.a) or topology.is_host(lk.b) or rng.random() >= cut)
    return Topology(name=f"{topology.name},delays={seed}", switches=topology.switches,
                    hosts=topology.hosts, links=links, node_attrs=topology.node_attrs)


SPECS = st.one_of(
    st.builds("jellyfish:switches={},degree={},seed={}".format,
              st.integers(4, 24), st.integers(2, 4), st.integers(0, 50)),
    st.builds("fattree:k={}".format, st.sampled_from([2, 4])),
    st.builds("elmo:pods={},leaves={},hosts={},spines={},cores={}".format,
              st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2),
              st.integers(1, 2)),
)


@pytest.mark.parametrize("impl", ["jit", "python"])
@settings(max_examples=25, deadline=None)
@given(spec=SPECS, seed=st.integers(0, 2**32 - 1))
def test_rows_equal_the_readable_build(impl: str, spec: str, seed: int) -> None:
    try:
        topology = with_delays(load_topology(spec), seed)
    except SpecError:  # e.g. no jellyfish of that degree and size
        assume(False)
    tables = tt.TreeTables(topology)
    if impl == "python":
        tables.kernel = tt.build_row
    elif tt.compiled("tree_tables.build_row", tt.build_row) is None:
        pytest.skip("numba not installed (or STACKCAST_NO_JIT=1)")
    assert_rows_equal(topology, tables)


def test_rows_on_a_zoo_network_with_uneven_links() -> None:
    topology = with_delays(load_topology("zoo:Dfn"), 7)
    assert_rows_equal(topology, tt.TreeTables(topology))


@settings(max_examples=25, deadline=None)
@given(spec=SPECS, seed=st.integers(0, 2**32 - 1), cut=st.sampled_from([0.0, 0.5]),
       slots=st.integers(1, 4),
       calls=st.lists(st.lists(st.integers(0, 10**6), min_size=1, max_size=6), min_size=1,
                      max_size=12))
def test_fewer_slots_than_roots_still_give_every_root_its_own_row(
        spec: str, seed: int, cut: float, slots: int, calls: list[list[int]]) -> None:
    """With ``slots`` rows for more roots, each call's roots get their exact rows: a
    reused slot is rebuilt from zeros (what a root cannot reach stays 0, as in a new
    table), and no root of the call gives its slot up to another."""
    try:
        topology = with_delays(load_topology(spec), seed, cut)
    except SpecError:
        assume(False)
    s = len(topology.switches)
    tables = tt.TreeTables(topology, slots=slots)
    assert tables.capacity == slots
    for call in calls:
        roots = np.asarray([x % s for x in call], np.int64)
        if len(np.unique(roots)) > slots:
            with pytest.raises(ValueError, match="roots in one call"):
                tables.ensure(roots)
            continue
        assert_rows_equal(topology, tables, roots)
        assert (tables.slot_of >= 0).sum() == (tables.root_of >= 0).sum() <= slots


def test_default_slots_keep_every_root_of_small_networks_and_bound_large_ones() -> None:
    row = tt.ROW_BYTES_PER_NODE
    assert tt.default_slots(255, 510) == 255
    for s, n in [(2880, 2880 + 27648), (4000, 8000)]:  # fattree:k=48, jellyfish 4,000
        k = tt.default_slots(s, n)
        assert tt.MIN_SLOTS <= k < s and k * n * row <= tt.ROW_BUDGET_BYTES
    assert tt.default_slots(50_000, 10**6) == tt.MIN_SLOTS  # beyond the budget: the floor
    assert tt.default_slots(10, 10**9) == 10


def test_batches_group_roots_only_when_rows_are_shared() -> None:
    topology = load_topology("jellyfish:switches=12,degree=3,hosts=2,seed=1")
    roots = [5, 1, 5, 7, 1, 2, 9]
    pubs = [topology.hosts_of(topology.switches[r])[i % 2] for i, r in enumerate(roots)]
    whole = tt.TreeTables(topology)
    assert whole.batches(pubs, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    shared = tt.TreeTables(topology, slots=2)
    assert shared.batches(pubs, 3) == [[1, 4], [5, 0], [2, 3], [6]]
    for batch in shared.batches(pubs, 3):
        shared.ensure(np.asarray([roots[i] for i in batch]))  # never more roots than slots
