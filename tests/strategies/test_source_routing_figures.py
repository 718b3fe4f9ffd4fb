"""Worked examples of seed 000 §3.3 (Figs. 3.4-3.7) through the pass-by-pass data plane.

The figures themselves were not extracted, only their text; the example
networks below are rebuilt from every constraint the text states (digest
ch. 1-4 §3.2-3.5):

- Fig. 3.4: N1 forwards to N3 and N2; its stack is ``<N1,x>, [N3 subtree],
  <N1,3>, [N2 subtree]``; ``<N2,2>`` belongs to N2's subtree. So P is on
  port 1 of N1, N3 on port 2, N2 on port 3; N2 serves S1, S2 on ports 1, 2.
- Figs. 3.5/3.6: N1 receives on port 1 and forwards on ports 2 and 3; the
  entries of N4, N5, N6 are at the bottom of the stack; N3 applies a group of
  ports 2, 3, 4 ("mc7"). So N2 is on port 2 and N3 on port 3 of N1, and N3
  forwards to N4, N5, N6 on ports 2-4. Fig. 3.5 uses 4-bit masks: here with
  4-bit ids too, so an entry is exactly one byte.
- Fig. 3.7: N1 forwards to N2 and N3 with a bitmask entry via ports 2 and 3;
  N3 applies an mc-group entry and then a port entry, forwarding on ports 1,
  2 and 3. So N3's subscribers are on ports 1-3 and N1 on port 4.

Switch labels map to topology switches by ``switch_order``; hosts are named
in switch order (P = h1).
"""

from __future__ import annotations

from collections import defaultdict, deque

from sim.dataplanes.packet import Notification
from sim.dataplanes.source_routing.codec import TAG_NAMES, decode_stack
from strategies.base import Knowledge, make_strategy
from topologies.model import build_topology

SUBSCRIBERS = frozenset({"h2", "h3", "h4", "h5", "h6"})  # S1..S5


def network(order, edges, hosts):
    topo = build_topology("fig", edges, order, hosts)
    label = {f"s{i + 1}": name for i, name in enumerate(order)}
    return topo, label


FIG34 = network(["N1", "N3", "N2", "N4", "N5", "N6"],
                [("N1", "N3"), ("N1", "N2"), ("N3", "N4"), ("N3", "N5"), ("N3", "N6")],
                {"N1": 1, "N2": 2, "N4": 1, "N5": 1, "N6": 1})
FIG35 = network(["N1", "N2", "N3", "N4", "N5", "N6"],
                [("N1", "N2"), ("N1", "N3"), ("N3", "N4"), ("N3", "N5"), ("N3", "N6")],
                {"N1": 1, "N2": 2, "N4": 1, "N5": 1, "N6": 1})
FIG37 = network(["N1", "N2", "N3"], [("N1", "N2"), ("N1", "N3")], {"N1": 1, "N2": 2, "N3": 3})


def trace(net, strategy, state, receivers=SUBSCRIBERS, payload=b"\x00" * 8):
    """Walk the notification like the static engine, recording every stack.

    Returns (encoding, arrivals: node -> [stack], emits: switch -> [(port,
    depth, stack)], results: switch -> PipelineResult); stacks are tuples of
    ("N3", value) or ("N3", tag name, value).
    """
    topo, label = net
    names = {topo.switch_id(s): label[s] for s in topo.switches}
    dp, layout = strategy.model(), strategy.layout

    def show(pkt):
        entries = decode_stack(pkt.header + pkt.payload, layout)[0]
        return [(names[e.switch_id], TAG_NAMES[e.tag], e.value) if e.tag
                else (names[e.switch_id], e.value) for e in entries]

    enc = strategy.encode(topo, state, Notification(7, "h1"), receivers, payload)
    arrivals, emits, results = defaultdict(list), defaultdict(list), {}
    first = topo.ports("h1")[1]
    queue = deque((first.neighbor, first.neighbor_port, p) for p in enc.packets)
    while queue:
        node, port, pkt = queue.popleft()
        name = label.get(node, node)
        arrivals[name].append(show(pkt))
        if topo.is_host(node):
            continue
        res = dp.process(node, state.config(node), pkt, port)
        results[name] = res
        for e in res.emitted:
            emits[name].append((e.port, e.depth, show(e.packet)))
            info = topo.ports(node)[e.port]
            queue.append((info.neighbor, info.neighbor_port, e.packet))
    return enc, arrivals, emits, results


def setup(net, name, knowledge=None, **params):
    strategy = make_strategy(name, params)
    state = strategy.install(net[0], knowledge or Knowledge.for_notification("h1", SUBSCRIBERS))
    return strategy, state


def recirculations(results):
    return {n: r.recirculations for n, r in sorted(results.items())}


FULL_34 = [("N1", 2), ("N3", 2), ("N4", 1), ("N3", 3), ("N5", 1), ("N3", 4), ("N6", 1),
           ("N1", 3), ("N2", 1), ("N2", 2)]


def test_fig_3_4a_switch_port_predictive_pruning():
    strategy, state = setup(FIG34, "switch-port")
    enc, arrivals, emits, results = trace(FIG34, strategy, state)
    # N1 = id 0, N3 = 1, N2 = 2, N4..N6 = 3..5: Size 10, then <id, port> pairs.
    assert enc.packets[0].header.hex() == "000a" "0002" "0102" "0301" "0103" "0401" "0104" \
        "0501" "0003" "0201" "0202"
    assert arrivals["N1"] == [FULL_34]
    # N3 gets only its own subtree: no <N2,2> (predictive pruning).
    assert arrivals["N3"] == [[("N3", 2), ("N4", 1), ("N3", 3), ("N5", 1), ("N3", 4), ("N6", 1)]]
    assert arrivals["N2"] == [[("N2", 1), ("N2", 2)]]
    assert arrivals["N4"] == [[("N4", 1)]] and arrivals["N6"] == [[("N6", 1)]]
    assert all(arrivals[h] == [[]] for h in SUBSCRIBERS)
    # Original: 10 passes; clone <N1,2> skips 6 and deletes 3 entries, clone <N1,3> keeps 2.
    assert [(p, d) for p, d, _ in emits["N1"]] == [(2, 10), (3, 10)]
    # (L-1) + sum_j (L-1-p_j): N1 9 + 9 + 2, N3 5 + 5 + 3 + 1, N2 1 + 1 + 0.
    assert recirculations(results) == {"N1": 20, "N2": 2, "N3": 14, "N4": 0, "N5": 0, "N6": 0}
    assert {n: r.circulations_simplified for n, r in results.items()} == {
        "N1": 2, "N3": 3, "N2": 2, "N4": 1, "N5": 1, "N6": 1}
    # read_entry + check_entry in every pass.
    assert all(r.lookups == 2 * r.passes for r in results.values())


def test_fig_3_4b_switch_port_reactive_pruning():
    strategy, state = setup(FIG34, "switch-port", pruning="reactive")
    _, arrivals, emits, results = trace(FIG34, strategy, state)
    assert arrivals["N1"] == [FULL_34]
    # N3 also receives <N2,2> (and the rest of N2's subtree) ...
    assert arrivals["N3"] == [FULL_34[1:]]
    assert ("N2", 2) in arrivals["N3"][0]
    # ... while N2 only gets its own subtree, as with predictive pruning.
    assert arrivals["N2"] == [[("N2", 1), ("N2", 2)]]
    assert arrivals["N4"] == [FULL_34[2:]]
    assert arrivals["N6"] == [FULL_34[6:]]
    assert arrivals["h2"] == [[("N2", 2)]]  # S1 gets the leftover of its sibling S2
    assert [(p, d) for p, d, _ in emits["N1"]] == [(2, 1), (3, 8)]
    assert recirculations(results) == {"N1": 9, "N2": 1, "N3": 8, "N4": 7, "N5": 5, "N6": 3}


def test_fig_3_4_predictive_sends_fewer_bytes_with_more_passes():
    sent = {}
    for pruning in ("predictive", "reactive"):
        strategy, state = setup(FIG34, "switch-port", pruning=pruning)
        _, arrivals, _, results = trace(FIG34, strategy, state)
        sent[pruning] = (sum(len(s) for stacks in arrivals.values() for s in stacks),
                         sum(r.passes for r in results.values()))
    assert sent["predictive"][0] < sent["reactive"][0]
    assert sent["predictive"][1] > sent["reactive"][1]


def test_fig_3_5_switch_bitmask_four_bit_masks():
    strategy, state = setup(FIG35, "switch-bitmask", id_bits=4, bitmask_bits=4)
    enc, arrivals, emits, results = trace(FIG35, strategy, state)
    full = [("N1", 0b0110), ("N2", 0b0011), ("N3", 0b1110), ("N4", 0b0001), ("N5", 0b0001),
            ("N6", 0b0001)]
    # One byte per entry: 4-bit id | 4-bit mask; N1's ingress bit (port 1) is 0.
    assert enc.packets[0].header.hex() == "0006" "06" "13" "2e" "31" "41" "51"
    assert arrivals["N1"] == [full]
    assert arrivals["N2"] == [full[1:]] and arrivals["N3"] == [full[1:]]
    # N5: N1, N2, N3 already removed upstream; N4, N5, N6 reach every switch.
    assert arrivals["N4"] == arrivals["N5"] == arrivals["N6"] == [full[3:]]
    assert all({"N4", "N5", "N6"} <= {e[0] for e in arrivals[n][0]} for n in
               ("N1", "N2", "N3", "N4", "N5", "N6"))
    assert arrivals["h5"] == [[("N6", 1)]] and arrivals["h6"] == [[]]
    assert sorted(p for p, _, _ in emits["N1"]) == [2, 3]
    assert sorted(p for p, _, _ in emits["N3"]) == [2, 3, 4]
    # q_v + m_v - 1: N3 pops N2's entry first; N5 pops N4's, N6 pops N4's and N5's.
    assert recirculations(results) == {"N1": 1, "N2": 1, "N3": 3, "N4": 0, "N5": 1, "N6": 2}


def test_fig_3_6_switch_mcgroup_one_pass_per_switch():
    strategy, state = setup(FIG35, "switch-mcgroup")
    enc, arrivals, emits, results = trace(FIG35, strategy, state)
    n3 = state.config("s3")
    # "N3 has multicast group mc7, which includes ports 2, 3 and 4": here its id is
    # the port bitmask 0b1110 = 14 (the fixed mapping of digest §7.10).
    assert n3.multicast_groups[14].ports == (2, 3, 4)
    assert len(n3.multicast_groups) == 2**4 - 1
    assert arrivals["N3"] == [[("N2", 3), ("N3", 14), ("N4", 1), ("N5", 1), ("N6", 1)]]
    # All three copies leave in the same pass (after one pop pass for N2's entry).
    assert [(p, d) for p, d, _ in emits["N3"]] == [(2, 2), (3, 2), (4, 2)]
    assert recirculations(results) == {"N1": 0, "N2": 0, "N3": 1, "N4": 0, "N5": 1, "N6": 2}
    assert all(r.lookups == r.passes for r in results.values())
    # Same stack length and bytes as switch/bitmask with the same widths.
    bitmask, bstate = setup(FIG35, "switch-bitmask")
    assert trace(FIG35, bitmask, bstate)[0].packets[0].header == enc.packets[0].header


def test_fig_3_7_mixed_bitmask_then_mcgroup_and_port_entries():
    # N3 (s3) holds multicast groups; the controller only installed the group for
    # ports {1, 2} (known receiver set S3, S4), so S5 behind port 3 needs a port entry.
    known = Knowledge.for_notification("h1", frozenset({"h4", "h5"}))
    strategy, state = setup(FIG37, "mixed", knowledge=known, mcgroup_switches=("s3",),
                            groups="used")
    assert set(state.config("s3").multicast_groups) == {0b011}
    enc, arrivals, emits, results = trace(FIG37, strategy, state)
    full = [("N1", "bitmask", 0b0110), ("N2", "bitmask", 0b0011), ("N3", "mcgroup", 0b011),
            ("N3", "port", 3)]
    # id:8 | tag:8 | value:16 (tags: 1 port, 2 bitmask, 3 mc-group).
    assert enc.packets[0].header.hex() == "0004" "00020006" "01020003" "02030003" "02010003"
    assert arrivals["N1"] == [full]
    assert arrivals["N2"] == arrivals["N3"] == [full[1:]]
    # N3: multicast to ports 1, 2 in its 2nd pass, then the port entry in the 3rd.
    assert [(p, d) for p, d, _ in emits["N3"]] == [(1, 2), (2, 2), (3, 3)]
    assert arrivals["h4"] == arrivals["h5"] == [[("N3", "port", 3)]]  # reactive mc copies
    assert arrivals["h6"] == [[]]
    # One pass per entry (+ m-1 per bitmask entry): the original scans the whole stack.
    assert {n: r.passes for n, r in results.items()} == {"N1": 5, "N2": 4, "N3": 3}
    assert sorted(arrivals) == ["N1", "N2", "N3", "h2", "h3", "h4", "h5", "h6"]
