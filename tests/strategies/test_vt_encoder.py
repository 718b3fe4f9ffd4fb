"""Virtual-tree encoder (seed 000 Algorithm 5.1) and the Fig. 5.2 / 5.3 worked examples."""

from __future__ import annotations

import pytest

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import hop_label, stop_label, tree_label
from sim.engines.static import run_notification
from strategies.base import Knowledge
from strategies.virtual_tree.encoder import (
    EncoderOptions,
    compile_tree,
    encode_virtual_trees,
    encoder_graph,
    steiner_sph,
)
from strategies.virtual_tree.installation import Candidate, VirtualTreeStrategy, switch_edges
from strategies.virtual_tree.labels import edge_id
from topologies.model import build_topology

FMT = LabelFormat()
PAYLOAD = 50


class Fixed(VirtualTreeStrategy):
    """A VT strategy that installs exactly the given link sets, in order."""

    name = "fixed-test"
    cache_installs = False  # candidates: the instance's

    def __init__(self, trees, **params):
        super().__init__(self.Params(**params))
        self.trees = trees

    def candidates(self, topology, knowledge):
        return iter(Candidate(frozenset(t), f"vt{i + 1}") for i, t in enumerate(self.trees))


def deliver(topo, strategy, pub, recv):
    state = strategy.install(topo, Knowledge())
    note = Notification(1, pub)
    return run_notification(topo, strategy, state, note, frozenset(recv),
                            payload_for(note, PAYLOAD)), state


def stack_on(d, a, b):
    """Labels of the frame that crossed a -> b."""
    return d.links[(a, b)][1] - 14 - PAYLOAD


# Fig. 5.2: P at N1; S1 at N2; S2, S3, S4, S7 at N3; S5, S6 at N4.
FIG52 = build_topology("fig5.2", [(1, 2), (1, 4), (2, 3)], range(1, 5),
                       {1: 1, 2: 1, 3: 4, 4: 2})
P52, S1, S2, S3, S4, S7, S5, S6 = "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"


def e52(a, b):
    return edge_id(FIG52, a, b)


VT1_52 = {e52("s1", "s2"), e52("s1", "s4"), e52("s2", S1), e52("s4", S5), e52("s4", S6)}
VT2_52 = {e52("s1", "s2"), e52("s2", "s3"), e52("s3", S2), e52("s3", S3), e52("s3", S7)}


def test_fig_5_2_overlapping_trees_stop_and_hop():
    strategy = Fixed([VT1_52, VT2_52])
    d, state = deliver(FIG52, strategy, P52, {S1, S2, S3, S4, S5, S6})
    t1, t2 = tree_label(FMT, 1), tree_label(FMT, 2)
    stop, hop = stop_label(FMT, e52("s3", S7)), hop_label(FMT, e52("s3", S4))
    # header = [VT1, VT2, stop, hop], the hop "at the end of the header stack"
    assert d.encoding.packets[0].header == FMT.encode([t1, t2, stop, hop])
    assert d.delivered == {h: 1 for h in (S1, S2, S3, S4, S5, S6)}
    assert d.false_positives == d.duplicates == 0
    # N1 serves port 2 (to N2) once although both VTs name it
    assert d.links[("s1", "s2")][0] == 1
    # the stop is applied at N3 towards S7: no frame reaches S7
    assert ("s3", S7) not in d.links
    # the hop is applied (consumed) at N3 towards S4; tree labels are kept
    assert d.links[("s3", S4)][1] == 14 + 2 + 2 * 3 + PAYLOAD
    assert d.links[("s3", S2)][1] == 14 + 2 + 2 * 4 + PAYLOAD
    # hop and stop labels travel down N4's branch where they are never used
    assert d.links[("s1", "s4")][1] == 14 + 2 + 2 * 4 + PAYLOAD
    # every VT switch holds one check_tree rule per VT, leaves included
    per = state.per_switch()
    assert {s: per[s].get("MyIngress.check_tree", 0) for s in FIG52.switches} == {
        "s1": 2, "s2": 2, "s3": 1, "s4": 1}


# Fig. 5.3: P at N1; S1, S2 at N2; S6 at N3; S3, S4 at N4; S5 at N5.
FIG53 = build_topology("fig5.3", [(1, 2), (1, 5), (2, 3), (3, 4)], range(1, 6),
                       {1: 1, 2: 2, 3: 1, 4: 2, 5: 1})
P53, T1, T2, T6, T3, T4, T5 = "h1", "h2", "h3", "h4", "h5", "h6", "h7"


def e53(a, b):
    return edge_id(FIG53, a, b)


VT1_53 = {e53("s1", "s2"), e53("s1", "s5"), e53("s2", T1), e53("s2", T2)}
VT2_53 = {e53("s3", "s4"), e53("s4", T3), e53("s4", T4), e53("s3", T6)}


def test_fig_5_3_trees_bridged_by_hops():
    d, _ = deliver(FIG53, Fixed([VT1_53, VT2_53]), P53, {T1, T2, T3, T4, T5})
    labels = [tree_label(FMT, 1), tree_label(FMT, 2), stop_label(FMT, e53("s3", T6)),
              hop_label(FMT, e53("s2", "s3")), hop_label(FMT, e53("s5", T5))]
    assert d.encoding.packets[0].header == FMT.encode(labels)
    assert d.delivered == {h: 1 for h in (T1, T2, T3, T4, T5)} and d.false_positives == 0
    # hop N2:1 bridges VT1 to VT2 (consumed at N2), VT2 carries it to S3, S4
    assert stack_on(d, "s2", "s3") == 2 + 2 * 4
    assert stack_on(d, "s3", "s4") == 2 + 2 * 4
    # the stop at N3 blocks S6; hop N5:2 (5th entry) reaches S5
    assert ("s3", T6) not in d.links
    assert stack_on(d, "s5", T5) == 2 + 2 * 4


def test_single_pass_rejects_a_tree_that_does_not_pay():
    # a VT far from every terminal only adds a label
    topo = FIG53
    far = {e53("s3", "s4"), e53("s4", T3)}
    g = encoder_graph(topo)
    trees = [compile_tree(topo, g, 7, far)]
    enc = encode_virtual_trees(topo, trees, P53, frozenset({T1}))
    assert enc.trees == () and enc.stops == ()
    assert enc.hops == (e53("s1", "s2"), e53("s2", T1))


def test_best_improvement_and_patience_modes():
    g = encoder_graph(FIG52)
    trees = [compile_tree(FIG52, g, i + 1, t) for i, t in enumerate([VT1_52, VT2_52])]
    recv = frozenset({S1, S2, S3, S4, S5, S6})
    best = encode_virtual_trees(FIG52, trees, P52, recv, EncoderOptions(mode="best_improvement"))
    assert best.entries == 4
    first_only = encode_virtual_trees(FIG52, trees, P52, recv, EncoderOptions(patience=1))
    assert first_only.entries == 4  # both improve, patience never triggers
    hopeless = [compile_tree(FIG52, g, 9, {e52("s4", S5), e52("s4", S6)})]
    assert encode_virtual_trees(FIG52, hopeless + trees, P52, frozenset({S1}),
                                EncoderOptions(patience=1)).trees == ()


@pytest.mark.parametrize("method", ["kou", "mehlhorn"])
def test_networkx_steiner_option_delivers(method):
    strategy = Fixed([VT1_52, VT2_52], steiner=method)
    d, _ = deliver(FIG52, strategy, P52, {S1, S2, S5})
    assert d.delivered == {S1: 1, S2: 1, S5: 1} and d.false_positives == 0


def test_sph_with_zero_weight_edges_reroutes_over_the_virtual_tree():
    # ring 1-2-3-4-5-6-1: terminals 1 and 4; a VT on 1-6-5-4 makes that side free
    topo = build_topology("ring", [(i, i % 6 + 1) for i in range(1, 7)], range(1, 7), 1)
    g = encoder_graph(topo)
    virtual = bytearray(g.edge_count)
    side = switch_edges(topo, [("s1", "s6"), ("s6", "s5"), ("s5", "s4")])
    for e in side:
        virtual[e] = 1
    edges, nodes = steiner_sph(g, 0, [0, 3], virtual)
    assert set(edges) == side and sorted(nodes) == [0, 3, 4, 5]
    plain, _ = steiner_sph(g, 0, [0, 3])
    assert len(plain) == 3
