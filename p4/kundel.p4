/* kundel.p4 - Kundel et al.'s flat content table with its two header encodings (P4_16, v1model).
 *
 * Seed 002's generic attribute/value filter. Python reference model:
 * sim/dataplanes/kundel/reference.py (data-plane family "kundel", KundelFormat and
 * KundelDataPlane); rules written by strategies/kundel/kundel.py (kundel-id,
 * kundel-bitmask). Table, action, parameter and match-field names are the
 * strings the Python state uses (checked by tests/hil/test_p4info_names.py).
 *
 * One source, one build per (encoding, width, slots); p4/Makefile names them
 *   kundel_id_k<ID_BITS>_s<SLOTS>       -DKUNDEL_ID -DID_BITS=.. -DSLOTS=..
 *   kundel_bitmask_m<N_MAX>_s<SLOTS>    -DKUNDEL_BITMASK -DN_MAX=.. -DSLOTS=..
 * SLOTS (1..8) = the model's `slots` (kundel strategies: one per attribute of
 * the event space unless `slots` is given); hil/programs.py picks the build
 * from the model (KundelDataPlane.fmt, .slots).
 *
 * Frame: Ethernet (0x9001) | attribute header | payload.
 *   id       first_id (ID_BITS), then per attribute value (32) + nextId
 *            (ID_BITS); the last nextId is 0. Parsing follows the IDs: an ID
 *            below SLOTS not seen yet extracts the next (value, nextId)
 *            pair into hdr.ev (wire order kept) and fills meta.value_<ID>;
 *            nextId 0 (after the first pair), an ID >= SLOTS or an ID seen
 *            before ends parsing (the rest is payload). The model's
 *            KundelFormat.parse loop, one parser state per ID (the BMv2
 *            workaround of the seed's repository).
 *   bitmask  an N_MAX-bit presence mask (bit i = attribute i, LSB =
 *            attribute 0), then one 32-bit value per set bit in ascending
 *            order; every present value is extracted (hdr.vals), those
 *            below SLOTS also fill meta.value_<i>.
 * meta.valid_bitmask has bit i set for every value found below SLOTS; slots
 * not found hold 0. A frame that is not 0x9001 or ends inside the attribute
 * header (parser error) is dropped in ingress without a lookup (the model's
 * parse() returning None).
 *
 * Ingress: count the pass; MyIngress.event, keys meta.valid_bitmask
 * (ternary) and meta.value_<i> (range, i < SLOTS), actions
 * MyIngress.forward(mcast_grp) (PRE group) | MyIngress.forwardSingle(port),
 * default MyIngress.drop. Egress: a copy leaving on its ingress port is
 * dropped. One pass, no header edit.
 *
 * MyIngress.pass_counter[0] counts ingress passes (= PipelineResult.passes).
 *
 * References: seed 002 Sec. III (Listings 1-2, Fig. 3-4); digest seed002-003
 * A.2-A.4, D1, D2, D5.
 */

#include <core.p4>
#include <v1model.p4>

#if defined(KUNDEL_ID) == defined(KUNDEL_BITMASK)
#error "define exactly one of KUNDEL_ID and KUNDEL_BITMASK"
#endif
#ifndef SLOTS
#define SLOTS 2
#endif
#if SLOTS < 1 || SLOTS > 8
#error "SLOTS must be in 1..8"
#endif
#ifndef ID_BITS
#define ID_BITS 8
#endif
#ifndef N_MAX
#define N_MAX 32
#endif

typedef bit<48> macAddr_t;
typedef bit<16> etherType_t;
typedef bit<9>  egressSpec_t;
typedef bit<16> mcastGrp_t;
typedef bit<32> value_t;          /* seed 002 values are 32 bit */
typedef bit<ID_BITS> attrId_t;    /* KundelFormat.id_bits */
typedef bit<N_MAX> presence_t;    /* KundelFormat.n_max */
typedef bit<SLOTS> validMask_t;   /* one bit per value slot */

const etherType_t ETHERTYPE_KUNDEL = 0x9001;

const bit<32> PASS_COUNTER_SIZE = 1;
const bit<32> PASS_COUNTER_INDEX = 0;

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    macAddr_t   dstAddr;
    macAddr_t   srcAddr;
    etherType_t etherType;
}

header first_id_t {
    attrId_t id;
}

header id_event_t {
    value_t  value;
    attrId_t nextId;
}

header presence_h {
    presence_t mask;
}

header value_h {
    value_t value;
}

struct headers {
    ethernet_t        ethernet;
    first_id_t        first_id;
    id_event_t[SLOTS] ev;         /* each ID at most once */
    presence_h        presence;
    value_h[N_MAX]    vals;       /* one per set bit of the mask */
}

struct metadata {
    validMask_t valid_bitmask;
    value_t value_0;
#if SLOTS > 1
    value_t value_1;
#endif
#if SLOTS > 2
    value_t value_2;
#endif
#if SLOTS > 3
    value_t value_3;
#endif
#if SLOTS > 4
    value_t value_4;
#endif
#if SLOTS > 5
    value_t value_5;
#endif
#if SLOTS > 6
    value_t value_6;
#endif
#if SLOTS > 7
    value_t value_7;
#endif
    attrId_t   cur;               /* id: the ID to parse next */
    presence_t rest;              /* bitmask: bits not walked yet */
    bit<16>    pos;               /* bitmask: attribute of rest's bit 0 */
}

/* ------------------------------------------------------------------- parser */

/* one state per slot: store the value just extracted into meta.value_<i> */
#ifdef KUNDEL_ID
#define SLOT_STATE(i)                                           \
    state ev_##i {                                              \
        packet.extract(hdr.ev.next);                            \
        meta.value_##i = hdr.ev.last.value;                     \
        meta.valid_bitmask = meta.valid_bitmask | ((validMask_t)1 << i);     \
        meta.cur = hdr.ev.last.nextId;                          \
        transition dispatch;                                    \
    }
#else
#define SLOT_STATE(i)                                           \
    state ev_##i {                                              \
        meta.value_##i = hdr.vals.last.value;                   \
        meta.valid_bitmask = meta.valid_bitmask | ((validMask_t)1 << i);     \
        transition bm_next;                                     \
    }
#endif

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        meta.valid_bitmask = 0;
        transition select(hdr.ethernet.etherType) {
#ifdef KUNDEL_ID
            ETHERTYPE_KUNDEL: parse_first;
#else
            ETHERTYPE_KUNDEL: parse_presence;
#endif
            default: accept;           /* not ours: ingress drops it */
        }
    }

#ifdef KUNDEL_ID
    state parse_first {
        packet.extract(hdr.first_id);
        transition select(hdr.first_id.id) {   /* ID 0 may come first only */
            0: ev_0;
#if SLOTS > 1
            1: ev_1;
#endif
#if SLOTS > 2
            2: ev_2;
#endif
#if SLOTS > 3
            3: ev_3;
#endif
#if SLOTS > 4
            4: ev_4;
#endif
#if SLOTS > 5
            5: ev_5;
#endif
#if SLOTS > 6
            6: ev_6;
#endif
#if SLOTS > 7
            7: ev_7;
#endif
            default: accept;           /* ID >= SLOTS */
        }
    }

    /* nextId 0 ends; an ID below SLOTS whose slot is still empty goes on */
    state dispatch {
        transition select(meta.cur, meta.valid_bitmask) {
            (0, _): accept;
#if SLOTS > 1
            (1, 0 &&& 1 << 1): ev_1;
#endif
#if SLOTS > 2
            (2, 0 &&& 1 << 2): ev_2;
#endif
#if SLOTS > 3
            (3, 0 &&& 1 << 3): ev_3;
#endif
#if SLOTS > 4
            (4, 0 &&& 1 << 4): ev_4;
#endif
#if SLOTS > 5
            (5, 0 &&& 1 << 5): ev_5;
#endif
#if SLOTS > 6
            (6, 0 &&& 1 << 6): ev_6;
#endif
#if SLOTS > 7
            (7, 0 &&& 1 << 7): ev_7;
#endif
            default: accept;           /* ID >= SLOTS or seen before */
        }
    }
#else
    state parse_presence {
        packet.extract(hdr.presence);
        meta.rest = hdr.presence.mask;
        meta.pos = 0;
        transition bm_scan;
    }

    /* walk the mask from bit 0: a set bit consumes one value */
    state bm_scan {
        transition select(meta.rest) {
            0: accept;
            1 &&& 1: bm_take;
            default: bm_skip;
        }
    }

    state bm_skip {
        meta.rest = meta.rest >> 1;
        meta.pos = meta.pos + 1;
        transition bm_scan;
    }

    state bm_take {
        packet.extract(hdr.vals.next);  /* too short: PacketTooShort */
        transition select(meta.pos) {
            0: ev_0;
#if SLOTS > 1
            1: ev_1;
#endif
#if SLOTS > 2
            2: ev_2;
#endif
#if SLOTS > 3
            3: ev_3;
#endif
#if SLOTS > 4
            4: ev_4;
#endif
#if SLOTS > 5
            5: ev_5;
#endif
#if SLOTS > 6
            6: ev_6;
#endif
#if SLOTS > 7
            7: ev_7;
#endif
            default: bm_next;          /* present but no slot: consumed only */
        }
    }

    state bm_next {
        meta.rest = meta.rest >> 1;
        meta.pos = meta.pos + 1;
        transition bm_scan;
    }
#endif

    SLOT_STATE(0)
#if SLOTS > 1
    SLOT_STATE(1)
#endif
#if SLOTS > 2
    SLOT_STATE(2)
#endif
#if SLOTS > 3
    SLOT_STATE(3)
#endif
#if SLOTS > 4
    SLOT_STATE(4)
#endif
#if SLOTS > 5
    SLOT_STATE(5)
#endif
#if SLOTS > 6
    SLOT_STATE(6)
#endif
#if SLOTS > 7
    SLOT_STATE(7)
#endif
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

    action forward(mcastGrp_t mcast_grp) {
        standard_metadata.mcast_grp = mcast_grp;
    }

    action forwardSingle(egressSpec_t port) {
        standard_metadata.egress_spec = port;
    }

    table event {
        key = {
            meta.valid_bitmask : ternary;
            meta.value_0 : range;
#if SLOTS > 1
            meta.value_1 : range;
#endif
#if SLOTS > 2
            meta.value_2 : range;
#endif
#if SLOTS > 3
            meta.value_3 : range;
#endif
#if SLOTS > 4
            meta.value_4 : range;
#endif
#if SLOTS > 5
            meta.value_5 : range;
#endif
#if SLOTS > 6
            meta.value_6 : range;
#endif
#if SLOTS > 7
            meta.value_7 : range;
#endif
        }
        actions = {
            forward;
            forwardSingle;
            drop;
        }
        default_action = drop();
        size = 65536;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);
#ifdef KUNDEL_ID
        bool parsed = hdr.first_id.isValid();
#else
        bool parsed = hdr.presence.isValid();
#endif
        if (standard_metadata.parser_error != error.NoError || !parsed) {
            drop();                    /* the model's parse() returned None */
        } else {
            event.apply();
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
        packet.emit(hdr.first_id);
        packet.emit(hdr.ev);
        packet.emit(hdr.presence);
        packet.emit(hdr.vals);
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
