"""The ``bier`` strategy: BIFT install, the pass-by-pass walk, sets, TTL, fast path.

Hand-checked small cases (a line and a star: BIFT entries, copies, passes),
invariants on random topologies (every receiver exactly one copy; passes at a
BFR = its next hops + 2 when its own bit is set; traced pass DAGs), sets
(receivers spanning two sets: two packets from the BFIR), the comparison with
the ``multicast`` strategy, and the fast path against the reference on
random topologies large enough for several sets.

References
----------
RFC 8279 §3 (sets), §6.4-6.5 (BIFT, forwarding); RFC 8296 §2;
uni-tue-kn/p4-bier Bier.p4 (one pass per next hop).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from support.random_topologies import random_topology, scenarios

from sim.dataplanes.bier.codec import BierHeader, bift_id, decapsulate, split_bift_id
from sim.dataplanes.bier.reference import BIFT, CONTINUE_SESSION, DECAP, FORWARD, LOCAL_GROUP
from sim.dataplanes.control_state import StateBuilder, count_writes, diff
from sim.dataplanes.delivery import DelayModel, row_metrics
from sim.dataplanes.packet import Notification, group_mac, payload_for
from sim.engines.static import run_notification
from sim.engines.timed.switch import pass_plan
from strategies.base import Knowledge, make_strategy
from strategies.bier.bift import add_bift, bift_state
from topologies.model import Topology, build_topology
from topologies.registry import SpecError


def line(n: int, hosts: int = 1) -> Topology:
    return build_topology(f"line:{n}", [(i, i + 1) for i in range(n - 1)], range(n), hosts)


def star(leaves: int) -> Topology:
    return build_topology(f"star:{leaves}", [(0, i) for i in range(1, leaves + 1)],
                          range(leaves + 1), 1)


class Spy:
    """Wraps the data plane and keeps (switch, result) of every visit."""

    def __init__(self, inner):
        self.inner, self.name, self.visits = inner, inner.name, []

    def process(self, switch, config, packet, in_port):
        result = self.inner.process(switch, config, packet, in_port)
        self.visits.append((switch, packet, result))
        return result


def walk(topo, receivers, publisher, params=None, delays=DelayModel(), payload=20):
    strategy = make_strategy("bier", params or {})
    spy = Spy(strategy.model())
    strategy.model = lambda: spy  # type: ignore[method-assign]
    state = strategy.install(topo, Knowledge.for_notification(publisher, frozenset(receivers)))
    note = Notification(1, publisher)
    d = run_notification(topo, strategy, state, note, frozenset(receivers),
                         payload_for(note, payload), delays)
    return state, d, spy.visits


def bift(state, switch):
    """{bit position: (action, fbm, port)} of a switch's BIFT (set 0)."""
    out = {}
    for e in state.config(switch).tables[BIFT]:
        (_, ident), (_, bits) = e.match
        assert split_bift_id(ident.value)[2] == 0 and e.priority == 1
        k = bits.value.bit_length()
        assert bits.mask == (1 << k) - 1  # "the lowest set bit is k"
        out[k] = (e.action, e.param("fbm"), dict(e.params).get("port"))
    return out


# -- hand-checked examples ------------------------------------------------------------


def test_line_bift_copies_and_passes():
    """s1 - s2 - s3, one host each (h1 on port 1; s2: h2 port 1, s1 port 2, s3 port 3).
    BFR-ids 1, 2, 3 in switch order; h1 publishes to h2 and h3."""
    topo = line(3)
    delays = DelayModel(feed_in_s=1e-4, switch_s=1e-4, pass_s=1e-5)
    state, d, visits = walk(topo, {"h2", "h3"}, "h1", delays=delays)
    assert bift(state, "s1") == {1: (DECAP, 0b001, None), 2: (FORWARD, 0b110, 2),
                                 3: (FORWARD, 0b110, 2)}
    assert bift(state, "s2") == {1: (FORWARD, 0b001, 2), 2: (DECAP, 0b010, None),
                                 3: (FORWARD, 0b100, 3)}
    assert bift(state, "s3") == {1: (FORWARD, 0b011, 2), 2: (FORWARD, 0b011, 2),
                                 3: (DECAP, 0b100, None)}
    assert all(state.config(s).clone_sessions[CONTINUE_SESSION].port == 1
               for s in topo.switches)
    # one local group per BFER with receivers: replicas to the receivers' ports
    assert state.config("s1").multicast_groups == {}
    assert [g.ports for g in state.config("s2").multicast_groups.values()] == [(1,)]
    assert [e.match[0][1].value for e in state.config("s3").tables[LOCAL_GROUP]] == \
        [group_mac(1)]
    # s1: one next hop (1 pass); s2: decap + local pass + forward to s3 (3); s3: decap + local
    assert [(s, r.passes, r.recirculations, r.lookups) for s, _, r in visits] == \
        [("s1", 1, 0, 1), ("s2", 3, 2, 3), ("s3", 2, 1, 2)]
    s2 = visits[1][2]
    assert s2.pass_parents == (-1, 0, 0)  # the local pass, then the chain's next pass
    assert [(e.port, e.depth, e.after_pass) for e in s2.emitted] == [(1, 2, 1), (3, 2, 2)]
    local, fwd = (e.packet for e in s2.emitted)
    header, _ = decapsulate(fwd)
    assert (header.bitstring, header.ttl) == (0b100, 62)  # 64, minus s1 and s2
    assert local.header == b"" and local.ethertype == 0x88B5  # the carried event frame
    assert d.delivered == {"h2": 1, "h3": 1} and d.drops == 0
    assert d.frames == 5 and (d.passes, d.recirculations) == (6, 3)
    t_s2 = 1e-4 + 1e-4  # feed-in, s1
    assert d.first_arrival_s["h2"] == pytest.approx(t_s2 + 1e-4 + 1e-5)
    assert d.first_arrival_s["h3"] == pytest.approx(t_s2 + 1e-4 + 1e-5 + 1e-4 + 1e-5)


def test_star_center_serves_one_leaf_per_pass():
    """Center s1 (BFR-id 1) and leaves s2..s5: h2 publishes to h3, h4, h5. The center's
    BIFT has one F-BM per leaf; it runs one pass per leaf it serves."""
    topo = star(4)
    state, d, visits = walk(topo, {"h3", "h4", "h5"}, "h2")
    assert bift(state, "s1") == {1: (DECAP, 1, None), **{k: (FORWARD, 1 << (k - 1), k)
                                                         for k in range(2, 6)}}
    assert bift(state, "s3") == {k: (FORWARD, 0b11011, 2) for k in (1, 2, 4, 5)} | \
        {3: (DECAP, 0b00100, None)}
    assert state.entries == 5 * 5 + 3  # BIFTs + one local entry per receiving BFER
    by_switch = {s: r for s, _, r in visits}
    assert by_switch["s2"].passes == 1
    assert (by_switch["s1"].passes, by_switch["s1"].recirculations) == (3, 2)
    assert [e.port for e in by_switch["s1"].emitted] == [3, 4, 5]  # bit order: s3, s4, s5
    assert [e.depth for e in by_switch["s1"].emitted] == [1, 2, 3]
    assert all(by_switch[s].passes == 2 for s in ("s3", "s4", "s5"))
    assert d.delivered == {"h3": 1, "h4": 1, "h5": 1}
    assert (d.frames, d.passes) == (1 + 1 + 3 + 3, 1 + 3 + 6)


def test_publishers_own_switch_delivers_locally_and_forwards():
    topo = line(3, hosts=2)  # s1: h1 h2, s2: h3 h4, s3: h5 h6
    _, d, visits = walk(topo, {"h2", "h5", "h6"}, "h1")
    s1 = visits[0][2]
    assert s1.passes == 3  # decap, local delivery, forward
    assert d.delivered == {"h2": 1, "h5": 1, "h6": 1} and d.false_positives == 0


# -- invariants ---------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(case=scenarios(max_switches=16), bsl=st.sampled_from([64, 128, 256]))
def test_every_receiver_gets_exactly_one_copy(case, bsl):
    topo, pub, recv = case
    state, d, visits = walk(topo, recv, pub, {"bsl_bits": bsl})
    assert d.delivered == dict.fromkeys(recv, 1)
    assert d.drops == 0
    assert len(d.encoding.packets) == (1 if recv else 0)
    for switch, packet, result in visits:
        header, _ = decapsulate(packet)
        own = bool(header.bitstring >> topo.switch_id(switch) & 1)  # BFR-id = index + 1
        hops = {e.port for e in result.emitted if not topo.is_host(
            topo.ports(switch)[e.port].neighbor)}
        assert result.passes == len(hops) + 2 * own
        assert result.recirculations == result.passes - 1 == result.lookups - 1
        assert len(result.pass_parents) == result.passes
        plan = pass_plan(result)  # consistent trace
        assert plan.traced
        for e in result.emitted:  # each copy's chain is `depth` passes long
            j, depth = e.after_pass, 1
            while result.pass_parents[j] >= 0:
                j, depth = result.pass_parents[j], depth + 1
            assert depth == e.depth


def test_receivers_in_two_sets_get_two_packets():
    """70 BFERs at BSL 64: BFR-ids 1-64 in set 0, 65-70 in set 1 (RFC 8279 §3). (A line
    this long needs a TTL above the default 64.)"""
    topo = line(70)
    recv = {"h2", "h64", "h65", "h70"}
    state, d, _ = walk(topo, recv, "h1", {"ttl": 255})
    packets = d.encoding.packets
    headers = [decapsulate(p)[0] for p in packets]
    assert [split_bift_id(h.bift_id) for h in headers] == [(64, 0, 0), (64, 0, 1)]
    assert [h.bitstring for h in headers] == [1 << 1 | 1 << 63, 1 | 1 << 5]
    assert all(h.bfir_id == 1 for h in headers)
    assert d.delivered == dict.fromkeys(recv, 1)
    assert len(state.config("s1").tables[BIFT]) == 70
    # one set: one packet; BSL 128 holds all 70
    assert len(walk(topo, {"h65", "h70"}, "h1")[1].encoding.packets) == 1
    assert len(walk(topo, recv, "h1", {"bsl_bits": 128})[1].encoding.packets) == 1


def test_bfers_all_gives_every_switch_a_bfr_id():
    topo = build_topology("t", [(0, 1), (1, 2)], range(3), {0: 1, 1: 0, 2: 1})
    hosts_only = make_strategy("bier").install(topo, Knowledge())
    every = make_strategy("bier", {"bfers": "all"}).install(topo, Knowledge())
    assert len(hosts_only.config("s2").tables[BIFT]) == 2
    assert len(every.config("s2").tables[BIFT]) == 3
    _, d, _ = walk(topo, {"h2"}, "h1", {"bfers": "all"})
    assert decapsulate(d.encoding.packets[0])[0].bitstring == 0b100  # s3 has BFR-id 3


# -- the comparison with the multicast strategy ----------------------------------------


def multicast(topo, pub, recv, delays):
    strategy = make_strategy("multicast")
    state = strategy.install(topo, Knowledge.for_notification(pub, frozenset(recv)))
    note = Notification(1, pub)
    return run_notification(topo, strategy, state, note, frozenset(recv),
                            payload_for(note, 20), delays)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 30), seed=st.integers(0, 2**16), hosts=st.integers(1, 2),
       data=st.data())
def test_on_trees_bier_uses_the_multicast_frames(n, seed, hosts, data):
    """With one path between any two switches (a tree network) BIER's copies follow the
    multicast tree: the same frames per link, hosts get the same frames."""
    topo = random_topology(n, 0, seed, hosts=hosts)
    pub = data.draw(st.sampled_from(topo.hosts))
    recv = data.draw(st.frozensets(st.sampled_from(topo.hosts)).map(lambda r: r - {pub}))
    _, d, _ = walk(topo, recv, pub)
    m = multicast(topo, pub, recv, DelayModel())
    assert {k: v[0] for k, v in d.links.items()} == {k: v[0] for k, v in m.links.items()}
    assert {k: v for k, v in d.links.items() if k[1] in recv} == \
        {k: v for k, v in m.links.items() if k[1] in recv}


@settings(max_examples=60, deadline=None)
@given(case=scenarios(max_switches=20))
def test_on_any_topology_bier_follows_shortest_paths(case):
    """With equal-cost paths the two may pick different ones (BIER's next hops are rooted
    at the BFER, the multicast tree at the publisher), so the frames may differ; both
    deliver exactly, at the same hop count, and hand every receiver the same frame."""
    topo, pub, recv = case
    delays = DelayModel(feed_in_s=0.0, switch_s=1e-4, pass_s=0.0)
    _, d, _ = walk(topo, recv, pub, delays=delays)
    m = multicast(topo, pub, recv, delays)
    assert d.delivered == m.delivered == dict.fromkeys(recv, 1)
    assert d.first_arrival_s == m.first_arrival_s
    assert {k: v for k, v in d.links.items() if k[1] in recv} == \
        {k: v for k, v in m.links.items() if k[1] in recv}
    event("same frames" if d.frames == m.frames else "different frames")


# -- TTL, parameters, state ----------------------------------------------------------


def test_ttl_stops_copies_but_not_local_delivery():
    """Line s1..s5, TTL 2: s1 forwards with TTL 1, s2 delivers locally and drops the copy
    it would send on (RFC 8296 §2.1.1.2)."""
    topo = line(5)
    strategy = make_strategy("bier", {"ttl": 2})
    recv = frozenset({"h2", "h4"})
    state = strategy.install(topo, Knowledge.for_notification("h1", recv))
    note = Notification(1, "h1")
    d = run_notification(topo, strategy, state, note, recv, payload_for(note, 20))
    assert d.delivered == {"h2": 1} and d.false_negatives == 1 and d.drops == 1
    assert ("s2", "s3") not in d.links
    fast = strategy.fast_path(topo, DelayModel())
    assert fast.metrics(["h1"], [recv], 20) == [None]  # the reference runs expiring copies
    assert fast.metrics(["h1"], [frozenset({"h2"})], 20) != [None]


@pytest.mark.parametrize("params, message", [
    ({"bsl_bits": "100"}, "bsl_bits must be one of 64, 128, 256"),
    ({"bfers": "edge"}, "'bfers' must be one of hosts, all"),
    ({"ttl": "0"}, "ttl must be in 1..255"),
    ({"subdomain": "256"}, "subdomain must be in 0..255"),
    ({"mtu_bytes": "0"}, "mtu_bytes must be > 0"),
])
def test_bad_parameters_name_the_field(params, message):
    with pytest.raises(SpecError, match=message):
        make_strategy("bier", params)


def test_too_many_bfers_for_the_set_identifier():
    """256 sets of 64 bits hold 16,384 BFR-ids; one more BFER does not fit."""
    topo = line(300)
    assert make_strategy("bier").domain(topo).sets == 5  # 300 BFERs at 64 bits
    big = build_topology("more", [(i, i + 1) for i in range(16384)], range(16385), 1)
    with pytest.raises(SpecError, match="16385 BFERs need more BFR-ids than bsl_bits=64"):
        make_strategy("bier").check_applicable(big, None)


def test_oversized_frames_raise():
    from strategies.frame_size import OversizeError

    topo = line(3)
    strategy = make_strategy("bier", {"mtu_bytes": 100})
    recv = frozenset({"h3"})
    state = strategy.install(topo, Knowledge.for_notification("h1", recv))
    note = Notification(1, "h1")
    with pytest.raises(OversizeError, match="exceed the 100 B MTU"):
        strategy.encode(topo, state, note, recv, payload_for(note, 80))
    assert strategy.fast_path(topo, DelayModel()).metrics(["h1"], [recv], 80) == [None]


@settings(max_examples=20, deadline=None)
@given(case=scenarios(max_switches=12), other=st.data())
def test_the_bift_is_shared_and_built_like_the_base_rules(case, other):
    topo, pub, recv = case
    strategy = make_strategy("bier")
    plain = StateBuilder()
    add_bift(plain, topo, strategy.domain(topo), 0)
    assert bift_state(topo, strategy.domain(topo), 0) == plain.build(topo.switches)
    second = other.draw(st.frozensets(st.sampled_from(topo.hosts)).map(lambda r: r - {pub}))
    a = strategy.install(topo, Knowledge.for_notification(pub, recv))
    b = strategy.install(topo, Knowledge.for_notification(pub, second))
    assert count_writes(a, b) == len(diff(a, b))
    groups = {topo.host_switch(h) for h in recv | second}
    assert all(a.config(s).tables[BIFT] is b.config(s).tables[BIFT] for s in topo.switches)
    assert all(a.config(s) is b.config(s) for s in topo.switches if s not in groups)


# -- the fast path --------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(n=st.one_of(st.integers(2, 30), st.integers(65, 150)), extra=st.integers(0, 60),
       seed=st.integers(0, 2**16), hosts=st.integers(1, 2),
       bsl=st.sampled_from([64, 64, 128, 256]), ttl=st.sampled_from([255, 255, 3]),
       share=st.floats(0.05, 0.9), data=st.data())
def test_fast_path_equals_the_reference_with_several_sets(n, extra, seed, hosts, bsl, ttl,
                                                          share, data):
    """Random topologies up to 150 BFERs (up to three sets at 64 bits), both kernels;
    a small TTL makes the fast path decline exactly the notifications whose copies
    expire."""
    topo = random_topology(n, min(extra, n), seed, hosts=hosts)
    rng = np.random.default_rng(seed)
    pub = topo.hosts[int(rng.integers(len(topo.hosts)))]
    recv = frozenset(h for h in topo.hosts if h != pub and rng.random() < share)
    delays = DelayModel(**{k: data.draw(st.sampled_from([0.0, 1e-5, 1e-4, 7.7e-3]))
                           for k in ("feed_in_s", "switch_s", "pass_s")})
    strategy = make_strategy("bier", {"bsl_bits": bsl, "ttl": ttl})
    state = strategy.install(topo, Knowledge.for_notification(pub, recv))
    note = Notification(7, pub)
    payload = payload_for(note, 50)
    ref = run_notification(topo, strategy, state, note, recv, payload, delays)
    fast = strategy.fast_path(topo, delays)
    for impl in fast.implementations:
        variant = fast.using(impl)
        got = variant.delivery(state, note, recv, payload)
        metrics = variant.metrics([pub], [recv], 50)[0]
        if got is None:
            assert metrics is None
            assert not recv or ref.drops > 0  # only empty sets and expiring copies
            event("declined")
            continue
        event(f"compared, {len(ref.encoding.packets)} packet(s)")
        assert got == ref, impl
        assert metrics == row_metrics(ref), impl


def test_fast_path_batches_equal_one_by_one():
    topo = random_topology(90, 40, 3, hosts=2)
    fast = make_strategy("bier").fast_path(topo, DelayModel(pass_s=3e-6))
    rng = np.random.default_rng(2)
    pubs = [topo.hosts[int(i)] for i in rng.integers(len(topo.hosts), size=30)]
    sets = [frozenset(h for h in topo.hosts if h != p and rng.random() < 0.3) for p in pubs]
    together = fast.metrics(pubs, sets, 50)
    assert together == [fast.metrics([p], [r], 50)[0] for p, r in zip(pubs, sets, strict=True)]
    assert all(m is not None for m in together)
    assert {m["packets_sent"] for m in together} == {2}  # 90 BFERs: two sets


def test_no_fast_path_on_a_disconnected_network_or_for_subclasses():
    from strategies.bier.bier import Bier

    topo = Topology(name="two", switches=("s1", "s2"), hosts=(), links=())
    assert make_strategy("bier").fast_path(topo, DelayModel()) is None
    sub = type("SubBier", (Bier,), {})
    assert sub().fast_path(line(3), DelayModel()) is None
    with pytest.raises(ValueError, match="impl must be auto, jit or python"):
        make_strategy("bier").fast_path(line(3), DelayModel()).using("cuda")


def test_header_fields_the_bfir_sets():
    topo = line(4)
    strategy = make_strategy("bier", {"subdomain": 7, "ttl": 9, "bsl_bits": 256})
    recv = frozenset({"h3", "h4"})
    state = strategy.install(topo, Knowledge.for_notification("h2", recv))
    enc = strategy.encode(topo, state, Notification(1, "h2"), recv, b"x")
    (packet,) = enc.packets
    header, frame = decapsulate(packet)
    assert header == BierHeader(bift_id=bift_id(256, 7, 0), ttl=9, bsl=3, bitstring=0b1100,
                                bfir_id=2)
    assert (frame.dst_mac, frame.payload) == (group_mac(1), b"x")
    assert enc.header_entries == 1 and enc.header_bytes == 12 + 32 + 14


# -- recirculation cost in the timed engine --------------------------------------------


def test_timed_throughput_falls_when_recirculation_capacity_is_short():
    """One pass per next hop costs recirculations (P4-BIER; Merling et al., JNCA 2020): with
    a slow recirculation port (10 Mbit/s, 8 frames of buffer) the same offered load
    loses deliveries to recirculation drops, with unlimited software recirculation it
    does not."""
    from experiments.cells.pipeline import run_cell
    from experiments.cells.spec import parse_spec_dict

    def first_row(recirc_port_bps):
        spec = parse_spec_dict({
            "experiment": {"name": "bier-recirc", "engine": "timed", "notifications": 4,
                           "seeds": [1]},
            "grid": {"topology": ["jellyfish:switches=16,degree=3,seed=1"],
                     "strategy": ["bier"], "receivers": ["uniform:percent=30"]},
            "timed": {"rate_hz": 2000.0, "duration_s": 0.02,
                      "recirc_port_bps": recirc_port_bps, "recirc_buffer_frames": 8},
        })
        (cell,) = spec.cells()
        rows = run_cell(cell).to_pylist()
        assert sum(r["recirculations"] for r in rows) > 0  # the rows carry the pass cost
        return rows[0]

    free, short = first_row("none"), first_row(1e7)
    assert free["cell_delivery_ratio"] == 1.0 and free["cell_drops_recirc"] == 0
    assert short["cell_drops_recirc"] > 0
    assert short["cell_deliveries_per_s"] < 0.8 * free["cell_deliveries_per_s"]
    assert short["cell_offered_load_hz"] == free["cell_offered_load_hz"]


@pytest.mark.parametrize("topology", ["fattree:k=4", "elmo:pods=2,leaves=4,hosts=3",
                                      "jellyfish:switches=40,degree=4,hosts=2,seed=3"])
def test_cells_run_exactly_on_datacenter_and_random_networks(topology):
    """Whole cells (workload, installs, control writes, engine, rows) on a fat tree, the
    Elmo three-tier Clos and a jellyfish: exact deliveries, the same rows on the fast
    path and the reference, recirculations in the rows."""
    from experiments.cells.pipeline import cell_rows
    from experiments.cells.spec import parse_spec_dict

    spec = parse_spec_dict({
        "experiment": {"name": "bier-nets", "notifications": 6, "seeds": [2],
                       "payload_bytes": [50]},
        "grid": {"topology": [topology], "strategy": ["bier"],
                 "receivers": ["uniform:percent=30"]},
        "strategy_params": {"bier": {"bsl_bits": [64, 128]}},
    }, "<bier>")
    for cell in spec.cells():
        rows = cell_rows(cell, "reference")
        assert rows == cell_rows(cell, "auto")
        assert all(r["false_negatives"] == r["false_positives"] == r["duplicates"] == 0
                   for r in rows)
        assert all(r["recirculations"] > 0 and r["control_writes"] >= 0 for r in rows)
