"""Delivery trees: shortest-path trees and the Steiner heuristic."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from support.random_topologies import scenarios

from sim.dataplanes import trees
from sim.dataplanes.trees import (
    _bfs_compiled,
    bfs_next_hops,
    bfs_parents,
    hop_distances,
    next_hop_port,
    shortest_path_tree,
    spanning_tree,
    steiner_tree,
)
from topologies.specs import load_topology


def check_tree(topo, tree, root, targets):
    g = nx.DiGraph(tree.edges())
    g.add_node(root)
    assert nx.is_arborescence(g) and tree.root == root
    for parent, child in tree.edges():
        topo.port_to(parent, child)  # adjacent, raises otherwise
    hosts = {n for n in g if topo.is_host(n)}
    assert hosts == set(targets)
    # no useless branches: every leaf is a target host
    leaves = {n for n in g if g.out_degree(n) == 0}
    assert leaves <= set(targets) | ({root} if not targets else set())


@given(scenarios())
def test_shortest_path_tree_is_a_pruned_shortest_path_tree(case):
    topo, pub, recv = case
    root = topo.host_switch(pub)
    tree = shortest_path_tree(topo, root, recv)
    check_tree(topo, tree, root, recv)
    index, dist = hop_distances(topo)
    depth = {root: 0}
    for parent, child in tree.edges():
        depth[child] = depth[parent] + 1
    for node, d in depth.items():
        if not topo.is_host(node):
            assert d == dist[index[root], index[node]]
    assert shortest_path_tree(topo, root, recv).edges() == tree.edges()


@given(scenarios())
def test_steiner_tree_is_valid_deterministic_and_within_the_heuristic_bound(case):
    topo, pub, recv = case
    root = topo.host_switch(pub)
    tree = steiner_tree(topo, root, recv)
    check_tree(topo, tree, root, recv)
    assert steiner_tree(topo, root, recv).edges() == tree.edges()
    # each terminal switch is attached by at most its distance to the root
    index, dist = hop_distances(topo)
    terminals = {topo.host_switch(h) for h in recv}
    switch_edges = sum(1 for _, c in tree.edges() if not topo.is_host(c))
    assert switch_edges <= sum(int(dist[index[root], index[t]]) for t in terminals)


def test_children_are_in_port_order_and_spanning_tree_covers_all():
    from support.random_topologies import random_topology

    topo = random_topology(30, 20, seed=4)
    tree = spanning_tree(topo, "s1")
    assert set(tree.nodes) == set(topo.switches) | set(topo.hosts)
    for node, kids in tree.children.items():
        ports = [topo.port_to(node, k) for k in kids]
        assert ports == sorted(ports)


@pytest.mark.parametrize("impl", ["jit", "numpy"])
@given(case=scenarios())
def test_bfs_next_hops_is_the_bfs_parents_tree_as_arrays(impl, case):
    if impl == "jit" and _bfs_compiled() is None:
        pytest.skip("numba not installed (or STACKCAST_NO_JIT=1)")
    topo, pub, _ = case
    sw = topo.switches
    for r in {0, sw.index(topo.host_switch(pub)), len(sw) - 1}:
        parent, port, delay = bfs_next_hops(topo, r, impl)
        par = bfs_parents(topo, sw[r])
        want = [-1] * len(sw), [0] * len(sw), [0.0] * len(sw)
        for child, up in par.items():
            i, p = sw.index(child), topo.port_to(child, up)
            want[0][i], want[1][i], want[2][i] = sw.index(up), p, topo.ports(child)[p].link.delay_s
        assert (parent.tolist(), port.tolist(), delay.tolist()) == want


@given(scenarios())
def test_shortest_path_flows_equal_one_builder_rule_per_switch_and_destination(case):
    from sim.dataplanes.control_state import StateBuilder
    from sim.dataplanes.l2.reference import FORWARD
    from sim.dataplanes.packet import host_mac
    from strategies.l2.rules import l2_entry, shortest_path_flows

    topo, _, _ = case
    builder = StateBuilder()
    for h in topo.hosts:
        for s in topo.switches:
            builder.add_entry(s, l2_entry(host_mac(topo, h), FORWARD, next_hop_port(topo, s, h)))
    want = builder.build(topo.switches)
    got = shortest_path_flows(topo, [(host_mac(topo, h), topo.host_switch(h),
                                      topo.port_to(topo.host_switch(h), h)) for h in topo.hosts])
    assert list(got.switches) == list(want.switches)
    for s in topo.switches:
        a, b = got.config(s), want.config(s)
        assert dict(a.tables) == dict(b.tables) and not a.multicast_groups


@given(scenarios())
def test_hop_distances_are_the_bfs_hops_compiled_and_interpreted(case):
    """Both ways to fill the matrix give networkx's hop counts (-1: unreachable)."""
    from sim.dataplanes.l2.fast_path_kernels import compiled
    from sim.dataplanes.trees import distance_kernel, distance_rows, switch_adjacency

    topo, _, _ = case
    sw = topo.switches
    g = nx.Graph()
    g.add_nodes_from(sw)
    g.add_edges_from((lk.a, lk.b) for lk in topo.links if lk.a in g and lk.b in g)
    want = np.full((len(sw), len(sw)), -1, np.int32)
    for a, lengths in nx.all_pairs_shortest_path_length(g):
        for b, d in lengths.items():
            want[sw.index(a), sw.index(b)] = d
    index, dist = hop_distances(topo)
    assert index == {s: i for i, s in enumerate(sw)}
    assert np.array_equal(dist, want)
    python = np.full_like(want, -1)
    distance_rows(topo, index, python)
    assert np.array_equal(python, want)
    kernel = compiled("trees.distance_kernel", distance_kernel)
    if kernel is not None:
        adj = switch_adjacency(topo)
        jit = np.full_like(want, -1)
        kernel(adj.start, adj.nb, jit, np.empty(len(sw), np.int64))
        assert np.array_equal(jit, want)


def test_bfs_parents_cache_holds_its_budget_and_gives_the_same_trees(monkeypatch):
    topo = load_topology("jellyfish:switches=40,degree=4,seed=3")
    monkeypatch.setattr(trees, "BFS_CACHE_ENTRIES", 3 * 40)  # about three roots
    trees._bfs_cache.clear()
    trees._bfs_held[0] = 0
    for _ in range(2):
        for root in topo.switches:
            got = trees.bfs_parents(topo, root)
            assert got == trees._bfs(topo, root)
            assert trees.bfs_parents(topo, root) is got  # kept while it is the newest
            assert 1 <= len(trees._bfs_cache) <= 3
            assert trees._bfs_held[0] == sum(len(p) + 1 for p in trees._bfs_cache.values())
    trees._bfs_cache.clear()
    trees._bfs_held[0] = 0
