/* source_routing.p4 - source-routing label stacks (P4_16, v1model), one
 * source compiled per entry kind.
 *
 * Python reference model: sim/dataplanes/source_routing/reference.py (family
 * "source_routing"), codec sim/dataplanes/source_routing/codec.py; rules
 * written by strategies/source_routing/stack_strategy.py, switch_port.py,
 * switch_bitmask.py, switch_mcgroup.py and mixed.py. Names are the strings
 * the Python state uses (tests/hil/test_p4info_names.py).
 *
 * Build one program per kind (p4/Makefile does):
 *   -DSR_KIND_PORT                 source_routing_port            switch-port
 *   -DSR_KIND_BITMASK              source_routing_bitmask         switch-bitmask
 *   -DSR_KIND_MCGROUP              source_routing_mcgroup         switch-mcgroup subsets=1
 *   -DSR_KIND_MCGROUP -DSR_MC_SUBSETS
 *                                  source_routing_mcgroup_subsets switch-mcgroup subsets>1
 *   -DSR_KIND_MIXED                source_routing_mixed           mixed
 * Copy post-processing (port, mixed): -DSR_PRUNING_REACTIVE,
 * -DSR_PRUNING_PER_TYPE (mixed: predictive for port entries only, the mixed
 * strategy's default), else predictive (the switch-port default).
 * Widths: the strategies' defaults (ID_BITS 8; port 8 / bitmask, group 16 /
 * mixed tag 8 + value 16; Size 16) and STACK_SIZE = entries in a 1500-byte
 * frame (749 / 499 / 499 / 374), overridable with -D.
 *
 * Frame: Ethernet (0x9999) | Size | e_0 .. e_{Size-1} | payload,
 * e_i = id | [tag |] value.
 *
 * Tables (prefix MyIngress.):
 *   read_entry        meta.num_seen_labels                 read_index_<i>()   port, mixed
 *   check_entry       meta.entry.id                        own_entry()        port
 *   check_entry       meta.entry.id, meta.entry.tag        own_port_entry(),  mixed
 *                                                          own_bitmask_entry(),
 *                                                          own_mcgroup_entry()
 *   check_dev         hdr.stack[0].id                      own_entry()        bitmask
 *   check_bitmask     meta.entry.value ternary             forward_pkt(clone_port, bit_pos),
 *                                                          drop_original()    bitmask, mixed
 *   multicast_forward hdr.stack[0].id [, meta.subset_index] do_multicast() |
 *                                                          do_multicast_subset(mask, last)
 * Clone sessions: session p -> port p; CONTINUE_SESSION (512) is the
 * continuation copy that keeps scanning after a multicast replaced the
 * original. Multicast groups: as the control plane numbers them.
 *
 * Instances. The ORIGINAL reads the top entry each pass (num_seen_labels
 * stays 0: it pops what it processed, in egress; an exhausted original is
 * dropped in the egress of its last pass). A COPY (I2E clone to session p,
 * or PRE replica) pops the entry that made it in the egress of its creating
 * pass; a predictive copy then recirculates once per remaining entry:
 * read_entry(num_seen_labels) + check_entry; entries are skipped
 * (num_seen_labels + 1) until one carries this switch's id, and deleted
 * from there on, one per pass; it leaves when every entry was seen.
 *
 * Deviations: parsing stops at STACK_SIZE entries (a larger Size is a
 * parser error: dropped; the model's stack_size does the same).
 *
 * MyIngress.pass_counter[0] counts every ingress pass (PipelineResult.passes).
 */

#include <core.p4>
#include <v1model.p4>

/* ------------------------------------------------------------ configuration */

#if defined(SR_KIND_PORT)
#  define SR_SCAN 1
#  ifndef VALUE_BITS
#    define VALUE_BITS 8
#  endif
#  ifndef STACK_SIZE
#    define STACK_SIZE 749
#  endif
#elif defined(SR_KIND_MIXED)
#  define SR_SCAN 1
#  ifndef TAG_BITS
#    define TAG_BITS 8
#  endif
#  ifndef VALUE_BITS
#    define VALUE_BITS 16
#  endif
#  ifndef STACK_SIZE
#    define STACK_SIZE 374
#  endif
#elif defined(SR_KIND_BITMASK) || defined(SR_KIND_MCGROUP)
#  ifndef VALUE_BITS
#    define VALUE_BITS 16
#  endif
#  ifndef STACK_SIZE
#    define STACK_SIZE 499
#  endif
#else
#  error "define one of SR_KIND_PORT, SR_KIND_BITMASK, SR_KIND_MCGROUP, SR_KIND_MIXED"
#endif

#ifndef ID_BITS
#define ID_BITS 8
#endif
#ifndef SIZE_BITS
#define SIZE_BITS 16
#endif

/* is a copy made by an entry of this type post-processed predictively? */
#if defined(SR_PRUNING_REACTIVE)
#  define PRED_PORT 0
#  define PRED_OTHER 0
#elif defined(SR_PRUNING_PER_TYPE)
#  define PRED_PORT 1
#  define PRED_OTHER 0
#else
#  define PRED_PORT 1
#  define PRED_OTHER 1
#endif

typedef bit<48>         macAddr_t;
typedef bit<16>         etherType_t;
typedef bit<9>          egressSpec_t;
typedef bit<ID_BITS>    switchId_t;
typedef bit<VALUE_BITS> value_t;
typedef bit<SIZE_BITS>  stackSize_t;
#ifdef TAG_BITS
typedef bit<TAG_BITS>   tag_t;
#endif
typedef bit<8>          subset_t;

const etherType_t ETHERTYPE_STACK = 0x9999;
const bit<32> CONTINUE_SESSION = 512;

const bit<32> PKT_INSTANCE_TYPE_NORMAL        = 0;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> PKT_INSTANCE_TYPE_REPLICATION   = 5;

const bit<8> RECIRC_FL = 1;
const bit<8> CLONE_FL  = 2;

const bit<2> ROLE_COPY     = 1;   /* an I2E clone that carries a subtree */
const bit<2> ROLE_CONTINUE = 2;   /* the continuation that keeps scanning */

const bit<2> OWN_NONE    = 0;
const bit<2> OWN_PORT    = 1;
const bit<2> OWN_BITMASK = 2;
const bit<2> OWN_MCGROUP = 3;

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
    switchId_t id;
#ifdef TAG_BITS
    tag_t      tag;
#endif
    value_t    value;
}

struct headers {
    ethernet_t          ethernet;
    size_h              size;
    entry_h[STACK_SIZE] stack;
}

struct entry_t {
    switchId_t id;
#ifdef TAG_BITS
    tag_t      tag;
#endif
    value_t    value;
}

struct metadata {
    @field_list(RECIRC_FL, CLONE_FL)
    egressSpec_t in_port;          /* arrival port (recirculation target) */
    @field_list(RECIRC_FL)
    bit<1>       is_copy;          /* a predictive copy scanning its stack */
    @field_list(RECIRC_FL)
    egressSpec_t copy_port;        /* the port a scanning copy leaves on */
    @field_list(RECIRC_FL)
    stackSize_t  num_seen_labels;  /* read_entry key: entries skipped */
    @field_list(RECIRC_FL)
    bit<1>       delete_flag;      /* copy: past its own subtree, delete */
    @field_list(RECIRC_FL, CLONE_FL)
    subset_t     subset_index;     /* mc-group subsets: the next subset */
    @field_list(CLONE_FL)
    bit<2>       clone_role;
    @field_list(CLONE_FL)
    bit<1>       copy_predictive;  /* the copy scans (predictive) or leaves */
    /* per pass */
    entry_t      entry;            /* read_index_<i> / the top entry */
    stackSize_t  read_index;
    bit<2>       own;              /* which own_* action hit */
    bit<1>       pop_flag;         /* egress pops the top entry */
    bit<1>       forward;          /* check_bitmask: forward_pkt hit */
    egressSpec_t clone_port;
    value_t      bit_pos;
    value_t      mc_mask;
    bit<1>       mc_last;
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
            default: parse_entry;
        }
    }

    state parse_entry {
        packet.extract(hdr.stack.next);   /* StackOutOfBounds past STACK_SIZE */
        meta.parse_remaining = meta.parse_remaining - 1;
        transition select(meta.parse_remaining) {
            0: accept;
            default: parse_entry;
        }
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

/* ------------------------------------------------- read_index_<i> actions */
/* P4 has no loops: the STACK_SIZE constant-index actions of read_entry
 * (Listing 3.5) are spelled out by digit pasting. X(i) is applied to every
 * index 0 .. STACK_SIZE-1. */
#define SR_T(X, p) X(p##0) X(p##1) X(p##2) X(p##3) X(p##4) \
                   X(p##5) X(p##6) X(p##7) X(p##8) X(p##9)
#define SR_H(X, p) SR_T(X, p##0) SR_T(X, p##1) SR_T(X, p##2) SR_T(X, p##3) SR_T(X, p##4) \
                   SR_T(X, p##5) SR_T(X, p##6) SR_T(X, p##7) SR_T(X, p##8) SR_T(X, p##9)
#define SR_0_99(X) SR_T(X, ) SR_T(X, 1) SR_T(X, 2) SR_T(X, 3) SR_T(X, 4) \
                   SR_T(X, 5) SR_T(X, 6) SR_T(X, 7) SR_T(X, 8) SR_T(X, 9)
#if STACK_SIZE == 749
#  define SR_INDICES(X) SR_0_99(X) SR_H(X, 1) SR_H(X, 2) SR_H(X, 3) SR_H(X, 4) SR_H(X, 5) \
        SR_H(X, 6) SR_T(X, 70) SR_T(X, 71) SR_T(X, 72) SR_T(X, 73) \
        X(740) X(741) X(742) X(743) X(744) X(745) X(746) X(747) X(748)
#elif STACK_SIZE == 374
#  define SR_INDICES(X) SR_0_99(X) SR_H(X, 1) SR_H(X, 2) SR_T(X, 30) SR_T(X, 31) SR_T(X, 32) \
        SR_T(X, 33) SR_T(X, 34) SR_T(X, 35) SR_T(X, 36) X(370) X(371) X(372) X(373)
#elif STACK_SIZE == 32
#  define SR_INDICES(X) SR_T(X, ) SR_T(X, 1) SR_T(X, 2) X(30) X(31)
#elif defined(SR_SCAN)
#  error "read_index_<i> lists exist for STACK_SIZE 749, 374 and 32: add yours to SR_INDICES"
#endif

#ifdef TAG_BITS
#  define SR_COPY_TAG(i) meta.entry.tag = hdr.stack[i].tag;
#else
#  define SR_COPY_TAG(i)
#endif
#define SR_READ_ACTION(i) action read_index_##i() { \
        meta.read_index = i; \
        meta.entry.id = hdr.stack[i].id; \
        SR_COPY_TAG(i) \
        meta.entry.value = hdr.stack[i].value; }
#define SR_READ_REF(i) read_index_##i;

/* ------------------------------------------------------------------ ingress */

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    counter(PASS_COUNTER_SIZE, CounterType.packets) pass_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

#ifdef SR_SCAN
    SR_INDICES(SR_READ_ACTION)

    table read_entry {
        key = { meta.num_seen_labels : exact; }
        actions = { SR_INDICES(SR_READ_REF) NoAction; }
        default_action = NoAction();
        size = STACK_SIZE;
    }

    /* delete the entry a scanning copy just read (invalid: not deparsed) */
    action remove_entry() {
        hdr.stack[meta.read_index].setInvalid();
        hdr.size.num_entries = hdr.size.num_entries - 1;
    }
#endif

#if defined(SR_KIND_MIXED)
    action own_port_entry()    { meta.own = OWN_PORT; }
    action own_bitmask_entry() { meta.own = OWN_BITMASK; }
    action own_mcgroup_entry() { meta.own = OWN_MCGROUP; }

    table check_entry {
        key = {
            meta.entry.id  : exact;
            meta.entry.tag : exact;
        }
        actions = { own_port_entry; own_bitmask_entry; own_mcgroup_entry; NoAction; }
        default_action = NoAction();
        size = 16;
    }
#elif defined(SR_KIND_PORT) || defined(SR_KIND_BITMASK)
    action own_entry() { meta.own = OWN_PORT; }
#endif

#if defined(SR_KIND_PORT)
    table check_entry {
        key = { meta.entry.id : exact; }
        actions = { own_entry; NoAction; }
        default_action = NoAction();
        size = 16;
    }
#endif

#if defined(SR_KIND_BITMASK)
    table check_dev {
        key = { hdr.stack[0].id : exact; }
        actions = { own_entry; NoAction; }
        default_action = NoAction();
        size = 16;
    }
#endif

#if defined(SR_KIND_BITMASK) || defined(SR_KIND_MIXED)
    action forward_pkt(egressSpec_t clone_port, value_t bit_pos) {
        meta.forward = 1;
        meta.clone_port = clone_port;
        meta.bit_pos = bit_pos;
    }

    action drop_original() {
        meta.forward = 0;   /* no servable bit left (bitmask: the original ends) */
    }

    table check_bitmask {
        key = { meta.entry.value : ternary; }
        actions = { forward_pkt; drop_original; }
        default_action = drop_original();
        size = VALUE_BITS + 1;
    }
#endif

#if defined(SR_KIND_MCGROUP)
#  ifdef SR_MC_SUBSETS
    action do_multicast_subset(value_t mask, bit<1> last) {
        meta.mc_mask = mask;
        meta.mc_last = last;
    }
#  else
    action do_multicast() {
        meta.mc_mask = ~(value_t)0;
        meta.mc_last = 1;
    }
#  endif

    table multicast_forward {
        key = {
            hdr.stack[0].id   : exact;
#  ifdef SR_MC_SUBSETS
            meta.subset_index : exact;
#  endif
        }
        actions = {
#  ifdef SR_MC_SUBSETS
            do_multicast_subset;
#  else
            do_multicast;
#  endif
            NoAction;
        }
        default_action = NoAction();
        size = 64;
    }
#endif

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);

        if (standard_metadata.parser_error != error.NoError
                || !hdr.size.isValid() || hdr.size.num_entries == 0) {
            drop();
            return;
        }
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_NORMAL) {
            meta.in_port = standard_metadata.ingress_port;
        }
        meta.pop_flag = 1;

#ifdef SR_SCAN
        /* port / mixed: the original scans the whole stack */
        if (!read_entry.apply().hit || meta.read_index >= hdr.size.num_entries) {
            drop();
            return;
        }
        check_entry.apply();                 /* BMv2: one apply site per table */
        if (meta.is_copy == 1) {
            /* predictive copy: skip until an own entry, then delete */
            if (meta.own != OWN_NONE) {
                meta.delete_flag = 1;
            }
            if (meta.delete_flag == 1) {
                remove_entry();
            } else {
                meta.num_seen_labels = meta.num_seen_labels + 1;
            }
            standard_metadata.egress_spec = meta.copy_port;
            if (meta.num_seen_labels < hdr.size.num_entries) {
                meta.scan_more = 1;
            }
            return;
        }
        if (meta.own == OWN_PORT) {
            meta.clone_role = ROLE_COPY;
            meta.copy_predictive = PRED_PORT;
            clone_preserving_field_list(CloneType.I2E, (bit<32>)meta.entry.value, CLONE_FL);
        }
#  ifdef SR_KIND_MIXED
        else if (meta.own == OWN_BITMASK) {
            check_bitmask.apply();
            if (meta.forward == 1) {
                meta.clone_role = ROLE_COPY;
                meta.copy_predictive = PRED_OTHER;
                clone_preserving_field_list(CloneType.I2E, (bit<32>)meta.clone_port, CLONE_FL);
                hdr.stack[0].value = hdr.stack[0].value - meta.bit_pos;
                if (hdr.stack[0].value != 0) {
                    meta.pop_flag = 0;       /* bits left: read it again */
                }
            }
        } else if (meta.own == OWN_MCGROUP) {
            standard_metadata.mcast_grp = (bit<16>)meta.entry.value;
            meta.copy_predictive = PRED_OTHER;
            if (hdr.size.num_entries == 1) {
                return;                      /* the replicas replace the original */
            }
            meta.clone_role = ROLE_CONTINUE; /* the multicast discards the original */
            clone_preserving_field_list(CloneType.I2E, CONTINUE_SESSION, CLONE_FL);
            return;
        }
#  endif
        standard_metadata.egress_spec = meta.in_port;
#endif /* SR_SCAN */

#ifdef SR_KIND_BITMASK
        if (!check_dev.apply().hit) {
            standard_metadata.egress_spec = meta.in_port;   /* foreign: pop, go on */
            return;
        }
        meta.entry.value = hdr.stack[0].value;
        check_bitmask.apply();
        if (meta.forward == 0) {
            drop();                           /* no 1-bit this switch can serve */
            return;
        }
        meta.clone_role = ROLE_COPY;
        meta.copy_predictive = 0;
        clone_preserving_field_list(CloneType.I2E, (bit<32>)meta.clone_port, CLONE_FL);
        hdr.stack[0].value = hdr.stack[0].value - meta.bit_pos;
        if (hdr.stack[0].value == 0) {
            drop();                           /* all bits served */
            return;
        }
        meta.pop_flag = 0;
        standard_metadata.egress_spec = meta.in_port;
#endif

#ifdef SR_KIND_MCGROUP
        if (!multicast_forward.apply().hit) {
            standard_metadata.egress_spec = meta.in_port;   /* foreign: pop, go on */
            return;
        }
        value_t grp = hdr.stack[0].value & meta.mc_mask;
        meta.copy_predictive = 0;
        if (grp != 0) {
            standard_metadata.mcast_grp = (bit<16>)grp;
        }
        if (meta.mc_last == 1) {
            if (grp == 0) {
                drop();
            }
            return;                           /* done (the multicast took the original) */
        }
        meta.subset_index = meta.subset_index + 1;
        if (grp != 0) {
            meta.clone_role = ROLE_CONTINUE;  /* the next subset goes on in a copy */
            clone_preserving_field_list(CloneType.I2E, CONTINUE_SESSION, CLONE_FL);
            return;
        }
        meta.pop_flag = 0;                    /* same entry, next subset */
        standard_metadata.egress_spec = meta.in_port;
#endif
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action pop_entry() {
        hdr.stack.pop_front(1);
        hdr.size.num_entries = hdr.size.num_entries - 1;
    }

    apply {
        bool copy = standard_metadata.instance_type == PKT_INSTANCE_TYPE_REPLICATION
            || (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE
                && meta.clone_role == ROLE_COPY);
        if (copy) {
            /* a copy: the egress of its creating pass pops the creating entry */
            pop_entry();
            if (meta.copy_predictive == 1 && hdr.size.num_entries > 0) {
                meta.is_copy = 1;
                meta.num_seen_labels = 0;
                meta.delete_flag = 0;
                meta.copy_port = standard_metadata.egress_port;
                recirculate_preserving_field_list(RECIRC_FL);
            }
        } else if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            /* continuation: goes on as the original */
            meta.is_copy = 0;
#ifndef SR_KIND_MCGROUP
            pop_entry();                      /* mixed: the mc-group entry is done */
#endif
            if (hdr.size.num_entries == 0) {
                drop();
            } else {
                recirculate_preserving_field_list(RECIRC_FL);
            }
        } else if (meta.is_copy == 0) {
            /* the original */
            if (meta.pop_flag == 1) {
                pop_entry();
            }
            if (hdr.size.num_entries == 0) {
                drop();                       /* exhausted */
            } else {
                recirculate_preserving_field_list(RECIRC_FL);
            }
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
