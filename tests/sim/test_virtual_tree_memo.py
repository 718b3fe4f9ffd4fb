"""The memoised virtual-tree data plane and the struct-based codec against their originals.

``VirtualTreeDataPlane.process`` reads exact tables into dictionaries, caches
lookups per switch configuration and scans clones against per-port stop sets
(issue 9); ``LabelFormat`` packs and parses stacks with ``struct``. Both must
give exactly what the original code gave: the same ``PipelineResult`` (passes,
lookups, emitted bytes, drops, pass trace) for every frame of random runs,
and the same bytes and labels for random stacks.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import topologies
from support.vt_candidates import candidate_sets
from support.vt_reference import ReferenceVirtualTree

from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.virtual_tree.codec import LabelFormat, StackDecodeError
from sim.dataplanes.virtual_tree.reference import VirtualTreeDataPlane
from sim.engines.static import run_notification
from strategies.base import Knowledge
from strategies.virtual_tree.installation import VirtualTreeStrategy

FMT = LabelFormat()


class Checked(VirtualTreeDataPlane):
    """Runs the reference on every frame too and asserts the same result."""

    def __init__(self, fmt: LabelFormat, seen: list[int]) -> None:
        super().__init__(fmt)
        self.reference = ReferenceVirtualTree(fmt)
        self.seen = seen

    def process(self, switch, config, packet, in_port):
        got = super().process(switch, config, packet, in_port)
        assert got == self.reference.process(switch, config, packet, in_port)
        self.seen.append(got.passes)
        return got


class Given(VirtualTreeStrategy):
    name = "given-memo-test"

    def __init__(self, cands, seen, **params):
        super().__init__(self.Params(**params))
        self.cands = cands
        self.seen = seen

    def candidates(self, topology, knowledge):
        return iter(self.cands)

    def model(self):
        return Checked(FMT, self.seen)


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
@given(runs())
def test_memoised_data_plane_equals_the_original_on_every_frame(run):
    topo, cands, max_rules, pub, notes = run
    seen: list[int] = []
    strategy = Given(cands, seen, max_rules=max_rules)
    state = strategy.install(topo, Knowledge())
    for i, recv in enumerate(notes):  # several notifications: the memo is reused
        note = Notification(i, pub)
        d = run_notification(topo, strategy, state, note, recv, payload_for(note, 8))
        assert d.delivered == dict.fromkeys(recv, 1)
    assert seen  # frames were compared


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
