"""Byte codec of the non-MPLS BIER header (RFC 8296) and of the frames that carry it.

Wire format after the outer Ethernet header (EtherType :data:`ETHERTYPE_BIER`,
0xAB37, the IEEE-assigned EtherType of BIER over Ethernet without MPLS, RFC
8296 §2.2), all fields big endian, no padding (RFC 8296 §2.1.2)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |              BIFT-id                  | TC  |S|     TTL       |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |Nibble |  Ver  |  BSL  |              Entropy                  |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |OAM|Rsv|    DSCP   |   Proto   |            BFIR-id            |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                BitString  (first 32 bits)                     ~
    ~                              ...                              ~
    ~                BitString  (last 32 bits)                      |
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

Widths (bits): BIFT-id 20, TC 3, S 1, TTL 8 | Nibble 4, Ver 4, BSL 4,
Entropy 20 | OAM 2, Rsv 2, DSCP 6, Proto 6, BFIR-id 16 | BitString 64 x
2^(BSL-1) for the BSL codes 1..7 (64..4096 bits). The header is
``12 + BSL/8`` bytes (20, 28, 44 B for 64, 128, 256 bits): one fixed-width
P4_16 header per compiled bitstring length.

Values this family sends and the reference accepts:

- ``Nibble`` = 0b0101 and ``Ver`` = 0 (RFC 8296 §2.1.2: the only version;
  a BFR discards other versions);
- ``BSL`` = the code of the program's bitstring length;
- ``BIFT-id``: in a non-MPLS network a domain-wide value naming the BIFT of
  one (sub-domain, BSL, set) (RFC 8296 §2.2). The set identifier (SI) is
  carried in it with the optional encoding of
  draft-ietf-bier-non-mpls-bift-encoding: ``BSL code (4) | SD (8) | SI (8)``
  (:func:`bift_id`), so a BFR keys its BIFT on the 20-bit value;
- ``S`` = 1 (the BIFT-id word is the only and last one), ``TC``, ``OAM``,
  ``Rsv``, ``DSCP``, ``Entropy`` = 0 (no ECMP, no OAM);
- ``Proto`` = 3, "Ethernet frame" (RFC 8296 §2.1.2, IANA "BIER Next
  Protocol Identifiers"): the payload is a whole Ethernet frame, the event
  frame a plain multicast would send (group MAC, publisher MAC, event
  EtherType). A BFER decapsulates it and hands that frame to its local
  receivers, as P4-BIER decapsulates the IPv4 packet it carries
  (P4-Implementation/src/components/controls/Bier.p4, action ``decap``);
- ``BFIR-id``: the BFR-id of the publisher's switch (0 if it has none);
- BitString: bit ``k`` (1-based, ``k = 1`` the low-order bit of the last
  byte) stands for the BFER with BFR-id ``SI * BSL + k`` (RFC 8279 §3).

A :class:`~sim.dataplanes.packet.Packet` of this family keeps the BIER
header and the 14 B Ethernet header of the carried frame in ``header`` (what
BIER adds to a plain multicast frame) and the event in ``payload``; the
outer Ethernet addresses are the carried frame's.

References
----------
RFC 8296 §2.1.2 (fields), §2.2 (non-MPLS networks: BIFT-id, EtherType);
RFC 8279 §3 (BFR-ids, sets, bit positions);
draft-ietf-bier-non-mpls-bift-encoding-04 (BIFT-id = BSL | SD | SI);
uni-tue-kn/p4-bier P4-Implementation/src/components/headers.p4 (its 64-bit
``bier_t`` without these fields; this codec is the full RFC 8296 header).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sim.dataplanes.packet import ETH_HEADER_BYTES, Packet

ETHERTYPE_BIER = 0xAB37
FIRST_NIBBLE = 0b0101
VERSION = 0
PROTO_ETHERNET = 3
#: RFC 8296 §2.1.2: BSL code -> bitstring length in bits.
BSL_BITS = {1: 64, 2: 128, 3: 256, 4: 512, 5: 1024, 6: 2048, 7: 4096}
BSL_CODES = {bits: code for code, bits in BSL_BITS.items()}
#: The three 32-bit words before the BitString.
FIXED_BYTES = 12
SI_BITS = 8
SD_BITS = 8

#: (field, width in bits) in wire order, up to the BitString.
FIELDS = (("bift_id", 20), ("tc", 3), ("s", 1), ("ttl", 8),
          ("nibble", 4), ("version", 4), ("bsl", 4), ("entropy", 20),
          ("oam", 2), ("rsv", 2), ("dscp", 6), ("proto", 6), ("bfir_id", 16))


class BierDecodeError(ValueError):
    """Bytes that are not a BIER header this codec can read (truncated, bad BSL code)."""


def bsl_code(bsl_bits: int) -> int:
    """The 4-bit BSL code of a bitstring of ``bsl_bits`` bits (RFC 8296 §2.1.2)."""
    try:
        return BSL_CODES[bsl_bits]
    except KeyError:
        raise ValueError(f"bitstring length must be one of "
                         f"{', '.join(map(str, BSL_CODES))} bits; got {bsl_bits}") from None


def bift_id(bsl_bits: int, subdomain: int, si: int) -> int:
    """The 20-bit BIFT-id of (BSL, sub-domain, set): ``BSL code | SD | SI``.

    References
    ----------
    draft-ietf-bier-non-mpls-bift-encoding-04 (the optional BIFT-id encoding).
    """
    if not 0 <= subdomain < 1 << SD_BITS:
        raise ValueError(f"sub-domain must be in 0..{(1 << SD_BITS) - 1}; got {subdomain}")
    if not 0 <= si < 1 << SI_BITS:
        raise ValueError(f"set identifier must be in 0..{(1 << SI_BITS) - 1}; got {si}")
    return bsl_code(bsl_bits) << (SD_BITS + SI_BITS) | subdomain << SI_BITS | si


def split_bift_id(value: int) -> tuple[int, int, int]:
    """(bitstring length in bits, sub-domain, set) of a BIFT-id made by :func:`bift_id`."""
    code = value >> (SD_BITS + SI_BITS)
    if code not in BSL_BITS:
        raise ValueError(f"BIFT-id {value:#07x} has no valid BSL code ({code})")
    return BSL_BITS[code], value >> SI_BITS & (1 << SD_BITS) - 1, value & (1 << SI_BITS) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class BierHeader:
    """One RFC 8296 BIER header (field widths in the module docstring).

    ``bsl`` is the 4-bit code (1: 64 bits ... 7: 4096 bits) and ``bitstring``
    an integer of ``bsl_bits`` bits whose bit ``k - 1`` is BitString bit
    ``k``. Every field is range-checked.
    """

    bift_id: int
    ttl: int
    bsl: int
    bitstring: int
    tc: int = 0
    s: int = 1
    nibble: int = FIRST_NIBBLE
    version: int = VERSION
    entropy: int = 0
    oam: int = 0
    rsv: int = 0
    dscp: int = 0
    proto: int = PROTO_ETHERNET
    bfir_id: int = 0

    def __post_init__(self) -> None:
        for name, width in FIELDS:
            value = getattr(self, name)
            if not 0 <= value < 1 << width:
                raise ValueError(f"BIER header field {name} must fit {width} bits "
                                 f"(0..{(1 << width) - 1}); got {value}")
        if self.bsl not in BSL_BITS:
            raise ValueError(f"BIER header field bsl must be a code 1..7; got {self.bsl}")
        if not 0 <= self.bitstring < 1 << self.bsl_bits:
            raise ValueError(f"bitstring does not fit {self.bsl_bits} bits")

    @property
    def bsl_bits(self) -> int:
        """The BitString's length in bits."""
        return BSL_BITS[self.bsl]

    @property
    def size_bytes(self) -> int:
        """Bytes of the whole header: 12 + BSL / 8."""
        return FIXED_BYTES + self.bsl_bits // 8

    def to_bytes(self) -> bytes:
        """The header exactly as on the wire."""
        word = 0
        for name, width in FIELDS:
            word = word << width | getattr(self, name)
        return word.to_bytes(FIXED_BYTES, "big") + self.bitstring.to_bytes(self.bsl_bits // 8,
                                                                           "big")

    @classmethod
    def from_bytes(cls, data: bytes) -> BierHeader:
        """The header at the start of ``data`` (what follows is ignored).

        Raises
        ------
        BierDecodeError
            If ``data`` is shorter than the header or its BSL code is not 1..7.
        """
        length = header_length(data)
        if len(data) < length:
            raise BierDecodeError(f"{len(data)} B hold no {length} B BIER header")
        word = int.from_bytes(data[:FIXED_BYTES], "big")
        values: dict[str, int] = {}
        shift = 8 * FIXED_BYTES
        for name, width in FIELDS:
            shift -= width
            values[name] = word >> shift & (1 << width) - 1
        return cls(bitstring=int.from_bytes(data[FIXED_BYTES:length], "big"), **values)

    def with_bits(self, bitstring: int, ttl: int) -> BierHeader:
        """This header with another BitString and TTL (a forwarded copy)."""
        return replace(self, bitstring=bitstring, ttl=ttl)


def header_length(data: bytes) -> int:
    """Bytes of the BIER header at the start of ``data``, from its BSL code (byte 5).

    Raises
    ------
    BierDecodeError
        If ``data`` is too short to hold the BSL field or the code is not 1..7.
    """
    if len(data) < 6:
        raise BierDecodeError(f"{len(data)} B hold no BIER header")
    code = data[5] >> 4
    if code not in BSL_BITS:
        raise BierDecodeError(f"BSL code {code} is not one of 1..7")
    return FIXED_BYTES + BSL_BITS[code] // 8


def encapsulate(header: BierHeader, frame: Packet) -> Packet:
    """``frame`` (a plain event frame) carried in BIER with ``header`` (Proto 3).

    The outer Ethernet addresses are the frame's; ``header`` of the result is
    the BIER header plus the frame's 14 B Ethernet header.
    """
    if frame.header:
        raise ValueError("only frames without a header stack can be carried (Proto 3)")
    if header.proto != PROTO_ETHERNET:
        raise ValueError(f"the carried frame needs Proto {PROTO_ETHERNET} (Ethernet); "
                         f"got {header.proto}")
    inner = frame.to_bytes()[:ETH_HEADER_BYTES]
    return Packet(frame.dst_mac, frame.src_mac, ETHERTYPE_BIER, header.to_bytes() + inner,
                  frame.payload)


def decapsulate(packet: Packet) -> tuple[BierHeader, Packet]:
    """The BIER header of ``packet`` and the Ethernet frame it carries.

    Raises
    ------
    BierDecodeError
        If ``packet`` is not BIER over Ethernet carrying an Ethernet frame, or
        its bytes end before the carried frame's Ethernet header.
    """
    if packet.ethertype != ETHERTYPE_BIER:
        raise BierDecodeError(f"EtherType {packet.ethertype:#06x} is not BIER "
                              f"({ETHERTYPE_BIER:#06x})")
    body = packet.header + packet.payload
    header = BierHeader.from_bytes(body)
    if header.proto != PROTO_ETHERNET:
        raise BierDecodeError(f"Proto {header.proto} is not {PROTO_ETHERNET} (Ethernet)")
    inner = body[header.size_bytes:]
    if len(inner) < ETH_HEADER_BYTES:
        raise BierDecodeError("the carried Ethernet frame is truncated")
    return header, Packet.from_bytes(inner, 0)


def bier_header_bytes(bsl_bits: int) -> int:
    """Bytes a BIER packet carries beyond a plain event frame: header + 14 B inner Ethernet."""
    return FIXED_BYTES + bsl_bits // 8 + ETH_HEADER_BYTES

