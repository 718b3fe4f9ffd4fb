/* virtual_tree.p4 - tree / hop / stop label stacks (P4_16, v1model).
 *
 * The seed 000 ch. 5 program (Listings 5.1-5.5), also the P4 implementation
 * of the ch. 4 *tree* and *hybrid* strategies. Python reference model:
 * sim/dataplanes/virtual_tree/reference.py (family "virtual_tree"), codec
 * sim/dataplanes/virtual_tree/codec.py; rules written by strategies/virtual_tree/tree.py,
 * strategies/virtual_tree/hybrid.py and strategies/virtual_tree/installation.py. Table, action, parameter
 * and match-field names are the strings the Python state uses (checked by
 * tests/hil/test_p4info_names.py against build/virtual_tree.p4info.txtpb).
 *
 * Frame: Ethernet (0x9999) | Size (16) | labels (16 each) | payload.
 * Label = 2-bit type (01 hop, 10 stop, 11 tree) + 14-bit id; the tables match
 * the whole 16-bit label, so the type needs no decoding here.
 *
 * Tables (key meta.label = hdr.stack[meta.stack_index].ident):
 *   check_hop    meta.label exact                      set_hop_port(port)
 *   check_tree   meta.label exact                      set_tree_ports(ports) |
 *                                                      set_tree_group(group)
 *   check_stop   meta.label exact, meta.clone_port ex. stop_clone()
 *   extract_port meta.remaining_ports ternary          set_port(port)
 * Clone sessions: one per port, session id = port (I2E clones).
 *
 * Instances, pass by pass (the model's loop, one iteration = one pass):
 *
 * ORIGINAL (instance type NORMAL on arrival, RECIRC afterwards, is_clone 0)
 *   ingress: label = L[stack_index]; if remaining_ports == 0: check_hop, on a
 *     miss check_tree (set_tree_group: the PRE takes the packet, the
 *     original ends); if remaining_ports != 0: extract_port gives the lowest
 *     port p, clear its bit, I2E-clone to session p unless p is served or is
 *     the arrival port (then mark it served); if the mask is empty and this
 *     was the last label, drop the original; else send it to egress.
 *   egress: if remove_flag (a hop label), remove L[stack_index] (Size - 1),
 *     else if the mask is empty advance stack_index; recirculate preserving
 *     RECIRC_FL (stack_index, remaining/served masks, arrival port).
 *
 * CLONE (I2E clone: the frame as it entered this pass, plus CLONE_FL =
 *   stack_index, remove_flag, clone_port; remaining_ports is NOT inherited)
 *   egress of its creating pass: the same stack edit as the original (a
 *     consumed hop label is removed in the clone too, else stack_index + 1);
 *     then recirculate if labels remain, else leave on its port.
 *   ingress of each later pass: check_stop(label, clone_port); a hit drops
 *     it; else stack_index + 1, and it leaves when the stack is exhausted,
 *     otherwise it recirculates once more.
 *
 * REPLICA (PRE copy after set_tree_group, all metadata copied): in egress it
 *   is dropped if its port is the arrival port or already served; otherwise
 *   it becomes a clone made at this label (stack_index + 1, no edit).
 *
 * Deviations from the model (sim/dataplanes/virtual_tree/reference.py):
 * - at most MAX_LABELS labels (compile-time, default 128): a larger Size
 *   overflows the parser's header stack, a parser error, and the frame is
 *   dropped in ingress (the model accepts any Size). Rebuild with
 *   -DMAX_LABELS=N for longer stacks.
 * - an extract_port miss (the model raises LookupError: a control-plane bug)
 *   drops the packet (default action MyIngress.drop).
 *
 * MyIngress.pass_counter[0] counts every ingress pass (originals, clones,
 * replicas, rejected frames): the model's PipelineResult.passes.
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
typedef bit<16> stackSize_t;       /* LabelFormat.size_bits */
typedef bit<64> portMask_t;   /* LabelFormat.bitmask_bits; port p = bit p-1 */
typedef bit<16> mcastGrp_t;

const etherType_t ETHERTYPE_STACK = 0x9999;

/* v1model standard_metadata.instance_type values (BMv2 simple_switch) */
const bit<32> PKT_INSTANCE_TYPE_NORMAL        = 0;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> PKT_INSTANCE_TYPE_REPLICATION   = 5;

/* field-list ids of @field_list annotations */
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
    stackSize_t num_entries;        /* Size: number of labels that follow */
}

header entry_h {
    label_t ident;             /* type (2 bit) | id (14 bit) */
}

struct headers {
    ethernet_t         ethernet;
    size_h             size;
    entry_h[MAX_LABELS] stack;
}

struct metadata {
    /* kept across recirculation (original and scanning clones) */
    @field_list(RECIRC_FL, CLONE_FL)
    stackSize_t       stack_index;      /* label this pass works on */
    @field_list(RECIRC_FL)
    portMask_t   remaining_ports;  /* ports of the current label still to serve */
    @field_list(RECIRC_FL)
    portMask_t   served_ports;     /* ports this switch already cloned to */
    @field_list(RECIRC_FL)
    egressSpec_t in_port;          /* arrival port of the original */
    @field_list(RECIRC_FL)
    bit<1>       is_clone;         /* 1: a clone / replica scanning for stop labels */
    @field_list(RECIRC_FL, CLONE_FL)
    egressSpec_t clone_port;       /* the port a clone leaves on */
    /* the creating pass's edit is replayed by the clone: copy to clones only */
    @field_list(CLONE_FL)
    bit<1>       remove_flag;      /* this pass consumed a hop label */
    /* per pass */
    label_t      label;            /* act_read_entry: L[stack_index] */
    egressSpec_t port;             /* extract_port: lowest port of the mask */
    bit<1>       scan_more;        /* a scanning clone recirculates once more */
    stackSize_t parse_remaining;
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
            default: accept;           /* not a stack: ingress drops it */
        }
    }

    state parse_size {
        packet.extract(hdr.size);
        meta.parse_remaining = hdr.size.num_entries;
        transition select(hdr.size.num_entries) {
            0: accept;                 /* empty stack: ingress drops it */
            default: parse_label;
        }
    }

    state parse_label {
        packet.extract(hdr.stack.next);   /* PacketTooShort / StackOutOfBounds */
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

    /* run-time stack index: an action, not a table (no lookup) */
    action act_read_entry() {
        meta.label = hdr.stack[meta.stack_index].ident;
    }

    action set_hop_port(egressSpec_t port) {
        meta.remaining_ports = meta.remaining_ports | ((portMask_t)1 << (bit<8>)(port - 1));
        meta.remove_flag = 1;
    }

    action set_tree_ports(portMask_t ports) {
        meta.remaining_ports = meta.remaining_ports | ports;
    }

    action set_tree_group(mcastGrp_t group) {
        standard_metadata.mcast_grp = group;
    }

    action stop_clone() {
        mark_to_drop(standard_metadata);
    }

    action set_port(egressSpec_t port) {
        meta.port = port;
    }

    table check_hop {
        key = { meta.label : exact; }
        actions = { set_hop_port; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    table check_tree {
        key = { meta.label : exact; }
        actions = { set_tree_ports; set_tree_group; NoAction; }
        default_action = NoAction();
        size = 16384;
    }

    table check_stop {
        key = {
            meta.label      : exact;
            meta.clone_port : exact;
        }
        actions = { stop_clone; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    table extract_port {
        key = { meta.remaining_ports : ternary; }
        actions = { set_port; drop; }
        default_action = drop();
        size = 64;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);

        /* parser reject (not 0x9999, Size 0, short frame, stack overflow) */
        if (standard_metadata.parser_error != error.NoError
                || !hdr.size.isValid() || hdr.size.num_entries == 0) {
            drop();
            return;
        }
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            meta.in_port = standard_metadata.ingress_port;
        }
        act_read_entry();

        if (meta.is_clone == 1) {
            /* a clone scanning the labels after the one that made it */
            if (check_stop.apply().hit) {
                return;                          /* stop_clone dropped it */
            }
            meta.stack_index = meta.stack_index + 1;
            standard_metadata.egress_spec = meta.clone_port;
            if (meta.stack_index < hdr.size.num_entries) {
                meta.scan_more = 1;              /* recirculate in egress */
            }
            return;
        }

        /* the original */
        if (meta.remaining_ports == 0) {
            if (!check_hop.apply().hit) {
                switch (check_tree.apply().action_run) {
                    set_tree_group: {
                        return;                  /* the PRE replicates; original ends */
                    }
                    default: { }
                }
            }
        }
        if (meta.remaining_ports != 0) {
            extract_port.apply();
            portMask_t bit_p = (portMask_t)1 << (bit<8>)(meta.port - 1);
            meta.remaining_ports = meta.remaining_ports & ~bit_p;
            if ((meta.served_ports & bit_p) == 0 && meta.port != meta.in_port) {
                meta.served_ports = meta.served_ports | bit_p;
                meta.clone_port = meta.port;
                clone_preserving_field_list(CloneType.I2E, (bit<32>)meta.port, CLONE_FL);
            }
        }
        if (meta.remaining_ports == 0 && meta.stack_index + 1 >= hdr.size.num_entries) {
            drop();                              /* every label seen, mask empty */
            return;
        }
        standard_metadata.egress_spec = meta.in_port;   /* to egress, then recirculate */
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* remove L[stack_index]: an invalid element is not emitted by the
     * deparser, so the next parse sees the stack without it */
    action remove_entry() {
        hdr.stack[meta.stack_index].setInvalid();
        hdr.size.num_entries = hdr.size.num_entries - 1;
    }

    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_REPLICATION) {
            /* PRE replica of set_tree_group: a clone made at this label */
            portMask_t bit_e = (portMask_t)1 << (bit<8>)(standard_metadata.egress_port - 1);
            if (standard_metadata.egress_port == meta.in_port
                    || (meta.served_ports & bit_e) != 0) {
                drop();
                return;
            }
            meta.is_clone = 1;
            meta.clone_port = standard_metadata.egress_port;
            meta.remaining_ports = 0;
            meta.served_ports = 0;
            meta.stack_index = meta.stack_index + 1;
            if (meta.stack_index < hdr.size.num_entries) {
                recirculate_preserving_field_list(RECIRC_FL);
            }
        } else if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            /* creating pass of a clone: replay the original's stack edit */
            meta.is_clone = 1;
            if (meta.remove_flag == 1) {
                remove_entry();
            } else {
                meta.stack_index = meta.stack_index + 1;
            }
            if (meta.stack_index < hdr.size.num_entries) {
                recirculate_preserving_field_list(RECIRC_FL);
            }
        } else if (meta.is_clone == 0) {
            /* the original: edit the stack and go round again */
            if (meta.remove_flag == 1) {
                remove_entry();
            } else if (meta.remaining_ports == 0) {
                meta.stack_index = meta.stack_index + 1;
            }
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
