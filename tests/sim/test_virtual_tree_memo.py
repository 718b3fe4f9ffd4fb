"""The memoised virtual-tree data plane and the struct-based codec against their references.

``MemoVirtualTreeDataPlane.process`` (``sim/dataplanes/virtual_tree/memo.py``)
reads exact tables into dictionaries, caches lookups per switch configuration
in the ``vt_lookups`` store of its :class:`Caches` and scans clones against
per-port stop sets; ``LabelFormat`` packs and parses stacks with ``struct``.
Both must give exactly what the pass-by-pass reference
(``sim/dataplanes/virtual_tree/reference.py``) and a plain byte loop give: the
same ``PipelineResult`` (passes, lookups, emitted bytes, drops, pass trace) for
every frame of random runs, and the same bytes and labels for random stacks.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import topologies
from support.vt_candidates import candidate_sets

from sim.dataplanes.caches import Caches, Store
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.pipeline import get_dataplane
from sim.dataplanes.virtual_tree.codec import LabelFormat, StackDecodeError
from sim.dataplanes.virtual_tree.memo import MemoVirtualTreeDataPlane
from sim.dataplanes.virtual_tree.reference import VirtualTreeDataPlane
from sim.engines.static import run_notification
from strategies.base import Knowledge, make_strategy
from strategies.virtual_tree.installation import VirtualTreeStrategy
from topologies.specs import load_topology

FMT = LabelFormat()


class Checked(MemoVirtualTreeDataPlane):
    """Runs the reference on every frame too and asserts the same result."""

    def __init__(self, fmt: LabelFormat, seen: list[int], caches: Caches) -> None:
        super().__init__(fmt, caches)
        self.reference = VirtualTreeDataPlane(fmt)
        self.seen = seen

    def process(self, switch, config, packet, in_port):
        got = super().process(switch, config, packet, in_port)
        assert got == self.reference.process(switch, config, packet, in_port)
        self.seen.append(got.passes)
        return got


class Given(VirtualTreeStrategy):
    name = "given-memo-test"
    cache_installs = False  # candidates: the instance's

    def __init__(self, cands, seen, **params):
        super().__init__(self.Params(**params))
        self.cands = cands
        self.seen = seen

    def candidates(self, topology, knowledge):
        return iter(self.cands)

    def model(self, caches=None):
        return Checked(FMT, self.seen, self.caches)


@st.composite
def runs(draw):
    topo = draw(topologies(2, 12))
    cands = draw(candidate_sets(topo))
    pub = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != pub]
    notes = [frozenset(draw(st.sets(st.sampled_from(others), min_size=1,
                                    max_size=len(others)))) for _ in range(3)]
    return topo, cands, draw(st.integers(0, 4)), pub, notes


@settings(max_examples=80)
@given(runs(), st.sampled_from([1, 2, 4096]))
def test_memoised_data_plane_equals_the_reference_on_every_frame(run, memo_limit):
    topo, cands, max_rules, pub, notes = run
    seen: list[int] = []
    strategy = Given(cands, seen, max_rules=max_rules)
    strategy.caches.vt_lookups = Store("vt_lookups", memo_limit)  # 1, 2: memos evicted
    state = strategy.install(topo, Knowledge())
    for i, recv in enumerate(notes):  # several notifications: the memo is reused
        note = Notification(i, pub)
        d = run_notification(topo, strategy, state, note, recv, payload_for(note, 8))
        assert d.delivered == dict.fromkeys(recv, 1)
    assert seen  # frames were compared
    assert 0 < len(strategy.caches.vt_lookups) <= memo_limit


def test_vt_strategies_run_on_the_memoised_model_with_their_caches():
    strategy = make_strategy("vt-broadcast")
    model = strategy.model()
    assert type(model) is MemoVirtualTreeDataPlane
    assert model.caches is strategy.caches is strategy.model().caches
    shared = Caches()
    strategy.use_caches(shared)
    assert strategy.model().caches is shared
    assert make_strategy("tree").model().fmt == make_strategy("hybrid").model().fmt
    assert type(get_dataplane("virtual_tree")) is VirtualTreeDataPlane  # the definition


def test_memo_is_kept_per_configuration_object_in_the_given_caches():
    topo = load_topology("fattree:k=4")
    strategy = make_strategy("source-routed")
    state = strategy.install(topo, Knowledge())
    pub = topo.hosts[0]
    recv = frozenset(topo.hosts[1:6])
    caches = Caches()
    note = Notification(0, pub)
    run_notification(topo, strategy, state, note, recv, payload_for(note, 8))
    assert len(caches.vt_lookups) == 0  # the strategy's own caches, not this one
    strategy.use_caches(caches)
    run_notification(topo, strategy, state, note, recv, payload_for(note, 8))
    visited = len(caches.vt_lookups)
    assert visited > 0
    configs = [key[0].obj for key in caches.vt_lookups.keys()]
    assert all(any(cfg is state.config(s) for s in topo.switches) for cfg in configs)
    run_notification(topo, strategy, state, note, recv, payload_for(note, 8))
    assert len(caches.vt_lookups) == visited and caches.vt_lookups.hits >= visited


def _reference_encode(fmt: LabelFormat, labels: list[int]) -> bytes:
    return len(labels).to_bytes(fmt.size_bytes, "big") + b"".join(
        x.to_bytes(fmt.label_bytes, "big") for x in labels)


@settings(max_examples=200)
@given(st.sampled_from([8, 16, 24, 32, 64]), st.sampled_from([8, 16, 24]), st.data())
def test_struct_codec_gives_the_same_bytes_and_labels(label_bits, size_bits, data):
    fmt = LabelFormat(label_bits=label_bits, size_bits=size_bits)
    labels = data.draw(st.lists(st.integers(0, (1 << label_bits) - 1), max_size=40))
    wire = fmt.encode(labels)
    assert wire == _reference_encode(fmt, labels)
    payload = data.draw(st.binary(max_size=12))
    assert fmt.decode(wire + payload) == (tuple(labels), len(wire))
    cut = data.draw(st.integers(0, len(wire) + len(payload)))  # header/payload split anywhere
    body = wire + payload
    assert fmt.split_body(body[:cut], body[cut:]) == (tuple(labels), payload)


def test_codec_errors_are_unchanged():
    fmt = LabelFormat()
    with pytest.raises(ValueError, match="label_bits"):
        fmt.encode([1 << 16])
    with pytest.raises(ValueError, match="label_bits"):
        fmt.encode([3, -1])
    with pytest.raises(StackDecodeError, match="Size announces"):
        fmt.split_body(b"\x00\x03\x00\x01", b"\x00")
