"""Delivery trees: shortest-path trees and the Steiner heuristic."""

from __future__ import annotations

import networkx as nx
from hypothesis import given
from support.random_topologies import scenarios

from sim.dataplanes.trees import hop_distances, shortest_path_tree, spanning_tree, steiner_tree


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
