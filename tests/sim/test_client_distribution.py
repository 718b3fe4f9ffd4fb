"""The ch. 6 client-distribution generator and migration churn (seed 000 §6.5.2, §6.6)."""

from __future__ import annotations

import numpy as np
import pytest

import sim.workloads.clustered  # noqa: F401  (registers "clustered")
from experiments.cells.pipeline import cell_rows
from experiments.cells.spec import Cell
from sim.dataplanes.seeds import child_rng
from sim.dataplanes.switch_clusters import client_clusters, kmeans
from sim.dataplanes.trees import hop_distances
from sim.workloads.clustered import ClusteredParams, distant_split
from sim.workloads.receivers import receiver_model
from topologies.registry import SpecError
from topologies.specs import load_topology

DFN = "zoo:Dfn"


def pop(spec, seed=1, topo=DFN):
    t = load_topology(topo)
    model = receiver_model(spec)
    return t, model.population(t, child_rng(seed, "population"))


def test_kmeans_groups_and_is_deterministic():
    pts = np.array([[0, 0], [0, 1], [10, 10], [10, 11], [20, 0], [21, 0]], dtype=float)
    a, _ = kmeans(pts, 3, np.random.default_rng(1))
    b, _ = kmeans(pts, 3, np.random.default_rng(1))
    assert (a == b).all()
    assert a[0] == a[1] and a[2] == a[3] and a[4] == a[5] and len(set(a.tolist())) == 3


def test_generator_centres_and_dense_sets():
    topo = load_topology(DFN)
    cl = client_clusters(topo, 4, 60.0, np.random.default_rng(7))
    n = len(topo.switches)
    assert len(cl.centres) == 4 and len(cl.dense_nodes) == round(0.6 * n)
    assert sum(len(d) for d in cl.dense) == len(cl.dense_nodes)  # disjoint
    sg = topo.switch_graph
    for centre, dense in zip(cl.centres, cl.dense, strict=True):
        assert dense[0] == centre
        assert sg.subgraph(dense).number_of_edges() >= len(dense) - 1  # BFS-grown: connected
    # round-robin growth keeps the four sets within one node of each other unless a
    # frontier runs dry
    sizes = sorted(len(d) for d in cl.dense)
    assert sizes[-1] - sizes[0] <= max(1, n)


def test_population_sizes_and_weights():
    topo, p = pop("clustered:publishers=30,subscribers=30,scenario=nearby")
    n = len(topo.hosts)
    view = p.controller_view()
    assert len(view.publishers) == len(set(view.publishers)) == round(0.3 * n)
    dense = set(p.clusters.dense_nodes)
    in_dense = total = 0
    for pub, subs in view.subscriptions.items():
        hosts = [h for h, _ in subs]
        assert len(hosts) == len(set(hosts)) == round(0.3 * n) and pub not in hosts
        assert all(0.01 <= f <= 1.0 for _, f in subs)
        in_dense += sum(topo.host_switch(h) in dense for h in hosts)
        total += len(hosts)
    assert in_dense / total > 0.8  # 9:1 weights, 60 % dense -> ~93 % of the picks
    # receivers: each subscriber with its frequency
    pub = view.publishers[0]
    subs = dict(view.subscriptions[pub])
    rng = np.random.default_rng(3)
    counts = dict.fromkeys(subs, 0)
    for _ in range(400):
        for h in p.receivers(pub, rng):
            counts[h] += 1
    for h, f in subs.items():
        assert abs(counts[h] / 400 - f) < 0.12


def test_uniform_scenario_ignores_the_clusters():
    topo, p = pop("clustered:scenario=uniform,subscribers=45")
    dense = set(p.clusters.dense_nodes)
    hosts = [h for subs in p.controller_view().subscriptions.values() for h, _ in subs]
    share = sum(topo.host_switch(h) in dense for h in hosts) / len(hosts)
    assert 0.45 < share < 0.75  # about the 60 % dense share of the nodes


def layout(p):
    pubs, subs = p._layout(p.churn)
    return pubs, subs


def test_moves_are_drawn_when_a_level_needs_them_and_as_if_drawn_at_once():
    """The migration plan has its own generator: drawn late (after the 0 % layout, the
    controller's view and receiver draws) it equals the plan drawn first."""
    late = pop("clustered:scenario=distant,churn=0", seed=4)[1]
    first = pop("clustered:scenario=distant,churn=0", seed=4)[1]
    eager = list(first.moves)
    late.controller_view()
    late.receivers(late.publishers[0], child_rng(4, "n", 0))
    assert late.migration._moves is None  # nothing at 0 % needed them
    assert late.moves == eager and len(eager) == len(late.pub_hosts) + len(late.subs)
    moved = pop("clustered:scenario=distant,churn=30", seed=4)[1]
    assert layout(moved) != layout(late) and moved.moves == eager


def test_churn_levels_are_nested_and_keep_the_layout_seed():
    spec = "clustered:scenario=nearby,churn={}"
    levels = [0, 10, 40, 100]
    key = {ClusteredParams(churn=c).workload_key() for c in levels}
    assert len(key) == 1  # churn does not reseed the workload
    pops = [pop(spec.format(c))[1] for c in levels]
    for p in pops[1:]:  # one initial layout and one migration plan for every level
        assert (p.pub_hosts, p.subs, p.moves) == (pops[0].pub_hosts, pops[0].subs, pops[0].moves)
    # level c applies the first round(c% x clients) moves: each level extends the previous
    for c, p in zip(levels, pops, strict=True):
        m = round(c / 100 * len(p.moves))
        pubs, subs = list(p.pub_hosts), [h for _, h, _ in p.subs]
        for mv in p.moves[:m]:
            if mv.client < 0:
                pubs[-1 - mv.client] = mv.host
            else:
                subs[mv.client] = mv.host
        assert layout(p) == (pubs, subs)
    # 100 %: every client moved exactly once (a move may land where it started)
    assert len(pops[-1].moves) == len(pops[0].pub_hosts) + len(pops[0].subs)
    # the controller's view stays at 0 % (trees are never updated)
    assert pops[2].controller_view() == pops[0].controller_view()
    rebuilt = pop("clustered:scenario=nearby,churn=40,rebuild_every=20")[1]
    assert rebuilt.controller_view() == rebuilt.view_at(40) != rebuilt.view_at(0)


def test_distant_clients_start_in_two_clusters_and_move_to_the_other_two():
    topo, p0 = pop("clustered:scenario=distant,churn=0")
    _, p1 = pop("clustered:scenario=distant,churn=100")
    old, new = distant_split(topo, p0.clusters)
    assert sorted(old + new) == [0, 1, 2, 3] and 0 in old
    index, dist = hop_distances(topo)
    old_nodes = {s for i in old for s in p0.clusters.dense[i]}
    new_nodes = {s for i in new for s in p0.clusters.dense[i]}

    def share(p, nodes):
        pubs, subs = layout(p)
        hosts = pubs + subs
        return sum(topo.host_switch(h) in nodes for h in hosts) / len(hosts)

    # two clusters hold ~30 % of the nodes, so 9:1 weights without replacement
    # exhaust them: about two thirds of the clients land there
    assert share(p0, old_nodes) > 0.55 and share(p1, new_nodes) > 0.55
    assert share(p0, new_nodes) < 0.25 and share(p1, old_nodes) < 0.25


def test_runner_seeds_churn_cells_with_the_same_layout():
    rows = {}
    for c in (0, 30):
        cell = Cell(experiment="t", topology=DFN, strategy="source-routed", params=(),
                    receivers=f"clustered:scenario=nearby,churn={c}", payload_bytes=50, seed=2,
                    notifications=3)
        rows[c] = cell_rows(cell)
        assert all(r["false_negatives"] == r["false_positives"] == 0 for r in rows[c])
    assert rows[0][0]["receivers_model"] != rows[30][0]["receivers_model"]


@pytest.mark.parametrize("spec,field", [
    ("clustered:weights=9", "weights"), ("clustered:churn=120", "churn"),
    ("clustered:scenario=far", "scenario"), ("clustered:publishers=0", "publishers"),
])
def test_bad_parameters_name_their_field(spec, field):
    with pytest.raises(SpecError, match=field):
        receiver_model(spec)
