"""The kernel of the BIER fast path: the copies of every notification, one loop each.

Plain Python that numba compiles (``impl="jit"``,
:func:`sim.dataplanes.l2.fast_path_kernels.compiled`) or that runs as it is
(``impl="python"``). :mod:`sim.dataplanes.bier.fast_path` describes the walk
and the tables; this module only holds the loop.

Per notification ``b`` the kernel fills ``out_m[b]`` (columns below) and
``out_t[b]`` (latest arrival at a receiver). With ``detail`` it writes every
link crossing into ``tr_i`` (source node, destination node, passes the
destination switch ran for this frame, 1 for a BIER frame / 0 for a carried
frame) and ``tr_t`` (arrival time), up to the buffers' length;
``out_m[b, TRACE_END]`` says how many were needed. Global node numbers:
switches ``0..S-1``, then hosts (``S + host index``).

References
----------
RFC 8279 §6.5; uni-tue-kn/p4-bier Bier.p4 (one pass per next hop).
"""

from __future__ import annotations

import numpy as np

#: Columns of ``out_m``.
(BIER_FRAMES, PLAIN_FRAMES, PASSES, VISITS, MAX_PASSES, PACKETS, DELIVERED, DECLINED,
 TRACE_END) = range(9)
N_COLUMNS = 9


def bier_kernel(host_bfr: np.ndarray, bfer_sw: np.ndarray, nh_t: np.ndarray, nd_t: np.ndarray,
                host_delay: np.ndarray, n_switches: int, bsl: int, ttl0: int,
                roots: np.ndarray, pubs: np.ndarray, pub_delay: np.ndarray, ids: np.ndarray,
                counts: np.ndarray, feed_s: float, switch_s: float, pass_s: float,
                out_m: np.ndarray, out_t: np.ndarray, detail: int, tr_i: np.ndarray,
                tr_t: np.ndarray, scratch: np.ndarray, rnext: np.ndarray, st_i: np.ndarray,
                st_t: np.ndarray) -> None:
    """Walk the BIER copies of each notification (see the module docstrings).

    ``ids``: receiver host indices, ``counts[b]`` of them per notification;
    ``nh_t[x, e]`` / ``nd_t[x, e]``: next switch from ``x`` towards the BFER
    with BFR-id ``e + 1`` and that link's delay (a copy's bits are read along
    one row). Work arrays:
    ``scratch`` (int64, 11 rows of ``max(S, BFERs) + 1``; row 2, ``slot_of``,
    all -1, rows 0 and 6 all 0, and left so), ``rnext`` (one per ``ids``), the
    stack of pending copies ``st_i`` (5 ints each: switch, TTL, first and
    end bit, trace index; room for ``BFERs + 1``) and ``st_t`` (their arrival
    times). Pending copies hold disjoint non-empty sets of bits, so there are
    never more than BFERs of them.
    """
    cap = tr_t.shape[0]
    cnt = scratch[0]
    rhead = scratch[1]
    slot_of = scratch[2]
    bits = scratch[3]
    tmp = scratch[4]
    gof = scratch[5]
    sw_pass = scratch[6]
    touched = scratch[7]
    gkey = scratch[8]
    gstart = scratch[9]
    gend = scratch[10]
    local_key = n_switches
    nt = 0
    off = 0
    for b in range(roots.shape[0]):
        m = out_m[b]
        declined = 0
        nb = 0
        for j in range(off, off + counts[b]):
            e = host_bfr[ids[j]]
            if e < 0:
                declined = 1
                continue
            if cnt[e] == 0:
                bits[nb] = e
                nb += 1
                rhead[e] = -1
            cnt[e] += 1
            rnext[j] = rhead[e]
            rhead[e] = j
        bits[:nb] = np.sort(bits[:nb])
        worst = -np.inf
        bier_frames = 0
        plain = 0
        passes = 0
        visits = 0
        delivered = 0
        n_touched = 0
        packets = 0
        lo = 0
        while lo < nb and not declined:
            si = bits[lo] // bsl
            hi = lo + 1
            while hi < nb and bits[hi] // bsl == si:
                hi += 1
            t0 = (packets + 1) * feed_s + pub_delay[b]
            packets += 1
            bier_frames += 1
            if detail:
                if nt < cap:
                    tr_i[0, nt] = pubs[b]
                    tr_i[1, nt] = roots[b]
                    tr_i[3, nt] = 1
                    tr_t[nt] = t0
            st_i[0] = roots[b]
            st_i[1] = ttl0
            st_i[2] = lo
            st_i[3] = hi
            st_i[4] = nt
            st_t[0] = t0
            nt += detail
            sp = 1
            while sp > 0 and not declined:
                sp -= 1
                x = st_i[5 * sp]
                ttl = st_i[5 * sp + 1]
                a = st_i[5 * sp + 2]
                z = st_i[5 * sp + 3]
                tri = st_i[5 * sp + 4]
                t = st_t[sp]
                # the bits of this copy by next hop, groups in order of their lowest bit
                ng = 0
                for j in range(a, z):
                    e = bits[j]
                    key = local_key if bfer_sw[e] == x else nh_t[x, e]
                    g = slot_of[key]
                    if g < 0:
                        g = ng
                        slot_of[key] = g
                        gkey[g] = key
                        gend[g] = 0
                        ng += 1
                    gend[g] += 1
                    gof[j] = g
                acc = a
                local = 0
                for g in range(ng):
                    gstart[g] = acc
                    acc += gend[g]
                    gend[g] = gstart[g]
                    slot_of[gkey[g]] = -1
                    if gkey[g] == local_key:
                        local = 1
                for j in range(a, z):
                    g = gof[j]
                    tmp[gend[g]] = bits[j]
                    gend[g] += 1
                for j in range(a, z):
                    bits[j] = tmp[j]
                p = ng + local
                if sw_pass[x] == 0:
                    touched[n_touched] = x
                    n_touched += 1
                sw_pass[x] += p
                passes += p
                visits += 1
                if detail and tri < cap:
                    tr_i[2, tri] = p
                base = t + switch_s
                for g in range(ng):
                    if gkey[g] == local_key:
                        tl = base + (g + 1) * pass_s
                        k = rhead[bits[gstart[g]]]
                        while k >= 0:
                            h = ids[k]
                            ta = tl + host_delay[h]
                            plain += 1
                            delivered += 1
                            if ta > worst:
                                worst = ta
                            if detail:
                                if nt < cap:
                                    tr_i[0, nt] = x
                                    tr_i[1, nt] = n_switches + h
                                    tr_i[2, nt] = 0
                                    tr_i[3, nt] = 0
                                    tr_t[nt] = ta
                                nt += 1
                            k = rnext[k]
                        continue
                    if ttl <= 1:  # the copy would expire: the reference runs this one
                        declined = 1
                        break
                    n = gkey[g]
                    tn = (base + g * pass_s) + nd_t[x, bits[gstart[g]]]
                    bier_frames += 1
                    if detail:
                        if nt < cap:
                            tr_i[0, nt] = x
                            tr_i[1, nt] = n
                            tr_i[2, nt] = 0
                            tr_i[3, nt] = 1
                            tr_t[nt] = tn
                    st_i[5 * sp] = n
                    st_i[5 * sp + 1] = ttl - 1
                    st_i[5 * sp + 2] = gstart[g]
                    st_i[5 * sp + 3] = gend[g]
                    st_i[5 * sp + 4] = nt
                    st_t[sp] = tn
                    nt += detail
                    sp += 1
            lo = hi
        top = 0
        for i in range(n_touched):
            x = touched[i]
            if sw_pass[x] > top:
                top = sw_pass[x]
            sw_pass[x] = 0
        for i in range(nb):
            cnt[bits[i]] = 0
        off += counts[b]
        m[BIER_FRAMES] = bier_frames
        m[PLAIN_FRAMES] = plain
        m[PASSES] = passes
        m[VISITS] = visits
        m[MAX_PASSES] = top
        m[PACKETS] = packets
        m[DELIVERED] = delivered
        m[DECLINED] = declined
        m[TRACE_END] = nt
        out_t[b] = worst if delivered else 0.0
