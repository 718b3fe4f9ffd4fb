"""The tree/hop/stop label program (seed 000 ch. 5, Listings 5.1-5.5): codec and passes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.control_state import StateBuilder, SwitchConfig
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import get_dataplane
from sim.dataplanes.virtual_tree.codec import (
    KIND_HOP,
    KIND_STOP,
    KIND_TREE,
    FieldRangeError,
    LabelFormat,
    StackDecodeError,
)
from sim.dataplanes.virtual_tree.reference import (
    CHECK_HOP,
    CHECK_STOP,
    CHECK_TREE,
    EXTRACT_PORT,
    VirtualTreeDataPlane,
    extract_port_entries,
    hop_entry,
    hop_label,
    stop_entry,
    stop_label,
    tree_group_entry,
    tree_label,
    tree_ports_entry,
)
from topologies.registry import SpecError

FMT = LabelFormat()
PORTS = range(1, 9)
VT = VirtualTreeDataPlane()


def config(trees: dict[int, list[int]] | None = None, hops: dict[int, int] | None = None,
           stops: dict[int, int] | None = None, groups: dict[int, list[int]] | None = None
           ) -> SwitchConfig:
    """One switch with ports 1..8: tree id -> ports, hop edge -> port, stop edge -> port."""
    b = StateBuilder()
    for tid, ports in (trees or {}).items():
        b.add_entry("s", tree_ports_entry(FMT, tid, ports))
    for tid, ports in (groups or {}).items():
        b.add_group("s", tid, ports)
        b.add_entry("s", tree_group_entry(FMT, tid, tid))
    for eid, port in (hops or {}).items():
        b.add_entry("s", hop_entry(FMT, eid, port))
    for eid, port in (stops or {}).items():
        b.add_entry("s", stop_entry(FMT, eid, port))
    for e in extract_port_entries(FMT, PORTS):
        b.add_entry("s", e)
    for p in PORTS:
        b.add_clone_session("s", p, p)
    return b.build(["s"]).config("s")


def frame(labels: list[int], payload: bytes = b"PAYLOAD") -> Packet:
    return Packet(0xFFFF_FFFF_FFFF, 0x02_00_00_00_00_01, 0x9999, FMT.encode(labels), payload)


def out(result) -> dict[int, list[int]]:
    return {e.port: list(FMT.decode(e.packet.header)[0]) for e in result.emitted}


# -- codec ---------------------------------------------------------------------


@given(st.lists(st.integers(0, 0xFFFF), max_size=50), st.binary(max_size=40))
def test_codec_round_trips_exact_bytes(labels, payload):
    header = FMT.encode(labels)
    assert len(header) == 2 + 2 * len(labels)
    assert header[:2] == len(labels).to_bytes(2, "big")
    decoded, length = FMT.decode(header + payload)
    assert list(decoded) == labels and length == len(header)
    assert FMT.split_body(header, payload) == (tuple(labels), payload)
    # the frame on the wire splits back into the same packet
    pkt = frame(labels, payload)
    assert Packet.from_bytes(pkt.to_bytes(), len(header)) == pkt


@given(st.sampled_from([(8, 1), (16, 2), (24, 3), (32, 2)]), st.data())
def test_label_packing_round_trips_for_other_widths(widths, data):
    label_bits, type_bits = widths
    fmt = LabelFormat(label_bits=label_bits, type_bits=type_bits, size_bits=8)
    kind = data.draw(st.integers(0, (1 << type_bits) - 1))
    ident = data.draw(st.integers(0, fmt.max_id))
    lab = fmt.label(kind, ident)
    assert (fmt.kind(lab), fmt.ident(lab)) == (kind, ident)
    assert fmt.decode(fmt.encode([lab]))[0] == (lab,)


def test_label_layout_is_type_in_top_two_bits():
    assert tree_label(FMT, 5) == 0xC005
    assert hop_label(FMT, 5) == 0x4005
    assert stop_label(FMT, 5) == 0x8005
    assert FMT.kind(0xC005) == KIND_TREE and FMT.kind(0x4005) == KIND_HOP
    assert FMT.kind(0x8005) == KIND_STOP


def test_out_of_range_values_name_their_field():
    with pytest.raises(FieldRangeError, match="id_bits"):
        tree_label(FMT, 1 << 14)
    with pytest.raises(FieldRangeError, match="hop label edge id 16384"):
        hop_label(FMT, 16384)
    with pytest.raises(FieldRangeError, match="bitmask_bits"):
        FMT.port_bit(65)
    with pytest.raises(FieldRangeError, match="size_bits"):
        LabelFormat(size_bits=8).encode([1] * 256)
    with pytest.raises(FieldRangeError, match="label_bits"):
        FMT.encode([0x10000])
    with pytest.raises(SpecError, match="label_bits"):
        LabelFormat(label_bits=12)
    with pytest.raises(SpecError, match="type_bits"):
        LabelFormat(type_bits=16)


def test_truncated_stacks_fail_to_decode():
    with pytest.raises(StackDecodeError):
        FMT.decode(b"\x00")
    with pytest.raises(StackDecodeError):
        FMT.decode(b"\x00\x03\xc0\x01")


# -- pass-by-pass behaviour ----------------------------------------------------------


def test_registered_under_its_family_name():
    assert isinstance(get_dataplane("virtual_tree"), VirtualTreeDataPlane)


@pytest.mark.parametrize("pkt", [
    Packet(1, 2, 0x0800, FMT.encode([tree_label(FMT, 1)])),  # wrong EtherType
    Packet(1, 2, 0x9999, FMT.encode([])),  # Size 0: parser reject
    Packet(1, 2, 0x9999, b"\x00\x05\xc0\x01"),  # shorter than Size announces
])
def test_parser_rejects_are_dropped_in_one_pass(pkt):
    r = VT.process("s", config({1: [2]}), pkt, 1)
    assert (r.passes, r.lookups, r.emitted, r.dropped) == (1, 0, (), 1)


def test_tree_label_one_clone_per_bit_and_never_to_the_ingress_port():
    r = VT.process("s", config({7: [1, 3, 5]}), frame([tree_label(FMT, 7)]), 1)
    assert out(r) == {3: [tree_label(FMT, 7)], 5: [tree_label(FMT, 7)]}  # tree label kept
    # three bits -> three passes (one clone per pass), the ingress bit costs a pass too
    assert (r.passes, r.recirculations, r.dropped) == (3, 2, 1)
    # pass 1: check_hop + check_tree + extract_port; passes 2-3: extract_port only
    assert r.lookups == 5
    assert [e.depth for e in r.emitted] == [2, 3]
    assert all(e.packet.payload == b"PAYLOAD" for e in r.emitted)


def test_served_ports_suppress_duplicates_of_overlapping_trees():
    cfg = config({1: [2, 3], 2: [3, 4]})
    r = VT.process("s", cfg, frame([tree_label(FMT, 1), tree_label(FMT, 2)]), 1)
    assert sorted(e.port for e in r.emitted) == [2, 3, 4]


def test_hop_label_is_consumed_in_the_clone_and_the_original():
    cfg = config({1: [2]}, hops={40: 3, 41: 4})
    labels = [tree_label(FMT, 1), hop_label(FMT, 40), hop_label(FMT, 99), hop_label(FMT, 41)]
    r = VT.process("s", cfg, frame(labels), 1)
    t1, h40, h99, h41 = labels
    # tree clone made before any hop was applied carries every hop label
    assert out(r) == {2: [t1, h40, h99, h41], 3: [t1, h99, h41], 4: [t1, h99]}
    # original: 4 labels x 1 bit each; clones scan the labels after theirs
    assert r.passes == 4 + 3 + 2 + 0
    assert r.dropped == 1


def test_stop_label_drops_only_clones_made_by_earlier_labels():
    cfg = config({1: [2, 3]}, hops={50: 3}, stops={60: 3})
    t1, s60, h50 = tree_label(FMT, 1), stop_label(FMT, 60), hop_label(FMT, 50)
    r = VT.process("s", cfg, frame([t1, s60]), 1)
    assert out(r) == {2: [t1, s60]} and r.dropped == 2  # clone for port 3 stopped
    # a hop for the stopped port after the stop is not a duplicate: port 3 already "served"
    r = VT.process("s", cfg, frame([t1, s60, h50]), 1)
    assert out(r) == {2: [t1, s60, h50]}
    # a stop for another switch's port is kept in the copies
    r = VT.process("s", config({1: [2]}, stops={60: 3}), frame([t1, s60]), 1)
    assert out(r) == {2: [t1, s60]}


def test_unknown_labels_cost_one_pass_each_and_the_original_is_dropped():
    r = VT.process("s", config(), frame([tree_label(FMT, 9), hop_label(FMT, 9)]), 1)
    assert (r.passes, r.lookups, r.emitted, r.dropped) == (2, 4, (), 1)


def test_multicast_group_variant_replicates_in_one_pass():
    r = VT.process("s", config(groups={4: [1, 2, 6]}), frame([tree_label(FMT, 4)]), 1)
    assert out(r) == {2: [tree_label(FMT, 4)], 6: [tree_label(FMT, 4)]}
    assert (r.passes, r.lookups, r.dropped) == (1, 2, 1)  # replica to the ingress port dropped


def test_missing_clone_session_is_an_error():
    b = StateBuilder()
    b.add_entry("s", tree_ports_entry(FMT, 1, [2]))
    for e in extract_port_entries(FMT, [2]):
        b.add_entry("s", e)
    with pytest.raises(LookupError, match="clone session 2"):
        VT.process("s", b.build(["s"]).config("s"), frame([tree_label(FMT, 1)]), 1)


def test_extract_port_entries_find_the_lowest_set_bit():
    cfg = config()
    for mask in (0b1, 0b110, 0b1011_0000, 0b1000_0000):
        entry = cfg.lookup(EXTRACT_PORT, mask)
        assert entry is not None
        assert entry.param("port") == (mask & -mask).bit_length()
    assert cfg.lookup(EXTRACT_PORT, 0) is None
    assert cfg.entry_count(EXTRACT_PORT) == len(PORTS)


def test_rule_tables_are_keyed_by_the_label():
    cfg = config({3: [2]}, hops={5: 4}, stops={5: 4})
    assert cfg.lookup(CHECK_TREE, tree_label(FMT, 3)).param("ports") == 0b10
    assert cfg.lookup(CHECK_HOP, hop_label(FMT, 5)).param("port") == 4
    assert cfg.lookup(CHECK_HOP, stop_label(FMT, 5)) is None
    assert cfg.lookup(CHECK_STOP, stop_label(FMT, 5), 4) is not None
    assert cfg.lookup(CHECK_STOP, stop_label(FMT, 5), 3) is None


# -- the model agrees with the reference semantics of digest ch. 5 §1.5.4 ---------


def reference(stack, trees, hops, stops, in_port):
    """Digest ch. 5-7 §1.5.4 pseudo-code: emitted {port: stack} and the pass formula."""
    served: set[int] = set()
    emitted, passes, i, stack = {}, 0, 0, list(stack)
    while i < len(stack):
        lab = stack[i]
        kind, ident = FMT.kind(lab), FMT.ident(lab)
        consume = kind == KIND_HOP and ident in hops
        ports = [hops[ident]] if consume else (
            sorted(trees.get(ident, ())) if kind == KIND_TREE else [])
        passes += max(1, len(ports))
        for p in ports:
            if p in served or p == in_port:
                continue
            served.add(p)
            lc = stack[:i] + stack[i + 1:] if consume else list(stack)
            start = i if consume else i + 1
            for j in range(start, len(lc)):
                passes += 1
                x = lc[j]
                if FMT.kind(x) == KIND_STOP and stops.get(FMT.ident(x)) == p:
                    break
            else:
                emitted[p] = lc
        if consume:
            del stack[i]
        else:
            i += 1
    return emitted, passes


@st.composite
def stacks(draw):
    trees = draw(st.dictionaries(st.integers(1, 4), st.sets(st.integers(1, 8), min_size=1),
                                 max_size=3))
    hops = draw(st.dictionaries(st.integers(1, 6), st.integers(1, 8), max_size=4))
    stops = draw(st.dictionaries(st.integers(1, 6), st.integers(1, 8), max_size=4))
    label = st.one_of(st.builds(lambda t: tree_label(FMT, t), st.integers(1, 5)),
                      st.builds(lambda e: hop_label(FMT, e), st.integers(1, 7)),
                      st.builds(lambda e: stop_label(FMT, e), st.integers(1, 7)))
    labels = draw(st.lists(label, min_size=1, max_size=8))
    return trees, hops, stops, labels, draw(st.integers(1, 8))


@given(stacks())
def test_model_matches_reference_semantics_and_pass_formula(case):
    trees, hops, stops, labels, in_port = case
    r = VT.process("s", config(trees, hops, stops), frame(labels), in_port)
    emitted, passes = reference(labels, trees, hops, stops, in_port)
    assert out(r) == emitted
    assert r.passes == passes and r.recirculations == passes - 1
    ports = [e.port for e in r.emitted]
    assert len(ports) == len(set(ports)) and in_port not in ports
    assert [e.depth for e in r.emitted] == sorted(e.depth for e in r.emitted)
