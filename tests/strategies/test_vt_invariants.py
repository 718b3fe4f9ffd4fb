"""Hypothesis invariants of virtual-tree installation, encoding and updates (seed 000 ch. 5-6).

For random topologies, installed trees and receiver sets: the encoded stack
delivers exactly to the receivers, once each, with no loop; a stack never
references a tree that is not installed on every switch it needs; capacity
is never exceeded; tree ids are never reused across updates.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import topologies
from support.vt_candidates import candidate_sets

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.virtual_tree.codec import KIND_TREE, LabelFormat
from sim.dataplanes.virtual_tree.reference import CHECK_TREE
from sim.engines.static import run_notification
from strategies.base import Knowledge
from strategies.virtual_tree.installation import (
    VirtualTreeStrategy,
    published_trees,
    tree_ports,
    tree_rule_counts,
)

FMT = LabelFormat()


class Given(VirtualTreeStrategy):
    name = "given-test"
    cache_installs = False  # candidates: the instance's

    def __init__(self, cands, **params):
        super().__init__(self.Params(**params))
        self.cands = cands

    def candidates(self, topology, knowledge):
        return iter(self.cands)


@st.composite
def setups(draw):
    topo = draw(topologies(2, 12))
    cands = draw(candidate_sets(topo))
    params = {"max_rules": draw(st.integers(0, 4)),
              "on_full": draw(st.sampled_from(["stop", "skip"])),
              "mode": draw(st.sampled_from(["sorted_single_pass", "best_improvement"])),
              "prune_unused": draw(st.booleans()),
              "min_edges": draw(st.integers(1, 2))}
    pub = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != pub]
    recv = frozenset(draw(st.sets(st.sampled_from(others), min_size=1, max_size=len(others))))
    return topo, cands, params, pub, recv


def check_state(topo, state, max_rules):
    assert all(n <= max_rules for n in tree_rule_counts(state).values())
    for t in published_trees(state):
        for sw, ports in tree_ports(topo, t.edges).items():
            entry = state.config(sw).lookup(CHECK_TREE, FMT.label(KIND_TREE, t.tree_id))
            assert entry is not None and entry.param("ports") == FMT.port_mask(ports)


@settings(max_examples=60)
@given(setups())
def test_encoded_stacks_deliver_exactly_once_to_the_receivers(setup):
    topo, cands, params, pub, recv = setup
    strategy = Given(cands, **params)
    state = strategy.install(topo, Knowledge())
    check_state(topo, state, params["max_rules"])
    note = Notification(3, pub)
    d = run_notification(topo, strategy, state, note, recv, payload_for(note, 8))
    assert d.delivered == dict.fromkeys(recv, 1)
    # no loop: every directed link carries at most one frame
    assert all(frames == 1 for frames, _ in d.links.values())
    labels, _ = FMT.decode(d.encoding.packets[0].header)
    installed = {t.tree_id for t in published_trees(state)}
    assert {FMT.ident(x) for x in labels if FMT.kind(x) == KIND_TREE} <= installed


@settings(max_examples=40)
@given(setups(), st.data())
def test_updates_never_reuse_ids_or_exceed_capacity(setup, data):
    topo, cands, params, pub, recv = setup
    strategy = Given(cands, **params)
    state = strategy.install(topo, Knowledge())
    seen_ids = {t.tree_id for t in published_trees(state)}
    for _ in range(2):
        keep = data.draw(st.lists(st.sampled_from(cands), unique_by=lambda c: c.edges)
                         if cands else st.just([]))
        more = data.draw(candidate_sets(topo))
        strategy.cands = keep + more
        old_ids = {t.tree_id for t in published_trees(state)}
        plan = strategy.plan_update(topo, state, Knowledge())
        for _, step in plan.steps:
            check_state(topo, step, params["max_rules"])
        new = plan.final
        new_ids = {t.tree_id for t in published_trees(new)}
        fresh = new_ids - old_ids
        assert not fresh & seen_ids  # a deleted id never comes back
        assert all(i > max(seen_ids, default=0) for i in fresh)
        seen_ids |= new_ids
        # the final state still delivers exactly
        note = Notification(4, pub)
        d = run_notification(topo, strategy, new, note, recv, payload_for(note, 8))
        assert d.delivered == dict.fromkeys(recv, 1)
        # make-before-break: inserts of a step come before its deletes, and
        # every state publishers were told about has the trees installed
        state = new
