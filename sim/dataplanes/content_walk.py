"""The kernel of the content filters' fast path: one event through the network, switch by switch.

Every content-filter data plane (``prefix_filter``, ``range_filter``,
``kundel``, ``camus``) forwards the publisher's one packet unchanged: at a
switch one pass decides, from the event and the ingress port, which ports
get a copy. :func:`walk_kernel` repeats the static engine's walk
(:func:`sim.engines.static.run_notification`) for a batch of events with
those decisions read from arrays compiled from the installed tables
(:mod:`sim.dataplanes.content_program`): the same FIFO queue of frames, the
same order of copies, the same floating-point operations for arrival times
(``((t + switch_s) + 0 * pass_s) + link delay``, the publisher's frame at
``1 * feed_in_s`` plus its link), so every count and every first arrival is
the reference's.

A switch's decision by kind:

0. one table, one lookup: the first rule of the ingress port's segment
   whose fields all match (``lo <= key <= hi`` and ``key & mask == value``),
   rules in the table's precedence order (prefix filter, range filter, Kundel);
1. Camus's one big table: the same on the switch's segment, two lookups
   (``port_role`` and ``query_flat``);
2. Camus's BDD: ``port_role``, then per field exact -> range -> miss (one
   lookup each until one hits, the hit sets the state), then
   ``query_actions`` on the state.

Camus adds the logical up port (ECMP bucket = CRC32 of the header mod the
up ports, one lookup) to actions marked ``up`` unless the frame came down.

Per notification the kernel also counts what the rows need beyond the
delivery: the generic link waste of :func:`sim.dataplanes.link_waste.wasted_link_frames`,
the content filters' own link false positives (frames off the routing
tree's paths to the receivers, or, ``walked``, crossings from which no
receiver was reached), seed 001's network false positives (frames on links
a second walk over reference flows, the unlimited PLEROMA flows, does not
cross; :func:`strategies.prefix_filter.pleroma_global.emulate_links`; skipped,
with none found, when every slot the first walk passed has reference flows
that decide as the installed rules, see ``net``) and the worst receiver's
summed lookup latency along the routing tree.

Plain Python that numba compiles (:func:`jit_kernel`, ``impl="jit"``);
``impl="python"`` runs it interpreted (``STACKCAST_NO_JIT=1``, or no numba).
Both are property tested against the reference
(tests/sim/test_fast_content.py).

References
----------
Seed 000 §3.5.4 (delay model); seed 001 §2.3, §6.2 (routes on one spanning
tree, network false positives); seed 002 §III, seed 003 §4-5, seed 004
§4.2 (the data planes); digest seed001-004 Part C.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from sim.dataplanes.l2.fast_path_kernels import KERNELS, compiled

#: Integer columns of ``out_m``.
(FRAMES, PASSES, LOOKUPS, MAX_PASSES, DELIVERED, DELIVERED_RECEIVERS, DUPLICATES, DROPS,
 WASTE, LINK_FP, NETWORK_FP, ERROR, CROSSINGS) = range(13)
N_COLUMNS = 13
#: Float columns of ``out_f``: latest first arrival at a receiver (s), worst latency (us).
WORST_ARRIVAL, WORST_LATENCY = 0, 1
#: ``out_m[b, ERROR]``: 0 fine; the reference must run (it raises, or it runs longer).
OK, BAD_ACTION, NO_SUCH_PORT, TOO_MANY_FRAMES = 0, 1, 2, 3


def _first_at_least(a: np.ndarray, lo: int, hi: int, x: int) -> int:
    """The first index of sorted ``a[lo:hi]`` whose value is at least ``x`` (``hi``: none):
    ``lo + np.searchsorted(a[lo:hi], x)`` without the slice (a view costs reference counts)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _first_rule(g: int, seg_start: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                msk: np.ndarray, val: np.ndarray, keys: np.ndarray, b: int) -> int:
    """The first rule of segment ``g`` matching ``keys[b]`` (-1: none, or ``g`` < 0)."""
    if g < 0:
        return -1
    nf = lo.shape[1]
    for r in range(seg_start[g], seg_start[g + 1]):
        ok = True
        for f in range(nf):
            k = keys[b, f]
            if k < lo[r, f] or k > hi[r, f] or (k & msk[r, f]) != val[r, f]:
                ok = False
                break
        if ok:
            return r
    return -1


def _bdd(v: int, keys: np.ndarray, b: int, nf_of: np.ndarray, fstart: np.ndarray,
         fpos: np.ndarray, ex_span: np.ndarray, ex_st: np.ndarray, ex_val: np.ndarray,
         ex_next: np.ndarray, rg_span: np.ndarray, rg_st: np.ndarray, rg_lo: np.ndarray,
         rg_hi: np.ndarray, rg_next: np.ndarray, ms_span: np.ndarray, ms_st: np.ndarray,
         ms_next: np.ndarray, nst_of: np.ndarray, leaf_base: np.ndarray,
         leaf_act: np.ndarray) -> tuple[int, int]:
    """Camus's field tables then its action table at switch ``v``: (action, lookups).

    The arrays are :class:`~sim.dataplanes.content_program.Program`'s ``bdd`` tuple,
    passed one by one (the kernel unpacks its tuples once: unpacking one in the walk
    costs a reference count per array and frame). Each table's rows of one (switch,
    field) are ``[span[fi], span[fi + 1])`` of its arrays, sorted by state (exact rows
    then by value; stably, so the first of equal keys is the one a lookup returns)."""
    state = 0
    lookups = 0
    for j in range(nf_of[v]):
        fi = fstart[v] + j
        key = keys[b, fpos[fi]]
        nxt = -1
        lookups += 1  # exact: the first row of (state, key)
        e0, e1 = ex_span[fi], ex_span[fi + 1]
        a = _first_at_least(ex_st, e0, e1, state)
        z = _first_at_least(ex_st, a, e1, state + 1)
        a = _first_at_least(ex_val, a, z, key)
        if a < z and ex_val[a] == key:
            nxt = ex_next[a]
        if nxt < 0:  # range: the first row of the state containing key
            lookups += 1
            e0, e1 = rg_span[fi], rg_span[fi + 1]
            a = _first_at_least(rg_st, e0, e1, state)
            while a < e1 and rg_st[a] == state:
                if rg_lo[a] <= key <= rg_hi[a]:
                    nxt = rg_next[a]
                    break
                a += 1
        if nxt < 0:  # miss: the state's first row
            lookups += 1
            e0, e1 = ms_span[fi], ms_span[fi + 1]
            a = _first_at_least(ms_st, e0, e1, state)
            if a < e1 and ms_st[a] == state:
                nxt = ms_next[a]
        if nxt >= 0:
            state = nxt
    lookups += 1  # query_actions
    if state >= nst_of[v]:
        return -1, lookups
    return leaf_act[leaf_base[v] + state], lookups


def walk_kernel(topo: tuple, parent: np.ndarray, rules: tuple,  # type: ignore[type-arg]
                acts: tuple,  # type: ignore[type-arg]
                camus: tuple, bdd: tuple, net: tuple, lat: np.ndarray,  # type: ignore[type-arg]
                notes: tuple, delays: tuple, walked: int, out_m: np.ndarray,  # type: ignore[type-arg]
                out_f: np.ndarray, detail: int, trace: np.ndarray, trace_t: np.ndarray,
                scratch: np.ndarray, scratch_f: np.ndarray, cross: np.ndarray,
                cross_t: np.ndarray) -> None:
    """Walk every notification of ``notes`` (module docstring); fill ``out_m[b]``, ``out_f[b]``.

    Parameters (arrays; a "slot" is one port of one node, numbered node by node)
    ----------
    topo : (n_switches, slot_node, slot_port, slot_nb, slot_back, slot_delay, slot_pair,
        port_slot)
        Per slot its node, port number, the neighbour, the neighbour's slot of the same
        link, the link's delay and the node's first slot towards the same neighbour
        (links are node pairs, as in ``Delivery.links``); ``port_slot[node, port]``
        (-1: no such port).
    parent : the routing tree over all nodes, each node's parent (-1 at the root).
    rules, acts, camus, bdd : the installed tables compiled by
        :class:`sim.dataplanes.content_program.Program` (its ``kernel_args``).
    net : (on, seg, seg_start, lo, hi, mask, value, r_act, act_start, act_port, same)
        Reference flows for the network false positives, keyed by ``net_keys`` (one
        field: ``lo`` ... ``value`` are 1-D; ``on`` = 0: the network false positives
        are the link false positives). ``same[slot]`` = 1 where the reference flows
        of the ingress slot send every event to the same ports as the installed
        rules (:func:`sim.dataplanes.content_program.same_decisions`): a walk that
        passes only such slots needs no second walk (no network false positives).
    lat : lookup latency of each switch (us)
    notes : (pubs, pub_slot, keys, net_keys, hashes, rcv, rcv_start)
        Per notification the publisher, its access slot, the table keys (one row),
        the reference flows' key (one row), the header's CRC32 and the receivers
        ``rcv[rcv_start[b]:rcv_start[b + 1]]``.
    delays : (feed_s, switch_s, pass_s)
    walked : 1 to count link false positives by crossings (routes off the tree).
    detail : 1 to write every crossing (src, dst, lookups at dst) to ``trace`` and its
        arrival time to ``trace_t`` as far as they reach (``out_m[b, CROSSINGS]`` says
        how many there were).
    scratch, scratch_f, cross, cross_t : work arrays from :func:`work_arrays` (left as
        they were found).
    """
    (n_switches, slot_node, slot_port, slot_nb, slot_back, slot_delay, slot_pair,
     port_slot) = topo
    # every tuple unpacked here, once (unpacking one in the loops below would count
    # references to each of its arrays at every frame)
    kind, seg, seg_start, lo, hi, msk, val, r_act = rules
    (nf_of, fstart, fpos, ex_span, ex_st, ex_val, ex_next, rg_span, rg_st, rg_lo, rg_hi,
     rg_next, ms_span, ms_st, ms_next, nst_of, leaf_base, leaf_act) = bdd
    act_start, act_port, act_up, act_bad = acts
    came_down, ecmp_start, ecmp_port = camus
    (net_on, n_seg, n_seg_start, n_lo, n_hi, n_msk, n_val, n_act, n_act_start,
     n_act_port, n_same) = net
    pubs, pub_slot, keys, net_keys, hashes, rcv, rcv_start = notes
    feed_s, switch_s, pass_s = delays
    delivered, is_rcv, visits, useful, stamp = (scratch[0], scratch[1], scratch[2],
                                                scratch[3], scratch[4])
    toward, marked, stack, pred, net_list = (scratch[5], scratch[6], scratch[7], scratch[8],
                                             scratch[9])
    first_t, acc = scratch_f[0], scratch_f[1]
    c_src, c_dst, c_slot, c_par, c_look, c_good = (cross[0], cross[1], cross[2], cross[3],
                                                   cross[4], cross[5])
    cap = c_src.shape[0]
    depth_cap = stack.shape[0]
    n_trace = trace_t.shape[0]
    nt = 0
    for b in range(pubs.shape[0]):
        pub = pubs[b]
        r0, r1 = rcv_start[b], rcv_start[b + 1]
        for j in range(r0, r1):
            is_rcv[rcv[j]] = 1
        err = OK
        # -- the walk; the crossings are the FIFO queue -----------------------------
        s0 = pub_slot[b]
        c_src[0] = pub
        c_dst[0] = slot_nb[s0]
        c_slot[0] = s0
        c_par[0] = -1
        cross_t[0] = 1 * feed_s + slot_delay[s0]
        nc = 1
        head = 0
        passes = lookups = max_passes = drops = 0
        n_delivered = got = dups = 0
        worst = 0.0
        folded = net_on  # every pass so far at a slot whose reference flows decide alike
        while head < nc:
            k = head
            head += 1
            v = c_dst[k]
            t = cross_t[k]
            if v >= n_switches:  # a host accepts the frame
                cnt = delivered[v]
                if cnt == 0:
                    first_t[v] = t
                    n_delivered += 1
                    if is_rcv[v]:
                        got += 1
                        if got == 1 or t > worst:
                            worst = t
                else:
                    dups += 1
                delivered[v] = cnt + 1
                continue
            insl = slot_back[c_slot[k]]
            passes += 1
            if n_same[insl] == 0:
                folded = 0
            visits[v] += 1
            if visits[v] > max_passes:
                max_passes = visits[v]
            if kind[v] == 2:
                a, lk = _bdd(v, keys, b, nf_of, fstart, fpos, ex_span, ex_st, ex_val, ex_next,
                             rg_span, rg_st, rg_lo, rg_hi, rg_next, ms_span, ms_st, ms_next,
                             nst_of, leaf_base, leaf_act)
                lk += 1  # port_role
            else:
                r = _first_rule(seg[insl], seg_start, lo, hi, msk, val, keys, b)
                a = r_act[r] if r >= 0 else -1
                lk = 1 if kind[v] == 0 else 2
            if a >= 0 and act_bad[a]:
                err = BAD_ACTION
                break
            n_out = 0
            up = 0
            p_up = -1
            if a >= 0:
                n_out = act_start[a + 1] - act_start[a]
                if act_up[a] and came_down[insl] == 0:
                    n_up = ecmp_start[v + 1] - ecmp_start[v]
                    if n_up > 0:
                        lk += 1
                        p_up = ecmp_port[ecmp_start[v] + hashes[b] % n_up]
                        up = 1 if p_up >= 0 else 0
            lookups += lk
            c_look[k] = lk
            inport = slot_port[insl]
            emitted = 0
            for e in range(n_out + up):
                p = act_port[act_start[a] + e] if e < n_out else p_up
                if p == inport:
                    continue
                if p < 0 or p >= port_slot.shape[1] or port_slot[v, p] < 0:
                    err = NO_SUCH_PORT
                    break
                if nc >= cap:
                    err = TOO_MANY_FRAMES
                    break
                sl = port_slot[v, p]
                c_src[nc] = v
                c_dst[nc] = slot_nb[sl]
                c_slot[nc] = sl
                c_par[nc] = k
                cross_t[nc] = ((t + switch_s) + 0 * pass_s) + slot_delay[sl]
                nc += 1
                emitted += 1
            if err != OK:
                break
            if emitted == 0:
                drops += 1
        if err == OK:
            # -- generic link waste: the nodes from which a receiver is reached
            for k in range(nc):
                v = c_dst[k]
                if is_rcv[v] and delivered[v] > 0:
                    useful[v] = 1
            changed = True
            while changed:
                changed = False
                for k in range(nc - 1, -1, -1):
                    if useful[c_dst[k]] and not useful[c_src[k]]:
                        useful[c_src[k]] = 1
                        changed = True
            waste = 0
            for k in range(nc):
                if not useful[c_dst[k]] and c_src[k] != pub:
                    waste += 1
            # -- the worst receiver's summed lookup latency, in path order from the publisher;
            # marks the tree paths from the publisher to the receivers on the way (stamp 1,
            # ``pred``: the node before on the path)
            x = pub
            while x >= 0:  # the publisher's ancestors point back towards it
                stamp[x] = 2
                y = parent[x]
                if y >= 0:
                    toward[y] = x
                x = y
            acc[pub] = 0.0
            stamp[pub] = 1
            worst_lat = 0.0
            for j in range(r0, r1):
                x = rcv[j]
                top = 0
                while stamp[x] != 1:
                    stack[top] = x
                    top += 1
                    x = toward[x] if stamp[x] == 2 else parent[x]
                while top > 0:
                    top -= 1
                    y = stack[top]
                    acc[y] = acc[x] + lat[y] if y < n_switches else acc[x]
                    stamp[y] = 1
                    pred[y] = x
                    x = y
                if acc[rcv[j]] > worst_lat:
                    worst_lat = acc[rcv[j]]
            # -- the content filters' link false positives
            link_fp = 0
            if walked:  # crossings from which no receiver was reached
                c_good[0] = 1
                for k in range(nc):
                    if is_rcv[c_dst[k]]:
                        j = k
                        while j >= 0 and c_good[j] == 0:
                            c_good[j] = 1
                            j = c_par[j]
                for k in range(nc):
                    if c_good[k] == 0:
                        link_fp += 1
            else:  # frames off the tree paths from the publisher to the receivers: a
                # crossing u -> v is on one iff v is marked with u before it
                for k in range(1, nc):  # the publisher's access link is always needed
                    v = c_dst[k]
                    if not (stamp[v] == 1 and v != pub and pred[v] == c_src[k]):
                        link_fp += 1
            # -- network false positives: frames on links the reference flows do not cross
            network_fp = link_fp
            if folded and passes <= depth_cap:
                # the reference flows decide as the installed ones wherever this walk
                # passed: their walk crosses exactly this walk's links (and its stack,
                # one entry per pass at most, cannot overflow), so every frame is on one
                network_fp = 0
            elif net_on:
                nk = net_keys[b, 0]
                marked[slot_pair[s0]] = 1
                net_list[0] = slot_pair[s0]
                nm = 1
                stack[0] = slot_back[s0]
                top = 1
                while top > 0:
                    top -= 1
                    insl = stack[top]
                    sw = slot_node[insl]
                    r = -1  # the first reference flow matching (one field)
                    g = n_seg[insl]
                    if g >= 0:
                        for q in range(n_seg_start[g], n_seg_start[g + 1]):
                            if n_lo[q] <= nk <= n_hi[q] and (nk & n_msk[q]) == n_val[q]:
                                r = q
                                break
                    if r < 0:
                        continue
                    a = n_act[r]
                    inport = slot_port[insl]
                    for e in range(n_act_start[a], n_act_start[a + 1]):
                        p = n_act_port[e]
                        if p == inport:
                            continue
                        sl = port_slot[sw, p] if 0 <= p < port_slot.shape[1] else -1
                        if sl < 0:
                            err = NO_SUCH_PORT
                            break
                        pr = slot_pair[sl]
                        if marked[pr] == 0:
                            marked[pr] = 1
                            net_list[nm] = pr
                            nm += 1
                        if slot_nb[sl] < n_switches:
                            if top >= depth_cap:
                                err = TOO_MANY_FRAMES
                                break
                            stack[top] = slot_back[sl]
                            top += 1
                    if err != OK:
                        break
                network_fp = 0
                for k in range(nc):
                    if marked[slot_pair[c_slot[k]]] == 0:
                        network_fp += 1
                for j in range(nm):
                    marked[net_list[j]] = 0
            # -- leave the marks as they were found
            x = pub
            while x >= 0:
                stamp[x] = 0
                x = parent[x]
            for j in range(r0, r1):
                x = rcv[j]
                while stamp[x] != 0:
                    stamp[x] = 0
                    x = parent[x]
            out_f[b, WORST_LATENCY] = worst_lat
            out_m[b, WASTE] = waste
            out_m[b, LINK_FP] = link_fp
            out_m[b, NETWORK_FP] = network_fp
        out_m[b, ERROR] = err
        out_m[b, CROSSINGS] = nc
        out_m[b, FRAMES] = nc
        out_m[b, PASSES] = passes
        out_m[b, LOOKUPS] = lookups
        out_m[b, MAX_PASSES] = max_passes
        out_m[b, DELIVERED] = n_delivered
        out_m[b, DELIVERED_RECEIVERS] = got
        out_m[b, DUPLICATES] = dups
        out_m[b, DROPS] = drops
        out_f[b, WORST_ARRIVAL] = worst if got else 0.0
        if detail:
            for k in range(nc):
                if nt < n_trace:
                    trace[0, nt] = c_src[k]
                    trace[1, nt] = c_dst[k]
                    trace[2, nt] = c_look[k]
                    trace_t[nt] = cross_t[k]
                nt += 1
        # -- leave the work arrays as they were found
        for k in range(nc):
            v = c_dst[k]
            delivered[v] = 0
            visits[v] = 0
            useful[v] = 0
            useful[c_src[k]] = 0
            c_good[k] = 0
            c_look[k] = 0
        for j in range(r0, r1):
            is_rcv[rcv[j]] = 0


def work_arrays(n_nodes: int, n_slots: int, cap: int) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray, np.ndarray]:
    """Zeroed work arrays for :func:`walk_kernel` (``cap`` crossings per notification)."""
    size = max(n_nodes, n_slots, 1) + 1
    return (np.zeros((10, size), np.int64), np.zeros((2, size), np.float64),
            np.zeros((6, cap), np.int64), np.zeros(cap, np.float64))


#: The kernel's helpers, callees first (compiled into it).
_HELPERS = ("_first_at_least", "_first_rule", "_bdd")


def jit_kernel() -> Callable[..., Any] | None:
    """:func:`walk_kernel` compiled by numba with its helpers inlined (a helper called
    with its tuples of arrays costs more than its work), or None without numba
    (``STACKCAST_NO_JIT=1``)."""
    hit = KERNELS.get("content_walk.walk_kernel")
    if hit is not None:
        return hit
    if compiled("content_walk._first_rule", _first_rule) is None:  # no numba: no kernel
        return None
    import numba

    scope = dict(globals())
    for name in _HELPERS:
        fn = types.FunctionType(globals()[name].__code__, scope, name)
        scope[name] = numba.njit(inline="always", nogil=True)(fn)
    kernel = types.FunctionType(walk_kernel.__code__, scope, "walk_kernel")
    return compiled("content_walk.walk_kernel", kernel)
