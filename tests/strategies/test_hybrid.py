"""``hybrid`` (seed 000 §4.3): Fig. 4.3, stable/dynamic split, exact delivery, rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.random_topologies import random_topology, scenarios

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import shortest_path_tree
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import hop_label, stop_label, tree_label
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.hybrid import choose_stable, parse_ratio
from strategies.virtual_tree.labels import edge_id
from topologies.model import build_topology
from topologies.registry import SpecError

FMT = LabelFormat()
PAYLOAD = 50

# Fig. 4.3: T1 reaches S2, S3, S5; hops attach S1 at N2 and S4 at N6.
FIG43 = build_topology("fig4.3", [(1, 2), (1, 5), (2, 3), (2, 4), (5, 6), (5, 8), (6, 7)],
                       range(1, 9), {1: 1, 3: 1, 4: 1, 6: 1, 7: 1, 8: 1})
P, S2, S1, S3, S4, S5 = "h1", "h2", "h3", "h4", "h5", "h6"
STABLE = frozenset({S2, S3, S5})
ALL = frozenset({S1, S2, S3, S4, S5})


def run(topo, pub, recv, knowledge, payload=PAYLOAD, **params):
    strategy = make_strategy("hybrid", params)
    state = strategy.install(topo, knowledge)
    note = Notification(5, pub)
    return run_notification(topo, strategy, state, note, recv, payload_for(note, payload)), state


def hop(a, b):
    return hop_label(FMT, edge_id(FIG43, a, b))


def test_fig_4_3_stored_tree_plus_hops_to_s1_and_s4():
    d, state = run(FIG43, P, ALL, Knowledge(stable={P: STABLE}))
    t1 = tree_label(FMT, 1)
    labels = [t1, hop("s2", "s4"), hop("s4", S1), hop("s6", "s7"), hop("s7", S4)]
    assert d.encoding.packets[0].header == FMT.encode(labels)
    assert d.delivered == dict.fromkeys(ALL, 1) and d.false_positives == 0
    # T1 is stored on the switches of the stable subscribers' branches only
    per = state.per_switch()
    assert {s for s in FIG43.switches if "MyIngress.check_tree" in per[s]} == {
        "s1", "s2", "s3", "s5", "s6", "s8"}
    # N2 (root of the S1 extension) consumes its hop; the tree label is kept
    assert d.links[("s2", "s4")] == [1, 14 + 2 + 2 * 4 + PAYLOAD]
    assert d.links[("s4", S1)] == [1, 14 + 2 + 2 * 3 + PAYLOAD]
    # along T1 the stack is unchanged (no pruning of the hop labels)
    assert d.links[("s1", "s5")] == [1, 14 + 2 + 2 * 5 + PAYLOAD]
    assert d.links[("s6", "s7")] == [1, 14 + 2 + 2 * 4 + PAYLOAD]
    assert d.frames == 12 + 1
    # Fig. 4.3's own notation needs 8 entries (T1, N2, 2 hops, marker, N6, 2 hops)
    assert d.encoding.header_entries == 5


def test_fig_4_3_absent_stable_subscriber_is_cut_by_a_stop_label():
    recv = ALL - {S5}
    d, _ = run(FIG43, P, recv, Knowledge(stable={P: STABLE}))
    labels = FMT.decode(d.encoding.packets[0].header)[0]
    assert labels[:2] == (tree_label(FMT, 1), stop_label(FMT, edge_id(FIG43, "s5", "s8")))
    assert d.delivered == dict.fromkeys(recv, 1) and d.false_positives == 0
    assert ("s5", "s8") not in d.links


def test_fig_4_3_split_sends_one_packet_per_root_subtree():
    d, _ = run(FIG43, P, ALL, Knowledge(stable={P: STABLE}), payload=60, mtu_bytes=71,
               on_oversize="split")
    t1 = tree_label(FMT, 1)
    parts = [FMT.decode(p.header)[0] for p in d.encoding.packets]
    assert parts == [(t1, stop_label(FMT, edge_id(FIG43, "s1", "s5")), hop("s2", "s4"),
                      hop("s4", S1)),
                     (t1, stop_label(FMT, edge_id(FIG43, "s1", "s2")), hop("s6", "s7"),
                      hop("s7", S4))]
    assert d.delivered == dict.fromkeys(ALL, 1)


RATIOS = st.sampled_from(["0:100", "30:70", "50:50", "80:20", "100:0"])


@given(scenarios(max_switches=12), RATIOS, st.integers(0, 3))
def test_derived_stable_sets_deliver_exactly_once(case, ratio, seed):
    topo, pub, recv = case
    d, state = run(topo, pub, recv, Knowledge.for_notification(pub, recv), ratio=ratio, seed=seed)
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.false_negatives == d.duplicates == 0
    if not recv:
        return
    x, y = parse_ratio(ratio)
    stable = choose_stable(topo, pub, recv, y, seed)
    assert len(stable) == (2 * y * len(recv) + 100) // 200
    tree = shortest_path_tree(topo, topo.host_switch(pub), recv)
    t_edges = set(shortest_path_tree(topo, topo.host_switch(pub), stable).edges())
    tree_labels = 1 if t_edges else 0
    assert d.encoding.header_entries == tree_labels + len(set(tree.edges()) - t_edges)
    assert d.frames == len(tree.edges()) + 1
    if ratio == "0:100":  # everything on the stored tree: the tree strategy's header
        assert d.encoding.header_bytes == 4
    per = state.per_switch()
    for s in topo.switches:
        for table in ("MyIngress.check_hop", "MyIngress.check_stop", "MyIngress.extract_port"):
            assert per[s][table] == topo.degree(s)
    assert sum(p.get("MyIngress.check_tree", 0) for p in per.values()) == len(
        {a for a, _ in t_edges})


@given(scenarios(max_switches=12), st.data())
def test_known_stable_subscribers_serve_any_receiver_set(case, data):
    topo, pub, recv = case
    others = sorted(h for h in topo.hosts if h != pub)
    stable = frozenset(data.draw(st.sets(st.sampled_from(others), max_size=len(others))))
    d, _ = run(topo, pub, recv, Knowledge(stable={pub: stable}))
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.false_negatives == d.duplicates == 0
    if recv:
        tree = shortest_path_tree(topo, topo.host_switch(pub), recv)
        assert d.frames == len(tree.edges()) + 1


def test_stable_choice_is_deterministic_and_seeded():
    topo = random_topology(12, 6, seed=2)
    recv = frozenset(topo.hosts[1:])
    a = choose_stable(topo, "h1", recv, 70, seed=0)
    assert a == choose_stable(topo, "h1", recv, 70, seed=0)
    assert len(a) == 8 and a <= recv  # round(0.7 x 11) = 8
    assert any(choose_stable(topo, "h1", recv, 70, seed=s) != a for s in range(1, 6))


def test_unknown_publishers_fail_and_bad_ratios_name_the_field():
    topo = random_topology(6, 2, seed=4)
    strategy = make_strategy("hybrid")
    state = strategy.install(topo, Knowledge())
    with pytest.raises(LookupError, match="no stored tree"):
        strategy.encode(topo, state, Notification(0, "h1"), frozenset({"h2"}), b"")
    for bad in ("80-20", "80:30", "x:y", "-10:110"):
        with pytest.raises(SpecError, match="ratio"):
            make_strategy("hybrid", {"ratio": bad})
