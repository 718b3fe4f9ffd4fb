"""The compiled Steiner kernel against the pure-Python SPH routine
(strategies/virtual_tree/steiner*.py).

The encoder's results must not depend on whether numba is installed: on
random graphs, 0/1 weights, terminals and budgets the compiled routine gives
the same tree, link for link in the same order, or gives up exactly when the
Python routine does; its weight and stop counts equal a direct recount. Whole
encodings: tests/strategies/test_vt_encoder_kernel.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import topologies

from strategies.virtual_tree.steiner import (
    compiled_available,
    encoder_graph,
    induced_adjacency,
    steiner_sph,
    steiner_sph_counted,
    steiner_sph_within,
)

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.skipif(not compiled_available(),
                                reason="numba not installed (or STACKCAST_NO_JIT=1)")


def recount(g, virtual, edges, nodes, terminal_hosts):
    """(weight-1 links, stop labels) of a tree, from the definitions."""
    on_tree, in_tree = set(edges), set(nodes)
    weight = sum(1 for e in edges if not virtual[e])
    stops = {e for e, pair in enumerate(g.ends)
             if pair is not None and virtual[e] and e not in on_tree
             and (pair[0] in in_tree or pair[1] in in_tree)}
    stops |= {e for h, (s, e) in g.host_link.items()
              if virtual[e] and s in in_tree and h not in terminal_hosts}
    return weight, len(stops)


@st.composite
def steiner_cases(draw):
    topo = draw(topologies(2, 16))
    g = encoder_graph(topo)
    virtual = bytearray(g.edge_count)
    for e in draw(st.sets(st.integers(1, g.edge_count - 1))):
        virtual[e] = 1
    root = draw(st.integers(0, len(g.names) - 1))
    terms = draw(st.sets(st.integers(0, len(g.names) - 1), max_size=len(g.names)))
    budget = draw(st.none() | st.integers(0, 12))
    hosts = draw(st.sets(st.sampled_from(sorted(g.host_link))))
    return topo, g, virtual, root, sorted(terms), budget, hosts


@settings(max_examples=300)
@given(steiner_cases())
def test_compiled_kernel_equals_the_python_routine(case):
    topo, g, virtual, root, terms, budget, hosts = case
    want = steiner_sph_within(g, root, terms, virtual, None, budget)
    terminal_link = np.zeros(g.edge_count, np.uint8)
    for h in hosts:
        terminal_link[g.host_link[h][1]] = 1
    remaining = np.array(sorted(set(terms) - {root}), np.int64)
    got = steiner_sph_counted(g, root, remaining, virtual, terminal_link, budget)
    if want is None:
        assert got is None
        return
    assert got is not None
    edges, nodes, weight, stops = got
    assert (edges.tolist(), nodes.tolist()) == want
    assert (weight, stops) == recount(g, virtual, want[0], want[1], hosts)


@settings(max_examples=200)
@given(steiner_cases(), st.data())
def test_compiled_routine_inside_an_induced_subgraph(case, data):
    """``steiner_sph(within=...)`` (the kernel on the induced subgraph's arrays) gives the
    Python routine's tree on the induced adjacency, or the same error."""
    topo, g, virtual, root, terms, _, _ = case
    within = np.array(data.draw(st.lists(st.booleans(), min_size=len(g.names),
                                         max_size=len(g.names))), np.bool_)
    within[root] = True
    terms = [t for t in terms if within[t]]
    try:
        want = steiner_sph_within(g, root, terms, virtual, induced_adjacency(g, within), None)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)):
            steiner_sph(g, root, terms, virtual, within=within)
        return
    assert steiner_sph(g, root, terms, virtual, within=within) == want


@settings(max_examples=400)
@given(steiner_cases(), st.data())
def test_giving_up_is_exact(case, data):
    """The routine gives up only if the finished tree would reach the budget: its weight
    plus its stop labels on switch links (the certain stops include weight-0 links
    hanging off the tree that later paths cannot all take); when it does not give up,
    the budget changes nothing. Budgets around the finished tree's cost."""
    topo, g, virtual, root, terms, _, _ = case
    try:
        full = steiner_sph_within(g, root, terms, virtual, None, None)
    except ValueError:
        return
    weight, stops = recount(g, virtual, full[0], full[1], set(g.host_link))
    budget = data.draw(st.integers(0, weight + stops + 2))
    got = steiner_sph_within(g, root, terms, virtual, None, budget)
    if got is None:
        assert weight + stops >= budget
    else:
        assert got == full
    terminal_link = np.zeros(g.edge_count, np.uint8)
    remaining = np.array(sorted(set(terms) - {root}), np.int64)
    counted = steiner_sph_counted(g, root, remaining, virtual, terminal_link, budget)
    assert (counted is None) == (got is None)
