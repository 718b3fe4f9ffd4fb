/* range_filter.p4 - seed 004's publish_subscribe range table (P4_16, v1model).
 *
 * The P4_16 port of seed 004's P4_14 program: exact range boxes over the
 * pubsub values. Python reference model: sim/dataplanes/range_filter/reference.py
 * (data-plane family "range_filter", codec sim/dataplanes/event_header.py);
 * rules written by strategies/range_filter/range_boxes.py (range-boxes). Table, action,
 * parameter and match-field names are the strings the Python state uses
 * (checked by tests/hil/test_p4info_names.py).
 *
 * Header layout (PubsubLayout): DIMS values of VALUE_BITS bits, big endian,
 * after Ethernet | IPv4 | UDP (destination port 0x4242). One source, one
 * build per layout: `range_filter_<DIMS>x<VALUE_BITS>` is compiled with
 * -DDIMS=<DIMS> -DVALUE_BITS=<VALUE_BITS> (p4/Makefile; DIMS 1..8). The
 * layout is the strategy's (range-boxes: dims = the event space's attributes,
 * value_bits = 16 if every attribute fits, else 32; hil/programs.py picks
 * the build from the model's layout).
 *
 * Pass (one, no recirculation, no header edit):
 *   parser   Ethernet -> IPv4 (0x0800; version 4, IHL 5, protocol 17) -> UDP
 *            -> pubsub if the UDP destination port is 0x4242. Anything else
 *            (IPv6 included), or a frame too short for the pubsub values,
 *            leaves hdr.pubsub invalid;
 *   ingress  count the pass; pubsub invalid: drop (no lookup). Else apply
 *            MyIngress.publish_subscribe, keys hdr.pubsub.value_<i> (range)
 *            in attribute order, the highest priority wins; actions
 *            MyIngress.set_outport(port) | MyIngress.multicast(group)
 *            (standard_metadata.mcast_grp), default MyIngress._drop;
 *   egress   a copy leaving on its ingress port is dropped.
 *
 * MyIngress.pass_counter[0] counts ingress passes (= PipelineResult.passes).
 *
 * References: seed 004 Sec. 4.2 (pubsub_t, publish_subscribe, multicast
 * groups); digest seed001-004 B2, B6.4-B6.5.
 */

#include <core.p4>
#include <v1model.p4>

#ifndef DIMS
#define DIMS 2
#endif
#ifndef VALUE_BITS
#define VALUE_BITS 16
#endif
#if DIMS < 1 || DIMS > 8
#error "DIMS must be in 1..8"
#endif

typedef bit<48> macAddr_t;
typedef bit<16> etherType_t;
typedef bit<9>  egressSpec_t;
typedef bit<16> mcastGrp_t;
typedef bit<VALUE_BITS> value_t;   /* PubsubLayout.value_bits */

const etherType_t ETHERTYPE_IPV4 = 0x0800;
const bit<8>  PROTO_UDP = 17;
const bit<16> PUBSUB_UDP_PORT = 0x4242;

const bit<32> PASS_COUNTER_SIZE = 1;
const bit<32> PASS_COUNTER_INDEX = 0;

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    macAddr_t   dstAddr;
    macAddr_t   srcAddr;
    etherType_t etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length_;
    bit<16> checksum;
}

/* seed 004's pubsub_t: one value per attribute, in attribute order */
header pubsub_t {
    value_t value_0;
#if DIMS > 1
    value_t value_1;
#endif
#if DIMS > 2
    value_t value_2;
#endif
#if DIMS > 3
    value_t value_3;
#endif
#if DIMS > 4
    value_t value_4;
#endif
#if DIMS > 5
    value_t value_5;
#endif
#if DIMS > 6
    value_t value_6;
#endif
#if DIMS > 7
    value_t value_7;
#endif
}

struct metadata {
    /* empty: one pass, nothing to carry */
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    pubsub_t   pubsub;
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
            default: accept;           /* not IPv4: ingress drops it */
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4, 5, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            PUBSUB_UDP_PORT: parse_pubsub;
            default: accept;
        }
    }

    state parse_pubsub {
        packet.extract(hdr.pubsub);    /* too short: PacketTooShort, invalid */
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

    action _drop() {
        mark_to_drop(standard_metadata);
    }

    action set_outport(egressSpec_t port) {
        standard_metadata.egress_spec = port;
    }

    action multicast(mcastGrp_t group) {
        standard_metadata.mcast_grp = group;
    }

    table publish_subscribe {
        key = {
            hdr.pubsub.value_0 : range;
#if DIMS > 1
            hdr.pubsub.value_1 : range;
#endif
#if DIMS > 2
            hdr.pubsub.value_2 : range;
#endif
#if DIMS > 3
            hdr.pubsub.value_3 : range;
#endif
#if DIMS > 4
            hdr.pubsub.value_4 : range;
#endif
#if DIMS > 5
            hdr.pubsub.value_5 : range;
#endif
#if DIMS > 6
            hdr.pubsub.value_6 : range;
#endif
#if DIMS > 7
            hdr.pubsub.value_7 : range;
#endif
        }
        actions = {
            set_outport;
            multicast;
            _drop;
        }
        default_action = _drop();
        size = 65536;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);
        if (hdr.pubsub.isValid()) {
            publish_subscribe.apply();
        } else {
            _drop();
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
        packet.emit(hdr.udp);
        packet.emit(hdr.pubsub);
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
