"""Pass traces of the source-routing and ALM data planes (``PipelineResult.pass_parents``).

Every result must carry a trace that is a tree of its passes rooted at the
arrival pass (parent -1, every other parent an earlier pass), one entry per
pass, one recirculation per non-root pass, and every copy must leave after
an existing pass whose chain back to the root is exactly ``Emit.depth``
passes long. Checked on what the strategies install over random topologies
(as the static engine routes the packets) and on random tables and stacks
fed to the model directly (missing clone sessions, missing groups,
continuation clones, read_entry misses).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import scenarios

from sim.dataplanes.control_state import (
    CloneSession,
    Exact,
    MulticastGroup,
    SwitchConfig,
    TableEntry,
)
from sim.dataplanes.packet import BROADCAST_MAC, Notification, Packet, payload_for
from sim.dataplanes.pipeline import PipelineResult
from sim.dataplanes.source_routing.codec import StackEntry, StackLayout, encode_stack
from sim.dataplanes.source_routing.reference import (
    CHECK_BITMASK,
    CHECK_DEV,
    CHECK_ENTRY,
    CONTINUE_SESSION,
    DO_MULTICAST,
    DO_MULTICAST_SUBSET,
    KEY_ENTRY_ID,
    KEY_ENTRY_TAG,
    KEY_SUBSET,
    KEY_TOP_ID,
    MULTICAST_FORWARD,
    OWN_ENTRY,
    READ_ENTRY,
    TAG_OWN_ACTION,
    SourceRoutingDataPlane,
)
from sim.engines.static import run_notification
from sim.engines.timed.switch import pass_plan
from strategies.base import Knowledge, make_strategy
from strategies.frame_size import OversizeError
from strategies.source_routing.stack_strategy import check_bitmask_rules, read_entry_rules
from topologies.registry import SpecError

#: Every source-routing strategy configuration worth telling apart for the trace:
#: entry kind x pruning x group installation (subsets and the continuation clone,
#: partial covers) x stack order.
CONFIGS = {
    "port-predictive": ("switch-port", {}),
    "port-reactive": ("switch-port", {"pruning": "reactive"}),
    "port-largest-first": ("switch-port", {"stack_order": "largest-first"}),
    "bitmask": ("switch-bitmask", {}),
    "bitmask-steiner-smallest-first": ("switch-bitmask", {"tree": "steiner",
                                                          "stack_order": "smallest-first"}),
    "mcgroup-all": ("switch-mcgroup", {}),
    "mcgroup-subsets-2": ("switch-mcgroup", {"groups": "subsets"}),
    "mcgroup-subsets-3": ("switch-mcgroup", {"groups": "subsets", "subsets": 3}),
    "mcgroup-used-sequential": ("switch-mcgroup", {"groups": "used", "group_ids": "sequential"}),
    "mixed-per-type": ("mixed", {}),
    "mixed-predictive": ("mixed", {"pruning": "predictive"}),
    "mixed-reactive": ("mixed", {"pruning": "reactive"}),
    "mixed-partial-groups-port": ("mixed", {"mcgroup_max_ports": 3, "groups": "used",
                                            "fallback": "port", "pruning": "predictive"}),
    "mixed-partial-groups-bitmask": ("mixed", {"mcgroup_max_ports": 4, "groups": "used",
                                               "remainder": "bitmask"}),
}
#: Configurations whose copies never recirculate: the passes are one chain.
REACTIVE = {"port-reactive", "bitmask", "bitmask-steiner-smallest-first", "mcgroup-all",
            "mcgroup-subsets-2", "mcgroup-subsets-3", "mcgroup-used-sequential",
            "mixed-reactive"}
ALM = ("alm-all", "alm-fork", "alm-mcgroup")


def chain_length(parents: tuple[int, ...], j: int) -> int:
    """Passes from pass ``j`` back to the root, both included."""
    n = 0
    while j >= 0:
        n += 1
        j = parents[j]
    return n


def check_trace(result: PipelineResult) -> None:
    parents = result.pass_parents
    assert len(parents) == result.passes >= 1
    assert parents[0] == -1
    assert all(0 <= p < j for j, p in enumerate(parents) if j), parents  # one tree, root 0
    assert result.recirculations == sum(1 for p in parents if p >= 0)
    for e in result.emitted:
        assert 0 <= e.after_pass < result.passes, (e, parents)
        assert chain_length(parents, e.after_pass) == e.depth, (e, parents)
    assert pass_plan(result).traced


class Spy:
    """A data plane that records every result of the one it wraps."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.results: list[PipelineResult] = []

    def process(self, switch, config, packet, in_port):
        result = self.inner.process(switch, config, packet, in_port)
        self.results.append(result)
        return result


def traced_run(name, params, topo, pub, recv) -> list[PipelineResult] | None:
    """Every switch's result for one notification (None: the strategy refuses the case)."""
    strategy = make_strategy(name, params)
    spy = Spy(strategy.model())
    strategy.model = lambda: spy  # type: ignore[method-assign]
    try:
        state = strategy.install(topo, Knowledge.for_notification(pub, recv))
        note = Notification(0, pub)
        d = run_notification(topo, strategy, state, note, recv, payload_for(note, 30))
    except (SpecError, OversizeError):  # fields too narrow for this topology
        return None
    assert d.delivered == {h: 1 for h in recv}, name
    return spy.results


@pytest.mark.parametrize("config", sorted(CONFIGS))
@settings(max_examples=30, deadline=None)
@given(case=scenarios(max_switches=16))
def test_source_routing_traces_are_trees_with_exact_copy_chains(config, case):
    topo, pub, recv = case
    name, params = CONFIGS[config]
    results = traced_run(name, params, topo, pub, recv)
    if results is None:
        return
    assert bool(results) == bool(recv)
    for result in results:
        check_trace(result)
        if config in REACTIVE:
            assert result.pass_parents == (-1, *range(result.passes - 1))


@settings(max_examples=30, deadline=None)
@given(case=scenarios(max_switches=16))
def test_alm_traces_are_one_pass(case):
    topo, pub, recv = case
    for name in ALM:
        results = traced_run(name, {}, topo, pub, recv)
        assert results is not None
        for result in results:
            check_trace(result)
            assert result.pass_parents == (-1,)
            assert all(e.after_pass == 0 and e.depth == 1 for e in result.emitted)


def test_predictive_copies_recirculate_from_the_pass_that_made_them():
    """Two port entries of s1 with one entry each below: copy k post-processes from pass k."""
    dp = SourceRoutingDataPlane()
    cfg = SwitchConfig(
        tables={READ_ENTRY: read_entry_rules(8),
                CHECK_ENTRY: (TableEntry(CHECK_ENTRY, ((KEY_ENTRY_ID, Exact(0)),), OWN_ENTRY),)},
        clone_sessions={p: CloneSession(p, p) for p in (2, 3)})
    stack = [StackEntry(0, 2), StackEntry(5, 1), StackEntry(0, 3), StackEntry(6, 1)]
    res = dp.process("s1", cfg, Packet(BROADCAST_MAC, 1, dp.layout.ethertype,
                                       encode_stack(stack, dp.layout), b""), 1)
    check_trace(res)
    # Pass 0 makes copy A (passes 1-3: skip 5, delete 0 and 6); the original runs 4, 5, 6;
    # pass 5 makes copy B (pass 6: skip 6) before the original's last pass 7.
    assert res.pass_parents == (-1, 0, 1, 2, 0, 4, 5, 5)
    assert [(e.port, e.depth, e.after_pass) for e in res.emitted] == [(2, 4, 3), (3, 4, 6)]


# -- random tables and stacks, straight into the model ---------------------------------

OWN, PORTS = 1, (1, 2, 3, 4)
KINDS = {  # kind -> (layout, pruning choices, subsets choices)
    "port": (StackLayout(value_field="port_bits"), ("predictive", "reactive"), (1,)),
    "bitmask": (StackLayout(value_bits=16, value_field="bitmask_bits"), ("reactive",), (1,)),
    "mcgroup": (StackLayout(value_bits=16), ("reactive",), (1, 2, 3)),
    "mixed": (StackLayout(tag_bits=8, value_bits=16),
              ("predictive", "reactive", "per-type"), (1,)),
}


@st.composite
def model_cases(draw):
    kind = draw(st.sampled_from(sorted(KINDS)))
    layout, prunings, subsets = KINDS[kind]
    pruning, c = draw(st.sampled_from(prunings)), draw(st.sampled_from(subsets))
    tags = (1, 2, 3) if kind == "mixed" else (0,)
    value = st.integers(0, 15) if kind != "port" else st.integers(1, 5)
    entry = st.builds(StackEntry, st.sampled_from((OWN, OWN, 2, 3)), value, st.sampled_from(tags))
    stack = draw(st.lists(entry, min_size=1, max_size=7))
    sessions = draw(st.sets(st.sampled_from((*PORTS, CONTINUE_SESSION))))
    groups = draw(st.sets(st.integers(1, 15)))
    size = draw(st.sampled_from((0, 1, 2, 8, 8)))  # read_entry rules: small sizes miss
    tables: dict[str, tuple[TableEntry, ...]] = {
        READ_ENTRY: read_entry_rules(size),
        CHECK_BITMASK: check_bitmask_rules(PORTS),
        CHECK_DEV: (TableEntry(CHECK_DEV, ((KEY_TOP_ID, Exact(OWN)),), OWN_ENTRY),),
    }
    if kind == "mixed":
        tables[CHECK_ENTRY] = tuple(
            TableEntry(CHECK_ENTRY, ((KEY_ENTRY_ID, Exact(OWN)), (KEY_ENTRY_TAG, Exact(t))), a)
            for t, a in TAG_OWN_ACTION.items())
    else:
        tables[CHECK_ENTRY] = (TableEntry(CHECK_ENTRY, ((KEY_ENTRY_ID, Exact(OWN)),),
                                          OWN_ENTRY),)
    if c == 1:
        tables[MULTICAST_FORWARD] = (TableEntry(MULTICAST_FORWARD, ((KEY_TOP_ID, Exact(OWN)),),
                                                DO_MULTICAST),)
    else:
        masks = [sum(1 << (p - 1) for p in PORTS if (p - 1) % c == k) for k in range(c)]
        tables[MULTICAST_FORWARD] = tuple(
            TableEntry(MULTICAST_FORWARD, ((KEY_TOP_ID, Exact(OWN)), (KEY_SUBSET, Exact(k))),
                       DO_MULTICAST_SUBSET, (("mask", m), ("last", int(k == c - 1))))
            for k, m in enumerate(masks))
    config = SwitchConfig(
        tables=tables,
        multicast_groups={g: MulticastGroup(g, tuple((p, 1) for p in PORTS if g >> (p - 1) & 1))
                          for g in groups},
        clone_sessions={s: CloneSession(s, s if s in PORTS else 1) for s in sessions})
    dp = SourceRoutingDataPlane(layout=layout, kind=kind, pruning=pruning, mc_subsets=c)
    pkt = Packet(BROADCAST_MAC, 1, layout.ethertype, encode_stack(stack, layout), b"x")
    return dp, config, pkt


@settings(max_examples=300, deadline=None)
@given(model_cases())
def test_model_traces_on_random_tables_and_stacks(case):
    dp, config, pkt = case
    res = dp.process("s1", config, pkt, 1)
    check_trace(res)
    if dp.kind in ("bitmask", "mcgroup") or dp.pruning == "reactive":
        assert res.pass_parents == (-1, *range(res.passes - 1))


def test_rejected_frames_have_a_one_pass_trace():
    dp = SourceRoutingDataPlane()
    res = dp.process("s1", SwitchConfig(), Packet(BROADCAST_MAC, 1, 0x0800, b"", b""), 1)
    check_trace(res)
    assert res.pass_parents == (-1,)
