"""BIER forwarding, pass by pass: reference model of ``p4/bier.p4`` (P4_16, v1model).

The program follows P4-BIER (uni-tue-kn/p4-bier,
P4-Implementation/src/components/controls/Bier.p4 and ingress/egress.p4):
one pipeline pass per next hop, the remaining bits carried to the next pass
by an ingress-to-egress clone that recirculates. It runs RFC 8279 §6.5's
procedure on the RFC 8296 header of :mod:`sim.dataplanes.bier.codec`
(one program per compiled bitstring length: ``p4/bier_bsl<N>.json``, built
with ``-DBSL_BITS=N``; checked against BMv2 in tests/hil/test_bmv2_bier.py).

Tables (all names prefixed with ``MyIngress.``; every apply, hit or miss, is
one lookup):

==================  ==================================  ==============================
table               key                                 actions (params)
==================  ==================================  ==============================
``bift``            ``hdr.bier.bift_id`` exact,         ``forward(fbm, port)``,
                    ``meta.remaining_bits`` ternary     ``decap(fbm)``
``local_group``     ``hdr.ethernet.dstAddr`` exact      ``set_local_group(group)``
==================  ==================================  ==============================

``bift`` holds the BIFT of RFC 8279 §6.4 as P4-BIER installs it: one entry
per bit position of each (sub-domain, set) -- the BIFT-id names the set --
whose ternary key matches "the lowest set bit of the remaining bits is
``k``" (value ``2^(k-1)``, mask ``2^k - 1``; the entries are mutually
exclusive, priority 1). Its action carries the F-BM of the neighbour that
bit goes to (the OR of every bit with the same next hop) and that
neighbour's port; the BFR's own bit gets ``decap(fbm)`` with ``fbm`` = the
own bit. ``local_group`` maps a carried frame's (group) destination MAC to a
multicast group whose replicas are the ports of the receiving hosts: the
receiver-scoped part of the state.

Passes of one BIER packet arriving at a BFR (``passes`` counts ingress
executions; the pass trace ``pass_parents`` records which pass spawned
which):

1. The parser reads the header; a frame that is not BIER version 0 with
   the program's BSL carrying an Ethernet frame (Proto 3) is dropped (one
   pass, no lookup). The first pass sets ``remaining = BitString``.
2. Each pass applies ``bift`` to the remaining bits. ``forward(fbm, port)``
   sends the packet out of ``port`` with ``BitString & fbm`` and TTL - 1
   (RFC 8279 §6.5: "copy with BitString AND F-BM"); ``decap(fbm)`` strips
   the BIER header and the outer Ethernet header and recirculates the
   carried frame. Either way ``remaining &= ~fbm`` (§6.5: "clear the F-BM
   bits"). A miss drops the instance.
3. While bits remain, the pass clones itself (clone session
   :data:`CONTINUE_SESSION`) and the clone recirculates with the remaining
   bits: the next pass of the chain. P4-BIER clones unconditionally and
   recirculates only a clone with bits left; this program clones only when
   bits remain, so no empty clone is dropped.
4. The recirculated carried frame takes one more pass: ``local_group`` on
   its destination MAC, and the packet-replication engine sends one copy
   per replica (the local receivers), as P4-BIER's ``ipv4_mc`` table does
   after its ``decap``. A plain (non-BIER) frame arriving from a link is
   handled the same way.

So a BFR serving ``m`` next hops runs ``m`` passes, plus 2 when its own bit
is set (decap and local delivery): ``m - 1`` (or ``m + 1``)
recirculations, one lookup per pass. Copies leave in bit order: the
neighbour of the lowest set bit first (pass 1), the next lowest remaining
bit's neighbour in pass 2, ...; the local frames leave one pass after the
decap pass. In the pass trace the local-delivery pass comes right after
its decap pass, before the chain's next pass.

TTL (RFC 8296 §2.1.1.2 for the TTL of the first word, which the non-MPLS
header keeps, §2.2): every forwarded copy carries the arriving TTL minus
one; a copy whose TTL would be 0 (arriving TTL 1) is dropped in egress
(its bits are still cleared). Local delivery does not depend on the TTL.

References
----------
RFC 8279 §6.4 (BIFT, F-BM), §6.5 (forwarding procedure), §6.1 (a BFER
passes the payload to the multicast flow overlay); RFC 8296 §2.1.2, §2.2;
uni-tue-kn/p4-bier P4-Implementation/src/components/controls/Bier.p4
(``forward``, ``decap``, ``clone_meta``, the ``bift`` table),
.../controls/Ipv4.p4 (``ipv4_mc`` after decap), .../egress.p4 (clones
recirculate while bits remain); Merling et al., JNCA 2020 (P4-BIER: one
recirculation per next hop).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from sim.dataplanes.bier.codec import (
    BSL_BITS,
    ETHERTYPE_BIER,
    FIRST_NIBBLE,
    PROTO_ETHERNET,
    VERSION,
    BierDecodeError,
    BierHeader,
    bsl_code,
)
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.packet import ETH_HEADER_BYTES, Packet
from sim.dataplanes.pipeline import DATAPLANES, DataPlane, Emit, PipelineResult

BIFT = "MyIngress.bift"
FORWARD = "MyIngress.forward"
DECAP = "MyIngress.decap"
LOCAL_GROUP = "MyIngress.local_group"
SET_LOCAL_GROUP = "MyIngress.set_local_group"
KEY_BIFT_ID = "hdr.bier.bift_id"
KEY_REMAINING = "meta.remaining_bits"
KEY_DST = "hdr.ethernet.dstAddr"
#: The clone session of the continuation copy (just above the 9-bit port space).
CONTINUE_SESSION = 512
#: Priority of every ``bift`` entry (mutually exclusive; P4Runtime wants >= 1).
BIFT_PRIORITY = 1


@dataclass(slots=True)
class _Run:
    """Counters, copies and pass trace of one arriving frame at one switch."""

    config: SwitchConfig
    lookups: int = 0
    dropped: int = 0
    #: (depth, creation order, port, packet, index of the pass it leaves after)
    emits: list[tuple[int, int, int, Packet, int]] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)

    def new_pass(self, parent: int) -> int:
        self.parents.append(parent)
        return len(self.parents) - 1

    def emit(self, depth: int, port: int, packet: Packet, after: int) -> None:
        self.emits.append((depth, len(self.emits), port, packet, after))

    def local_delivery(self, frame: Packet, parent: int, depth: int) -> None:
        """The pass of a plain frame: ``local_group`` and one copy per replica."""
        cur = self.new_pass(parent)
        self.lookups += 1
        hit = self.config.lookup(LOCAL_GROUP, frame.dst_mac)
        group = (self.config.multicast_groups.get(hit.param("group"))
                 if hit is not None and hit.action == SET_LOCAL_GROUP else None)
        if group is None:  # miss, or a group that is not installed: nothing replicates it
            self.dropped += 1
            return
        for port in group.ports:
            self.emit(depth, port, frame, cur)

    def result(self) -> PipelineResult:
        passes = len(self.parents)
        emitted = tuple(Emit(port, packet, depth, after) for depth, _, port, packet, after
                        in sorted(self.emits, key=lambda e: (e[0], e[1])))
        return PipelineResult(passes=passes, recirculations=passes - 1, lookups=self.lookups,
                              emitted=emitted, dropped=self.dropped,
                              pass_parents=tuple(self.parents))


@dataclass(frozen=True, slots=True, kw_only=True)
class BierDataPlane:
    """The BIER program compiled for one bitstring length.

    Parameters
    ----------
    bsl_bits : int
        BitString length in bits (64, 128, ..., 4096; RFC 8296 §2.1.2); frames
        with another BSL code fail parsing.
    """

    name: str = field(default="bier", init=False)
    bsl_bits: int = 64

    def __post_init__(self) -> None:
        bsl_code(self.bsl_bits)  # raises for lengths RFC 8296 does not define

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        """Run the program on ``packet`` arriving on ``in_port`` of ``switch``."""
        run = _Run(config)
        if packet.ethertype != ETHERTYPE_BIER:
            run.local_delivery(packet, -1, 1)
            return run.result()
        body = packet.header + packet.payload
        header = self._parse(body)
        if header is None:  # parser reject: dropped in the first pass
            run.new_pass(-1)
            run.dropped += 1
            return run.result()
        size = header.size_bytes
        inner = body[size:size + ETH_HEADER_BYTES]
        payload = body[size + ETH_HEADER_BYTES:]
        remaining = header.bitstring
        depth, cur = 0, -1
        while True:
            depth += 1
            cur = run.new_pass(cur)
            run.lookups += 1
            hit = config.lookup(BIFT, header.bift_id, remaining)
            if hit is None:
                run.dropped += 1
                return run.result()
            fbm = hit.param("fbm")
            if hit.action == FORWARD:
                if header.ttl > 1:
                    copy = header.with_bits(header.bitstring & fbm, header.ttl - 1)
                    run.emit(depth, hit.param("port"),
                             packet.with_header(copy.to_bytes() + inner), cur)
                else:  # TTL expired: the copy is dropped in egress
                    run.dropped += 1
            elif hit.action == DECAP:
                run.local_delivery(Packet.from_bytes(inner + payload, 0), cur, depth + 1)
            else:
                raise LookupError(f"{switch}: unknown action {hit.action} in {BIFT}")
            remaining &= ~fbm
            if not remaining or CONTINUE_SESSION not in config.clone_sessions:
                return run.result()

    def _parse(self, body: bytes) -> BierHeader | None:
        """The BIER header the parser accepts, or None (parser reject)."""
        try:
            header = BierHeader.from_bytes(body)
        except BierDecodeError:
            return None
        if (header.nibble != FIRST_NIBBLE or header.version != VERSION
                or BSL_BITS[header.bsl] != self.bsl_bits or header.proto != PROTO_ETHERNET
                or len(body) < header.size_bytes + ETH_HEADER_BYTES):
            return None
        return header


DATAPLANES.add("bier", cast(DataPlane, BierDataPlane()))
