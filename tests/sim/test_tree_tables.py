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


def assert_rows_equal(topology: Topology, tables: tt.TreeTables) -> None:
    tables.ensure(np.arange(len(topology.switches)))
    for r in range(len(topology.switches)):
        want = readable_row(topology, r)
        for name, values in want.items():
            got = getattr(tables, name)[r]
            assert np.array_equal(got, values), (r, name)
        assert np.array_equal(tables.is_switch[r], want["node"] < len(topology.switches))


def with_delays(topology: Topology, seed: int) -> Topology:
    """``topology`` with a distinct delay on every link (they are 0 by default)."""
    rng = np.random.default_rng(seed)
    links = tuple(dataclasses.replace(lk, delay_s=float(rng.integers(1, 1000)) * 1e-6)
                  for lk in topology.links)
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
