"""The compiled greedy loop of the VT encoder against the pure-Python reference.

``encode_virtual_trees`` (the kernel of strategies/virtual_tree/encoder_kernel.py
over a state's TreeTables) must give the very encoding of ``encode_reference``
(selected trees in order, stops, hops in header order, delivery edges) on
random topologies (one or two hosts per switch), random installed VT sets
(Steiner trees, rings and other connected link sets, with host links of
receivers and of other hosts, ids in any order, duplicates), random
publishers and receivers, and every encoder option the kernel covers.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import random_topology

from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.encoder import (
    EncoderOptions,
    compile_tree,
    encode_reference,
    encode_virtual_trees,
    encoder_graph,
    tree_tables,
)
from strategies.virtual_tree.encoder_kernel import encode_kernel
from strategies.virtual_tree.encoder_tables import encode_arrays, installed_tables
from strategies.virtual_tree.installation import steiner_links
from topologies.specs import load_topology

pytestmark = pytest.mark.skipif(encode_kernel is None,
                                reason="numba not installed (or STACKCAST_NO_JIT=1)")


def connected_links(draw, topo, g):
    """A random connected set of switch links (grown from a random switch; may hold cycles)."""
    n = len(g.names)
    start = draw(st.integers(0, n - 1))
    inside, links = {start}, set()
    for _ in range(draw(st.integers(1, 2 * n))):
        frontier = sorted((e, u, v) for u in inside for v, e in g.adj[u] if e not in links)
        if not frontier:
            break
        e, _u, v = draw(st.sampled_from(frontier))
        links.add(e)
        inside.add(v)
    return links


@st.composite
def encoder_cases(draw, max_switches=14):
    n = draw(st.integers(2, max_switches))
    hosts = draw(st.sampled_from([1, 2]))
    topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)), hosts)
    g = encoder_graph(topo)
    host_edges = sorted(e for _, e in g.host_link.values())
    trees = []
    ids = draw(st.permutations(range(1, 13)))
    for i in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["steiner", "connected", "repeat", "union"]))
        if kind == "repeat" and trees:
            edges = set(draw(st.sampled_from(trees)).edges)
        elif kind == "union" and trees:
            # nested and overlapping VTs: once one is selected, others add the same links
            edges = set(draw(st.sampled_from(trees)).edges) | draw(st.sampled_from(trees)).edges
        elif kind == "connected":
            edges = connected_links(draw, topo, g)
        else:
            subset = draw(st.sets(st.sampled_from(topo.switches), min_size=1))
            edges = set(steiner_links(topo, subset))
        edges |= draw(st.sets(st.sampled_from(host_edges), min_size=0 if edges else 1))
        trees.append(compile_tree(topo, g, ids[i], edges))
    pub = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != pub]
    recv = frozenset(draw(st.sets(st.sampled_from(others), max_size=len(others))))
    options = EncoderOptions(mode=draw(st.sampled_from(["sorted_single_pass",
                                                        "best_improvement"])),
                             patience=draw(st.none() | st.integers(1, 3)),
                             prefilter=draw(st.booleans()),
                             prune_unused=draw(st.booleans()))
    return topo, trees, pub, recv, options


def same_tables(a, b):
    return all(np.array_equal(getattr(a, f), getattr(b, f))
               for f in ("tree_ids", "t_ptr", "t_edges", "t_node_ptr", "t_nodes", "order"))


def kernel_ids(topo, trees, pub, recv, options, unique_fresh, tally):
    """The kernel's ids and delivery edges (``tally``: its counters, added to)."""
    got = encode_arrays(topo, encoder_graph(topo), tree_tables(trees), pub, recv, options,
                        tally=tally, unique_fresh=unique_fresh)
    return got.ids.tolist(), got.n_trees, got.n_stops, sorted(got.delivery.tolist())


@settings(max_examples=400, deadline=None)
@given(encoder_cases())
def test_passing_over_repeated_trials_changes_nothing(case):
    """A candidate adding the same links as an earlier one of its scan is passed over
    (encoder_kernel._seen_fresh): the encoding is the one of evaluating every
    candidate, and of the reference; the repeats it passes over would not have
    added Steiner runs beyond those it saves."""
    topo, trees, pub, recv, options = case
    if not recv:
        return
    every, passed = np.zeros(2, np.int64), np.zeros(2, np.int64)
    want = kernel_ids(topo, trees, pub, recv, options, False, every)
    assert kernel_ids(topo, trees, pub, recv, options, True, passed) == want
    assert every[1] == 0
    assert passed[0] <= every[0]
    ref = encode_reference(topo, trees, pub, recv, options)
    assert want[0][:want[1]] == list(ref.trees)


@settings(max_examples=400, deadline=None)
@given(encoder_cases())
def test_compiled_encoder_equals_the_reference(case):
    topo, trees, pub, recv, options = case
    want = encode_reference(topo, trees, pub, recv, options)
    assert encode_virtual_trees(topo, trees, pub, recv, options) == want
    # the tables of an installed state, built from the link ids at once
    tables = installed_tables(encoder_graph(topo), [t.tree_id for t in trees],
                              [sorted(t.edges) for t in trees], lambda: tuple(trees))
    assert same_tables(tables, tree_tables(trees))
    assert encode_virtual_trees(topo, tables, pub, recv, options) == want


@settings(max_examples=40, deadline=None)
@given(encoder_cases(max_switches=60))
def test_compiled_encoder_equals_the_reference_on_larger_graphs(case):
    """More than 64 switches: masks and terminal buckets span several words."""
    topo, trees, pub, recv, options = case
    assert (encode_virtual_trees(topo, trees, pub, recv, options)
            == encode_reference(topo, trees, pub, recv, options))


@pytest.mark.parametrize("name", ["vt-freq-relation", "vt-clusters", "vt-cycles",
                                  "vt-random-variant"])
def test_compiled_encoder_on_dfn_with_40_rules(name):
    """The ch. 6 setting (zoo:Dfn, 40 rules, clustered clients): same stacks."""
    topo = load_topology("zoo:Dfn")
    pop = receiver_model("clustered:scenario=nearby").population(topo, child_rng(3, "population"))
    strategy = make_strategy(name, {"max_rules": 40})
    state = strategy.install(topo, Knowledge(population=pop, seed=3))
    tables = strategy.tree_tables(topo, state)
    assert same_tables(tables, tree_tables(tables.trees))
    rng = child_rng(3, "notes")
    checked = 0
    tally = np.zeros(2, np.int64)
    while checked < 25:
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        recv = pop.receivers(pub, rng)
        if not recv:
            continue
        for options in (strategy.encoder_options(), EncoderOptions(mode="best_improvement")):
            assert (encode_virtual_trees(topo, tables, pub, recv, options)
                    == encode_reference(topo, tables.trees, pub, recv, options))
            encode_arrays(topo, encoder_graph(topo), tables, pub, recv, options, tally=tally)
        checked += 1
    if name == "vt-clusters":  # nested clusters: repeated trials are passed over here
        assert tally[1] > 0
