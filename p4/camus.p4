/* camus.p4 - Camus: a BDD pipeline (one table per field + an action table) with a
 * logical up port (P4_16, v1model).
 *
 * The tables the Camus compiler generates (seed 003 Sec. 5). Python reference
 * model: sim/dataplanes/camus/reference.py (data-plane family "camus"); rules written
 * by strategies/camus/camus.py (camus-bdd). Table, action, parameter and
 * match-field names are the strings the Python state uses (checked by
 * tests/hil/test_p4info_names.py).
 *
 * One source, one build per (table kind, fields, value width, up ports);
 * p4/Makefile names them camus_<bdd|flat>_<FIELDS>x<VALUE_BITS>_up<UP_PORTS>:
 *   -DFIELDS=F (1..4)   query fields a0..a<F-1>: the event space's attributes
 *   -DVALUE_BITS=W      header width of each value (camus-bdd value_bits)
 *   -DCAMUS_FLAT        the one-big-table baseline (table="one-big-table")
 *   -DUP_PORTS=N        the switch's number of up ports (MyIngress.up_ecmp
 *                       entries): the ECMP modulus (see "Known gap" below)
 * The BDD tables are applied in annotation order (a0, a1, ...), the model's
 * order for camus-bdd's default order="annotation"; order="constants" has no
 * build.
 *
 * Frame: Ethernet (0x88B6) | camus header (FIELDS values of VALUE_BITS, big
 * endian) | payload. Not 0x88B6, or too short for the header: dropped in
 * ingress without a lookup.
 *
 * Pass (one, no recirculation, no header edit):
 *   ingress  count the pass; MyIngress.port_role (ingress_port exact ->
 *            mark_up): a hit means the packet came down from an up port.
 *            bdd: meta.state = 0; per field f in order: query_<f>_exact
 *            (state exact, field exact), on a miss query_<f>_range (state
 *            exact, field range), on a miss query_<f>_miss (state exact); a
 *            hit runs set_state(state), a miss keeps the state. Then
 *            MyIngress.query_actions (state exact). flat: MyIngress.query_flat
 *            (every field range, priorities). Leaf actions:
 *              set_egress_port(port)   one copy;
 *              set_mgid(mgid, up)      PRE group mgid (0: none) and, if up = 1
 *                                      and the packet did not come down, one
 *                                      copy to the logical up port;
 *            a miss drops. The up port: bucket = CRC32 of the camus header
 *            mod UP_PORTS (v1model hash, HashAlgorithm.crc32 = zlib.crc32),
 *            MyIngress.up_ecmp (meta.up_bucket exact -> set_up_port(port));
 *            the copy is an I2E clone to session <port> (one clone session
 *            per up port, session id = port, as in the label programs).
 *   egress   a copy leaving on its ingress port is dropped (the up clone
 *            never is: an up copy only leaves a packet from a down port).
 *
 * Known gap: the model takes the ECMP modulus from the number of up_ecmp
 * entries installed; P4 cannot count a table's entries, so the modulus is
 * the compile-time UP_PORTS and hil/programs.py picks the build from the
 * switch's up_ecmp entries (a switch with none runs the up1 build: it never
 * sends up).
 *
 * MyIngress.pass_counter[0] counts ingress passes (= PipelineResult.passes).
 *
 * References: seed 003 Sec. 4 (routing, logical up port), Sec. 5.1-5.2
 * (generated tables); digest seed002-003 B.3-B.5.
 */

#include <core.p4>
#include <v1model.p4>

#ifndef FIELDS
#define FIELDS 2
#endif
#if FIELDS < 1 || FIELDS > 4
#error "FIELDS must be in 1..4"
#endif
#ifndef VALUE_BITS
#define VALUE_BITS 32
#endif
#ifndef UP_PORTS
#define UP_PORTS 1
#endif

typedef bit<48> macAddr_t;
typedef bit<16> etherType_t;
typedef bit<9>  egressSpec_t;
typedef bit<16> mcastGrp_t;
typedef bit<VALUE_BITS> value_t;
typedef bit<32> bddState_t;       /* BDD node ids (Pipeline.state_bits <= 32) */

const etherType_t ETHERTYPE_CAMUS = 0x88B6;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;

const bit<32> PASS_COUNTER_SIZE = 1;
const bit<32> PASS_COUNTER_INDEX = 0;

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    macAddr_t   dstAddr;
    macAddr_t   srcAddr;
    etherType_t etherType;
}

header camus_t {
    value_t a0;
#if FIELDS > 1
    value_t a1;
#endif
#if FIELDS > 2
    value_t a2;
#endif
#if FIELDS > 3
    value_t a3;
#endif
}

struct headers {
    ethernet_t ethernet;
    camus_t    camus;
}

struct metadata {
    bddState_t   state;
    bit<1>       came_down;       /* port_role hit */
    bit<1>       up;              /* the leaf asks for the up port */
    bit<1>       drop_original;   /* set_mgid with mgid 0 */
    bit<8>       up_bucket;
    bit<1>       has_up;
    egressSpec_t up_port;
}

/* ------------------------------------------------------------------- parser */

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_CAMUS: parse_camus;
            default: accept;           /* not ours: ingress drops it */
        }
    }

    state parse_camus {
        packet.extract(hdr.camus);     /* too short: PacketTooShort, invalid */
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

/* ------------------------------------------------------------------ ingress */

/* the three tables of one query field (the compiler's exact/range/miss split) */
#define FIELD_TABLES(f)                                     \
    table query_##f##_exact {                               \
        key = {                                             \
            meta.state   : exact;                           \
            hdr.camus.f  : exact;                           \
        }                                                   \
        actions = { set_state; NoAction; }                  \
        default_action = NoAction();                        \
        size = 65536;                                       \
    }                                                       \
    table query_##f##_range {                               \
        key = {                                             \
            meta.state   : exact;                           \
            hdr.camus.f  : range;                           \
        }                                                   \
        actions = { set_state; NoAction; }                  \
        default_action = NoAction();                        \
        size = 65536;                                       \
    }                                                       \
    table query_##f##_miss {                                \
        key = {                                             \
            meta.state   : exact;                           \
        }                                                   \
        actions = { set_state; NoAction; }                  \
        default_action = NoAction();                        \
        size = 65536;                                       \
    }

#define APPLY_FIELD(f)                                      \
    if (!query_##f##_exact.apply().hit) {                   \
        if (!query_##f##_range.apply().hit) {               \
            query_##f##_miss.apply();                       \
        }                                                   \
    }

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    counter(PASS_COUNTER_SIZE, CounterType.packets) pass_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action mark_up() {
        meta.came_down = 1;
    }

#ifndef CAMUS_FLAT
    action set_state(bddState_t state) {
        meta.state = state;
    }
#endif

    action set_egress_port(egressSpec_t port) {
        standard_metadata.egress_spec = port;
    }

    action set_mgid(mcastGrp_t mgid, bit<1> up) {
        standard_metadata.mcast_grp = mgid;
        meta.up = up;
        meta.drop_original = (mgid == 0) ? (bit<1>)1 : (bit<1>)0;
    }

    action set_up_port(egressSpec_t port) {
        meta.up_port = port;
        meta.has_up = 1;
    }

    table port_role {
        key = {
            standard_metadata.ingress_port : exact;
        }
        actions = { mark_up; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    table up_ecmp {
        key = {
            meta.up_bucket : exact;
        }
        actions = { set_up_port; NoAction; }
        default_action = NoAction();
        size = 256;
    }

#ifdef CAMUS_FLAT
    table query_flat {
        key = {
            hdr.camus.a0 : range;
#if FIELDS > 1
            hdr.camus.a1 : range;
#endif
#if FIELDS > 2
            hdr.camus.a2 : range;
#endif
#if FIELDS > 3
            hdr.camus.a3 : range;
#endif
        }
        actions = { set_egress_port; set_mgid; drop; }
        default_action = drop();
        size = 200000;
    }
#else
    FIELD_TABLES(a0)
#if FIELDS > 1
    FIELD_TABLES(a1)
#endif
#if FIELDS > 2
    FIELD_TABLES(a2)
#endif
#if FIELDS > 3
    FIELD_TABLES(a3)
#endif

    table query_actions {
        key = {
            meta.state : exact;
        }
        actions = { set_egress_port; set_mgid; drop; }
        default_action = drop();
        size = 65536;
    }
#endif

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);
        if (!hdr.camus.isValid()) {
            drop();
            return;
        }
        port_role.apply();
#ifdef CAMUS_FLAT
        query_flat.apply();
#else
        meta.state = 0;
        APPLY_FIELD(a0)
#if FIELDS > 1
        APPLY_FIELD(a1)
#endif
#if FIELDS > 2
        APPLY_FIELD(a2)
#endif
#if FIELDS > 3
        APPLY_FIELD(a3)
#endif
        query_actions.apply();
#endif
        if (meta.up == 1 && meta.came_down == 0) {
            hash(meta.up_bucket, HashAlgorithm.crc32, (bit<8>)0,
                 { hdr.camus.a0
#if FIELDS > 1
                 , hdr.camus.a1
#endif
#if FIELDS > 2
                 , hdr.camus.a2
#endif
#if FIELDS > 3
                 , hdr.camus.a3
#endif
                 }, (bit<16>)UP_PORTS);
            up_ecmp.apply();
            if (meta.has_up == 1 && meta.up_port != standard_metadata.ingress_port) {
                clone(CloneType.I2E, (bit<32>)meta.up_port);
            }
        }
        if (meta.drop_original == 1) {
            drop();                    /* no group: at most the up clone leaves */
        }
    }
}

/* ------------------------------------------------------------------- egress */

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type != PKT_INSTANCE_TYPE_INGRESS_CLONE
                && standard_metadata.egress_port == standard_metadata.ingress_port) {
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
        packet.emit(hdr.camus);
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
