"""``hops`` (seed 000 §4.2.1): Fig. 4.1, exact delivery, pruned bytes, rule counts."""

from __future__ import annotations

import pytest
from hypothesis import given
from support.random_topologies import scenarios

from sim.dataplanes.control_state import diff
from sim.dataplanes.neighbor_labels.codec import node_label
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import shortest_path_tree
from sim.dataplanes.virtual_tree.codec import FieldRangeError, LabelFormat
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.frame_size import OversizeError
from strategies.virtual_tree.labels import subtree_preorder
from topologies.model import build_topology

FMT = LabelFormat()
PAYLOAD = 50

# Fig. 4.1: publisher P at N1, which forwards to N2 (with S1, S2 below) and N5 (S3 below)
FIG41 = build_topology("fig4.1", [(1, 2), (1, 5), (2, 3), (2, 4), (5, 6)], range(1, 7),
                       {1: 1, 3: 1, 4: 1, 6: 1})
P, S1, S2, S3 = "h1", "h2", "h3", "h4"


def deliver(topo, pub, recv, payload=PAYLOAD, **params):
    strategy = make_strategy("hops", params)
    state = strategy.install(topo, Knowledge.for_notification(pub, recv))
    note = Notification(7, pub)
    return run_notification(topo, strategy, state, note, recv, payload_for(note, payload)), state


def test_fig_4_1_preorder_stack_and_subtree_split():
    recv = frozenset({S1, S2, S3})
    d, _ = deliver(FIG41, P, recv)
    labels = [node_label(FMT, FIG41, n) for n in ("s2", "s3", S1, "s4", S2, "s5", "s6", S3)]
    assert d.encoding.packets[0].header == FMT.encode(labels)  # root N1 omitted
    assert d.encoding.header_entries == 8 and d.encoding.header_bytes == 2 + 16
    assert d.delivered == {S1: 1, S2: 1, S3: 1}
    # N2's copy carries [N3, S1, N4, S2] (4 labels), N5's copy [N6, S3] (2 labels)
    assert d.links[("s1", "s2")] == [1, 14 + 2 + 2 * 4 + PAYLOAD]
    assert d.links[("s1", "s5")] == [1, 14 + 2 + 2 * 2 + PAYLOAD]
    assert d.links[("s3", S1)] == [1, 14 + 2 + PAYLOAD]
    # N1: 8 labels, the N2 clone scans 7, the N5 clone (made at label 5) scans 2
    assert d.switches["s1"].passes == 8 + 7 + 2


@given(scenarios(max_switches=12))
def test_every_receiver_exactly_once_with_predictive_pruning(case):
    topo, pub, recv = case
    d, _ = deliver(topo, pub, recv)
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.false_negatives == d.duplicates == 0
    if not recv:
        assert d.frames == 0
        return
    tree = shortest_path_tree(topo, topo.host_switch(pub), recv)
    assert d.encoding.header_entries == len(tree.nodes) - 1  # (|V_T| - 1) + |S|
    assert d.frames == len(tree.edges()) + 1
    # each edge into node c carries exactly c's subtree below c (labels), Size and payload
    expected = 14 + len(d.encoding.packets[0].header) + PAYLOAD
    for _parent, child in tree.edges():
        expected += 14 + 2 + 2 * (len(subtree_preorder(tree, child)) - 1) + PAYLOAD
    assert d.bytes == expected


@given(scenarios(max_switches=12))
def test_rules_are_one_per_port_and_never_change(case):
    topo, pub, recv = case
    strategy = make_strategy("hops")
    state = strategy.install(topo, Knowledge())
    assert state.per_switch() == {s: {"MyIngress.check_neighbor": topo.degree(s)}
                                  for s in topo.switches}
    assert all(len(state.config(s).clone_sessions) == topo.degree(s) for s in topo.switches)
    new = strategy.update(topo, state, Knowledge.for_notification(pub, recv))
    assert diff(state, new) == []


def test_split_sends_one_packet_per_root_subtree():
    recv = frozenset({S1, S2, S3})
    with pytest.raises(OversizeError, match="MTU"):
        deliver(FIG41, P, recv, payload=60, mtu_bytes=72)
    d, _ = deliver(FIG41, P, recv, payload=60, mtu_bytes=72, on_oversize="split")
    assert len(d.encoding.packets) == 2
    assert [len(p.header) for p in d.encoding.packets] == [2 + 2 * 5, 2 + 2 * 3]
    assert d.delivered == {S1: 1, S2: 1, S3: 1}


def test_node_ids_too_wide_for_the_label_raise_naming_the_field():
    topo = build_topology("line", [(i, i + 1) for i in range(39)], range(40))
    with pytest.raises(FieldRangeError, match="id_bits"):
        make_strategy("hops", {"label_bits": 8, "type_bits": 2}).install(topo, Knowledge())


def test_publisher_cannot_be_a_receiver():
    with pytest.raises(ValueError, match="publisher"):
        deliver(FIG41, P, frozenset({P, S1}))
