"""ALM broker-overlay baselines (seed 000 §3.5.4): alm-all, alm-fork, alm-mcgroup."""

from __future__ import annotations

import pytest
from hypothesis import given
from support.random_topologies import random_topology, scenarios

from sim.dataplanes.delivery import DelayModel, broker_node
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.trees import shortest_path_tree
from sim.engines.static import BrokerHost, EngineError, run_notification
from strategies.alm.brokers import broker_port, flow_state, overlay_plan
from strategies.base import Knowledge, make_strategy
from topologies.model import build_topology

ALM = ("alm-all", "alm-fork", "alm-mcgroup")


def deliver(topo, name, publisher, receivers, payload=50, delays=DelayModel()):
    strategy = make_strategy(name)
    state = strategy.install(topo, Knowledge.for_notification(publisher, receivers))
    note = Notification(0, publisher)
    return run_notification(topo, strategy, state, note, receivers, payload_for(note, payload),
                            delays)


def broker_frames(d, direction):
    """Frames on switch->broker ("in") or broker->switch ("out") links, per switch."""
    out = {}
    for (src, dst), (frames, _) in d.links.items():
        if direction == "in" and dst.startswith("b:"):
            out[src] = frames
        elif direction == "out" and src.startswith("b:"):
            out[dst] = frames
    return out


def out_degrees(topo, pub, recv):
    tree = shortest_path_tree(topo, topo.host_switch(pub), recv)
    return {sw: len(tree.children.get(sw, ())) for sw in tree.switches(topo)} if recv else {}


@given(scenarios())
def test_every_receiver_exactly_once(case):
    topo, pub, recv = case
    for name in ALM:
        d = deliver(topo, name, pub, recv)
        assert d.delivered == {h: 1 for h in recv}, name
        assert d.false_positives == d.false_negatives == d.duplicates == d.drops == 0, name


@given(scenarios())
def test_alm_all_counts_every_broker_link_crossing(case):
    """In once, out once per next hop: 3|V_T| + 2|S| - 1 frames in all."""
    topo, pub, recv = case
    d = deliver(topo, "alm-all", pub, recv, payload=77)
    degrees = out_degrees(topo, pub, recv)
    assert broker_frames(d, "in") == {sw: 1 for sw in degrees}
    assert broker_frames(d, "out") == degrees
    expected = 3 * len(degrees) + 2 * len(recv) - 1 if recv else 0
    assert d.frames == expected
    assert d.bytes == d.frames * (14 + 77)


@given(scenarios())
def test_fork_variants_use_brokers_only_at_fork_nodes(case):
    topo, pub, recv = case
    degrees = out_degrees(topo, pub, recv)
    forks = {sw: k for sw, k in degrees.items() if k >= 2}
    fork = deliver(topo, "alm-fork", pub, recv)
    mc = deliver(topo, "alm-mcgroup", pub, recv)
    assert broker_frames(fork, "in") == broker_frames(mc, "in") == {sw: 1 for sw in forks}
    assert broker_frames(fork, "out") == forks
    assert broker_frames(mc, "out") == {sw: 1 for sw in forks}


@given(scenarios())
def test_frames_mcgroup_le_fork_le_all(case):
    """Fork saves 2 frames per tunneling switch; mc-groups saves d_v - 1 per fork node."""
    topo, pub, recv = case
    degrees = out_degrees(topo, pub, recv)
    all_, fork, mc = (deliver(topo, name, pub, recv).frames for name in ALM)
    assert mc <= fork <= all_
    relays = sum(1 for k in degrees.values() if k < 2)
    assert fork == all_ - 2 * relays
    assert mc == fork - sum(k - 1 for k in degrees.values() if k >= 2)


def test_random_jellyfish_frame_ordering_and_unicast_below_alm_all_when_sparse():
    from topologies.specs import load_topology

    topo = load_topology("jellyfish:switches=64,degree=4,hosts=1,seed=3")
    pub, recv = topo.hosts[5], frozenset(topo.hosts[10:16])  # ~10 % receivers
    frames = {name: deliver(topo, name, pub, recv).frames for name in (*ALM, "unicast")}
    assert frames["alm-mcgroup"] <= frames["alm-fork"] < frames["alm-all"]
    assert frames["unicast"] < frames["alm-all"]  # seed 000 Fig. 3.13 at low density


def star_of_chains():
    """s1 with three 2-switch chains s1-s2-s5, s1-s3-s6, s1-s4-s7; one host each."""
    edges = [(1, 2), (1, 3), (1, 4), (2, 5), (3, 6), (4, 7)]
    return build_topology("star-of-chains", edges, range(1, 8), 1)


def test_worst_case_delays_of_the_three_variants():
    """Seed 000 §3.5.4 constants: feed-in 0.1, switch 0.1, broker 2 ms.

    mc-groups: 0.1 (feed-in) + 0.1 (s1) + 2.1 (broker, one packet) + 3 x 0.1 = 2.6 ms.
    fork: the s1 broker feeds 3 copies in sequence, the last 0.2 ms later: 2.8 ms.
    all: the last copy also visits the brokers of s4 and s7: 7.2 ms.
    """
    topo = star_of_chains()
    pub = topo.hosts_of("s1")[0]
    recv = frozenset(topo.hosts_of(s)[0] for s in ("s5", "s6", "s7"))
    delays = {name: deliver(topo, name, pub, recv).delay_worst_s * 1e3 for name in ALM}
    assert delays["alm-mcgroup"] == pytest.approx(2.6)
    assert delays["alm-fork"] == pytest.approx(2.8)
    assert delays["alm-all"] == pytest.approx(7.2)
    assert delays["alm-all"] > delays["alm-fork"] > delays["alm-mcgroup"]


def test_chain_without_forks_is_tunneled_end_to_end():
    topo = build_topology("line", [(1, 2), (2, 3)], [1, 2, 3], 1)
    pub, recv = "h1", frozenset({"h3"})
    fork = deliver(topo, "alm-fork", pub, recv)
    assert broker_frames(fork, "in") == {}
    assert fork.frames == 4 and fork.delay_worst_s == pytest.approx(0.4e-3)
    every = deliver(topo, "alm-all", pub, recv)
    assert every.frames == 3 * 3 + 2 - 1
    # 0.1 feed-in, then per switch: 0.1 switch + 2.1 broker (+ 0.1 switch to the next hop)
    assert every.delay_worst_s == pytest.approx(7.0e-3)


def test_broker_links_are_named_and_ports_are_spare():
    topo = star_of_chains()
    d = deliver(topo, "alm-all", "h1", frozenset({"h5"}))
    assert ("s1", broker_node("s1")) in d.links and (broker_node("s1"), "s1") in d.links
    strategy = make_strategy("alm-all")
    assert isinstance(strategy, BrokerHost)
    for sw in topo.switches:
        assert broker_port(topo, sw) not in topo.ports(sw)


def test_first_switch_uses_a_broker_only_if_it_forks():
    topo = star_of_chains()
    one = overlay_plan(topo, "h1", frozenset({"h5"}), True)
    assert one.entry == "h5" and one.brokers == ()
    two = overlay_plan(topo, "h1", frozenset({"h5", "h6"}), True)
    assert two.entry == "s1" and two.targets == {"s1": ("h5", "h6")}
    # the local subscriber counts towards the out-degree
    local = overlay_plan(topo, "h1", frozenset({"h2", "h5"}), True)
    assert local.entry == "s2" and local.targets == {"s2": ("h2", "h5")}
    every = overlay_plan(topo, "h1", frozenset({"h2", "h5"}), False)
    assert every.entry == "s1" and every.brokers == ("s1", "s2", "s5")


def test_mcgroup_state_has_one_group_per_fork_switch_with_rid_rewrites():
    topo = star_of_chains()
    recv = frozenset({"h5", "h6", "h7"})
    strategy = make_strategy("alm-mcgroup")
    state = strategy.install(topo, Knowledge.for_notification("h1", recv))
    assert state.multicast_groups == 1
    group = state.config("s1").multicast_groups[1]
    assert len(group.replicas) == 3 and len({rid for _, rid in group.replicas}) == 3
    assert state.config("s1").entry_count("MyEgress.replica_dst") == 3
    assert state.config("s1").entry_count("MyIngress.broker_group") == 1
    assert state.publisher_info["broker_groups"] == {"s1": {"h5,h6,h7": 1}}
    # the flows do not depend on the receivers: shared with the plain flow state
    base = flow_state(topo, False)
    assert state.config("s1").tables["MyIngress.l2_forward"] is \
        base.config("s1").tables["MyIngress.l2_forward"]
    assert state.config("s2") is base.config("s2")


def test_alm_dataplane_replicates_and_rewrites_per_rid():
    """One broker packet in, one copy per next overlay node out, each to its own MAC."""
    from sim.dataplanes.alm.reference import AlmDataPlane
    from sim.dataplanes.packet import Packet, group_mac, host_mac
    from strategies.alm.brokers import broker_mac

    topo = star_of_chains()
    recv = frozenset({"h5", "h6", "h7"})
    state = make_strategy("alm-mcgroup").install(topo, Knowledge.for_notification("h1", recv))
    frame = Packet(group_mac(1), broker_mac(topo, "s1"), 0x88B5, b"", b"x" * 10)
    result = AlmDataPlane().process("s1", state.config("s1"), frame, broker_port(topo, "s1"))
    assert result.lookups == 2 + 3 and result.passes == 1 and result.recirculations == 0
    got = {(e.port, e.packet.dst_mac) for e in result.emitted}
    # the next overlay nodes are the subscribers themselves: s2..s4 only tunnel
    assert got == {(topo.port_to("s1", s), host_mac(topo, h))
                   for s, h in (("s2", "h5"), ("s3", "h6"), ("s4", "h7"))}
    unicast = Packet(host_mac(topo, "h5"), broker_mac(topo, "s1"), 0x88B5, b"", b"")
    one = AlmDataPlane().process("s1", state.config("s1"), unicast, broker_port(topo, "s1"))
    assert one.lookups == 1 and [e.port for e in one.emitted] == [topo.port_to("s1", "s2")]


def test_no_receivers_sends_nothing():
    topo = star_of_chains()
    for name in ALM:
        d = deliver(topo, name, "h1", frozenset())
        assert d.frames == 0 and d.encoding.packets == ()


def test_other_strategies_still_reject_unknown_ports():
    """The broker hook is opt-in: a plain strategy emitting to a spare port still fails."""
    from sim.dataplanes.control_state import ControlState, SwitchConfig
    from sim.dataplanes.l2.reference import FORWARD, TABLE
    from sim.dataplanes.packet import host_mac
    from strategies.l2.rules import l2_entry

    topo = random_topology(4, 1, seed=2)
    strategy = make_strategy("unicast")
    assert not isinstance(strategy, BrokerHost)
    pub, target = topo.hosts_of("s1")[0], topo.hosts_of("s2")[0]
    spare = broker_port(topo, "s1")
    state = ControlState({"s1": SwitchConfig(
        tables={TABLE: (l2_entry(host_mac(topo, target), FORWARD, spare),)})})
    note = Notification(0, pub)
    with pytest.raises(EngineError, match=f"port {spare}"):
        run_notification(topo, strategy, state, note, frozenset({target}), payload_for(note, 10))
