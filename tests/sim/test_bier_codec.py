"""The RFC 8296 BIER header codec: a hand-built header, round trips, errors.

References
----------
RFC 8296 §2.1.2 (field layout and widths, BSL codes), §2.2 (EtherType);
draft-ietf-bier-non-mpls-bift-encoding (BIFT-id = BSL | SD | SI).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.bier.codec import (
    BSL_BITS,
    ETHERTYPE_BIER,
    FIELDS,
    BierDecodeError,
    BierHeader,
    bier_header_bytes,
    bift_id,
    bsl_code,
    decapsulate,
    encapsulate,
    header_length,
    split_bift_id,
)
from sim.dataplanes.packet import Packet


def test_hand_built_header_matches_the_rfc_8296_layout():
    """Every field at a value whose bits are easy to find in the bytes, written out by
    hand from the RFC 8296 §2.1.2 layout (not from the codec)."""
    header = BierHeader(bift_id=0x10203, tc=5, s=1, ttl=0x40, nibble=5, version=0, bsl=1,
                        entropy=0xABCDE, oam=2, rsv=1, dscp=0x2A, proto=3, bfir_id=0x1234,
                        bitstring=0x8000_0000_0000_0001)
    wire = bytes.fromhex(
        "10203B40"  # BIFT-id 0x10203 | TC 101 | S 1 | TTL 0x40
        "501ABCDE"  # Nibble 0101 | Ver 0000 | BSL 0001 | Entropy 0xABCDE
        "9A831234"  # OAM 10 | Rsv 01 | DSCP 101010 | Proto 000011 | BFIR-id 0x1234
        "8000000000000001")  # BitString: bit 64 and bit 1 (the low-order bit)
    assert header.to_bytes() == wire
    assert BierHeader.from_bytes(wire + b"rest") == header
    assert header.size_bytes == 20 == header_length(wire)


@pytest.mark.parametrize("bits, code, size", [(64, 1, 20), (128, 2, 28), (256, 3, 44),
                                               (512, 4, 76), (4096, 7, 524)])
def test_bsl_codes_and_header_sizes(bits, code, size):
    assert bsl_code(bits) == code and BSL_BITS[code] == bits
    header = BierHeader(bift_id=0, ttl=1, bsl=code, bitstring=1 << (bits - 1))
    data = header.to_bytes()
    assert len(data) == size == header.size_bytes == header_length(data)
    assert data[5] >> 4 == code
    assert data[12] == 0x80 and data[-1] == 0  # BitString bit `bits` is the first bit sent


@st.composite
def headers(draw):
    values = {name: draw(st.integers(0, (1 << width) - 1)) for name, width in FIELDS}
    values["bsl"] = draw(st.sampled_from(sorted(BSL_BITS)))
    bits = BSL_BITS[values["bsl"]]
    return BierHeader(bitstring=draw(st.integers(0, (1 << bits) - 1)), **values)


@given(headers(), st.binary(max_size=30))
def test_round_trip(header, tail):
    data = header.to_bytes()
    assert len(data) == 12 + header.bsl_bits // 8
    assert BierHeader.from_bytes(data + tail) == header
    # every field sits where RFC 8296 puts it
    word = int.from_bytes(data[:12], "big")
    assert word >> 76 == header.bift_id and word >> 64 & 0xFF == header.ttl
    assert word >> 60 & 0xF == header.nibble and word >> 52 & 0xF == header.bsl
    assert word & 0xFFFF == header.bfir_id and word >> 16 & 0x3F == header.proto
    assert int.from_bytes(data[12:], "big") == header.bitstring


@given(st.sampled_from([64, 128, 256, 1024]), st.integers(0, 255), st.integers(0, 255))
def test_bift_id_carries_bsl_subdomain_and_set(bits, sd, si):
    value = bift_id(bits, sd, si)
    assert value < 1 << 20
    assert value >> 16 == bsl_code(bits)
    assert split_bift_id(value) == (bits, sd, si)


def test_bift_id_examples():
    assert bift_id(64, 0, 0) == 0x10000
    assert bift_id(256, 1, 2) == 0x30102


@pytest.mark.parametrize("call, message", [
    (lambda: bift_id(64, 256, 0), "sub-domain must be in 0..255"),
    (lambda: bift_id(64, 0, 256), "set identifier must be in 0..255"),
    (lambda: bift_id(100, 0, 0), "bitstring length must be one of 64, 128"),
    (lambda: split_bift_id(0x80000), "no valid BSL code"),
    (lambda: BierHeader(bift_id=1 << 20, ttl=1, bsl=1, bitstring=0), "bift_id must fit 20 bits"),
    (lambda: BierHeader(bift_id=0, ttl=256, bsl=1, bitstring=0), "ttl must fit 8 bits"),
    (lambda: BierHeader(bift_id=0, ttl=1, bsl=0, bitstring=0), "bsl must be a code 1..7"),
    (lambda: BierHeader(bift_id=0, ttl=1, bsl=1, bitstring=1 << 64), "does not fit 64 bits"),
    (lambda: BierHeader(bift_id=0, ttl=1, bsl=1, bitstring=0, proto=64), "proto must fit 6"),
])
def test_bad_values_name_the_field(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_truncated_or_unknown_bsl_fails_decoding():
    data = BierHeader(bift_id=0, ttl=1, bsl=2, bitstring=3).to_bytes()
    with pytest.raises(BierDecodeError, match="hold no 28 B BIER header"):
        BierHeader.from_bytes(data[:-1])
    with pytest.raises(BierDecodeError, match="hold no BIER header"):
        header_length(data[:5])
    bad = data[:5] + bytes([0x80 | data[5] & 0xF]) + data[6:]
    with pytest.raises(BierDecodeError, match="BSL code 8"):
        header_length(bad)


def test_frames_carry_the_event_frame_after_the_header():
    event = Packet(0x01_00_5E_00_00_07, 0x02_00_00_00_00_03, 0x88B5, b"", b"payload!")
    header = BierHeader(bift_id=bift_id(128, 0, 1), ttl=9, bsl=2, bitstring=0b1010,
                        bfir_id=4)
    packet = encapsulate(header, event)
    assert (packet.dst_mac, packet.src_mac, packet.ethertype) == \
        (event.dst_mac, event.src_mac, ETHERTYPE_BIER)
    assert len(packet.header) == bier_header_bytes(128) == 28 + 14
    wire = packet.to_bytes()
    assert wire[12:14] == b"\xab\x37"
    assert wire[14:42] == header.to_bytes()
    assert wire[42:] == event.to_bytes()  # Proto 3: a whole Ethernet frame follows
    assert decapsulate(packet) == (header, event)
    assert packet.frame_bytes == 14 + 28 + event.frame_bytes


def test_decapsulation_refuses_what_is_not_bier_over_ethernet():
    event = Packet(1, 2, 0x88B5, b"", b"x")
    with pytest.raises(BierDecodeError, match="is not BIER"):
        decapsulate(event)
    ipv4 = BierHeader(bift_id=0, ttl=1, bsl=1, bitstring=1, proto=4)
    with pytest.raises(ValueError, match="needs Proto 3"):
        encapsulate(ipv4, event)
    with pytest.raises(BierDecodeError, match="Proto 4 is not 3"):
        decapsulate(Packet(1, 2, ETHERTYPE_BIER, ipv4.to_bytes(), event.to_bytes()))
    short = Packet(1, 2, ETHERTYPE_BIER, BierHeader(bift_id=0, ttl=1, bsl=1,
                                                    bitstring=1).to_bytes(), b"abc")
    with pytest.raises(BierDecodeError, match="truncated"):
        decapsulate(short)
    with pytest.raises(ValueError, match="without a header stack"):
        encapsulate(ipv4, Packet(1, 2, 0x88B5, b"\x01", b""))
