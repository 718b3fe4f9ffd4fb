/* l2_multicast.p4 - plain L2 forwarding with multicast groups (P4_16, v1model).
 *
 * The baselines' data plane (unicast, broadcast, IP-style multicast). Python
 * reference model: sim/dataplanes/l2/reference.py (data-plane family "l2"); the rules
 * are written by strategies/l2/rules.py. Every table, action and parameter
 * name below is the string the Python state uses (checked by
 * tests/hil/test_p4info_names.py against build/l2_multicast.p4info.txtpb).
 *
 * One ingress table, MyIngress.l2_forward, keyed by
 *   hdr.ethernet.dstAddr  exact    (host MAC, or a group MAC 01:00:5e:..)
 *   hdr.ethernet.srcAddr  ternary  (0/0 = any publisher; a full mask chooses
 *                                   a per-publisher broadcast tree)
 * with the actions
 *   MyIngress.forward(port)         one copy out of `port`
 *   MyIngress.set_mcast_grp(group)  the PRE emits one copy per replica port
 * and a miss drops the frame (default action MyIngress.drop, helper-only).
 *
 * One pass, one lookup, no recirculation, no header of our own. Egress does
 * nothing: a multicast replica goes out of every replica port, the ingress
 * port included if the group lists it (the model does not prune it either).
 *
 * MyIngress.pass_counter[0] counts ingress passes (here: arriving frames),
 * readable through P4Runtime (CounterEntry) or simple_switch_CLI
 * (counter_read MyIngress.pass_counter 0).
 */

#include <core.p4>
#include <v1model.p4>

typedef bit<48> macAddr_t;
typedef bit<16> etherType_t;
typedef bit<9>  egressSpec_t;
typedef bit<16> mcastGrp_t;

const bit<32> PASS_COUNTER_SIZE = 1;
const bit<32> PASS_COUNTER_INDEX = 0;

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    macAddr_t   dstAddr;
    macAddr_t   srcAddr;
    etherType_t etherType;
}

struct metadata {
    /* empty: one pass, nothing to carry */
}

struct headers {
    ethernet_t ethernet;
}

/* ------------------------------------------------------------------- parser */

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
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

    table l2_forward {
        key = {
            hdr.ethernet.dstAddr : exact;
            hdr.ethernet.srcAddr : ternary;
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
        if (hdr.ethernet.isValid()) {
            l2_forward.apply();
        } else {
            drop();  /* runt frame: the parser could not extract Ethernet */
        }
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
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
