"""Invariants of the ch. 3 source-routing strategies over random topologies (seed 000 §3.3-3.5).

Closed forms (digest §3.2-3.4, §3.11) are computed here from the delivery
tree, independently of the encoders; mixed stacks from the stacks that
actually arrive.
"""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import scenarios

from sim.dataplanes.packet import ETH_HEADER_BYTES, Notification, payload_for
from sim.dataplanes.source_routing.codec import TAG_BITMASK, TAG_PORT, decode_stack
from sim.dataplanes.trees import Tree, shortest_path_tree, steiner_tree
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.frame_size import OversizeError
from topologies.model import build_topology
from topologies.registry import SpecError

CONFIGS = {
    "port-predictive": ("switch-port", {}),
    "port-reactive": ("switch-port", {"pruning": "reactive"}),
    "bitmask": ("switch-bitmask", {}),
    "port-narrow-1-byte": ("switch-port", {"id_bits": 5, "port_bits": 3, "size_bits": 8}),
    "bitmask-steiner-largest-first": ("switch-bitmask", {"tree": "steiner",
                                                         "stack_order": "largest-first"}),
    "mcgroup-all": ("switch-mcgroup", {}),
    "mcgroup-subsets": ("switch-mcgroup", {"groups": "subsets", "subsets": 3}),
    "mcgroup-used-sequential": ("switch-mcgroup", {"groups": "used", "group_ids": "sequential"}),
    "mixed": ("mixed", {}),
    "mixed-partial-groups": ("mixed", {"mcgroup_max_ports": 3, "groups": "used",
                                       "fallback": "port", "pruning": "predictive"}),
    "mixed-reactive-bitmask-remainder": ("mixed", {"mcgroup_max_ports": 4, "groups": "used",
                                                   "remainder": "bitmask",
                                                   "pruning": "reactive"}),
}


def knowledge_for(config, publisher, receivers):
    if CONFIGS[config][1].get("groups") == "used" and CONFIGS[config][0] == "mixed":
        # The controller knows only part of the set: some switches need partial covers.
        return Knowledge.for_notification(publisher, frozenset(sorted(receivers)[::2]))
    return Knowledge.for_notification(publisher, receivers)


def walk(topo, strategy, state, packets, publisher):
    """Arriving stacks per switch and every emitted frame, as the static engine routes them."""
    dp, layout = strategy.model(), strategy.layout
    arrivals, frames = {}, []
    first = topo.ports(publisher)[1]
    queue = deque((first.neighbor, first.neighbor_port, p) for p in packets)
    while queue:
        node, port, pkt = queue.popleft()
        frames.append((node, pkt))
        if topo.is_host(node):
            continue
        arrivals.setdefault(node, []).append(decode_stack(pkt.header + pkt.payload, layout)[0])
        for e in dp.process(node, state.config(node), pkt, port).emitted:
            info = topo.ports(node)[e.port]
            queue.append((info.neighbor, info.neighbor_port, e.packet))
    return arrivals, frames


# -- closed forms from the tree (digest §3.11) -----------------------------


def sized_first(tree):
    """The same tree with children reordered, largest subtree (node count) first."""
    size = {}
    for v in reversed(list(tree.preorder())):
        size[v] = 1 + sum(size[c] for c in tree.children.get(v, ()))
    kids = {v: tuple(sorted(cs, key=lambda c: -size[c])) for v, cs in tree.children.items()}
    return Tree(root=tree.root, parent=tree.parent, children=kids)


def preorder_pairs(topo, tree):
    pairs = []

    def visit(v):
        for c in tree.children.get(v, ()):
            pairs.append((v, c))
            if not topo.is_host(c):
                visit(c)

    visit(tree.root)
    return pairs


def port_closed_form(topo, tree, pruning):
    below = {}
    for v in reversed(list(tree.preorder())):
        below[v] = sum(1 + below[c] for c in tree.children.get(v, ()))
    pairs = preorder_pairs(topo, tree)
    at = {c: i for i, (_, c) in enumerate(pairs)}
    out = {}
    for v in tree.switches(topo):
        if pruning == "reactive":
            length = len(pairs) if v == tree.root else len(pairs) - at[v] - 1
            out[v] = length - 1
            continue
        length, pos, total = below[v], 0, below[v] - 1
        for c in tree.children[v]:
            total += length - 1 - pos
            pos += 1 + below[c]
        out[v] = total
    return out


def mask_closed_form(topo, tree, extra_passes_per_switch):
    """q_v + m_v - 1 (bitmask) or q_v + c - 1 (mc-group, m_v := c)."""
    order = [v for v in tree.preorder() if not topo.is_host(v)]
    idx = {v: i for i, v in enumerate(order)}
    out = {}
    for v in order:
        q = 0 if v == tree.root else idx[v] - idx[tree.parent[v]] - 1
        out[v] = q + extra_passes_per_switch(v) - 1
    return out


def mixed_closed_form(topo, state, arrivals, pruning):
    """Original: one pass per entry (+ m-1 per own bitmask); predictive copies L-1-p each."""
    out = {}
    for sw, (stack,) in arrivals.items():
        sid, length = topo.switch_id(sw), len(stack)
        passes, extra = length, 0
        for p, e in enumerate(stack):
            if e.switch_id != sid:
                continue
            if e.tag == TAG_BITMASK:
                copies = e.value.bit_count()
                passes += copies - 1
            elif e.tag == TAG_PORT:
                copies = 1
            else:
                copies = len(state.config(sw).multicast_groups[e.value].ports)
            predictive = pruning == "predictive" or (pruning == "per-type" and e.tag == TAG_PORT)
            if predictive:
                extra += copies * (length - 1 - p)
        out[sw] = passes - 1 + extra
    return out


@pytest.mark.parametrize("config", sorted(CONFIGS))
@given(case=scenarios(min_switches=4, max_switches=30))
def test_exactly_once_and_closed_form_recirculations(config, case):
    topo, pub, recv = case
    name, params = CONFIGS[config]
    strategy = make_strategy(name, params)
    if topo.max_switch_ports >= 1 << params.get("port_bits", 8):
        with pytest.raises(SpecError, match="port_bits=3"):
            strategy.install(topo, knowledge_for(config, pub, recv))
        return
    state = strategy.install(topo, knowledge_for(config, pub, recv))
    note = Notification(3, pub)
    d = run_notification(topo, strategy, state, note, recv, payload_for(note, 50))
    assert d.delivered == {h: 1 for h in recv}
    assert d.false_positives == d.duplicates == d.false_negatives == 0
    if not recv:
        assert d.encoding.packets == () and d.frames == 0
        return
    arrivals, frames = walk(topo, strategy, state, d.encoding.packets, pub)
    assert all(len(stacks) == 1 for stacks in arrivals.values())  # a tree: one copy per switch
    got = {s: c.recirculations for s, c in d.switches.items()}
    build = steiner_tree if params.get("tree") == "steiner" else shortest_path_tree
    tree = build(topo, topo.host_switch(pub), recv)
    if params.get("stack_order") == "largest-first":
        tree = sized_first(tree)
    if name == "switch-port":
        want = port_closed_form(topo, tree, params.get("pruning", "predictive"))
    elif name == "switch-bitmask":
        want = mask_closed_form(topo, tree, lambda v: len(tree.children[v]))
    elif name == "switch-mcgroup":
        c = params.get("subsets", 1) if params.get("groups") == "subsets" else 1
        want = mask_closed_form(topo, tree, lambda v: c)
    else:
        want = mixed_closed_form(topo, state, arrivals, params.get("pruning", "per-type"))
    assert got == want
    assert all(c.passes == c.recirculations + 1 for c in d.switches.values())
    # Frames within the MTU; headers are Size + whole entries of the configured widths.
    layout = strategy.layout
    for _, pkt in frames:
        entries, used = decode_stack(pkt.header + pkt.payload, layout)
        assert used == len(pkt.header) == layout.header_bytes(len(entries))
        assert pkt.frame_bytes - ETH_HEADER_BYTES <= 1500
        assert len(entries) < 1 << layout.size_bits
    by_id = {topo.switch_id(s): s for s in topo.switches}
    for stack in (s for stacks in arrivals.values() for s in stacks):
        for e in stack:
            ports = set(topo.ports(by_id[e.switch_id]))
            if name == "switch-port" or e.tag == TAG_PORT:
                assert e.value in ports
            elif name != "switch-mcgroup" or params.get("group_ids") != "sequential":
                assert 0 < e.value < 1 << max(ports)  # a bitmask of existing ports


@given(case=scenarios(min_switches=4, max_switches=30))
def test_strategies_compare_as_the_thesis_says(case):
    topo, pub, recv = case
    runs = {}
    for label, name, params in [("pred", "switch-port", {}),
                                ("react", "switch-port", {"pruning": "reactive"}),
                                ("bitmask", "switch-bitmask", {}), ("mc", "switch-mcgroup", {}),
                                ("mixed", "mixed", {}), ("multicast", "multicast", {})]:
        strategy = make_strategy(name, params)
        state = strategy.install(topo, Knowledge.for_notification(pub, recv))
        note = Notification(1, pub)
        runs[label] = run_notification(topo, strategy, state, note, recv, payload_for(note, 50))
    assert runs["pred"].bytes <= runs["react"].bytes
    assert runs["bitmask"].encoding.header_bytes == runs["mc"].encoding.header_bytes
    # Every label-stack strategy sends the multicast minimum: one frame per tree link.
    assert len({r.frames for r in runs.values()}) == 1
    if recv:
        tree = shortest_path_tree(topo, topo.host_switch(pub), recv)
        switches = len(tree.switches(topo))
        assert runs["pred"].encoding.header_bytes == 2 + 2 * (switches - 1 + len(recv))
        assert runs["bitmask"].encoding.header_bytes == 2 + 3 * switches
        assert runs["bitmask"].total("lookups") > runs["mc"].total("lookups")


# -- field widths ------------------------------------------------------------


def small_net():
    """5 switches in a star around s1 (5 ports with its host)."""
    return build_topology("star5", [(0, i) for i in range(1, 5)], range(5))


@pytest.mark.parametrize(("name", "params", "field"), [
    ("switch-port", {"id_bits": 2, "port_bits": 14}, "id_bits=2"),
    ("switch-port", {"port_bits": 2, "id_bits": 14}, "port_bits=2"),
    ("switch-bitmask", {"bitmask_bits": 4, "id_bits": 4}, "bitmask_bits=4"),
    ("switch-mcgroup", {"group_bits": 4, "id_bits": 4}, "group_bits=4"),
    ("mixed", {"value_bits": 4, "tag_bits": 4}, "value_bits=4"),
])
def test_out_of_range_topologies_name_the_field(name, params, field):
    strategy = make_strategy(name, params)
    with pytest.raises(SpecError, match=field):
        strategy.install(small_net(), Knowledge())


@pytest.mark.parametrize(("name", "params", "field"), [
    ("switch-bitmask", {"bitmask_bits": 12}, "bitmask_bits=12"),
    ("switch-mcgroup", {"group_bits": 17, "id_bits": 7}, "group_bits"),
    ("switch-port", {"pruning": "eager"}, "pruning"),
    ("mixed", {"tag_bits": 1, "value_bits": 23}, "tag_bits"),
])
def test_bad_parameters_name_the_field(name, params, field):
    with pytest.raises(SpecError, match=field):
        make_strategy(name, params)


# -- MTU policies (seed 000 §3.4.1) -----------------------------------------


def spider():
    """s1 with three legs of three switches each; one host per switch (publisher h1)."""
    edges = [(0, 1), (1, 2), (2, 3), (0, 4), (4, 5), (5, 6), (0, 7), (7, 8), (8, 9)]
    return build_topology("spider", edges, range(10))


ALL = [("switch-port", {}), ("switch-bitmask", {}), ("switch-mcgroup", {}),
       ("switch-mcgroup", {"groups": "used"}), ("mixed", {})]


def header_bytes(topo, name, params, recv):
    strategy = make_strategy(name, params)
    state = strategy.install(topo, Knowledge.for_notification("h1", recv))
    return strategy.encode(topo, state, Notification(0, "h1"), recv, b"").header_bytes


@pytest.mark.parametrize(("name", "params"), ALL)
@settings(max_examples=8)
@given(legs=st.lists(st.sets(st.integers(0, 2), min_size=1), min_size=3, max_size=3))
def test_split_sends_one_packet_per_root_subtree_and_delivers_everything(name, params, legs):
    topo = spider()
    recv = frozenset(f"h{2 + 3 * leg + i}" for leg, idx in enumerate(legs) for i in idx)
    payload = 40
    mtu = payload + header_bytes(topo, name, params, recv) - 1
    strategy = make_strategy(name, {**params, "mtu_bytes": mtu, "on_oversize": "split"})
    state = strategy.install(topo, Knowledge.for_notification("h1", recv))
    note = Notification(5, "h1")
    d = run_notification(topo, strategy, state, note, recv, payload_for(note, payload))
    assert len(d.encoding.packets) == 3
    assert all(len(p.header) + len(p.payload) <= mtu for p in d.encoding.packets)
    assert d.delivered == {h: 1 for h in recv} and d.false_positives == 0
    with pytest.raises(OversizeError):
        make_strategy(name, {**params, "mtu_bytes": mtu}).encode(
            topo, state, note, recv, payload_for(note, payload))


@pytest.mark.parametrize(("name", "params"), ALL)
def test_oversize_error_names_notification_and_size_and_jumbo_allows_9000(name, params):
    topo = spider()
    recv = frozenset(topo.hosts[1:])
    size = header_bytes(topo, name, params, recv)
    note = Notification(42, "h1")
    for policy, limit in (("error", 1500), ("jumbo", 9000)):
        strategy = make_strategy(name, {**params, "on_oversize": policy})
        state = strategy.install(topo, Knowledge.for_notification("h1", recv))
        fits = payload_for(note, limit - size)
        assert run_notification(topo, strategy, state, note, recv, fits).delivered == \
            {h: 1 for h in recv}
        with pytest.raises(OversizeError, match=rf"notification 42 .*{limit + 1} B.*{limit} B"):
            strategy.encode(topo, state, note, recv, payload_for(note, limit - size + 1))


# -- state -------------------------------------------------------------------


def test_group_counts_all_subsets_used():
    star = build_topology("star16", [], ["a"], 16)  # one switch, 16 host ports
    counts = {}
    for key, params in [("all", {}), ("c2", {"groups": "subsets", "subsets": 2}),
                        ("c3", {"groups": "subsets", "subsets": 3}),
                        ("c4", {"groups": "subsets", "subsets": 4})]:
        counts[key] = make_strategy("switch-mcgroup", params).install(star, Knowledge()) \
            .multicast_groups
    # 2^16 - 1 = 65,535 vs 2 (2^8 - 1) = 510 (seed 000 §3.3.3); 16 = 6 + 5 + 5 for c = 3.
    assert counts == {"all": 65535, "c2": 510, "c3": 63 + 31 + 31, "c4": 60}
    known = Knowledge(receiver_sets={"h1": (frozenset({"h2", "h3"}), frozenset({"h5"})),
                                     "h4": (frozenset({"h2", "h3"}),)})
    used = make_strategy("switch-mcgroup", {"groups": "used"}).install(star, known)
    assert sorted(used.config("s1").multicast_groups) == [0b110, 0b10000]
    with pytest.raises(SpecError, match="max_total_groups"):
        make_strategy("switch-mcgroup", {"max_total_groups": 1000}).install(star, Knowledge())


def test_used_groups_refuse_unknown_receiver_sets():
    topo = spider()
    strategy = make_strategy("switch-mcgroup", {"groups": "used"})
    state = strategy.install(topo, Knowledge.for_notification("h1", frozenset({"h2"})))
    with pytest.raises(LookupError, match="no multicast group"):
        strategy.encode(topo, state, Notification(0, "h1"), frozenset({"h3"}), b"")


def test_state_is_p4runtime_shaped():
    topo = spider()
    sizes = {}
    for name in ("switch-port", "switch-bitmask", "switch-mcgroup", "mixed"):
        state = make_strategy(name).install(topo, Knowledge())
        cfg = state.config("s1")  # 4 ports
        sizes[name] = {t.removeprefix("MyIngress."): len(es) for t, es in cfg.tables.items()}
        sizes[name]["sessions"] = len(cfg.clone_sessions)
        assert all(t.startswith("MyIngress.") for t in cfg.tables)
    # STACK_SIZE = (1500 - 2) // entry bytes: 749 (2 B) and 374 (4 B) read_entry rules.
    assert sizes == {
        "switch-port": {"check_entry": 1, "read_entry": 749, "sessions": 4},
        "switch-bitmask": {"check_dev": 1, "check_bitmask": 5, "sessions": 4},
        "switch-mcgroup": {"multicast_forward": 1, "sessions": 0},
        "mixed": {"check_entry": 3, "check_bitmask": 5, "read_entry": 374, "sessions": 5},
    }


def test_state_exports_as_runtime_json_and_diffs():
    from sim.dataplanes.control_state import diff, to_runtime_json

    topo = spider()
    strategy = make_strategy("switch-mcgroup", {"groups": "subsets", "subsets": 2})
    state = strategy.install(topo, Knowledge())
    doc = to_runtime_json(state.config("s1"))  # ports 1-4: subsets {1, 2}, {3, 4}
    assert [(e["match"], e["action_params"]) for e in doc["table_entries"]] == [
        ({"hdr.stack[0].id": 0, "meta.subset_index": 0}, {"mask": 0b0011, "last": 0}),
        ({"hdr.stack[0].id": 0, "meta.subset_index": 1}, {"mask": 0b1100, "last": 1})]
    assert [g["multicast_group_id"] for g in doc["multicast_group_entries"]] == \
        [1, 2, 3, 4, 8, 12]
    assert [s["clone_session_id"] for s in doc["clone_session_entries"]] == [512]
    other = make_strategy("switch-mcgroup").install(topo, Knowledge())
    writes = diff(state, other)
    assert {w.type for w in writes} == {"INSERT", "DELETE"}
