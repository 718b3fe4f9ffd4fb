/* elmo.p4 - Elmo: source-routed multicast with p-rules in the header, s-rules
 * in group tables and default p-rules (P4_16, v1model), one source compiled
 * per header layout.
 *
 * Python reference model: sim/dataplanes/elmo/reference.py (family "elmo"),
 * codec sim/dataplanes/elmo/codec.py, bit numbering
 * sim/dataplanes/elmo/fabric.py; rules written by strategies/elmo/elmo.py.
 * Table, action, parameter and match-field names are the strings the Python
 * state uses (tests/hil/test_p4info_names.py).
 *
 * One program for every tier (leaf, spine, core): the elmo_switch rule says
 * which one a switch is. The header's field widths are fixed per network
 * (Elmo's P4_14 programs fix them as constants too, Elmo-MCast/p4-programs
 * elmo_leaf_switch.p4 NUM_HOSTS_PER_LEAF ...), so p4/Makefile builds one
 * program per layout (codec.ElmoLayout), named
 *   elmo_l<LEAF_DOWN>u<LEAF_UP>_s<SPINE_DOWN>u<SPINE_UP>_c<CORE_DOWN>_i<LEAF_ID>p<POD_ID>_k<MAX_IDS>
 * with -DLEAF_DOWN=.. -DLEAF_UP=.. -DSPINE_DOWN=.. -DSPINE_UP=.. -DCORE_DOWN=..
 * -DLEAF_ID=.. -DPOD_ID=.. -DMAX_IDS=.. (hil/programs.py reads the layout off
 * the installed elmo_switch rule). The defaults below are Elmo's own network
 * (SIGCOMM 2019 §5.1: 12 pods x 48 leaves x 48 hosts, 4 spines per pod, 4
 * cores, K = 3: elmo_l48u4_s48u1_c12_i10p4_k3).
 * Bounds: LEAF_PRULES (30) and SPINE_PRULES (2) p-rules per layer, the
 * strategy's H_max defaults (leaf_prules, spine_prules); MAX_IDS <= 8,
 * LEAF_PRULES / SPINE_PRULES <= 64, up bitmaps <= 64 bits.
 *
 * Frame (codec.py, every element padded with zero bits to whole bytes):
 *   Ethernet (0x9E10) | elmo: group_id 32, flags 8, n_spine 8, n_leaf 8
 *   | up_leaf:  multipath 1, up LEAF_UP, down LEAF_DOWN        if flags & 0x80
 *   | up_spine: multipath 1, up SPINE_UP, down SPINE_DOWN      if flags & 0x40
 *   | core:     bitmap CORE_DOWN                               if flags & 0x20
 *   | n_spine x spine p-rule: k-1 (COUNT_BITS), bitmap SPINE_DOWN, k pod ids
 *   | spine default: bitmap SPINE_DOWN                         if flags & 0x10
 *   | n_leaf x leaf p-rule: k-1 (COUNT_BITS), bitmap LEAF_DOWN, k leaf ids
 *   | leaf default: bitmap LEAF_DOWN                           if flags & 0x08
 *   | payload
 * A p-rule's size depends on its id count k, so each layer is a stack of
 * header unions (one member per k = 1..MAX_IDS); the parser picks the member
 * by a lookahead of the COUNT_BITS-bit count, so the deparser writes the
 * p-rules back in their wire order. The pad bits of an element are the low
 * bits of its last field (down, bitmap, ids), which the program shifts away.
 * Rejected as the codec rejects (dropped in ingress after one counted pass):
 * reserved flag bits set, a count >= MAX_IDS, a truncated header; and, a
 * bound of this build, more p-rules in a layer than its stack holds.
 *
 * Pass (one, no recirculation), as the reference model:
 *   ingress  count the pass; MyIngress.elmo_switch (hdr.ethernet.etherType
 *            exact -> set_switch(role, switch_id, <layout widths>); a miss,
 *            or widths other than this build's, drops). The bitmap:
 *              leaf with up_leaf / spine with up_spine: down bits | up bits
 *                << down width; multipath keeps the (group_id mod
 *                popcount(up))-th set bit of up (headers.multipath_choice);
 *              core: the core p-rule (none: drop);
 *              otherwise the first p-rule of the switch's layer naming its
 *                id; else MyIngress.elmo_srule (hdr.elmo.group_id exact ->
 *                srule_forward(mcast_grp)): the PRE replicates to that
 *                group, every replica leaves; else the layer's default
 *                p-rule; else drop.
 *            A bitmap replicates to multicast group 1 (every port, instance
 *            = the port's bit in the switch's complete bitmap).
 *   egress   a bitmap replica whose bit (egress_rid) is clear is dropped
 *            (Elmo's bitmap_port_select); then the pops of
 *            elmo_invalidate_*_p_rules_tbl, by direction (egress_rid below
 *            the tier's down width: down):
 *              leaf, down   the whole Elmo header; EtherType 0x88B5;
 *              leaf, up     up_leaf (flag cleared);
 *              core         core (flag cleared);
 *              spine up copy of an up_spine packet: up_spine (flag cleared);
 *              spine, down  all but the leaf p-rules and leaf default
 *                           (flags = LEAF_DEFAULT bit, n_spine = 0).
 *
 * MyIngress.pass_counter[0] counts ingress passes (= PipelineResult.passes).
 *
 * References: Elmo SIGCOMM 2019 §3.1-3.3 (p-rules per layer, multipath,
 * shared p-rules, s-rules, default p-rule, popping p-rules); Elmo-MCast/
 * p4-programs elmo_{leaf,spine,core}_switch.p4 (P4_14 header types, ingress
 * and egress controls).
 */

#include <core.p4>
#include <v1model.p4>

/* ------------------------------------------------------------ configuration */

#ifndef LEAF_DOWN
#define LEAF_DOWN 48
#endif
#ifndef LEAF_UP
#define LEAF_UP 4
#endif
#ifndef SPINE_DOWN
#define SPINE_DOWN 48
#endif
#ifndef SPINE_UP
#define SPINE_UP 1
#endif
#ifndef CORE_DOWN
#define CORE_DOWN 12
#endif
#ifndef LEAF_ID
#define LEAF_ID 10
#endif
#ifndef POD_ID
#define POD_ID 4
#endif
#ifndef MAX_IDS
#define MAX_IDS 3
#endif
#ifndef LEAF_PRULES
#define LEAF_PRULES 30
#endif
#ifndef SPINE_PRULES
#define SPINE_PRULES 2
#endif

#if LEAF_PRULES < 1 || LEAF_PRULES > 64 || SPINE_PRULES < 1 || SPINE_PRULES > 64
#error "LEAF_PRULES and SPINE_PRULES must be in 1..64"
#endif
#if LEAF_DOWN + LEAF_UP + SPINE_DOWN + SPINE_UP + CORE_DOWN > 255
#error "the bitmaps of all tiers together must fit 255 bits (an 8-bit shift on BMv2)"
#endif
#if LEAF_ID > 16 || POD_ID > 16
#error "LEAF_ID and POD_ID must be at most 16 bits"
#endif

/* the width of k - 1 (codec.ElmoLayout.count_bits) */
#if MAX_IDS < 1
#error "MAX_IDS must be >= 1"
#elif MAX_IDS <= 2
#define COUNT_BITS 1
#elif MAX_IDS <= 4
#define COUNT_BITS 2
#elif MAX_IDS <= 8
#define COUNT_BITS 3
#else
#error "this program supports MAX_IDS up to 8"
#endif

/* the wider up bitmap, and a repetition of a statement at least that often */
#if LEAF_UP > SPINE_UP
#define UP_MAX LEAF_UP
#else
#define UP_MAX SPINE_UP
#endif
#define REP1(X) X
#define REP2(X) REP1(X) REP1(X)
#define REP4(X) REP2(X) REP2(X)
#define REP8(X) REP4(X) REP4(X)
#define REP16(X) REP8(X) REP8(X)
#define REP32(X) REP16(X) REP16(X)
#define REP64(X) REP32(X) REP32(X)
#if UP_MAX <= 1
#define REP_UP REP1
#elif UP_MAX <= 2
#define REP_UP REP2
#elif UP_MAX <= 4
#define REP_UP REP4
#elif UP_MAX <= 8
#define REP_UP REP8
#elif UP_MAX <= 16
#define REP_UP REP16
#elif UP_MAX <= 32
#define REP_UP REP32
#elif UP_MAX <= 64
#define REP_UP REP64
#else
#error "up bitmaps of more than 64 bits are not supported"
#endif

/* M(k, ...) for k = 1 .. MAX_IDS */
#define EACH_K1(M, ...) M(1, __VA_ARGS__)
#define EACH_K2(M, ...) EACH_K1(M, __VA_ARGS__) M(2, __VA_ARGS__)
#define EACH_K3(M, ...) EACH_K2(M, __VA_ARGS__) M(3, __VA_ARGS__)
#define EACH_K4(M, ...) EACH_K3(M, __VA_ARGS__) M(4, __VA_ARGS__)
#define EACH_K5(M, ...) EACH_K4(M, __VA_ARGS__) M(5, __VA_ARGS__)
#define EACH_K6(M, ...) EACH_K5(M, __VA_ARGS__) M(6, __VA_ARGS__)
#define EACH_K7(M, ...) EACH_K6(M, __VA_ARGS__) M(7, __VA_ARGS__)
#define EACH_K8(M, ...) EACH_K7(M, __VA_ARGS__) M(8, __VA_ARGS__)
#define EACH_K_(n) EACH_K##n
#define EACH_K_N(n) EACH_K_(n)
#define EACH_K EACH_K_N(MAX_IDS)

/* M(i, ...) for i = 0 .. 69 (M guards i against its stack's bound) */
#define EACH_I10(M, t, ...) M(t##0, __VA_ARGS__) M(t##1, __VA_ARGS__) M(t##2, __VA_ARGS__) \
    M(t##3, __VA_ARGS__) M(t##4, __VA_ARGS__) M(t##5, __VA_ARGS__) M(t##6, __VA_ARGS__) \
    M(t##7, __VA_ARGS__) M(t##8, __VA_ARGS__) M(t##9, __VA_ARGS__)
#define EACH_I(M, ...) EACH_I10(M, , __VA_ARGS__) EACH_I10(M, 1, __VA_ARGS__) \
    EACH_I10(M, 2, __VA_ARGS__) EACH_I10(M, 3, __VA_ARGS__) EACH_I10(M, 4, __VA_ARGS__) \
    EACH_I10(M, 5, __VA_ARGS__) EACH_I10(M, 6, __VA_ARGS__)

/* zero bits that pad n bits to whole bytes */
#define PAD(n) ((8 - ((n) % 8)) % 8)
#define UP_LEAF_PAD PAD(1 + LEAF_UP + LEAF_DOWN)
#define UP_SPINE_PAD PAD(1 + SPINE_UP + SPINE_DOWN)
#define CORE_PAD PAD(CORE_DOWN)
#define SPINE_DEFAULT_PAD PAD(SPINE_DOWN)
#define LEAF_DEFAULT_PAD PAD(LEAF_DOWN)
#define RULE_PAD(k, BM, IDW) PAD(COUNT_BITS + (BM) + (k) * (IDW))

/* the complete bitmap of any tier (down bits, then up bits) fits this width */
#define BITMAP_BITS (LEAF_DOWN + LEAF_UP + SPINE_DOWN + SPINE_UP + CORE_DOWN)

typedef bit<48> macAddr_t;
typedef bit<16> etherType_t;
typedef bit<16> mcastGrp_t;
typedef bit<16> width_t;
typedef bit<(BITMAP_BITS)> bitmap_t;
typedef bit<(UP_MAX)> up_t;

const etherType_t ETHERTYPE_ELMO = 0x9E10;
const etherType_t ETHERTYPE_EVENT = 0x88B5;

const bit<8> FLAG_UP_LEAF = 0x80;
const bit<8> FLAG_UP_SPINE = 0x40;
const bit<8> FLAG_CORE = 0x20;
const bit<8> FLAG_SPINE_DEFAULT = 0x10;
const bit<8> FLAG_LEAF_DEFAULT = 0x08;
const bit<8> FLAGS_RESERVED = 0x07;

const bit<8> ROLE_CORE = 1;
const bit<8> ROLE_SPINE = 2;
const bit<8> ROLE_LEAF = 3;

const mcastGrp_t ALL_PORTS_GROUP = 1;

const bit<32> PASS_COUNTER_SIZE = 1;
const bit<32> PASS_COUNTER_INDEX = 0;

error { ElmoReservedFlags, ElmoTooManyIds }

/* ------------------------------------------------------------------ headers */

header ethernet_t {
    macAddr_t   dstAddr;
    macAddr_t   srcAddr;
    etherType_t etherType;
}

header elmo_t {
    bit<32> group_id;
    bit<8>  flags;
    bit<8>  n_spine;
    bit<8>  n_leaf;
}

header up_leaf_t {
    bit<1>                                 multipath;
    bit<(LEAF_UP)>                         up;
    bit<(LEAF_DOWN + UP_LEAF_PAD)>         down_pad;
}

header up_spine_t {
    bit<1>                                 multipath;
    bit<(SPINE_UP)>                        up;
    bit<(SPINE_DOWN + UP_SPINE_PAD)>       down_pad;
}

header core_t {
    bit<(CORE_DOWN + CORE_PAD)>            bitmap_pad;
}

header spine_default_t {
    bit<(SPINE_DOWN + SPINE_DEFAULT_PAD)>  bitmap_pad;
}

header leaf_default_t {
    bit<(LEAF_DOWN + LEAF_DEFAULT_PAD)>    bitmap_pad;
}

/* a p-rule naming k switches: k-1, bitmap, ids (+ pad) */
#define PRULE_TYPE(k, layer, BM, IDW) \
    header layer##_prule##k##_t { \
        bit<COUNT_BITS> count; \
        bit<(BM)> bitmap; \
        bit<((k) * (IDW) + RULE_PAD(k, BM, IDW))> ids_pad; \
    }
EACH_K(PRULE_TYPE, spine, SPINE_DOWN, POD_ID)
EACH_K(PRULE_TYPE, leaf, LEAF_DOWN, LEAF_ID)

#define UNION_MEMBER(n, layer) layer##_prule##n##_t k##n;
header_union spine_prule_t {
    EACH_K(UNION_MEMBER, spine)
}
header_union leaf_prule_t {
    EACH_K(UNION_MEMBER, leaf)
}

struct headers {
    ethernet_t                  ethernet;
    elmo_t                      elmo;
    up_leaf_t                   up_leaf;
    up_spine_t                  up_spine;
    core_t                      core;
    spine_prule_t[SPINE_PRULES] spine_prules;
    spine_default_t             spine_default;
    leaf_prule_t[LEAF_PRULES]   leaf_prules;
    leaf_default_t              leaf_default;
}

struct metadata {
    bit<8>   parse_left;   /* p-rules of the current layer still to parse */
    bit<8>   role;         /* set_switch: ROLE_* (0: no rule) */
    bit<16>  switch_id;    /* leaf id or pod */
    bit<1>   layout_ok;    /* the rule's widths are this build's */
    bit<1>   by_bitmap;    /* replicate to ALL_PORTS_GROUP, pruned by bits */
    bit<1>   up_mode;      /* an upstream p-rule decided */
    bitmap_t bits;         /* the complete bitmap */
}

/* ------------------------------------------------------------------- parser */

#define SELECT_K(n, layer) (n - 1): parse_##layer##_prule##n;
#define PARSE_K(n, layer) \
    state parse_##layer##_prule##n { \
        packet.extract(hdr.layer##_prules.next.k##n); \
        transition parse_##layer##_prules; \
    }

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_ELMO: parse_elmo;
            default: accept;
        }
    }

    state parse_elmo {
        packet.extract(hdr.elmo);
        verify(hdr.elmo.flags & FLAGS_RESERVED == 0, error.ElmoReservedFlags);
        transition select(hdr.elmo.flags & FLAG_UP_LEAF) {
            0: check_up_spine;
            default: parse_up_leaf;
        }
    }

    state parse_up_leaf {
        packet.extract(hdr.up_leaf);
        transition check_up_spine;
    }

    state check_up_spine {
        transition select(hdr.elmo.flags & FLAG_UP_SPINE) {
            0: check_core;
            default: parse_up_spine;
        }
    }

    state parse_up_spine {
        packet.extract(hdr.up_spine);
        transition check_core;
    }

    state check_core {
        transition select(hdr.elmo.flags & FLAG_CORE) {
            0: start_spine;
            default: parse_core;
        }
    }

    state parse_core {
        packet.extract(hdr.core);
        transition start_spine;
    }

    state start_spine {
        meta.parse_left = hdr.elmo.n_spine;
        transition parse_spine_prules;
    }

    state parse_spine_prules {
        transition select(meta.parse_left) {
            0: check_spine_default;
            default: parse_spine_prule;
        }
    }

    state parse_spine_prule {
        meta.parse_left = meta.parse_left - 1;
        transition select(packet.lookahead<bit<COUNT_BITS>>()) {
            EACH_K(SELECT_K, spine)
            default: too_many_ids;
        }
    }

    EACH_K(PARSE_K, spine)

    state check_spine_default {
        transition select(hdr.elmo.flags & FLAG_SPINE_DEFAULT) {
            0: start_leaf;
            default: parse_spine_default;
        }
    }

    state parse_spine_default {
        packet.extract(hdr.spine_default);
        transition start_leaf;
    }

    state start_leaf {
        meta.parse_left = hdr.elmo.n_leaf;
        transition parse_leaf_prules;
    }

    state parse_leaf_prules {
        transition select(meta.parse_left) {
            0: check_leaf_default;
            default: parse_leaf_prule;
        }
    }

    state parse_leaf_prule {
        meta.parse_left = meta.parse_left - 1;
        transition select(packet.lookahead<bit<COUNT_BITS>>()) {
            EACH_K(SELECT_K, leaf)
            default: too_many_ids;
        }
    }

    EACH_K(PARSE_K, leaf)

    state check_leaf_default {
        transition select(hdr.elmo.flags & FLAG_LEAF_DEFAULT) {
            0: accept;
            default: parse_leaf_default;
        }
    }

    state parse_leaf_default {
        packet.extract(hdr.leaf_default);
        transition accept;
    }

    state too_many_ids {
        verify(false, error.ElmoTooManyIds);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

/* ---------------------------------------------------------------- multipath */

/* The up bit a multipath p-rule keeps (headers.multipath_choice): the j-th
 * set bit of up counting from bit 0, j = group_id mod popcount(up). The
 * modulo is v1model's hash with the identity algorithm (base 0, max =
 * popcount); a runtime % does not compile for BMv2. */
control Multipath(inout up_t up, in bit<32> group_id) {
    apply {
        if (up != 0) {
            up_t rest = up;
            bit<16> count = 0;
            REP_UP(if (rest != 0) { rest = rest & (rest - 1); count = count + 1; })
            bit<16> j;
            hash(j, HashAlgorithm.identity, (bit<16>)0, { group_id }, count);
            REP_UP(if (j != 0) { up = up & (up - 1); j = j - 1; })
            up = up & (~up + 1);
        }
    }
}

/* ------------------------------------------------------------------ ingress */

/* id j of a p-rule naming k switches (ids field of width k * IDW + pad) */
#define ID_AT(f, k, j, IDW, P) ((bit<16>)((bit<(IDW)>)((f) >> ((P) + ((k) - 1 - (j)) * (IDW)))))
#define HAS1(f, k, W, P, me) (ID_AT(f, k, 0, W, P) == (me))
#define HAS2(f, k, W, P, me) HAS1(f, k, W, P, me) || (ID_AT(f, k, 1, W, P) == (me))
#define HAS3(f, k, W, P, me) HAS2(f, k, W, P, me) || (ID_AT(f, k, 2, W, P) == (me))
#define HAS4(f, k, W, P, me) HAS3(f, k, W, P, me) || (ID_AT(f, k, 3, W, P) == (me))
#define HAS5(f, k, W, P, me) HAS4(f, k, W, P, me) || (ID_AT(f, k, 4, W, P) == (me))
#define HAS6(f, k, W, P, me) HAS5(f, k, W, P, me) || (ID_AT(f, k, 5, W, P) == (me))
#define HAS7(f, k, W, P, me) HAS6(f, k, W, P, me) || (ID_AT(f, k, 6, W, P) == (me))
#define HAS8(f, k, W, P, me) HAS7(f, k, W, P, me) || (ID_AT(f, k, 7, W, P) == (me))

/* the first p-rule naming this switch: element i, member k */
#define MATCH_K(n, layer, i, BM, IDW) \
    if (meta.by_bitmap == 0 && hdr.layer##_prules[i].k##n.isValid()) { \
        if (HAS##n(hdr.layer##_prules[i].k##n.ids_pad, n, IDW, RULE_PAD(n, BM, IDW), \
                   meta.switch_id)) { \
            meta.by_bitmap = 1; \
            meta.bits = (bitmap_t)hdr.layer##_prules[i].k##n.bitmap; \
        } \
    }
#define MATCH_AT(i, layer, BOUND, BM, IDW) \
    if ((i) < (BOUND)) { EACH_K(MATCH_K, layer, (i) % (BOUND), BM, IDW) }

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {

    counter(PASS_COUNTER_SIZE, CounterType.packets) pass_counter;
    Multipath() multipath;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_switch(bit<8> role, bit<16> switch_id, width_t leaf_down, width_t leaf_up,
                      width_t spine_down, width_t spine_up, width_t core_down,
                      width_t leaf_id, width_t pod_id, width_t max_ids) {
        meta.role = role;
        meta.switch_id = switch_id;
        meta.layout_ok = (leaf_down == LEAF_DOWN && leaf_up == LEAF_UP
                          && spine_down == SPINE_DOWN && spine_up == SPINE_UP
                          && core_down == CORE_DOWN && leaf_id == LEAF_ID
                          && pod_id == POD_ID && max_ids == MAX_IDS) ? 1w1 : 1w0;
    }

    table elmo_switch {
        key = { hdr.ethernet.etherType : exact; }
        actions = { set_switch; drop; }
        default_action = drop();
        size = 16;
    }

    action srule_forward(mcastGrp_t mcast_grp) {
        standard_metadata.mcast_grp = mcast_grp;
    }

    table elmo_srule {
        key = { hdr.elmo.group_id : exact; }
        actions = { srule_forward; NoAction; }
        default_action = NoAction();
        size = 65536;
    }

    apply {
        pass_counter.count(PASS_COUNTER_INDEX);
        if (standard_metadata.parser_error != error.NoError) {
            drop();  /* the codec rejects it (decode_header raises) */
            return;
        }
        meta.role = 0;
        elmo_switch.apply();
        if (meta.role == 0 || meta.layout_ok == 0 || !hdr.elmo.isValid()) {
            drop();
            return;
        }
        meta.by_bitmap = 0;
        meta.up_mode = 0;
        if (meta.role == ROLE_LEAF) {
            if (hdr.up_leaf.isValid()) {
                up_t up = (up_t)hdr.up_leaf.up;
                if (hdr.up_leaf.multipath == 1) {
                    multipath.apply(up, hdr.elmo.group_id);
                }
                meta.bits = (bitmap_t)(hdr.up_leaf.down_pad >> UP_LEAF_PAD)
                            | ((bitmap_t)up << LEAF_DOWN);
                meta.by_bitmap = 1;
                meta.up_mode = 1;
            } else {
                EACH_I(MATCH_AT, leaf, LEAF_PRULES, LEAF_DOWN, LEAF_ID)
            }
        } else if (meta.role == ROLE_SPINE) {
            if (hdr.up_spine.isValid()) {
                up_t up = (up_t)hdr.up_spine.up;
                if (hdr.up_spine.multipath == 1) {
                    multipath.apply(up, hdr.elmo.group_id);
                }
                meta.bits = (bitmap_t)(hdr.up_spine.down_pad >> UP_SPINE_PAD)
                            | ((bitmap_t)up << SPINE_DOWN);
                meta.by_bitmap = 1;
                meta.up_mode = 1;
            } else {
                EACH_I(MATCH_AT, spine, SPINE_PRULES, SPINE_DOWN, POD_ID)
            }
        } else if (meta.role == ROLE_CORE) {
            if (!hdr.core.isValid()) {
                drop();
                return;
            }
            meta.bits = (bitmap_t)(hdr.core.bitmap_pad >> CORE_PAD);
            meta.by_bitmap = 1;
        } else {
            drop();  /* the model raises: unknown role */
            return;
        }
        if (meta.by_bitmap == 0) {
            /* downstream, no p-rule names this switch: s-rule, else default */
            if (!elmo_srule.apply().hit) {
                if (meta.role == ROLE_LEAF && hdr.leaf_default.isValid()) {
                    meta.bits = (bitmap_t)(hdr.leaf_default.bitmap_pad >> LEAF_DEFAULT_PAD);
                    meta.by_bitmap = 1;
                } else if (meta.role == ROLE_SPINE && hdr.spine_default.isValid()) {
                    meta.bits = (bitmap_t)(hdr.spine_default.bitmap_pad >> SPINE_DEFAULT_PAD);
                    meta.by_bitmap = 1;
                } else {
                    drop();
                    return;
                }
            }
        }
        if (meta.by_bitmap == 1) {
            standard_metadata.mcast_grp = ALL_PORTS_GROUP;
        }
    }
}

/* ------------------------------------------------------------------- egress */

#define INVALID_K(n, layer, i) hdr.layer##_prules[i].k##n.setInvalid();
#define INVALID_AT(i, layer, BOUND) if ((i) < (BOUND)) { EACH_K(INVALID_K, layer, (i) % (BOUND)) }

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        bit<16> rid = standard_metadata.egress_rid;
        if (meta.by_bitmap == 1
                && (rid >= BITMAP_BITS || ((meta.bits >> (bit<8>)rid) & 1) == 0)) {
            mark_to_drop(standard_metadata);  /* this port's bit is clear */
            return;
        }
        bool down;
        if (meta.role == ROLE_LEAF) {
            down = rid < LEAF_DOWN;
        } else if (meta.role == ROLE_SPINE) {
            down = rid < SPINE_DOWN;
        } else {
            down = rid < CORE_DOWN;
        }
        if (meta.role == ROLE_LEAF && down) {
            /* to a host: the plain frame */
            hdr.ethernet.etherType = ETHERTYPE_EVENT;
            hdr.elmo.setInvalid();
            hdr.up_leaf.setInvalid();
            hdr.up_spine.setInvalid();
            hdr.core.setInvalid();
            EACH_I(INVALID_AT, spine, SPINE_PRULES)
            hdr.spine_default.setInvalid();
            EACH_I(INVALID_AT, leaf, LEAF_PRULES)
            hdr.leaf_default.setInvalid();
        } else if (meta.role == ROLE_LEAF) {
            hdr.up_leaf.setInvalid();
            hdr.elmo.flags = hdr.elmo.flags & ~FLAG_UP_LEAF;
        } else if (meta.role == ROLE_CORE) {
            hdr.core.setInvalid();
            hdr.elmo.flags = hdr.elmo.flags & ~FLAG_CORE;
        } else if (meta.up_mode == 1 && !down) {
            hdr.up_spine.setInvalid();
            hdr.elmo.flags = hdr.elmo.flags & ~FLAG_UP_SPINE;
        } else {
            /* a spine's copy down to its leaves: the leaf section only */
            hdr.up_leaf.setInvalid();
            hdr.up_spine.setInvalid();
            hdr.core.setInvalid();
            EACH_I(INVALID_AT, spine, SPINE_PRULES)
            hdr.spine_default.setInvalid();
            hdr.elmo.flags = hdr.elmo.flags & FLAG_LEAF_DEFAULT;
            hdr.elmo.n_spine = 0;
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.elmo);
        packet.emit(hdr.up_leaf);
        packet.emit(hdr.up_spine);
        packet.emit(hdr.core);
        packet.emit(hdr.spine_prules);
        packet.emit(hdr.spine_default);
        packet.emit(hdr.leaf_prules);
        packet.emit(hdr.leaf_default);
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
