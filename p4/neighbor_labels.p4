/* neighbor_labels.p4 - neighbour-id (hops) and destination-id (destinations)
 * label stacks (P4_16, v1model).
 *
 * Python reference model: sim/dataplanes/neighbor_labels/reference.py (family
 * "neighbor_labels"), label ids sim/dataplanes/neighbor_labels/codec.py,
 * stack codec sim/dataplanes/virtual_tree/codec.py (LabelFormat); rules
 * written by strategies/neighbor_labels/hops.py and strategies/neighbor_labels/destinations.py. Names are
 * the strings the Python state uses (tests/hil/test_p4info_names.py).
 *
 * Frame: Ethernet (0x9999) | Size (16) | labels (16: 2-bit type + 14-bit id)
 * | payload. The type of the FIRST label on arrival picks the logic:
 * 01 NODE -> hops, 10 DEST -> destinations, anything else is dropped.
 *
 * Tables (key meta.label = the label act_read_entry copied):
 *   check_neighbor  meta.label exact  clone_to_neighbor(port)
 *   check_dest      meta.label exact  set_dest_port(port)
 * The actions record the port; the clone itself is made in the apply block,
 * only for the original (a clone's scan uses the same tables as hit/miss
 * tests). Clone sessions: one per port, session id = port.
 *
 * hops, one label per pass:
 *   ORIGINAL: label = top; check_neighbor hit on a port other than the
 *     arrival port -> I2E clone to that port; the last label ends (drops)
 *     the original, otherwise egress pops the top label and recirculates.
 *   CLONE of label k: egress of its creating pass pops label k (as the
 *     original does); then one pass per remaining label: while not trimming,
 *     check_neighbor on L[num_seen]; the first hit (the next neighbour's id)
 *     starts trimming; kept labels advance num_seen, trimmed ones are
 *     removed (one per pass). It leaves when every label was seen.
 * destinations, one label per pass:
 *   ORIGINAL: label = top; check_dest gives the port; clone the first time a
 *     port is used (served_ports) unless it is the arrival port; pop; the
 *     last label drops the original.
 *   CLONE of label k for port p: keeps label k (num_seen = 1), then one pass
 *     per later label: check_dest; a hit on p keeps the label, anything else
 *     removes it. It leaves when every label was seen.
 *
 * Deviation: at most MAX_LABELS labels (default 128, -DMAX_LABELS=N); a
 * larger Size is a parser error and the frame is dropped.
 *
 * MyIngress.pass_counter[0] counts every ingress pass (PipelineResult.passes).
 */

#include <core.p4>
#include <v1model.p4>

#ifndef MAX_LABELS
#define MAX_LABELS 128
#endif

typedef bit<48> macAddr_t;
typedef bit<16> etherType_t;
typedef bit<9>  egressSpec_t;
typedef bit<16> label_t;      /* LabelFormat.label_bits */
typedef bit<2>  labelType_t;  /* LabelFormat.type_bits */
typedef bit<16> stackSize_t;  /* LabelFormat.size_bits */
typedef bit<64> portMask_t;   /* LabelFormat.bitmask_bits; port p = bit p-1 */

const etherType_t ETHERTYPE_STACK = 0x9999;
const labelType_t KIND_NODE = 0b01;
const labelType_t KIND_DEST = 0b10;

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

header size_h {
    stackSize_t num_entries;
}

header entry_h {
    label_t ident;             /* type (2 bit) | id (14 bit) */
}

struct headers {
    ethernet_t          ethernet;
    size_h              size;
    entry_h[MAX_LABELS] stack;
}

struct metadata {
    @field_list(RECIRC_FL, CLONE_FL)
    labelType_t  kind;             /* type of the first label on arrival */
    @field_list(RECIRC_FL)
    egressSpec_t in_port;
    @field_list(RECIRC_FL)
    portMask_t   served_ports;     /* destinations: ports already cloned to */
    @field_list(RECIRC_FL)
    bit<1>       is_clone;
    @field_list(RECIRC_FL, CLONE_FL)
    egressSpec_t clone_port;       /* port the clone leaves on (session port) */
    @field_list(RECIRC_FL, CLONE_FL)
    egressSpec_t dest_port;        /* destinations: the clone's table port p */
    @field_list(RECIRC_FL)
    stackSize_t  num_seen_labels;  /* clone: labels kept so far */
    @field_list(RECIRC_FL)
    bit<1>       trimming;         /* hops clone: past the next neighbour */
    /* per pass */
    label_t      label;
    egressSpec_t port;             /* port of the last table hit */
    bit<1>       scan_more;
    stackSize_t  parse_remaining;
}

/* ------------------------------------------------------------------- parser */

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_STACK: parse_size;
            default: accept;
        }
    }

    state parse_size {
        packet.extract(hdr.size);
        meta.parse_remaining = hdr.size.num_entries;
        transition select(hdr.size.num_entries) {
            0: accept;
            default: parse_label;
        }
    }

    state parse_label {
        packet.extract(hdr.stack.next);
        meta.parse_remaining = meta.parse_remaining - 1;
        transition select(meta.parse_remaining) {
            0: accept;
            default: parse_label;
        }
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

    action act_read_entry() {
        meta.label = hdr.stack[meta.num_seen_labels].ident;
    }

    /* remove L[num_seen_labels]: invalid elements are not deparsed */
    action remove_entry() {
        hdr.stack[meta.num_seen_labels].setInvalid();
        hdr.size.num_entries = hdr.size.num_entries - 1;
    }

    action clone_to_neighbor(egressSpec_t port) {
        meta.port = port;
    }

    action set_dest_port(egressSpec_t port) {
        meta.port = port;
    }

    table check_neighbor {
        key = { meta.label : exact; }
        actions = { clone_to_neighbor; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    table check_dest {
        key = { meta.label : exact; }
        actions = { set_dest_port; NoAction; }
        default_action = NoAction();
        size = 16384;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);

        if (standard_metadata.parser_error != error.NoError
                || !hdr.size.isValid() || hdr.size.num_entries == 0) {
            drop();
            return;
        }
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            meta.in_port = standard_metadata.ingress_port;
            meta.kind = hdr.stack[0].ident[15:14];
            if (meta.kind != KIND_NODE && meta.kind != KIND_DEST) {
                drop();
                return;
            }
        }
        act_read_entry();   /* the original always has num_seen_labels == 0: the top */

        /* BMv2 applies each table at one place in the control flow */
        bool hit = false;
        if (meta.kind == KIND_NODE) {
            if (meta.is_clone == 0 || meta.trimming == 0) {
                hit = check_neighbor.apply().hit;
            }
        } else {
            hit = check_dest.apply().hit;
        }

        if (meta.is_clone == 1) {
            if (meta.kind == KIND_NODE) {
                if (hit) {
                    meta.trimming = 1;         /* next neighbour's subtree starts */
                }
                if (meta.trimming == 1) {
                    remove_entry();
                } else {
                    meta.num_seen_labels = meta.num_seen_labels + 1;
                }
            } else {
                if (hit && meta.port == meta.dest_port) {
                    meta.num_seen_labels = meta.num_seen_labels + 1;
                } else {
                    remove_entry();
                }
            }
            standard_metadata.egress_spec = meta.clone_port;
            if (meta.num_seen_labels < hdr.size.num_entries) {
                meta.scan_more = 1;
            }
            return;
        }

        /* the original */
        if (meta.kind == KIND_NODE) {
            if (hit && meta.port != meta.in_port) {
                meta.clone_port = meta.port;
                clone_preserving_field_list(CloneType.I2E, (bit<32>)meta.port, CLONE_FL);
            }
        } else if (hit) {
            portMask_t bit_p = (portMask_t)1 << (bit<8>)(meta.port - 1);
            if ((meta.served_ports & bit_p) == 0 && meta.port != meta.in_port) {
                meta.served_ports = meta.served_ports | bit_p;
                meta.dest_port = meta.port;
                meta.clone_port = meta.port;
                clone_preserving_field_list(CloneType.I2E, (bit<32>)meta.port, CLONE_FL);
            }
        }
        if (hdr.size.num_entries == 1) {
            drop();                          /* last label: the original is exhausted */
            return;
        }
        standard_metadata.egress_spec = meta.in_port;   /* to egress, then recirculate */
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {

    action pop_entry() {
        hdr.stack.pop_front(1);
        hdr.size.num_entries = hdr.size.num_entries - 1;
    }

    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            meta.is_clone = 1;
            meta.trimming = 0;
            if (meta.kind == KIND_NODE) {
                pop_entry();                 /* hops: the clone carries what follows */
                meta.num_seen_labels = 0;
            } else {
                meta.num_seen_labels = 1;    /* destinations: keeps its own label */
            }
            if (meta.num_seen_labels < hdr.size.num_entries) {
                recirculate_preserving_field_list(RECIRC_FL);
            }
        } else if (meta.is_clone == 0) {
            pop_entry();
            recirculate_preserving_field_list(RECIRC_FL);
        } else if (meta.scan_more == 1) {
            recirculate_preserving_field_list(RECIRC_FL);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.size);
        packet.emit(hdr.stack);
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
