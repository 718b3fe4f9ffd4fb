"""scapy headers (hil/headers.py) are byte-equal to the Python codecs.

For random layouts and random stacks of every header family, the scapy frame
built from the field values serialises to exactly the codec's bytes, and
scapy dissects the codec's bytes back to the same field values. Real
strategies' encoded packets round-trip too.
"""

from __future__ import annotations

import ipaddress

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import UDP
from scapy.packet import Raw
from support.hil_states import build_cases, knowledge

from hil.headers import (
    dissect,
    header_class,
    ip_udp,
    kundel,
    label_stack,
    pubsub,
    source_routing,
    spec_of,
    to_scapy,
)
from sim.dataplanes.camus.reference import ETHERTYPE_CAMUS
from sim.dataplanes.event_header import (
    ETHERTYPE_IPV4,
    ETHERTYPE_IPV6,
    PubsubLayout,
    ip_udp_pubsub,
)
from sim.dataplanes.kundel.reference import ETHERTYPE_KUNDEL, KundelFormat
from sim.dataplanes.packet import Notification, Packet, payload_for
from sim.dataplanes.source_routing.codec import (
    TAG_BITMASK,
    TAG_MCGROUP,
    TAG_PORT,
    StackEntry,
    StackLayout,
    decode_stack,
    encode_stack,
)
from sim.dataplanes.virtual_tree.codec import KIND_HOP, KIND_STOP, KIND_TREE, LabelFormat

MACS = st.integers(0, (1 << 48) - 1)
PAYLOADS = st.binary(max_size=24)


def _frame(ethertype: int, header: bytes, payload: bytes, dst: int = 1, src: int = 2) -> bytes:
    return Packet(dst, src, ethertype, header, payload).to_bytes()


# -- source routing ------------------------------------------------------------


@st.composite
def stack_layouts(draw):
    id_bits = draw(st.integers(1, 16))
    tag_bits = draw(st.sampled_from([0, 0, 2, 8]))
    value_bits = draw(st.integers(1, 3)) * 8 - (id_bits + tag_bits) % 8
    size_bits = draw(st.sampled_from([8, 16, 24, 32]))
    return StackLayout(id_bits=id_bits, tag_bits=tag_bits, value_bits=value_bits,
                       size_bits=size_bits)


@given(data=st.data(), layout=stack_layouts(), dst=MACS, src=MACS, payload=PAYLOADS)
def test_source_routing_bytes_equal_codec(data, layout, dst, src, payload):
    tags = [0] if not layout.tag_bits else [TAG_PORT, TAG_BITMASK, TAG_MCGROUP]
    entries = data.draw(st.lists(st.builds(
        StackEntry,
        st.integers(0, (1 << layout.id_bits) - 1),
        st.integers(0, (1 << layout.value_bits) - 1),
        st.sampled_from(tags)), max_size=12))
    header = encode_stack(entries, layout)
    fields = [(e.switch_id, e.tag, e.value) if layout.tag_bits else (e.switch_id, e.value)
              for e in entries]
    frame = _frame(layout.ethertype, header, payload, dst, src)
    built = source_routing(layout, fields)
    assert bytes(built) == header
    packet = Packet(dst, src, layout.ethertype, header, payload)
    assert bytes(to_scapy(packet, layout)) == frame
    got = dissect(frame, layout)
    stack = got.payload
    assert stack.size == len(entries)
    assert [(e.switch_id, e.tag if layout.tag_bits else 0, e.value) for e in stack.entries] == [
        (e.switch_id, e.tag, e.value) for e in entries]
    assert bytes(stack.payload) == payload
    assert decode_stack(bytes(stack), layout)[0] == tuple(entries)


def test_source_routing_thesis_example():
    """Seed 000 Fig. 3.2: Size 2, <1,3> <4,2> with 8-bit ids and ports (2 B entries)."""
    layout = StackLayout(id_bits=8, value_bits=8)
    assert bytes(source_routing(layout, [(1, 3), (4, 2)])) == bytes.fromhex("0002 0103 0402")


# -- typed labels (virtual tree, neighbour labels) ------------------------------


@st.composite
def label_formats(draw):
    label_bits = draw(st.sampled_from([8, 16, 24, 32]))
    type_bits = draw(st.integers(1, min(4, label_bits - 1)))
    return LabelFormat(label_bits=label_bits, type_bits=type_bits,
                       size_bits=draw(st.sampled_from([8, 16, 24, 32])))


@given(data=st.data(), fmt=label_formats(), payload=PAYLOADS)
def test_label_stack_bytes_equal_codec(data, fmt, payload):
    labels = data.draw(st.lists(st.builds(
        fmt.label, st.integers(0, (1 << fmt.type_bits) - 1), st.integers(0, fmt.max_id)),
        max_size=12))
    header = fmt.encode(labels)
    assert bytes(label_stack(fmt, labels)) == header
    frame = _frame(fmt.ethertype, header, payload)
    assert bytes(to_scapy(Packet(1, 2, fmt.ethertype, header, payload), fmt)) == frame
    stack = dissect(frame, fmt).payload
    assert [(lab.type, lab.id) for lab in stack.labels] == [
        (fmt.kind(v), fmt.ident(v)) for v in labels]
    assert bytes(stack.payload) == payload


def test_label_stack_default_widths():
    """Listing 5.1: 16-bit Size, 16-bit labels = 2-bit type + 14-bit id."""
    fmt = LabelFormat()
    labels = [fmt.label(KIND_TREE, 5), fmt.label(KIND_HOP, 0x3FFF), fmt.label(KIND_STOP, 1)]
    assert bytes(label_stack(fmt, labels)) == bytes.fromhex("0003 c005 7fff 8001")


# -- Kundel ----------------------------------------------------------------------


@st.composite
def kundel_cases(draw):
    fmt = KundelFormat(encoding=draw(st.sampled_from(["id", "bitmask"])),
                       id_bits=draw(st.sampled_from([8, 16, 24])),
                       n_max=draw(st.sampled_from([8, 16, 32, 64])))
    top = fmt.n_max if fmt.encoding == "bitmask" else min(1 << fmt.id_bits, 4096)
    ids = draw(st.sets(st.integers(0, top - 1), min_size=1, max_size=8))
    values = {i: draw(st.integers(0, (1 << 32) - 1)) for i in ids}
    return fmt, values


@given(case=kundel_cases(), payload=PAYLOADS)
def test_kundel_bytes_equal_codec(case, payload):
    fmt, values = case
    header = fmt.encode(values)
    assert bytes(kundel(fmt, values)) == header
    frame = _frame(ETHERTYPE_KUNDEL, header, payload)
    assert bytes(to_scapy(Packet(1, 2, ETHERTYPE_KUNDEL, header, payload), fmt)) == frame
    got = dissect(frame, fmt).payload
    if fmt.encoding == "bitmask":
        assert got.mask == sum(1 << i for i in values)
        assert got.values == [values[i] for i in sorted(values)]
    else:
        ids = [got.first_id] + [a.next_id for a in got.attributes][:-1]
        assert dict(zip(ids, [a.value for a in got.attributes], strict=True)) == values
        assert got.attributes[-1].next_id == 0
    assert bytes(got.payload) == payload


# -- pubsub values (Camus, range filter, PLEROMA) ------------------------------


@st.composite
def pubsub_cases(draw):
    layout = PubsubLayout(draw(st.integers(1, 4)), draw(st.sampled_from([8, 16, 32, 64])))
    values = draw(st.lists(st.integers(0, (1 << layout.value_bits) - 1),
                           min_size=layout.dims, max_size=layout.dims))
    return layout, values


@given(case=pubsub_cases(), payload=PAYLOADS)
def test_camus_bytes_equal_codec(case, payload):
    layout, values = case
    header = layout.pack(values)
    assert bytes(pubsub(layout, values)) == header
    frame = _frame(ETHERTYPE_CAMUS, header, payload)
    assert bytes(to_scapy(Packet(1, 2, ETHERTYPE_CAMUS, header, payload), layout)) == frame
    got = dissect(frame, layout).payload
    assert [getattr(got, f"v{i}") for i in range(layout.dims)] == values


@given(case=pubsub_cases(), payload=PAYLOADS, family=st.sampled_from([4, 6]),
       src=st.integers(0, (1 << 32) - 1), dst=st.integers(0, (1 << 32) - 1),
       high=st.integers(0, (1 << 96) - 1))
def test_ip_udp_pubsub_bytes_equal_codec(case, payload, family, src, dst, high):
    layout, values = case
    if family == 6:
        src, dst = src | high << 32, dst | (high ^ 1) << 32
    ethertype = ETHERTYPE_IPV4 if family == 4 else ETHERTYPE_IPV6
    header = ip_udp_pubsub(family, src, dst, layout.pack(values), len(payload))
    built = ip_udp(family, src, dst) / pubsub(layout, values) / Raw(payload)
    assert bytes(built) == header + payload  # scapy's lengths and IPv4 checksum agree
    frame = _frame(ethertype, header, payload)
    assert bytes(to_scapy(Packet(1, 2, ethertype, header, payload), layout)) == frame
    got = dissect(frame, layout)
    assert got[UDP].dport == 0x4242
    ps = got[UDP].payload
    assert [getattr(ps, f"v{i}") for i in range(layout.dims)] == values
    assert bytes(ps.payload) == payload
    ip = got.payload
    want = ipaddress.IPv6Address(dst) if family == 6 else ipaddress.IPv4Address(dst)
    assert ipaddress.ip_address(ip.dst) == want
    assert int(ipaddress.ip_address(ip.src)) == src


# -- real strategies ---------------------------------------------------------------


def _encoded(case):
    """Packets the case's strategy encodes: per publisher and receiver set, or for
    content cases a few drawn events."""
    if case.population is not None:
        pop, rng = case.population, np.random.default_rng(1)
        for run in range(4):
            pub = pop.publishers[run % len(pop.publishers)]
            event, receivers = pop.draw(pub, run, rng)
            yield Notification(run, pub, event=event), receivers
        return
    k = knowledge(case.topology)
    for i, (pub, sets) in enumerate(sorted(k.receiver_sets.items())):
        for receivers in sets:
            yield Notification(i, pub), receivers


def test_real_strategy_packets_round_trip():
    """Packets every strategy with a P4 program encodes (labels, trees, L2, ALM, content)."""
    checked = set()
    for case in build_cases():  # fresh: other modules update the shared cases' strategies
        spec = spec_of(case.strategy.model(), case.strategy)
        for note, receivers in _encoded(case):
            enc = case.strategy.encode(case.topology, case.state, note, receivers,
                                       payload_for(note, 16))
            for p in enc.packets:
                frame = p.to_bytes()
                assert bytes(to_scapy(p, spec)) == frame, case.label
                got = dissect(frame, spec)
                assert bytes(got) == frame, case.label
                if p.header and spec is not None:  # the family's class parsed the header
                    layer = got[UDP].payload if got.haslayer(UDP) else got.payload
                    assert type(layer) is header_class(spec), case.label
                    assert bytes(layer.payload) == p.payload, case.label
                checked.add(case.program)
    assert checked >= {
        "l2_multicast", "virtual_tree", "neighbor_labels", "source_routing_port",
        "source_routing_bitmask", "source_routing_mcgroup", "source_routing_mixed",
        "kundel_id_k8_s2", "kundel_bitmask_m32_s2", "range_filter_2x16", "prefix_filter"}
