"""Datacenter VT strategies (seed 000 §5.3): Algorithm 5.2, stars, base trees, paths, capacity."""

from __future__ import annotations

import pytest

from experiments.cells.pipeline import cell_rows
from experiments.cells.spec import Cell
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.client_view import ControllerView
from strategies.virtual_tree.datacenter import (
    _combos,
    broadcast_tree,
    downlinks,
    prune_tree,
    spine_of,
    spines,
    virtual_paths,
)
from strategies.virtual_tree.installation import link_ends, published_trees, tree_rule_counts
from topologies.registry import SpecError
from topologies.specs import load_topology

FABRIC = "fabric:pods=8,racks=4,hosts=2,planes=4,spines=4"
SMALL = "fabric:pods=2,racks=2,hosts=2,planes=2,spines=2"


# -- Algorithm 5.2 ------------------------------------------------------------------

#        r
#      /   \
#     a     b
#    / \     \
#   x   y     z
TREE = [("r", "a"), ("r", "b"), ("a", "x"), ("a", "y"), ("b", "z")]


def test_alg_5_2_prunes_leaves_repeatedly():
    # keep x and z: y goes; r stays (inner node on the x-z path)
    assert prune_tree(TREE, {"x", "z"}) == frozenset(
        {("r", "a"), ("r", "b"), ("a", "x"), ("b", "z")})
    assert prune_tree(TREE, {"x", "y"}) == frozenset({("a", "x"), ("a", "y")})


def test_alg_5_2_epsilon_drops_tiny_trees():
    # keep x and a: y, z go, then b, then r (a leaf once b is gone): one edge is left
    assert prune_tree(TREE, {"x", "a"}, epsilon=1) == frozenset()
    assert prune_tree(TREE, {"x", "a"}, epsilon=0) == frozenset({("a", "x")})
    assert prune_tree(TREE, {"x", "y", "z"}) == frozenset(TREE)
    assert prune_tree(TREE, set()) == frozenset()


# -- fabric structure ---------------------------------------------------------------


def test_broadcast_tree_spans_one_plane():
    topo = load_topology(FABRIC)
    sp = spines(topo)
    assert len(sp) == 16
    edges = broadcast_tree(topo, sp[0])
    nodes = {n for e in edges for n in e}
    assert len(edges) == 104  # 8 fabric + 32 ToR + 64 hosts, one edge each
    assert sum(topo.is_host(n) for n in nodes) == 64
    assert spine_of(topo, "h1") == sp[0] and spine_of(topo, "h17") == sp[0]


def test_topo_based_power_of_two_and_buddy_subsets():
    kids = [f"c{i}" for i in range(8)]
    assert [len(level) for level in _combos(kids, "power_of_two")] == [28, 70, 1]
    assert [len(level) for level in _combos(kids, "buddy")] == [4, 2, 1]
    assert _combos(kids[:2], "buddy") == [[("c0", "c1")]]
    topo = load_topology(FABRIC)
    tor = next(s for s in topo.switches if topo.node_attrs[s]["role"] == "tor")
    assert downlinks(topo, tor) == topo.hosts_of(tor)


def test_virtual_paths_are_host_tor_fabric_spine_and_plane_balanced():
    topo = load_topology(FABRIC)
    first = [c for _, c in zip(range(64), virtual_paths(topo), strict=False)]
    planes = []
    for c in first:
        assert len(c.edges) == 3
        nodes = {n for e in c.edges for n in link_ends(topo, e)}
        roles = sorted(topo.node_attrs.get(n, {}).get("role", "host") for n in nodes)
        assert roles == ["fabric", "host", "spine", "tor"]
        planes.append(next(topo.node_attrs[n]["plane"] for n in nodes
                           if topo.node_attrs.get(n, {}).get("role") == "spine"))
    assert all(planes.count(p) == 16 for p in range(4))


def test_datacenter_strategies_need_the_fabric():
    topo = load_topology("jellyfish:switches=8,degree=3,seed=1")
    with pytest.raises(SpecError, match="fabric"):
        make_strategy("topo-based").install(topo, Knowledge())


def view_all(topo, freq=0.5):
    pubs = topo.hosts[:4]
    return ControllerView(publishers=pubs, subscriptions={
        p: tuple((h, freq if i % 2 else 1.0) for i, h in enumerate(topo.hosts) if h != p)
        for p in pubs})


def test_threshold_keeps_only_frequent_subscribers_and_adds_paths():
    topo = load_topology(SMALL)
    view = view_all(topo)
    know = Knowledge(population=view)
    tree = make_strategy("vt-tree", {"max_rules": 50}).install(topo, know)
    thr = make_strategy("threshold", {"max_rules": 50, "threshold": 70}).install(topo, know)
    bases = lambda s: [t for t in published_trees(s) if t.group == "base"]  # noqa: E731
    assert len(bases(tree)) == 4 and all(t.group == "base" for t in published_trees(tree))
    hosts_in = lambda t: {n for e in t.edges for n in link_ends(topo, e) if topo.is_host(n)}  # noqa: E731
    assert all(len(hosts_in(t)) == 8 for t in bases(tree))
    assert all(len(hosts_in(t)) < 8 for t in bases(thr))
    assert any(t.group == "path" for t in published_trees(thr))
    path = make_strategy("path", {"max_rules": 50}).install(topo, know)
    assert not bases(path) or all(len(hosts_in(t)) <= 5 for t in bases(path))


@pytest.mark.parametrize("strategy,params", [
    ("topo-based", {"max_rules": 3}), ("topo-based", {"max_rules": 5, "combinations": "buddy"}),
    ("vt-tree", {"max_rules": 2}), ("vt-tree", {"max_rules": 4, "shared": True}),
    ("threshold", {"max_rules": 4}), ("path", {"max_rules": 3}),
    ("source-routed", {}),
])
def test_exact_delivery_and_capacity_on_the_fabric(strategy, params):
    cell = Cell(experiment="t", topology=FABRIC, strategy=strategy,
                params=tuple(sorted(params.items())), receivers="frequency:subscribers=30",
                payload_bytes=50, seed=3, notifications=4)
    rows = cell_rows(cell)
    assert all(r["false_positives"] == r["false_negatives"] == r["duplicates"] == 0
               for r in rows)
    topo = load_topology(FABRIC)
    strat = make_strategy(strategy, params)
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    pop = receiver_model("frequency:subscribers=30").population(topo, child_rng(1, "p"))
    state = strat.install(topo, Knowledge(population=pop))
    limit = params.get("max_rules", 40) if strategy != "source-routed" else 0
    assert max(tree_rule_counts(state).values()) <= limit
