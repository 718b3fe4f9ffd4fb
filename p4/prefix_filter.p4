/* prefix_filter.p4 - PLEROMA dz flows: LPM on the IP destination (P4_16, v1model).
 *
 * Seed 001's flows (in_port + masked destination -> egress ports) as one LPM
 * table per IP version. Python reference model: sim/dataplanes/prefix_filter/reference.py
 * (data-plane family "prefix_filter"); rules written by strategies/prefix_filter/pleroma.py
 * (pleroma-dz). Every table, action, parameter and match-field name below is
 * the string the Python state uses (checked by tests/hil/test_p4info_names.py
 * against prefix_filter.p4info.txtpb).
 *
 * Frame: Ethernet | IPv4 (0x0800, version 4, IHL 5, protocol 17) or
 *        IPv6 (0x86DD, version 6, next header 17) | UDP | pubsub | payload.
 * The pubsub values are not parsed (the dz sits in the IP destination).
 *
 * Pass (one, no recirculation, no header edit):
 *   parser   Ethernet -> IPv4 / IPv6 -> UDP; any other EtherType, IP
 *            version, IHL or protocol, or a frame too short for IP + UDP
 *            leaves hdr.udp invalid;
 *   ingress  count the pass; no UDP header: drop (no lookup). Else apply
 *            MyIngress.dz_forward (IPv4) or MyIngress.dz_forward_v6 (IPv6),
 *            keys standard_metadata.ingress_port (exact) and
 *            hdr.ipv4.dstAddr / hdr.ipv6.dstAddr (lpm: the longest dz wins),
 *            actions MyIngress.forward(port) | MyIngress.set_mcast_grp(group),
 *            a miss drops (default MyIngress.drop, helper-only);
 *   egress   a copy (unicast or PRE replica) whose egress port is the
 *            ingress port is dropped (flows never name their ingress port;
 *            merged flows may).
 *
 * No checksum is verified or recomputed: the model forwards the bytes as
 * they came, and so does this program.
 *
 * MyIngress.pass_counter[0] counts ingress passes (= PipelineResult.passes).
 *
 * References: seed 001 Sec. 2.2-2.3 (dz in the IP destination, flows), Sec. 5.1;
 * digest seed001-004 A1 "Flows", Part C.
 */

#include <core.p4>
#include <v1model.p4>

typedef bit<48>  macAddr_t;
typedef bit<16>  etherType_t;
typedef bit<9>   egressSpec_t;
typedef bit<16>  mcastGrp_t;
typedef bit<32>  ip4Addr_t;
typedef bit<128> ip6Addr_t;

const etherType_t ETHERTYPE_IPV4 = 0x0800;
const etherType_t ETHERTYPE_IPV6 = 0x86DD;
const bit<8> PROTO_UDP = 17;

const bit<32> PASS_COUNTER_SIZE = 1;
const bit<32> PASS_COUNTER_INDEX = 0;

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    macAddr_t   dstAddr;
    macAddr_t   srcAddr;
    etherType_t etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<8>    diffserv;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

header ipv6_t {
    bit<4>    version;
    bit<8>    trafficClass;
    bit<20>   flowLabel;
    bit<16>   payloadLen;
    bit<8>    nextHdr;
    bit<8>    hopLimit;
    ip6Addr_t srcAddr;
    ip6Addr_t dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length_;
    bit<16> checksum;
}

struct metadata {
    /* empty: one pass, nothing to carry */
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    ipv6_t     ipv6;
    udp_t      udp;
}

/* ------------------------------------------------------------------- parser */

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;           /* not IP: ingress drops it */
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);      /* too short: PacketTooShort, no UDP */
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4, 5, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        transition select(hdr.ipv6.version, hdr.ipv6.nextHdr) {
            (6, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
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

    action forward(egressSpec_t port) {
        standard_metadata.egress_spec = port;
    }

    action set_mcast_grp(mcastGrp_t group) {
        standard_metadata.mcast_grp = group;
    }

    table dz_forward {
        key = {
            standard_metadata.ingress_port : exact;
            hdr.ipv4.dstAddr               : lpm;
        }
        actions = {
            forward;
            set_mcast_grp;
            drop;
        }
        default_action = drop();
        size = 65536;
    }

    table dz_forward_v6 {
        key = {
            standard_metadata.ingress_port : exact;
            hdr.ipv6.dstAddr               : lpm;
        }
        actions = {
            forward;
            set_mcast_grp;
            drop;
        }
        default_action = drop();
        size = 65536;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);
        if (!hdr.udp.isValid()) {
            drop();                    /* the model's parse_ip_udp returned None */
        } else if (hdr.ipv4.isValid()) {
            dz_forward.apply();
        } else {
            dz_forward_v6.apply();
        }
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);   /* never back out of the ingress port */
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.udp);
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
