"""The ``elmo`` strategy: clustering, s-rule capacity, default p-rule, deliveries, fast path.

References
----------
Elmo SIGCOMM 2019 §3 (p-rules, redundancy limit R, s-rules, default p-rule),
§4 (controller), §5 (evaluation); Elmo-MCast/numerical-evals
``pseudocodes/fuzzy_match.algo``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import count_writes, diff
from sim.dataplanes.delivery import DelayModel, row_metrics
from sim.dataplanes.elmo.codec import PRule
from sim.dataplanes.elmo.fabric import elmo_fabric
from sim.dataplanes.elmo.headers import pack_group, unpack_group
from sim.dataplanes.elmo.reference import SRULE_TABLE
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.elmo.elmo import srule_slots
from strategies.elmo.prules import cluster_group, cluster_layer, group_nodes, worst_header_bytes
from topologies.model import Topology, node_sort_key
from topologies.registry import SpecError
from topologies.specs import load_topology

SMALL = "elmo:pods=2,leaves=4,hosts=4"


def topologies() -> st.SearchStrategy[Topology]:
    """Small fat-trees and Elmo Clos networks of random shape."""
    elmo = st.builds(lambda p, lv, h, s, c: load_topology(
        f"elmo:pods={p},leaves={lv},hosts={h},spines={s},cores={s * c}"),
        st.integers(1, 4), st.integers(1, 6), st.integers(1, 5), st.integers(1, 3),
        st.integers(1, 2))
    fattree = st.sampled_from([2, 4, 6]).map(lambda k: load_topology(f"fattree:k={k}"))
    return st.one_of(elmo, fattree)


def params() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({}, optional={
        "redundancy": st.sampled_from([0, 1, 3, 12, 48]),
        "spine_redundancy": st.sampled_from([0, 2, 6]),
        "leaf_prules": st.integers(0, 4),
        "spine_prules": st.integers(0, 3),
        "switches_per_prule": st.integers(1, 4),
        "leaf_srules": st.integers(0, 3),
        "spine_srules": st.integers(0, 3),
        "default_prule": st.booleans()})


@st.composite
def groups(draw, topo: Topology, count: int = 6) -> list[tuple[str, ...]]:
    hosts = list(topo.hosts)
    out = []
    for _ in range(count):
        members = draw(st.sets(st.sampled_from(hosts), min_size=1, max_size=len(hosts)))
        out.append(tuple(sorted(members, key=node_sort_key)))
    return out


def knowledge_of(groups_: list[tuple[str, ...]]) -> Knowledge:
    """Each group once as a receiver set (the fallback install: one group per set)."""
    return Knowledge(receiver_sets={f"p{i}": (frozenset(g),) for i, g in enumerate(groups_)})


# -- the worked example ----------------------------------------------------------------


def test_worked_example_on_two_pods():
    """h1 sends to {h2, h6, h7, h18, h31} on elmo:pods=2,leaves=4,hosts=4 (leaves s9..s12
    in pod 0, s17..s20 in pod 1, four hosts each), two shared leaf p-rules, R = 1.

    Leaf bitmaps (bit i = i-th host): s9 (id 0) 0010 = h2, s10 (id 1) 0110 = h6 h7,
    s17 (id 4) 0010 = h18, s20 (id 7) 0100 = h31. Fuzzy match, two p-rules for four
    leaves: p-rule 1 takes k = ceil(4/2) = 2 leaves of least union, s9 then s17 (0010,
    no redundancy); p-rule 2 the other two, s20 then s10 (0110: one redundant port, h30,
    = R). Pods: 0011 (s9, s10) and 1001 (s17, s20), one p-rule each. Multipath: group
    0 takes up bit 0 (spine s5, then core s1). The bytes are the codec test's."""
    topo = load_topology(SMALL)
    strategy = make_strategy("elmo", {"leaf_prules": 2, "redundancy": 1})
    receivers = frozenset({"h2", "h6", "h7", "h18", "h31"})
    state = strategy.install(topo, Knowledge.for_notification("h1", receivers))
    (plan,) = strategy.plan(topo, [(0, tuple(sorted(receivers, key=node_sort_key)))])
    assert plan.rules.leaf_rules == (PRule((0, 4), 0b0010), PRule((1, 7), 0b0110))
    assert plan.rules.spine_rules == (PRule((0,), 0b0011), PRule((1,), 0b1001))
    assert plan.leaf_srules == plan.spine_srules == ()
    note = Notification(0, "h1")
    d = run_notification(topo, strategy, state, note, receivers, payload_for(note, 10))
    (packet,) = d.encoding.packets
    assert packet.header.hex(" ") == "00 00 00 00 e0 02 02 f9 00 c8 80 0c 26 48 40 58 f0"
    assert d.delivered == {h: 1 for h in receivers | {"h30"}}
    frame = 14 + 10
    assert d.links == {
        ("h1", "s9"): [1, frame + 17], ("s9", "h2"): [1, frame],
        ("s9", "s5"): [1, frame + 15], ("s5", "s10"): [1, frame + 11],
        ("s5", "s1"): [1, frame + 14], ("s1", "s13"): [1, frame + 13],
        ("s13", "s17"): [1, frame + 11], ("s13", "s20"): [1, frame + 11],
        ("s10", "h6"): [1, frame], ("s10", "h7"): [1, frame], ("s17", "h18"): [1, frame],
        ("s20", "h30"): [1, frame], ("s20", "h31"): [1, frame]}
    assert {s: (c.passes, c.lookups) for s, c in d.switches.items()} == {
        s: (1, 1) for s in ("s9", "s5", "s10", "s1", "s13", "s17", "s20")}
    assert d.drops == 0
    # the state: every switch its elmo_switch rule and all-ports group, no s-rule
    assert state.entries == len(topo.switches) and state.multicast_groups == len(topo.switches)


def test_srules_beyond_the_header_and_default_beyond_capacity():
    """No shared leaf p-rule: member leaves get s-rules while their table has room (one
    entry here), in gid order; the next group on a full leaf uses the default p-rule."""
    topo = load_topology(SMALL)
    strategy = make_strategy("elmo", {"leaf_prules": 0, "leaf_srules": 1})
    g0, g1 = ("h2", "h6"), ("h3", "h8", "h18")  # both on leaves s9 and s10
    plans = strategy.plan(topo, [(0, g0), (1, g1)])
    assert plans[0].leaf_srules == ((0, 0b0010), (1, 0b0010))
    assert plans[0].rules.leaf_default is None
    assert plans[1].leaf_srules == ((4, 0b0010),)  # s17 had room
    assert plans[1].rules.leaf_default == 0b0100 | 0b1000  # h3 on s9, h8 on s10
    state = strategy.install(topo, knowledge_of([g0, g1]))
    for leaf in ("s9", "s10"):
        assert len(state.config(leaf).tables[SRULE_TABLE]) == 1
    # h18 sends to group 1: s9 and s10 apply the default p-rule (hosts 2 and 3 of each)
    d = run_notification(topo, strategy, state, Notification(0, "h18"),
                         frozenset({"h3", "h8"}), b"")
    assert d.false_negatives == 0 and set(d.delivered) == {"h3", "h4", "h7", "h8"}
    assert d.false_positives == 2
    no_default = make_strategy("elmo", {"leaf_prules": 0, "leaf_srules": 1,
                                        "default_prule": False})
    state = no_default.install(topo, knowledge_of([g0, g1]))
    d = run_notification(topo, no_default, state, Notification(0, "h18"),
                         frozenset({"h3", "h8"}), b"")
    assert not d.delivered and d.false_negatives == 2 and d.drops == 2


def test_srule_multicast_ids_stay_put():
    """A group keeps its multicast group id when other groups come or go."""
    slots = srule_slots(range(0, 3000, 3))
    fewer = srule_slots(g for g in range(0, 3000, 3) if g % 7)
    assert len(set(slots.values())) == len(slots)
    assert all(2 <= s < 65536 for s in slots.values())
    moved = sum(slots[g] != s for g, s in fewer.items())
    assert moved <= len(fewer) // 50


def test_refuses_other_topologies_in_one_line():
    strategy = make_strategy("elmo")
    for spec in ("jellyfish:switches=8,degree=3,seed=1", "fabric:pods=2,racks=2,hosts=2",
                 "leafspine:leaves=4,spines=2,hosts=2"):
        with pytest.raises(SpecError, match=r"strategy 'elmo': Elmo needs a three-tier Clos") \
                as err:
            strategy.check_applicable(load_topology(spec), None)
        assert "\n" not in str(err.value)
    strategy.check_applicable(load_topology("fattree:k=4"), None)


@pytest.mark.parametrize("field,value,needle", [
    ("switches_per_prule", 0, "switches_per_prule must be in 1..16"),
    ("leaf_srules", 70000, "leaf_srules must be in 0..65534"),
    ("leaf_prules", 256, "leaf_prules must be in 0..255"),
    ("redundancy", -1, "redundancy must be >= 0"),
])
def test_bad_parameters_name_the_field(field, value, needle):
    with pytest.raises(SpecError, match=needle):
        make_strategy("elmo", {field: value})


def test_header_budget_trims_leaf_prules():
    topo = load_topology("elmo:pods=2,leaves=8,hosts=4")
    fabric = elmo_fabric(topo)
    layout = make_strategy("elmo").layout(topo)
    hosts = tuple(topo.hosts[::3])
    limits = make_strategy("elmo", {"leaf_prules": 16}).params.limits
    spine, leaf = cluster_group(fabric, layout, hosts, limits)
    worst = worst_header_bytes(layout, spine, leaf)
    tight = dataclasses.replace(limits, header_bytes_max=worst - 1)
    spine2, leaf2 = cluster_group(fabric, layout, hosts, tight)
    assert worst_header_bytes(layout, spine2, leaf2) <= worst - 1
    assert spine2 == spine and leaf2.prules == leaf.prules[:-1]
    assert sorted(leaf2.rest) == sorted(leaf.rest + tuple(
        n for n in group_nodes(fabric, hosts)[0] if n[0] in leaf.prules[-1].ids))
    with pytest.raises(SpecError, match="header_bytes_max=10 is below"):
        make_strategy("elmo", {"header_bytes_max": 10}).plan(topo, [(0, hosts)])


# -- properties --------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_shared_prules_stay_within_the_redundancy_limit(data):
    topo = data.draw(topologies())
    p = make_strategy("elmo", data.draw(params())).params
    fabric = elmo_fabric(topo)
    for hosts in data.draw(groups(topo)):
        leaves, pods = group_nodes(fabric, hosts)
        for nodes, limit, r in ((leaves, p.leaf_prules, p.redundancy),
                                (pods, p.spine_prules, p.spine_redundancy)):
            layer = cluster_layer(nodes, limit, p.switches_per_prule, r)
            own = dict(nodes)
            assert len(layer.prules) <= limit
            named = [i for rule in layer.prules for i in rule.ids]
            assert sorted(named + [i for i, _ in layer.rest]) == sorted(own)  # a partition
            for rule in layer.prules:
                assert 1 <= len(rule.ids) <= p.switches_per_prule
                assert all(own[i] | rule.bitmap == rule.bitmap for i in rule.ids)
                assert sum((rule.bitmap ^ own[i]).bit_count() for i in rule.ids) <= r


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_srule_capacity_holds_and_the_default_covers_the_rest(data):
    topo = data.draw(topologies())
    strategy = make_strategy("elmo", data.draw(params()))
    p = strategy.params
    gs = data.draw(groups(topo, 8))
    plans = strategy.plan(topo, list(enumerate(gs)))
    fabric = elmo_fabric(topo)
    leaf_use: dict[int, int] = {}
    pod_use: dict[int, int] = {}
    for plan, hosts in zip(plans, gs, strict=True):
        leaves, pods = group_nodes(fabric, hosts)
        for nodes, rules, srules, default, use, cap in (
                (leaves, plan.rules.leaf_rules, plan.leaf_srules, plan.rules.leaf_default,
                 leaf_use, p.leaf_srules),
                (pods, plan.rules.spine_rules, plan.spine_srules, plan.rules.spine_default,
                 pod_use, p.spine_srules)):
            for i, _ in srules:
                use[i] = use.get(i, 0) + 1
                assert use[i] <= cap
            covered = {i for r in rules for i in r.ids} | {i for i, _ in srules}
            rest = [(i, b) for i, b in nodes if i not in covered]
            if rest and p.default_prule:  # every one of them was refused for lack of room
                assert all(use.get(i, 0) == cap for i, _ in rest)
                assert default is not None and all(b | default == default for _, b in rest)
            else:
                assert default is None
    state = strategy.install(topo, knowledge_of(gs))
    layout, index = strategy.layout(topo), {h: i for i, h in enumerate(topo.hosts)}
    for plan in plans:  # what hypervisors are told unpacks to the controller's p-rules
        assert unpack_group(pack_group(plan.rules, layout, index), layout,
                            topo.hosts) == plan.rules
    for sw in topo.switches:
        tier = fabric.switches[sw].tier
        cap = {"leaf": p.leaf_srules, "spine": p.spine_srules, "core": 0}[tier]
        assert len(state.config(sw).tables.get(SRULE_TABLE, ())) <= cap


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_every_receiver_gets_exactly_one_copy(data):
    """Random groups and senders: no receiver missed (unless the default p-rule is off
    and a table is full), none twice; without redundancy, s-rule room and defaults no
    host outside the group; at least the ideal multicast's frames; fast path = reference."""
    topo = data.draw(topologies())
    raw = data.draw(params())
    strategy = make_strategy("elmo", raw)
    p = strategy.params
    gs = data.draw(groups(topo, 5))
    state = strategy.install(topo, knowledge_of(gs))
    ideal = make_strategy("multicast")
    delays = DelayModel(switch_s=1e-4, pass_s=1e-5)
    fast = strategy.fast_path(topo, delays)
    assert fast is not None
    # every group twice, from two publishers: the fast path's unpacked groups are reused
    for gid, hosts in [*enumerate(gs), *enumerate(gs)]:
        pub = data.draw(st.sampled_from(topo.hosts))
        receivers = frozenset(hosts) - {pub}
        note = Notification(gid, pub)
        payload = payload_for(note, 20)
        d = run_notification(topo, strategy, state, note, receivers, payload, delays)
        assert d.duplicates == 0
        exact = p.redundancy == 0 and p.spine_redundancy == 0 and not (
            p.default_prule and (p.leaf_srules < len(gs) or p.spine_srules < len(gs)))
        if p.default_prule or (p.leaf_srules >= len(gs) and p.spine_srules >= len(gs)):
            assert d.false_negatives == 0
        if exact:
            assert d.false_positives == 0
        if receivers:
            m = ideal.install(topo, Knowledge.for_notification(pub, receivers))
            best = run_notification(topo, ideal, m, note, receivers, payload, delays)
            if d.false_negatives == 0:  # traffic overhead over ideal multicast >= 0
                assert d.frames >= best.frames
        assert fast.delivery(state, note, receivers, payload) == d
        assert fast.metrics([pub], [receivers], 20, states=[state]) == [row_metrics(d)]


# -- R: fewer s-rules, fewer p-rules needed --------------------------------------------


def _tenant_groups(spec: str, workload: str) -> tuple[Topology, list[tuple[int, tuple[str, ...]]]]:
    topo = load_topology(spec)
    pop = receiver_model(workload).population(topo, child_rng(3, "pop"))
    return topo, [(g.gid, g.hosts) for g in pop.groups()]


def _prules_needed(nodes, max_ids: int, r: int) -> int:
    """The fewest shared p-rules with which the fuzzy match leaves no switch over."""
    h = 0
    while cluster_layer(nodes, h, max_ids, r).rest:
        h += 1
    return h


def test_more_redundancy_means_fewer_srules_and_shorter_full_headers():
    """Elmo §5 (Fig. 5, R = 0, 6, 12): a larger redundancy limit covers more switches
    with the same p-rules, so groups need fewer s-rules, and the header that encodes a
    group entirely in p-rules shrinks (fewer p-rules naming more switches each).

    With H_max fixed, the header itself does not shrink under the authors' greedy: it
    holds H_max p-rules whatever R is, naming more switches (ids) as R grows."""
    topo, gs = _tenant_groups("elmo:pods=4,leaves=16,hosts=16",
                              "tenants:groups=300,tenants=100,vms_max=500,group_size=uniform")
    fabric = elmo_fabric(topo)
    srules, needed_bytes = [], []
    layout = make_strategy("elmo").layout(topo)
    for r in (0, 6, 12):
        plans = make_strategy("elmo", {"redundancy": r, "leaf_prules": 4}).plan(topo, gs)
        srules.append(sum(len(p.leaf_srules) for p in plans))
        total = 0
        for _, hosts in gs:
            leaves, _ = group_nodes(fabric, hosts)
            h = _prules_needed(leaves, 3, r)
            layer = cluster_layer(leaves, h, 3, r)
            total += sum(layout.leaf_rule_bytes(len(rule.ids)) for rule in layer.prules)
        needed_bytes.append(total / len(gs))
    assert srules[0] > srules[1] > srules[2]
    assert needed_bytes[0] > needed_bytes[1] > needed_bytes[2]


# -- the tenants workload ---------------------------------------------------------------


def test_tenant_groups_install_once_per_version_and_deliver():
    """A GroupSource installs all its groups (cached: one state per version); each drawn
    notification reaches exactly its receivers or, by redundancy, a few more hosts."""
    topo = load_topology("elmo:pods=3,leaves=8,hosts=8")
    pop = receiver_model("tenants:groups=60,tenants=20,vms_max=100").population(
        topo, child_rng(5, "pop"))
    strategy = make_strategy("elmo")
    know = Knowledge(population=pop, seed=5)
    state = strategy.install(topo, know)
    assert strategy.install(topo, dataclasses.replace(know, receiver_sets={"h1": ()})) is state
    assert len(state.publisher_info["elmo_groups"]) == 60
    rng = np.random.default_rng(2)
    fast = strategy.fast_path(topo, DelayModel())
    for i in range(30):
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        _, receivers = pop.draw(pub, 0, rng)
        note = Notification(i, pub)
        d = run_notification(topo, strategy, state, note, receivers, payload_for(note, 30))
        assert d.false_negatives == 0 and d.duplicates == 0
        assert fast.delivery(state, note, receivers, payload_for(note, 30)) == d


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=80), st.integers(1, 4))
def test_min_k_union_numpy_equals_python(bitmaps, k):
    """The vectorised greedy picks exactly what the interpreted one picks (ties included)."""
    from strategies.elmo import prules

    nodes = [(i, b & (2**64 - 1) if i % 3 else b & 0xF) for i, b in enumerate(bitmaps)]
    k = min(k, len(nodes))
    slow = prules.min_k_union(nodes[:], k) if len(nodes) < prules._VECTOR_FROM else None
    fast = prules._min_k_union_numpy(nodes, k)
    if slow is None:  # the interpreted loop, forced
        acc, slow, free = 0, [], list(range(len(nodes)))
        for _ in range(k):
            best = min(free, key=lambda i: (acc | nodes[i][1]).bit_count())
            free.remove(best)
            slow.append(best)
            acc |= nodes[best][1]
    assert fast == slow


def test_churn_versions_reinstall_and_write_only_what_changed():
    """Each membership version of tenants-churn gets its own state, equal to a fresh
    install of that version; switches whose s-rules did not change keep their
    configuration objects, so the writes between versions are the changed s-rules."""
    topo = load_topology("elmo:pods=3,leaves=8,hosts=8")
    spec = "tenants-churn:groups=80,tenants=20,vms_max=100,events_per_step=40"
    pop = receiver_model(spec).population(topo, child_rng(7, "pop"))
    strategy = make_strategy("elmo", {"leaf_prules": 1, "spine_prules": 1})
    states = [strategy.install(topo, Knowledge(population=pop.at(run), seed=7))
              for run in range(4)]
    assert strategy.install(topo, Knowledge(population=pop.at(3), seed=7)) is states[3]
    changed = 0
    for old, new in zip(states, states[1:], strict=False):
        fresh = make_strategy("elmo", {"leaf_prules": 1, "spine_prules": 1}).install(
            topo, Knowledge(population=pop.at(states.index(new)), seed=7))
        assert fresh.switches == new.switches and fresh.publisher_info == new.publisher_info
        writes = count_writes(old, new)
        assert writes == len(diff(old, new))
        for sw in topo.switches:
            a, b = old.config(sw), new.config(sw)
            if a.tables.get(SRULE_TABLE) == b.tables.get(SRULE_TABLE) and \
                    a.multicast_groups == b.multicast_groups:
                assert a is b, sw
            else:
                changed += 1
    assert changed > 0  # the stream changed some s-rules
