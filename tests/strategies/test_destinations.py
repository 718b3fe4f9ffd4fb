"""``destinations`` (seed 000 §4.2.2): Fig. 4.2, exact delivery, n^2 rules, update-free."""

from __future__ import annotations

import pytest
from hypothesis import given
from support.random_topologies import scenarios

from sim.dataplanes.control_state import diff
from sim.dataplanes.neighbor_labels.codec import dest_label
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import next_hop_port
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from topologies.model import build_topology
from topologies.specs import load_topology

FMT = LabelFormat()
PAYLOAD = 50

# Fig. 4.2: publisher at N1; port 2 leads to S1, S2, port 3 to S3, S4, S5
FIG42 = build_topology("fig4.2", [(1, 2), (1, 3), (2, 4), (2, 5), (3, 6), (3, 7), (3, 8)],
                       range(1, 9), {1: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1})
P = "h1"
SUBS = ("h2", "h3", "h4", "h5", "h6")  # S1..S5


def deliver(topo, pub, recv, payload=PAYLOAD, **params):
    strategy = make_strategy("destinations", params)
    state = strategy.install(topo, Knowledge())
    note = Notification(3, pub)
    return run_notification(topo, strategy, state, note, recv, payload_for(note, payload)), state


def test_fig_4_2_one_copy_per_port_with_its_subscribers():
    d, _ = deliver(FIG42, P, frozenset(SUBS))
    assert FIG42.port_to("s1", "s2") == 2 and FIG42.port_to("s1", "s3") == 3
    labels = [dest_label(FMT, FIG42, h) for h in SUBS]
    assert d.encoding.packets[0].header == FMT.encode(labels)
    assert d.delivered == dict.fromkeys(SUBS, 1)
    # one copy on port 2 for S1, S2 and one on port 3 for S3, S4, S5
    assert d.links[("s1", "s2")] == [1, 14 + 2 + 2 * 2 + PAYLOAD]
    assert d.links[("s1", "s3")] == [1, 14 + 2 + 2 * 3 + PAYLOAD]
    assert d.links[("s3", "s6")] == [1, 14 + 2 + 2 * 1 + PAYLOAD]
    # N1: 5 passes for the original, 4 + 2 for the clones made at S1 and at S3
    assert d.switches["s1"].passes == 5 + 4 + 2


@given(scenarios(max_switches=12))
def test_every_receiver_exactly_once(case):
    topo, pub, recv = case
    d, _ = deliver(topo, pub, recv)
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.false_negatives == d.duplicates == 0
    assert d.encoding.header_entries == len(recv)
    # a copy reaching a host carries that host's id only
    for h in recv:
        assert d.links[(topo.host_switch(h), h)] == [1, 14 + 2 + 2 + PAYLOAD]


@given(scenarios(max_switches=12))
def test_one_rule_per_host_on_every_switch_and_update_free(case):
    topo, pub, recv = case
    strategy = make_strategy("destinations")
    state = strategy.install(topo, Knowledge())
    n = len(topo.hosts)
    assert state.per_switch() == {s: {"MyIngress.check_dest": n} for s in topo.switches}
    assert state.entries == len(topo.switches) * n
    for s in topo.switches:
        for h in recv:
            hit = state.config(s).lookup("MyIngress.check_dest", dest_label(FMT, topo, h))
            assert hit.param("port") == next_hop_port(topo, s, h)
    assert diff(state, strategy.update(topo, state, Knowledge.for_notification(pub, recv))) == []


def test_256_hosts_need_65536_rules():
    """Seed 000 §4.4.2: "256^2 = 65,536 rules for 256 hosts"."""
    topo = load_topology("jellyfish:switches=256,degree=4,seed=1")
    state = make_strategy("destinations").install(topo, Knowledge())
    assert state.entries == 65_536


def test_split_sends_one_packet_per_port_of_the_publishers_switch():
    d, _ = deliver(FIG42, P, frozenset(SUBS), payload=60, mtu_bytes=70, on_oversize="split")
    assert [len(p.header) for p in d.encoding.packets] == [2 + 4, 2 + 6]
    assert d.delivered == dict.fromkeys(SUBS, 1)
    with pytest.raises(ValueError, match="MTU"):
        deliver(FIG42, P, frozenset(SUBS), payload=60, mtu_bytes=66, on_oversize="split")
