/* alm.p4 - L2 flows plus per-replica destination rewrite: the ALM baselines (P4_16, v1model).
 *
 * The switch program under the broker overlays (application-layer
 * multicast, seed 000 Sec. 3.5.4): l2_multicast.p4 plus a broker-group table and
 * one egress table. Python reference model: sim/dataplanes/alm/reference.py
 * (data-plane family "alm"); rules written by strategies/alm/brokers.py
 * (alm, alm-mcgroups, ...). Table, action, parameter and match-field names
 * are the strings the Python state uses (checked by
 * tests/hil/test_p4info_names.py).
 *
 * Pass (one, no recirculation):
 *   ingress  count the pass; MyIngress.l2_forward (hdr.ethernet.dstAddr
 *            exact, hdr.ethernet.srcAddr ternary):
 *              MyIngress.forward(port)        one copy out of `port`;
 *              MyIngress.set_mcast_grp(group) PRE replication (below);
 *            on a miss, MyIngress.broker_group (hdr.ethernet.dstAddr exact)
 *            maps a broker's group MAC to MyIngress.set_mcast_grp(group);
 *            a miss in both drops (default MyIngress.drop, helper-only);
 *   egress   a PRE replica (instance type REPLICATION) applies
 *            MyEgress.replica_dst (standard_metadata.egress_rid exact):
 *            MyEgress.set_dst(mac) rewrites the destination MAC, so each
 *            replica becomes a unicast copy to one overlay node; a miss
 *            leaves the replica unchanged. A forwarded (unicast) copy is not
 *            looked up. Nothing is pruned: a copy may leave on its ingress
 *            port (the model does not prune either).
 *
 * MyIngress.pass_counter[0] counts ingress passes (= PipelineResult.passes).
 *
 * References: seed 000 Sec. 2.3 (i), Sec. 3.5.4; digest seed000-ch1-4 Sec. 3.1 (i), 7.17.
 */

#include <core.p4>
#include <v1model.p4>

typedef bit<48> macAddr_t;
typedef bit<16> etherType_t;
typedef bit<9>  egressSpec_t;
typedef bit<16> mcastGrp_t;

/* v1model standard_metadata.instance_type of a PRE replica (BMv2 simple_switch) */
const bit<32> PKT_INSTANCE_TYPE_REPLICATION = 5;

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
            NoAction;
        }
        default_action = NoAction();   /* a miss tries broker_group */
        size = 65536;
    }

    table broker_group {
        key = {
            hdr.ethernet.dstAddr : exact;
        }
        actions = {
            set_mcast_grp;
            drop;
        }
        default_action = drop();
        size = 65536;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);
        if (!hdr.ethernet.isValid()) {
            drop();                    /* runt frame */
        } else if (!l2_forward.apply().hit) {
            broker_group.apply();
        }
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {

    action set_dst(macAddr_t mac) {
        hdr.ethernet.dstAddr = mac;
    }

    table replica_dst {
        key = {
            standard_metadata.egress_rid : exact;
        }
        actions = {
            set_dst;
            NoAction;
        }
        default_action = NoAction();
        size = 65536;
    }

    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_REPLICATION) {
            replica_dst.apply();
        }
    }
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
