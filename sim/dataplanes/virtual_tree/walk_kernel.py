"""Kernel of the virtual-tree fast path's row metrics: the static walk over flat arrays.

:func:`walk_kernel` walks, notification by notification, exactly the copies
:meth:`sim.dataplanes.virtual_tree.fast_path.VirtualTreeFastPath.delivery`
walks (the static engine's FIFO queue, so first arrivals are the same
floats), and counts what :func:`sim.dataplanes.delivery.row_metrics` reads
from that delivery without building it: deliveries, false positives and
negatives, duplicates, frames and bytes, passes, recirculations and lookups,
the busiest switch's passes, the worst first arrival at a receiver and the
link false positives of :func:`sim.dataplanes.link_waste.wasted_link_frames`.

A switch visit (:func:`_visit`) counts passes and lookups from the copy's
*active* labels (those that hit ``check_hop`` or ``check_tree`` of the
switch), as the Python walk does (the module docstring of
:mod:`sim.dataplanes.virtual_tree.fast_path` derives it from the reference).
A copy is its packet's label stack minus the hop labels consumed on its way:
a chain of stack positions (position, previous link; -1 ends it) that the
copies forked from one another share. A copy sent to a host is counted at
once: the queue is first in, first out, so the first copy queued for a host
is the first to arrive.

Every array is flat and few (each call passes every array it uses, which is
what a compiled call costs): ``tp`` / ``td`` the topology's links
(:class:`~sim.dataplanes.virtual_tree.walk_tables.WalkTopology`), ``tb`` the
installed tables (:class:`~sim.dataplanes.virtual_tree.walk_tables.WalkTables`),
``bt`` the batch (:mod:`sim.dataplanes.virtual_tree.walk_batch`), ``sc`` /
``sf`` the scratch, ``lay`` where each region starts (the ``L_*`` indices).
The same functions run compiled by numba on numpy arrays (``impl="jit"``,
:func:`compiled`) and interpreted on Python lists (``impl="python"``, when
numba is missing or ``STACKCAST_NO_JIT=1``); ``tests/sim/test_fast_paths.py``
runs both against the pass-by-pass reference.

References
----------
Seed 000 §5.2.6 (Listings 5.1-5.5), §3.5.4 (delay model); digest ch. 5-7
§1.2-1.5.4; seed 001 §6.2 (link false positives).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sim.dataplanes.virtual_tree.walk_layout import (
    ACT_GROUP,
    ACT_HOP,
    CH_W,
    CL_W,
    DECLINED,
    DONE,
    K_FRAME,
    K_LO,
    K_N,
    K_REST,
    L_CH,
    L_CH_N,
    L_CL,
    L_CL_N,
    L_DENSE,
    L_DENSE_N,
    L_ENTRIES,
    L_LAB,
    L_LBYTES,
    L_NODE,
    L_NODES,
    L_NOTES,
    L_PACKETS,
    L_Q,
    L_QT,
    L_RC,
    L_RES,
    L_SLAB,
    L_SPOS,
    L_STACK,
    L_STACK_M,
    N_PK_HI,
    N_PK_LO,
    N_PUB,
    N_RC_HI,
    N_RC_LO,
    N_ROW,
    NODE_PASSES,
    NODE_RECEIVER,
    NODE_VISITED,
    NOTE_W,
    O_BYTES,
    O_FRAMES,
    O_LOOKUPS,
    O_PASSES,
    O_RECIRC,
    O_STATUS,
    O_WASTE,
    OUT_W,
    P_BAD,
    P_HOP,
    P_HOP_N,
    P_SESS,
    P_STOP,
    P_STOP_N,
    P_TREE,
    P_TREE_N,
    PACKET_W,
    Q_W,
    R_EMITTED,
    R_LOOKUPS,
    R_PASSES,
    R_REMOVED,
    S_ACT_E,
    S_ACT_Q,
    S_CONSUMED,
    S_HEADS,
    S_MARK,
    S_REMOVED,
)
from sim.dataplanes.virtual_tree.walk_steps import (
    SEND_DECLINED,
    SEND_FULL,
    STEPS,
    count_notification,
    index_labels,
    reset,
    send,
    waste,
)


def _sources_digest() -> int:
    """A digest of the other modules compiled into the kernel (0 if unreadable)."""
    digest = hashlib.sha1(usedforsecurity=False)
    try:
        for name in ("walk_layout.py", "walk_steps.py"):
            digest.update((Path(__file__).parent / name).read_bytes())
    except OSError:
        return 0
    return int.from_bytes(digest.digest()[:7], "big")


#: What :func:`walk_kernel` compares with the digest it is called with (a compiled kernel
#: holds the one of its compilation); :data:`STALE` is its answer when they differ.
SOURCE_DIGEST = _sources_digest()
STALE = -2
#: Marks of the stack's mark region: a removed label, a label ``check_hop`` answers.
_REMOVED, _HOP = 1, 2


def _lower(a: Any, lo: int, hi: int, x: int) -> int:
    """The first index of ascending ``a[lo:hi]`` whose value is >= ``x`` (``hi`` if none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _find(a: Any, lo: int, hi: int, x: int) -> int:
    """The index of ``x`` in ascending ``a[lo:hi]``, or -1."""
    i = _lower(a, lo, hi, x)
    if i < hi and a[i] == x:
        return i
    return -1


def _pos(bt: Any, sc: Any, lay: Any, lab_lo: int, n0: int, label: int) -> int:
    """The position of ``label`` in the stack of the packet whose labels start at
    ``lab_lo`` (``n0`` of them), or -1."""
    if lay[L_DENSE_N] == 0:
        i = _find(bt, lay[L_SLAB] + lab_lo, lay[L_SLAB] + lab_lo + n0, label)
        return -1 if i < 0 else bt[lay[L_SPOS] + i - lay[L_SLAB]]
    if label < 0 or label >= lay[L_DENSE_N]:
        return -1
    e = sc[lay[L_DENSE] + label]
    while e != 0:
        x = lay[L_ENTRIES] + 3 * (e - 1)
        if sc[x] == lab_lo:
            return sc[x + 1]
        e = sc[x + 2]
    return -1


def _active(tb: Any, bt: Any, sc: Any, lay: Any, hop: int, n_hop: int, tree: int, n_tree: int,
            lab_lo: int, n0: int) -> int:
    """The copy's labels that hit ``check_hop`` (applied first) or ``check_tree``, in
    stack order, into the active regions; returns how many."""
    m = lay[L_STACK_M]
    mark = lay[L_STACK] + S_MARK * m
    aq, ae = lay[L_STACK] + S_ACT_Q * m, lay[L_STACK] + S_ACT_E * m
    lab = lay[L_LAB] + lab_lo
    na = 0
    keys = n_hop + n_tree
    if keys < n0 or (lay[L_DENSE_N] > 0 and keys <= 8 * n0):  # the switch's keys in the stack
        for e in range(hop, hop + keys):
            if e >= hop + n_hop:
                e = tree + e - hop - n_hop  # noqa: PLW2901 - the tree block follows
            q = _pos(bt, sc, lay, lab_lo, n0, tb[e])
            if q < 0 or sc[mark + q] != 0:
                continue  # not in the stack, removed, or answered by check_hop
            if e < hop + n_hop:
                sc[mark + q] = _HOP
            j = na
            while j > 0 and sc[aq + j - 1] > q:  # in stack order
                sc[aq + j] = sc[aq + j - 1]
                sc[ae + j] = sc[ae + j - 1]
                j -= 1
            sc[aq + j] = q
            sc[ae + j] = e
            na += 1
        for a in range(na):
            if sc[mark + sc[aq + a]] == _HOP:
                sc[mark + sc[aq + a]] = 0
    else:  # the stack's labels in the switch's tables
        for q in range(n0):
            if sc[mark + q] != 0:
                continue
            e = _find(tb, hop, hop + n_hop, bt[lab + q])
            if e < 0:
                e = _find(tb, tree, tree + n_tree, bt[lab + q])
            if e >= 0:
                sc[aq + na] = q
                sc[ae + na] = e
                na += 1
    return na


def _visit(tb: Any, bt: Any, sc: Any, lay: Any, piece: int, in_port: int, k: int,
           chain: int) -> bool:
    """One switch visit of a copy of packet ``k`` (removed labels: ``chain``) that came in
    on ``in_port``; False to decline. Fills ``res`` (passes, lookups, emitted copies,
    removed labels) and the first emitted clone rows (depth, port, hops consumed here),
    in order of depth."""
    if tb[piece + P_BAD] != 0:
        return False
    m = lay[L_STACK_M]
    st = lay[L_STACK]
    rs, mark, cons = st + S_REMOVED * m, st + S_MARK * m, st + S_CONSUMED * m
    res, cl = lay[L_RES], lay[L_CL]
    pk = lay[L_PACKETS] + PACKET_W * k
    lab_lo, n0 = bt[pk + K_LO], bt[pk + K_N]
    r = 0
    h = chain
    while h >= 0:  # the removed positions (latest first: mostly descending) and their marks
        q = sc[lay[L_CH] + CH_W * h]
        sc[mark + q] = _REMOVED
        sc[rs + r] = q
        r += 1
        h = sc[lay[L_CH] + CH_W * h + 1]
    for i in range(r // 2):  # reversed, then sorted ascending (little left to move)
        q = sc[rs + i]
        sc[rs + i] = sc[rs + r - 1 - i]
        sc[rs + r - 1 - i] = q
    for i in range(1, r):
        q = sc[rs + i]
        j = i
        while j > 0 and sc[rs + j - 1] > q:
            sc[rs + j] = sc[rs + j - 1]
            j -= 1
        sc[rs + j] = q
    sc[res + R_REMOVED] = r
    sc[res + R_EMITTED] = 0
    if n0 == r:  # the parser rejects an empty stack
        sc[res + R_PASSES] = 1
        sc[res + R_LOOKUPS] = 0
        return True
    hop, n_hop = tb[piece + P_HOP], tb[piece + P_HOP_N]
    tree, n_tree = tb[piece + P_TREE], tb[piece + P_TREE_N]
    na = _active(tb, bt, sc, lay, hop, n_hop, tree, n_tree, lab_lo, n0)
    sess = tb[piece + P_SESS]
    srv = cl + CL_W * lay[L_CL_N]  # served ports
    passes = lookups = shift = cur = nc = ns = ncl = 0
    n_cur = n0 - r
    done = ok = False
    for a in range(na):
        q = sc[st + S_ACT_Q * m + a]
        e = sc[st + S_ACT_E * m + a]
        n = n_hop if e < hop + n_hop else n_tree  # its block's size
        j = q - (_lower(sc, rs, rs + r, q) - rs) - shift  # its index in the stack now
        passes += j - cur
        lookups += 2 * (j - cur)
        if tb[e + 4 * n] != 0:  # an answer the Python walk declines on
            break
        kind, lo, hi = tb[e + n], tb[e + 2 * n], tb[e + 3 * n]
        if kind == ACT_HOP:  # clone to its port (the clone without it), consume it
            passes += 1
            lookups += 2
            p = tb[lo]
            sc[cons + nc] = q
            if p != in_port and not _served(sc, srv, ns, p):
                sc[srv + ns] = p
                ns += 1
                if tb[sess + p] < 0:
                    break
                ncl = _clone(sc, cl, ncl, passes, tb[sess + p], nc + 1, j)
            if j + 1 >= n_cur:
                done = True
                break
            n_cur -= 1
            nc += 1
            shift += 1
            cur = j
        elif kind == ACT_GROUP:  # the PRE replicates; the original ends here
            passes += 1
            lookups += 2
            for x in range(lo, hi):
                if tb[x] != in_port and not _served(sc, srv, ns, tb[x]):
                    ncl = _clone(sc, cl, ncl, passes, tb[x], nc, j + 1)
            done = True
            break
        else:  # a port mask: one pass per extracted port
            lookups += 2
            if hi == lo:
                passes += 1
            for x in range(lo, hi):
                p = tb[x]
                passes += 1
                lookups += 1
                if p != in_port and not _served(sc, srv, ns, p):
                    sc[srv + ns] = p
                    ns += 1
                    if tb[sess + p] < 0:
                        break
                    ncl = _clone(sc, cl, ncl, passes, tb[sess + p], nc, j + 1)
            else:
                if j + 1 >= n_cur:
                    done = True
                    break
                cur = j + 1
                continue
            break  # a missing clone session: declined
    else:
        ok = True
    if not ok and not done:  # declined
        _unmark(sc, rs, mark, r)
        return False
    if not done:  # the labels after the last active one, then the original is dropped
        passes += n_cur - cur
        lookups += 2 * (n_cur - cur)
    passes, lookups = _clones(tb, bt, sc, lay, piece, ncl, passes, lookups, lab_lo, n0, r)
    _unmark(sc, rs, mark, r)
    sc[res + R_PASSES] = passes
    sc[res + R_LOOKUPS] = lookups
    return True


def _served(sc: Any, srv: int, ns: int, p: int) -> bool:
    """Whether port ``p`` is among the ``ns`` served ports at ``sc[srv:]``."""
    for i in range(ns):
        if sc[srv + i] == p:
            return True
    return False


def _clone(sc: Any, cl: int, n: int, made: int, port: int, cnt: int, start: int) -> int:
    c = cl + CL_W * n
    sc[c] = made
    sc[c + 1] = port
    sc[c + 2] = cnt
    sc[c + 3] = start
    return n + 1


def _unmark(sc: Any, rs: int, mark: int, r: int) -> None:
    for i in range(r):
        sc[mark + sc[rs + i]] = 0


def _clones(tb: Any, bt: Any, sc: Any, lay: Any, piece: int, ncl: int, passes: int,
            lookups: int, lab_lo: int, n0: int, r: int) -> tuple[int, int]:
    """Each clone recirculates once per label after its first until a stop label of its
    port drops it; the others are emitted, sorted by depth (stable). Returns the
    visit's passes and lookups."""
    m = lay[L_STACK_M]
    st = lay[L_STACK]
    rs, mark, cons = st + S_REMOVED * m, st + S_MARK * m, st + S_CONSUMED * m
    cl = lay[L_CL]
    stop, n_stop = tb[piece + P_STOP], tb[piece + P_STOP_N]
    ne = 0
    for c in range(ncl):
        made, port = sc[cl + CL_W * c], sc[cl + CL_W * c + 1]
        cnt, start = sc[cl + CL_W * c + 2], sc[cl + CL_W * c + 3]
        end = n0 - r - cnt
        best = end
        dropped = False
        x = _lower(tb, stop, stop + n_stop, port)
        while x < stop + n_stop and tb[x] == port:
            at = _pos(bt, sc, lay, lab_lo, n0, tb[x + n_stop])
            x += 1
            if at < 0 or sc[mark + at] != 0:
                continue
            below = 0
            mine = False
            for y in range(cnt):
                if sc[cons + y] == at:
                    mine = True
                elif sc[cons + y] < at:
                    below += 1
            if mine:
                continue
            now = at - (_lower(sc, rs, rs + r, at) - rs) - below
            if start <= now < best:
                best = now
                dropped = True
        if dropped:
            end = best + 1
        rec = max(end - start, 0)
        passes += rec
        lookups += rec
        if not dropped:  # emitted (rows <= c are free)
            depth = made + rec
            i = ne
            while i > 0 and sc[cl + CL_W * (i - 1)] > depth:
                sc[cl + CL_W * i] = sc[cl + CL_W * (i - 1)]
                sc[cl + CL_W * i + 1] = sc[cl + CL_W * (i - 1) + 1]
                sc[cl + CL_W * i + 2] = sc[cl + CL_W * (i - 1) + 2]
                i -= 1
            sc[cl + CL_W * i] = depth
            sc[cl + CL_W * i + 1] = port
            sc[cl + CL_W * i + 2] = cnt
            ne += 1
    sc[lay[L_RES] + R_EMITTED] = ne
    return passes, lookups


def walk_kernel(digest: int, start: int, n_notes: int, feed_s: float, switch_s: float,
                pass_s: float, lay: Any, tp: Any, td: Any, tb: Any, bt: Any, sc: Any, sf: Any,
                out_i: Any, out_t: Any) -> int:
    """Row metrics of notifications ``start .. n_notes - 1`` into ``out_i`` and ``out_t``.

    Returns -1 when all are done, else the notification whose queue or chain
    of removed labels ran full: the caller grows them and calls again from
    there; :data:`STALE` when ``digest`` (the caller's :data:`SOURCE_DIGEST`)
    is not the one this compilation was made with. ``sc`` is zero where the
    regions say so (:data:`NODE_ZERO`, :data:`PAIR_FRAMES`, the stack marks,
    ``res``, the direct-address region), and left so.
    """
    if digest != SOURCE_DIGEST:
        return STALE
    n_nodes, nodes, res = lay[L_NODES], lay[L_NODE], lay[L_RES]
    lbytes = lay[L_LBYTES]
    heads = lay[L_STACK] + S_HEADS * lay[L_STACK_M]
    consumed = lay[L_STACK] + S_CONSUMED * lay[L_STACK_M]
    passes_at, visited = nodes + NODE_PASSES * n_nodes, nodes + NODE_VISITED * n_nodes
    for b in range(start, n_notes):
        nb = lay[L_NOTES] + NOTE_W * b
        pub, row = bt[nb + N_PUB], bt[nb + N_ROW]
        pk_lo, pk_hi = bt[nb + N_PK_LO], bt[nb + N_PK_HI]
        rc_lo, rc_hi = lay[L_RC] + bt[nb + N_RC_LO], lay[L_RC] + bt[nb + N_RC_HI]
        for x in range(rc_lo, rc_hi):
            sc[nodes + NODE_RECEIVER * n_nodes + bt[x]] = 1
        twice = index_labels(bt, sc, lay, pk_lo, pk_hi, True)
        n_vis = frames = nbytes = passes = recirc = lookups = 0
        qh = qt = nch = 0
        if twice:  # a stack with a label twice: declined
            qt = SEND_DECLINED
            pk_hi = pk_lo
        for i in range(pk_lo, pk_hi):  # the publisher feeds its packets in one by one
            qt = send(tp, td, sc, sf, lay, pub, 1, i, -1, (i - pk_lo + 1) * feed_s, qt)
            if qt < 0:
                break
            frames += 1
            nbytes += bt[lay[L_PACKETS] + PACKET_W * i + K_FRAME]
        while qt >= 0 and qh < qt:  # the switches' copies, in the engine's FIFO order
            q = lay[L_Q] + Q_W * qh
            node, k, chain = sc[q], sc[q + 2], sc[q + 3]
            t = sf[lay[L_QT] + qh]
            qh += 1
            if not _visit(tb, bt, sc, lay, tb[row + node], sc[q + 1], k, chain):
                qt = SEND_DECLINED
                break
            p = sc[res + R_PASSES]
            if sc[passes_at + node] == 0:
                sc[visited + n_vis] = node
                n_vis += 1
            sc[passes_at + node] += p
            passes += p
            recirc += p - 1
            lookups += sc[res + R_LOOKUPS]
            ne = sc[res + R_EMITTED]
            if ne == 0:
                continue
            # the emitted copies' removed labels: this copy's plus the hops consumed here
            top = 0
            for c in range(ne):
                top = max(top, sc[lay[L_CL] + CL_W * c + 2])
            if nch + top > lay[L_CH_N]:
                qt = SEND_FULL
                break
            sc[heads] = chain
            for y in range(top):
                sc[lay[L_CH] + CH_W * nch] = sc[consumed + y]
                sc[lay[L_CH] + CH_W * nch + 1] = sc[heads + y]
                sc[heads + y + 1] = nch
                nch += 1
            pk = lay[L_PACKETS] + PACKET_W * k
            size = bt[pk + K_REST] + (bt[pk + K_N] - sc[res + R_REMOVED]) * lbytes
            for c in range(ne):
                cl = lay[L_CL] + CL_W * c
                depth, cnt = sc[cl], sc[cl + 2]
                qt = send(tp, td, sc, sf, lay, node, sc[cl + 1], k, sc[heads + cnt],
                           t + switch_s + (depth - 1) * pass_s, qt)
                if qt < 0:
                    break
                frames += 1
                nbytes += size - cnt * lbytes
        index_labels(bt, sc, lay, pk_lo, bt[nb + N_PK_HI], False)
        if qt == SEND_FULL:
            reset(tp, bt, sc, lay, n_vis, rc_lo, rc_hi)
            return b
        ob = OUT_W * b
        out_i[ob + O_STATUS] = DECLINED if qt == SEND_DECLINED else DONE
        if qt != SEND_DECLINED:
            count_notification(bt, sc, sf, lay, out_i, out_t, b, rc_lo, rc_hi, n_vis)
            out_i[ob + O_FRAMES] = frames
            out_i[ob + O_BYTES] = nbytes
            out_i[ob + O_PASSES] = passes
            out_i[ob + O_RECIRC] = recirc
            out_i[ob + O_LOOKUPS] = lookups
            out_i[ob + O_WASTE] = waste(tp, bt, sc, lay, pub, rc_lo, rc_hi)
        reset(tp, bt, sc, lay, n_vis, rc_lo, rc_hi)
    return -1


#: How numba compiles the kernel: without its runtime (the kernel allocates nothing, and
#: without it numba counts no references to the arrays handed to every helper call:
#: ``_pos``, ``send``, ``_visit``; that counting was up to 75 % of hybrid's walk).
JIT_OPTIONS: dict[str, Any] = {"nogil": True, "_nrt": False}
#: Helpers the kernel calls (numba compiles them where the kernel is compiled).
_HELPERS = (_lower, _find, _pos, _active, _visit, _served, _clone, _unmark, _clones, *STEPS)
_COMPILED: dict[str, Callable[..., Any]] = {}


def compiled() -> Callable[..., Any] | None:
    """The numba compilation of :func:`walk_kernel`, or None without numba (or with
    ``STACKCAST_NO_JIT=1``).

    It is cached on disk (``cache=True``); numba checks this file for changes,
    not :mod:`.walk_steps` or :mod:`.walk_layout`, whose digest the kernel
    compares instead (:data:`STALE`: the caller recompiles it). It is compiled
    without numba's runtime (``_nrt=False``): the kernel and its helpers allocate
    nothing (numba refuses to compile an allocation without it), and the runtime's
    reference counts of the arrays passed to each helper call were most of the
    walk's time where stacks are long."""
    if "walk" not in _COMPILED:
        if os.environ.get("STACKCAST_NO_JIT", "") not in ("", "0"):
            return None
        try:
            import numba
            from numba.extending import register_jitable
        except ImportError:  # optional: the interpreted kernel runs
            return None
        for helper in _HELPERS:
            register_jitable(helper)
        _COMPILED["walk"] = numba.njit(cache=True, **JIT_OPTIONS)(walk_kernel)
    return _COMPILED["walk"]
