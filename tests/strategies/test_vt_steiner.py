"""The compiled Steiner kernel against the pure-Python SPH routine (strategies/vt_steiner*.py).

The encoder's results must not depend on whether numba is installed: on
random graphs, 0/1 weights, terminals and budgets the compiled routine gives
the same tree, link for link in the same order, or gives up exactly when the
Python routine does; its weight and stop counts equal a direct recount; and
whole encodings (both encoder modes) are identical.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import topologies

from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.encoder import EncoderOptions, _encode, compile_tree
from strategies.virtual_tree.installation import steiner_links
from strategies.virtual_tree.steiner import (
    compiled_available,
    encoder_graph,
    steiner_sph_counted,
    steiner_sph_within,
)
from topologies.specs import load_topology

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


@st.composite
def encoder_cases(draw):
    topo = draw(topologies(2, 14))
    g = encoder_graph(topo)
    switches = list(topo.switches)
    trees = []
    for i in range(draw(st.integers(0, 8))):
        subset = draw(st.sets(st.sampled_from(switches), min_size=1, max_size=len(switches)))
        edges = set(steiner_links(topo, subset))
        extra = draw(st.sets(st.sampled_from(sorted(g.host_link))))
        edges |= {g.host_link[h][1] for h in extra}
        if edges:
            trees.append(compile_tree(topo, g, i + 1, edges))
    pub = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != pub]
    recv = frozenset(draw(st.sets(st.sampled_from(others), min_size=1, max_size=len(others))))
    options = EncoderOptions(mode=draw(st.sampled_from(["sorted_single_pass",
                                                        "best_improvement"])),
                             patience=draw(st.none() | st.integers(1, 3)),
                             prune_unused=draw(st.booleans()))
    return topo, trees, pub, recv, options


@settings(max_examples=200)
@given(encoder_cases())
def test_compiled_encoder_equals_the_python_encoder(case):
    topo, trees, pub, recv, options = case
    assert (_encode(topo, trees, pub, recv, options, compiled=True)
            == _encode(topo, trees, pub, recv, options, compiled=False))


@pytest.mark.parametrize("name", ["vt-freq-relation", "vt-clusters", "vt-cycles"])
def test_compiled_encoder_on_dfn_with_40_rules(name):
    """The ch. 6 setting (zoo:Dfn, 40 rules, clustered clients): same stacks."""
    topo = load_topology("zoo:Dfn")
    pop = receiver_model("clustered:scenario=nearby").population(topo, child_rng(3, "population"))
    strategy = make_strategy(name, {"max_rules": 40})
    state = strategy.install(topo, Knowledge(population=pop, seed=3))
    trees = strategy.compiled_trees(topo, state)
    rng = child_rng(3, "notes")
    checked = 0
    while checked < 25:
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        recv = pop.receivers(pub, rng)
        if not recv:
            continue
        options = strategy.encoder_options()
        assert (_encode(topo, trees, pub, recv, options, compiled=True)
                == _encode(topo, trees, pub, recv, options, compiled=False))
        checked += 1
