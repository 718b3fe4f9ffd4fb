"""Kernels of the L2 and ALM fast paths: one loop per notification, compiled where numba is.

Each kernel walks what the reference walks (:mod:`sim.dataplanes.l2.fast_path`,
:mod:`sim.dataplanes.alm.fast_path` describe the walks), frame by frame, over
per-topology tables: the shortest-path tree of each root in preorder (children
in port order, :mod:`sim.dataplanes.source_routing.fast_path`) and the unicast
next hops towards every switch (:class:`sim.dataplanes.l2.fast_path.RouteTables`).
Arrival times follow the reference's order of floating-point operations, so
they are bit-identical.

The functions below are plain Python: ``impl="python"`` runs them as they are
(slow, for machines without numba), ``impl="jit"`` runs their numba
compilations (:data:`KERNELS`, empty when numba is missing or
``STACKCAST_NO_JIT=1``). ``tests/sim/test_fast_paths.py`` runs both against
the pass-by-pass reference.

Per notification ``b`` a kernel fills ``out_m[b]`` (:data:`FRAMES` ...
:data:`TRACE_END`) and ``out_t[b]`` (latest first arrival at a receiver, or 0.0).
With ``detail`` it also writes every link crossing ``(src, dst, lookups at
dst)`` into ``tr_i`` and its arrival time into ``tr_t`` (global node numbers:
switches, then hosts, then the broker of each switch), up to the buffers'
length; ``out_m[b, TRACE_END]`` says how many were needed.

References
----------
Seed 000 §2.3, §3.5.4; digest ch. 1-4 §7.16-7.18.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

#: Columns of ``out_m``.
(FRAMES, PASSES, LOOKUPS, MAX_PASSES, DELIVERED, DELIVERED_RECEIVERS, DROPS, WASTE,
 PACKETS, TRACE_END) = range(10)
N_COLUMNS = 10


def tree_kernel(broadcast: int, parent_t: np.ndarray, delay_t: np.ndarray, sw_t: np.ndarray,
                node_t: np.ndarray, pos_t: np.ndarray, host_gids: np.ndarray, rows: np.ndarray,
                pubs: np.ndarray, pub_delay: np.ndarray, ids: np.ndarray, counts: np.ndarray,
                feed_s: float, switch_s: float, pass_s: float, out_m: np.ndarray,
                out_t: np.ndarray, detail: int, tr_i: np.ndarray, tr_t: np.ndarray,
                mark: np.ndarray, times: np.ndarray) -> None:
    """Multicast groups along the shortest-path tree of the root (pruned to the
    receivers, or to every host but the publisher with ``broadcast``).

    ``mark`` (all 0, left all 0) and ``times`` are scratch of the tree size.
    Mark bits: 1 on the delivery tree, 2 on the receivers' paths, 4 a receiver.
    """
    n = parent_t.shape[1]
    cap = tr_t.shape[0]
    nt = 0
    off = 0
    for b in range(rows.shape[0]):
        r = rows[b]
        mark[0] = 1  # preorder 0 is the root
        n_nodes = 1
        n_sw = 1
        if broadcast:
            for h in range(host_gids.shape[0]):
                g = host_gids[h]
                if g == pubs[b]:
                    continue
                i = pos_t[r, g]
                while mark[i] & 1 == 0:
                    mark[i] |= 1
                    n_nodes += 1
                    n_sw += sw_t[r, i]
                    i = parent_t[r, i]
        for j in range(off, off + counts[b]):
            i = pos_t[r, ids[j]]
            mark[i] |= 4
            if not broadcast:
                while mark[i] & 1 == 0:
                    mark[i] |= 1
                    n_nodes += 1
                    n_sw += sw_t[r, i]
                    i = parent_t[r, i]
        got = 0
        n_useful = 0  # nodes on the paths to the receivers reached
        for j in range(off, off + counts[b]):
            i = pos_t[r, ids[j]]
            if mark[i] & 1 == 0:
                continue
            got += 1
            while i >= 0 and mark[i] & 2 == 0:
                mark[i] |= 2
                n_useful += 1
                i = parent_t[r, i]
        off += counts[b]
        worst = -np.inf
        for i in range(n):  # preorder: parents before children
            bits = mark[i]
            if bits & 1:
                p = parent_t[r, i]
                if p < 0:
                    t = feed_s + pub_delay[b]
                    src = pubs[b]
                else:
                    t = ((times[p] + switch_s) + 0 * pass_s) + delay_t[r, i]
                    src = node_t[r, p]
                times[i] = t
                if bits & 4 and t > worst:
                    worst = t
                if detail:
                    if nt < cap:
                        tr_i[0, nt] = src
                        tr_i[1, nt] = node_t[r, i]
                        tr_i[2, nt] = sw_t[r, i]
                        tr_t[nt] = t
                    nt += 1
            mark[i] = 0
        m = out_m[b]
        m[FRAMES] = n_nodes  # tree edges and the publisher's access link
        m[PASSES] = n_sw
        m[LOOKUPS] = n_sw
        m[MAX_PASSES] = 1
        m[DELIVERED] = n_nodes - n_sw
        m[DELIVERED_RECEIVERS] = got
        m[DROPS] = 1 if n_nodes == 1 else 0  # a root without children has no group
        m[WASTE] = (n_nodes - 1) - max(n_useful - 1, 0)
        m[PACKETS] = 1
        m[TRACE_END] = nt
        out_t[b] = worst if got else 0.0


def unicast_kernel(host_sw: np.ndarray, host_delay: np.ndarray, nh: np.ndarray, nd: np.ndarray,
                   n_switches: int, roots: np.ndarray, pubs: np.ndarray, pub_delay: np.ndarray,
                   ids: np.ndarray, counts: np.ndarray, feed_s: float, switch_s: float,
                   pass_s: float, out_m: np.ndarray, out_t: np.ndarray, detail: int,
                   tr_i: np.ndarray, tr_t: np.ndarray) -> None:
    """One frame per receiver (``ids`` in host-id order per notification), each along
    the next hops towards the receiver's switch."""
    cap = tr_t.shape[0]
    nt = 0
    off = 0
    for b in range(roots.shape[0]):
        root = roots[b]
        frames = 0
        passes = 0
        worst = -np.inf
        for j in range(counts[b]):
            g = ids[off + j]
            h = g - n_switches
            home = host_sw[h]
            t = (j + 1) * feed_s + pub_delay[b]
            sw = root
            src = pubs[b]
            while True:
                frames += 1
                passes += 1
                if detail:
                    if nt < cap:
                        tr_i[0, nt] = src
                        tr_i[1, nt] = sw
                        tr_i[2, nt] = 1
                        tr_t[nt] = t
                    nt += 1
                if sw == home:
                    break
                t = ((t + switch_s) + 0 * pass_s) + nd[home, sw]
                src = sw
                sw = nh[home, sw]
            t = ((t + switch_s) + 0 * pass_s) + host_delay[h]
            frames += 1
            if detail:
                if nt < cap:
                    tr_i[0, nt] = sw
                    tr_i[1, nt] = g
                    tr_i[2, nt] = 0
                    tr_t[nt] = t
                nt += 1
            if t > worst:
                worst = t
        n_recv = counts[b]
        off += n_recv
        m = out_m[b]
        m[FRAMES] = frames
        m[PASSES] = passes
        m[LOOKUPS] = passes
        m[MAX_PASSES] = n_recv  # every frame passes the publisher's switch
        m[DELIVERED] = n_recv
        m[DELIVERED_RECEIVERS] = n_recv
        m[DROPS] = 0
        m[WASTE] = 0
        m[PACKETS] = n_recv
        m[TRACE_END] = nt
        out_t[b] = worst if n_recv else 0.0


KERNELS: dict[str, Callable[..., Any]] = {}


def compiled(name: str, kernel: Callable[..., Any]) -> Callable[..., Any] | None:
    """The numba compilation of ``kernel`` (cached under ``name``), or None without numba."""
    if name not in KERNELS:
        if os.environ.get("STACKCAST_NO_JIT", "") not in ("", "0"):
            return None
        try:
            import numba
        except ImportError:  # optional: the plain Python kernels run
            return None
        KERNELS[name] = numba.njit(cache=True, nogil=True)(kernel)
    return KERNELS[name]
