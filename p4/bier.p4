/* bier.p4 - Bit Index Explicit Replication (RFC 8279) on the RFC 8296 header
 * (P4_16, v1model), one build per BitString length.
 *
 * Python reference model: sim/dataplanes/bier/reference.py (family "bier"),
 * codec sim/dataplanes/bier/codec.py; rules written by strategies/bier/bift.py
 * (strategy bier). Table, action, parameter and match-field names are the
 * strings the Python state uses (checked by tests/hil/test_p4info_names.py).
 *
 * Builds (p4/Makefile): -DBSL_BITS=64 (default), 128, 256 -> bier_bsl<BSL_BITS>;
 * 512..4096 compile the same way. A frame whose BSL code is not this build's
 * is dropped in the parser check, as the model's BierDataPlane(bsl_bits) does.
 *
 * Frame: Ethernet (0xAB37) | BIER header (12 B + BSL/8) | carried Ethernet
 * header (Proto 3) | payload. Header fields, big endian (RFC 8296 Sec. 2):
 *   BIFT-id 20 | TC 3 | S 1 | TTL 8 | Nibble 4 | Ver 4 | BSL 4 | Entropy 20 |
 *   OAM 2 | Rsv 2 | DSCP 6 | Proto 6 | BFIR-id 16 | BitString BSL_BITS.
 * The parser accepts the header only with Nibble 0101, Ver 0, this build's
 * BSL code and Proto 3, followed by a whole carried Ethernet header;
 * anything else with EtherType 0xAB37 is dropped after one pass, no lookup.
 *
 * Tables (prefix MyIngress.; default action drop: a miss drops):
 *   bift         hdr.bier.bift_id exact,          forward(fbm, port), decap(fbm)
 *                meta.remaining_bits ternary
 *   local_group  hdr.ethernet.dstAddr exact       set_local_group(group)
 * Clone session CONTINUE_SESSION (512): the continuation copy of a BIER
 * packet, which recirculates with the remaining bits (the session's port is
 * never used: the clone recirculates in egress).
 *
 * Passes of a BIER packet (RFC 8279 Sec. 6.5, as P4-BIER runs it: one pass
 * per next hop; uni-tue-kn/p4-bier P4-Implementation/src/components/
 * controls/Bier.p4 and egress.p4):
 *   1. first pass (instance NORMAL): remaining_bits = BitString.
 *   2. every pass applies bift to (BIFT-id, remaining_bits); the entry of
 *      the lowest set bit hits (ternary value 2^(k-1), mask 2^k - 1).
 *        forward(fbm, port): this instance leaves on `port` with
 *          BitString & fbm and TTL - 1; with an arriving TTL <= 1 it is
 *          dropped in egress instead (the bits are still cleared);
 *        decap(fbm): the outer Ethernet and BIER headers are removed (the
 *          carried Ethernet header becomes the frame's) and the instance
 *          recirculates in egress: the local-delivery pass (4.);
 *      remaining_bits &= ~fbm. A miss drops the instance (no continuation).
 *   3. while bits remain, an I2E clone to CONTINUE_SESSION carries
 *      remaining_bits (CLONE_FL); BMv2 clones the frame as it entered the
 *      pass (the arriving header), and the clone recirculates in egress
 *      (RECIRC_FL): the next pass of the chain.
 *   4. a plain (non-BIER) frame, from a link or a decap, takes one pass:
 *      local_group on its destination MAC; set_local_group(group) hands it
 *      to the packet-replication engine (multicast group `group`, one
 *      replica per receiving host port); a miss drops it.
 * So m next hops take m passes, plus 2 with the own bit (decap and local
 * delivery), one bift or local_group lookup each.
 *
 * MyIngress.pass_counter[0] counts every ingress pass (PipelineResult.passes).
 *
 * References: RFC 8279 Sec. 6.4 (BIFT, F-BM), 6.5 (forwarding procedure);
 * RFC 8296 Sec. 2 (header), Sec. 2.2 (EtherType 0xAB37 for non-MPLS),
 * IANA "BIER Next Protocol Identifiers" (3 = Ethernet frame);
 * draft-ietf-bier-non-mpls-bift-encoding (BIFT-id = BSL | SD | SI);
 * Merling et al., JNCA 2020 (P4-BIER).
 */

#include <core.p4>
#include <v1model.p4>

/* ------------------------------------------------------------ configuration */

#ifndef BSL_BITS
#define BSL_BITS 64
#endif

/* RFC 8296 Sec. 2: BSL code k stands for 2^(k+5) bits */
#if BSL_BITS == 64
#  define BSL_CODE 1
#elif BSL_BITS == 128
#  define BSL_CODE 2
#elif BSL_BITS == 256
#  define BSL_CODE 3
#elif BSL_BITS == 512
#  define BSL_CODE 4
#elif BSL_BITS == 1024
#  define BSL_CODE 5
#elif BSL_BITS == 2048
#  define BSL_CODE 6
#elif BSL_BITS == 4096
#  define BSL_CODE 7
#else
#  error "BSL_BITS must be one of 64, 128, 256, 512, 1024, 2048, 4096 (RFC 8296)"
#endif

#ifndef BIFT_SIZE
#define BIFT_SIZE 16384
#endif
#ifndef LOCAL_GROUP_SIZE
#define LOCAL_GROUP_SIZE 16384
#endif

typedef bit<48>       macAddr_t;
typedef bit<16>       etherType_t;
typedef bit<9>        egressSpec_t;
typedef bit<16>       mcastGrp_t;
typedef bit<20>       biftId_t;
typedef bit<BSL_BITS> bitString_t;

const etherType_t ETHERTYPE_BIER = 0xAB37;   /* RFC 8296 Sec. 2.2 */
const bit<4> FIRST_NIBBLE   = 0b0101;
const bit<4> VERSION        = 0;
const bit<4> BSL            = BSL_CODE;
const bit<6> PROTO_ETHERNET = 3;             /* IANA BIER Next Protocol: Ethernet */

const bit<32> CONTINUE_SESSION = 512;

/* v1model standard_metadata.instance_type values (BMv2 simple_switch) */
const bit<32> PKT_INSTANCE_TYPE_NORMAL        = 0;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;

const bit<8> RECIRC_FL = 1;
const bit<8> CLONE_FL  = 2;

const bit<32> PASS_COUNTER_SIZE = 1;
const bit<32> PASS_COUNTER_INDEX = 0;

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    macAddr_t   dstAddr;
    macAddr_t   srcAddr;
    etherType_t etherType;
}

header bier_t {
    biftId_t    bift_id;
    bit<3>      tc;
    bit<1>      s;
    bit<8>      ttl;
    bit<4>      nibble;
    bit<4>      version;
    bit<4>      bsl;
    bit<20>     entropy;
    bit<2>      oam;
    bit<2>      rsv;
    bit<6>      dscp;
    bit<6>      proto;
    bit<16>     bfir_id;
    bitString_t bitstring;
}

struct headers {
    ethernet_t ethernet;
    bier_t     bier;
    ethernet_t inner_ethernet;   /* the carried frame's Ethernet header */
}

struct metadata {
    @field_list(RECIRC_FL, CLONE_FL)
    bitString_t  remaining_bits;   /* bift key: bits not yet served */
    @field_list(RECIRC_FL, CLONE_FL)
    egressSpec_t in_port;          /* arrival port of the chain */
    /* per pass */
    bitString_t  fbm;              /* the F-BM of the entry that hit */
    bit<1>       decapped;         /* decap hit: recirculate the carried frame */
    bit<1>       ttl_expired;      /* forward hit with arriving TTL <= 1 */
}

/* ------------------------------------------------------------------- parser */

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_BIER: parse_bier;
            default: accept;
        }
    }

    state parse_bier {
        packet.extract(hdr.bier);   /* PacketTooShort: dropped in ingress */
        transition select(hdr.bier.nibble, hdr.bier.version, hdr.bier.bsl, hdr.bier.proto) {
            (FIRST_NIBBLE, VERSION, BSL, PROTO_ETHERNET): parse_inner;
            default: accept;        /* no carried header: dropped in ingress */
        }
    }

    state parse_inner {
        packet.extract(hdr.inner_ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

/* ------------------------------------------------------------------ ingress */

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    counter(PASS_COUNTER_SIZE, CounterType.packets) pass_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* RFC 8279 Sec. 6.5: a copy towards the neighbour with BitString AND F-BM */
    action forward(bitString_t fbm, egressSpec_t port) {
        meta.fbm = fbm;
        standard_metadata.egress_spec = port;
        hdr.bier.bitstring = hdr.bier.bitstring & fbm;
        hdr.bier.ttl = hdr.bier.ttl - 1;
    }

    /* RFC 8279 Sec. 6.1: the BFER's own bit; the carried frame goes to the overlay */
    action decap(bitString_t fbm) {
        meta.fbm = fbm;
        meta.decapped = 1;
        hdr.ethernet = hdr.inner_ethernet;
        hdr.inner_ethernet.setInvalid();
        hdr.bier.setInvalid();
        standard_metadata.egress_spec = meta.in_port;   /* recirculates, never sent */
    }

    table bift {
        key = {
            hdr.bier.bift_id    : exact;
            meta.remaining_bits : ternary;
        }
        actions = { forward; decap; drop; }
        default_action = drop();
        size = BIFT_SIZE;
    }

    action set_local_group(mcastGrp_t group) {
        standard_metadata.mcast_grp = group;
    }

    table local_group {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { set_local_group; drop; }
        default_action = drop();
        size = LOCAL_GROUP_SIZE;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);

        if (standard_metadata.parser_error != error.NoError) {
            drop();
            return;
        }
        if (hdr.ethernet.etherType != ETHERTYPE_BIER) {
            local_group.apply();             /* local delivery of a plain frame */
            return;
        }
        if (!hdr.inner_ethernet.isValid()) {
            drop();                          /* not a BIER header this build reads */
            return;
        }
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            meta.remaining_bits = hdr.bier.bitstring;
            meta.in_port = standard_metadata.ingress_port;
        }
        bool expired = hdr.bier.ttl <= 1;
        switch (bift.apply().action_run) {
            forward: {
                if (expired) {
                    meta.ttl_expired = 1;
                }
            }
            decap: { }
            default: {
                return;                      /* miss: dropped, no continuation */
            }
        }
        meta.remaining_bits = meta.remaining_bits & ~meta.fbm;
        if (meta.remaining_bits != 0) {
            clone_preserving_field_list(CloneType.I2E, CONTINUE_SESSION, CLONE_FL);
        }
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            recirculate_preserving_field_list(RECIRC_FL);   /* the next pass */
        } else if (meta.decapped == 1) {
            recirculate_preserving_field_list(RECIRC_FL);   /* local delivery */
        } else if (meta.ttl_expired == 1) {
            mark_to_drop(standard_metadata);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.bier);
        packet.emit(hdr.inner_ethernet);
    }
}

V1Switch(
    MyParser(),
    MyVerifyChecksum(),
    MyIngress(),
    MyEgress(),
    MyComputeChecksum(),
    MyDeparser()
) main;
