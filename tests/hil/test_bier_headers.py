"""The scapy BIER header (hil/bier_headers.py) is byte-equal to the RFC 8296 codec.

For random headers of the three strategy BitString lengths, random carried
frames and payloads: scapy built from the field values serialises to the
codec's bytes, rebuilds codec packets byte for byte, and dissects the codec's
bytes back to the same field values (no BMv2 needed).

References
----------
RFC 8296 §2 (fields), §2.2 (EtherType); sim/dataplanes/bier/codec.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hil.bier_headers import BierSpec, bier, bier_dissect, bier_header, bier_spec_of, bier_to_scapy
from hil.headers import dissect, header_class, spec_of, to_scapy
from sim.dataplanes.bier.codec import (
    BSL_BITS,
    ETHERTYPE_BIER,
    FIELDS,
    BierHeader,
    bsl_code,
    encapsulate,
)
from sim.dataplanes.bier.reference import BierDataPlane
from sim.dataplanes.packet import Packet

MACS = st.integers(0, (1 << 48) - 1)


@st.composite
def headers(draw, bsl_bits: int):
    values = {name: draw(st.integers(0, (1 << width) - 1)) for name, width in FIELDS}
    values.update(bsl=bsl_code(bsl_bits), proto=3)
    return BierHeader(bitstring=draw(st.integers(0, (1 << bsl_bits) - 1)), **values)


@st.composite
def bier_packets(draw):
    bits = draw(st.sampled_from([64, 128, 256]))
    header = draw(headers(bits))
    frame = Packet(draw(MACS), draw(MACS), draw(st.integers(0, 0xFFFF)), b"",
                   draw(st.binary(max_size=24)))
    return bits, header, frame, encapsulate(header, frame)


@given(bier_packets())
def test_scapy_bytes_equal_the_codec(case):
    bits, header, frame, packet = case
    spec = BierSpec(bits)
    wire = packet.to_bytes()
    assert bytes(bier(spec, header, frame)) == packet.header
    assert bytes(bier_to_scapy(packet, spec)) == wire
    assert bytes(to_scapy(packet, spec)) == wire


@given(bier_packets())
def test_scapy_dissects_the_codec_bytes(case):
    bits, header, frame, packet = case
    spec = BierSpec(bits)
    got = bier_dissect(packet.to_bytes(), spec)
    assert bytes(got) == packet.to_bytes() == bytes(dissect(packet.to_bytes(), spec))
    layer = got.payload
    assert type(layer) is bier_header(spec) is header_class(spec)
    assert got.type == ETHERTYPE_BIER
    for name, _ in FIELDS:
        assert getattr(layer, name) == getattr(header, name), name
    assert layer.bitstring == header.bitstring
    assert int(layer.inner_dst.replace(":", ""), 16) == frame.dst_mac
    assert int(layer.inner_src.replace(":", ""), 16) == frame.src_mac
    assert layer.inner_type == frame.ethertype
    assert bytes(layer.payload) == frame.payload


@pytest.mark.parametrize("bits", sorted(BSL_BITS.values()))
def test_spec_of_the_bier_model(bits):
    model = BierDataPlane(bsl_bits=bits)
    assert bier_spec_of(model) == spec_of(model) == BierSpec(bits)
    assert bier_spec_of(object()) is None


def test_bad_lengths_are_refused():
    with pytest.raises(ValueError, match="bitstring length must be one of"):
        BierSpec(100)
    header = BierHeader(bift_id=0, ttl=1, bsl=2, bitstring=1)
    with pytest.raises(ValueError, match="128-bit BitString in a 64-bit header"):
        bier(BierSpec(64), header, Packet(1, 2, 3))
