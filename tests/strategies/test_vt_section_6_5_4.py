"""The eight distribution-tree examples of seed 000 §6.5.4 (Figs. 6.10-6.12, 20 rules/switch).

The thesis gives its receiver sets only as drawings (P, S_1 ... S_n on the
map) drawn from a random clustered population, so no example's setting can
be replayed. Each test builds the setting the text describes, runs the
strategy through the static engine, and counts the labels of the encoded
header by type (:func:`sim.dataplanes.virtual_tree.codec.count_labels`).
Where the description fixes the structure (freq-relation, hops) the counts
are the thesis's; elsewhere the test asserts the structural claim and says
why the counts are not asserted.

Counts are (tree, stop, switch-level hop) labels; with ``host_links=exclude``
(digest A4) every receiver's host link adds one more hop for every strategy,
which the thesis's figures (switch graphs) do not draw. DFN is
``zoo:Dfn,preprocess=table61``, the 50-switch graph of Table 6.1.

References
----------
Seed 000 §6.5.4 (Figs. 6.10-6.12), §6.5.3 (b), (g); digest ch. 5-7 §4.2.5.
"""

from __future__ import annotations

import os
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.virtual_tree.codec import KIND_HOP, count_labels
from sim.engines.static import run_notification
from strategies.base import Knowledge, Strategy, make_strategy
from strategies.virtual_tree.arbitrary import modularity_partitions
from strategies.virtual_tree.client_view import ControllerView
from strategies.virtual_tree.installation import (
    link_ends,
    published_trees,
    steiner_links,
    tree_ports,
)
from strategies.virtual_tree.labels import label_format
from topologies.model import Topology
from topologies.specs import load_topology

ZOO_DIR = os.environ.get("STACKCAST_ZOO_DIR", "")
pytestmark = pytest.mark.skipif(not ZOO_DIR or not Path(ZOO_DIR).is_dir(),
                                reason="STACKCAST_ZOO_DIR (shared/data/topology-zoo) needed")

DFN = "zoo:Dfn,preprocess=table61"
RULES = {"max_rules": 20}  # §6.5.4: "a limit of 20 flow rules per switch"


def counts(strategy: Strategy, topo: Topology, state: object, pub: str,
           recv: list[str]) -> tuple[int, int, int]:
    """(tree, stop, switch-level hop) labels of the header; delivery must be exact."""
    note = Notification(1, pub)
    d = run_notification(topo, strategy, state, note, frozenset(recv),  # type: ignore[arg-type]
                         payload_for(note, 10))
    assert d.delivered == dict.fromkeys(recv, 1)
    assert d.false_positives == 0
    fmt = label_format(strategy.params)  # type: ignore[attr-defined]
    c = count_labels(fmt, [p.header for p in d.encoding.packets])
    host_hops = 0
    for p in d.encoding.packets:
        labels, _ = fmt.decode(p.header)
        for label in labels:
            if label >> fmt.id_bits == KIND_HOP:
                a, b = link_ends(topo, label & ((1 << fmt.id_bits) - 1))
                host_hops += a in topo.hosts or b in topo.hosts
    assert host_hops == len(recv)  # one host-link hop per receiver (host_links=exclude)
    return c.tree, c.stop, c.hop - host_hops


def freq_relation_case(topo: Topology, n_receivers: int, n_uninterested: int, seed: int
                       ) -> tuple[Strategy, object, str, list[str]]:
    """P at the highest-degree switch with n + m frequent subscribers on random
    switches; its freq-relation VT is their Steiner tree. The notification goes
    to all but m subscribers at VT leaves: the VT spans m uninterested nodes."""
    rng = np.random.default_rng(seed)
    host = {s: topo.hosts_of(s)[0] for s in topo.switches}
    pub_sw = max(topo.switches, key=lambda s: (topo.switch_graph.degree(s), -topo.switch_id(s)))
    others = [s for s in topo.switches if s != pub_sw]
    subs = [others[i] for i in rng.choice(len(others), n_receivers + n_uninterested,
                                          replace=False)]
    pub = host[pub_sw]
    view = ControllerView(publishers=(pub,),
                          subscriptions={pub: tuple((host[s], 0.9) for s in subs)})
    strategy = make_strategy("vt-freq-relation", RULES)
    state = strategy.install(topo, Knowledge(population=view))
    (vt,) = published_trees(state)
    g = nx.Graph([link_ends(topo, e) for e in vt.edges])
    uninterested = [s for s in subs if g.degree(s) == 1][:n_uninterested]
    assert len(uninterested) == n_uninterested
    return strategy, state, pub, [host[s] for s in subs if s not in uninterested]


@pytest.mark.parametrize("seed", range(3))
def test_fig_6_10a_dfn_hops_encode_the_steiner_dt_with_hop_labels_only(seed: int) -> None:
    """Fig. 6.10(a): the initial DT of P + 7 subscribers is all hop labels, one per
    Steiner-tree link, and is the longest header of the four strategies."""
    topo = load_topology(DFN)
    frel, frel_state, pub, recv = freq_relation_case(topo, 7, 2, seed)
    hops = make_strategy("source-routed")
    tree, stop, hop = counts(hops, topo, hops.install(topo, Knowledge()), pub, recv)
    assert (tree, stop) == (0, 0)
    terminals = [topo.host_switch(h) for h in [pub, *recv]]
    assert hop == len(steiner_links(topo, terminals))  # one hop per Steiner-tree link
    assert hop > sum(counts(frel, topo, frel_state, pub, recv))


@pytest.mark.parametrize("seed", range(3))
def test_fig_6_10b_dfn_freq_relation_one_vt_two_stops(seed: int) -> None:
    """Fig. 6.10(b): one large VT pruned by two stops. The thesis's receivers are
    not given; here the VT spans the 7 receivers and 2 uninterested leaves."""
    topo = load_topology(DFN)
    strategy, state, pub, recv = freq_relation_case(topo, 7, 2, seed)
    assert counts(strategy, topo, state, pub, recv) == (1, 2, 0)


def test_fig_6_10c_dfn_clusters_leave_sparse_nodes_to_hop_labels() -> None:
    """Fig. 6.10(c): 3 VTs + 1 hop to an 'outlying' subscriber. Not asserted: the
    clusters come from a random draw. Asserted: the claim behind the hop, that
    cluster VTs (backbone between hubs, internal VTs) leave switches outside the
    dense clusters uncovered, so a receiver there needs hop labels, and that
    the DT combines several VTs."""
    topo = load_topology(DFN)
    clusters = tuple(tuple(p) for p in modularity_partitions(topo)[:3])
    view = ControllerView(publishers=(), subscriptions={}, clusters=clusters)
    strategy = make_strategy("vt-clusters", RULES)
    state = strategy.install(topo, Knowledge(population=view))
    trees = published_trees(state)
    covered = set().union(*(set(tree_ports(topo, t.edges)) for t in trees))
    internal = [t for t in trees if "backbone" not in t.name]
    dense = {s for c in clusters for s in c}
    assert internal and all(set(tree_ports(topo, t.edges)) <= dense for t in internal)
    outlying = sorted(set(topo.switches) - covered, key=topo.switch_id)
    assert outlying  # sparse switches that no cluster VT reaches
    host = {s: topo.hosts_of(s)[0] for s in topo.switches}
    inside = [host[c[len(c) // 2]] for c in clusters] + [host[c[-1]] for c in clusters]
    pub = host[clusters[0][0]]
    tree, _, hop = counts(strategy, topo, state, pub, [*inside, host[outlying[0]]])
    assert tree >= 2 and hop >= 1


def test_fig_6_10d_dfn_partitions_backbone_first_and_regional_vts() -> None:
    """Fig. 6.10(d): 4 VTs + 1 stop, the longest optimised header. Not asserted: the
    receiver set is a random draw. Asserted: the structure the text gives,
    backbone VTs over the community hubs first, then VTs inside the
    (non-overlapping) partitions. Deviation: at 20 rules our partitions cover
    43 of DFN's 50 switches, not 'all nodes'."""
    topo = load_topology(DFN)
    trees = published_trees(make_strategy("vt-partitions", RULES).install(topo, Knowledge()))
    parts = [set(p) for p in modularity_partitions(topo)]
    assert "backbone" in trees[0].name
    internal = [t for t in trees if "backbone" not in t.name]
    assert internal
    for t in internal:
        nodes = set(tree_ports(topo, t.edges))
        assert sum(nodes <= p for p in parts) == 1
    covered = set().union(*(set(tree_ports(topo, t.edges)) for t in trees))
    assert len(covered) == 43 < len(topo.switches)


def _vtl_receiver_sets(topo: Topology) -> list[tuple[str, list[str]]]:
    """20 draws of P + 13 subscribers on VtlWavenet2008 (Fig. 6.11's receiver count)."""
    rng = np.random.default_rng(7)
    out = []
    for _ in range(20):
        hosts = [topo.hosts[i] for i in rng.choice(len(topo.hosts), 14, replace=False)]
        out.append((hosts[0], hosts[1:]))
    return out


def test_fig_6_11a_vtlwavenet_random_relies_on_one_large_vt() -> None:
    """Fig. 6.11(a): one VT, 2 hops, 1 stop (the text totals '1 VT and two stops',
    digest [BUG]). Not asserted: the random VTs cannot be replayed. Asserted:
    one VT on average (§6.5.3 b: 'an average of only one VT'), stops only
    where a selected VT continues past the DT (none where it ends at S4, S5)."""
    topo = load_topology("zoo:VtlWavenet2008")
    strategy = make_strategy("vt-random", RULES)
    state = strategy.install(topo, Knowledge(seed=1))
    got = [counts(strategy, topo, state, p, r) for p, r in _vtl_receiver_sets(topo)]
    assert round(float(np.mean([t for t, _, _ in got]))) == 1
    assert all(t >= 1 for t, _, _ in got)


def test_fig_6_11b_vtlwavenet_cycles_use_more_smaller_vts_than_random() -> None:
    """Fig. 6.11(b): 2 ring VTs + 3 stops; one stop prunes both overlapping VTs.
    Not asserted: the 13 receivers are a drawing. Asserted: exact delivery with
    overlapping ring VTs (stops prune every selected VT on their link: no
    false positives, no duplicates) and more tree labels than random."""
    topo = load_topology("zoo:VtlWavenet2008")
    sets = _vtl_receiver_sets(topo)
    cyc = make_strategy("vt-cycles", RULES)
    cyc_state = cyc.install(topo, Knowledge())
    rnd = make_strategy("vt-random", RULES)
    rnd_state = rnd.install(topo, Knowledge(seed=1))
    cyc_counts = [counts(cyc, topo, cyc_state, p, r) for p, r in sets]
    rnd_counts = [counts(rnd, topo, rnd_state, p, r) for p, r in sets]
    assert any(t >= 2 and s >= 1 for t, s, _ in cyc_counts)
    assert sum(t for t, _, _ in cyc_counts) > sum(t for t, _, _ in rnd_counts)


@pytest.mark.parametrize("seed", range(3))
def test_fig_6_12a_litnet_freq_relation_one_vt_three_stops(seed: int) -> None:
    """Fig. 6.12(a): one publisher-centric VT spanning the 6 subscribers and three
    uninterested nodes, pruned by three stops."""
    topo = load_topology("zoo:Litnet")
    strategy, state, pub, recv = freq_relation_case(topo, 6, 3, seed)
    assert counts(strategy, topo, state, pub, recv) == (1, 3, 0)


def test_fig_6_12b_litnet_partitions_backbone_and_local_vts() -> None:
    """Fig. 6.12(b): backbone Tree_1 + local Tree_2, Tree_3 + 1 hop. Not asserted:
    the receiver set is a drawing. Asserted: Tree_1 connects the community
    hubs, the local VTs are confined to one partition each, and together the
    VTs cover every Litnet switch at 20 rules."""
    topo = load_topology("zoo:Litnet")
    trees = published_trees(make_strategy("vt-partitions", RULES).install(topo, Knowledge()))
    parts = [set(p) for p in modularity_partitions(topo)]
    hubs = {max(p, key=lambda s: (topo.switch_graph.degree(s), -topo.switch_id(s)))
            for p in parts}
    assert "backbone" in trees[0].name and hubs <= set(tree_ports(topo, trees[0].edges))
    for t in trees:
        if "backbone" not in t.name:
            assert sum(set(tree_ports(topo, t.edges)) <= p for p in parts) == 1
    covered = set().union(*(set(tree_ports(topo, t.edges)) for t in trees))
    assert covered == set(topo.switches)
