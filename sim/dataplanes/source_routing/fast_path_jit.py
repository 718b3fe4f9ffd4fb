"""Compiled kernel of the tree-walk fast path (optional numba).

:data:`batch_kernel` computes, notification by notification, exactly what
:meth:`sim.dataplanes.source_routing.fast_path.TreeWalkFastPath._run_numpy`
computes with array operations (the closed forms of
:mod:`sim.dataplanes.source_routing.fast_path`): it marks the delivery tree
by walking from each receiver up to the first marked node, then visits the
tree nodes in preorder, where every parent comes before its children, so
stack positions, sibling ranks, subtree sizes and arrival times (in the
reference's order of floating-point operations) need one or two passes. It
is ``None`` when numba is not installed (or ``STACKCAST_NO_JIT=1``); the
numpy path runs then. ``tests/sim/test_fast_paths.py`` runs both against the
pass-by-pass reference.

References
----------
Seed 000 §3.3.1-3.3.2, §3.5.4, §4.2.1 (see :mod:`sim.dataplanes.source_routing.fast_path`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

#: Walk codes of the kernel.
BITMASK, PORT_PREDICTIVE, PORT_REACTIVE, HOPS, MCGROUP, MIXED = 0, 1, 2, 3, 4, 5
#: Walk name (:data:`sim.dataplanes.source_routing.fast_path.WALKS`) -> kernel code.
KERNEL_CODES = {"bitmask": BITMASK, "port-predictive": PORT_PREDICTIVE,
                "port-reactive": PORT_REACTIVE, "hops": HOPS, "mcgroup": MCGROUP,
                "mixed": MIXED}
#: Switch kinds of a mixed stack (0: a host).
_P, _B, _M = 1, 2, 3

batch_kernel: Callable[..., Any] | None = None


def _batch(kind: int, parent_t: np.ndarray, end_t: np.ndarray, delay_t: np.ndarray,
           sw_t: np.ndarray, node_t: np.ndarray, pos_t: np.ndarray, rows: np.ndarray,
           ids: np.ndarray, counts: np.ndarray, pub_delay: np.ndarray, feed_s: float,
           switch_s: float, pass_s: float, base: int, entry_bytes: int,
           out_i: np.ndarray, out_t: np.ndarray, starts: np.ndarray, entries: np.ndarray,
           scratch: np.ndarray, mark: np.ndarray, block_t: np.ndarray, is_mc: np.ndarray,
           config: np.ndarray, sums: np.ndarray, worst: np.ndarray) -> int:
    """Fill ``out_i`` (rows: node, parent, frame bytes, passes, recirculations,
    lookups, simplified, drops) and ``out_t`` for the tree nodes of every
    notification; returns the number of tree nodes. Per notification ``b``, also
    what its row needs from them: ``sums[:5, b]`` the sums of the frame bytes,
    passes, recirculations, lookups and simplified circulations, ``sums[5, b]`` the
    most passes at one switch, ``worst[b]`` the latest arrival at a host (-inf if
    none); the numpy path computes these with ``reduceat``. ``scratch`` (16 rows, any
    content) and ``mark`` (all 0, left all 0) are reused between calls.
    ``block_t`` (mcgroup: port block of the link into each node), ``is_mc``
    (mixed: mc-group switches) and ``config`` (subsets, port fallback,
    predictive port/bitmask/mc-group copies) are those of
    :mod:`sim.dataplanes.source_routing.fast_path_entries`."""
    n = parent_t.shape[1]
    comp, prefix = scratch[0], scratch[1]  # every scratch entry is written before it is read
    loc, pos, below, m = scratch[2], scratch[3], scratch[4], scratch[5]
    sib, child_rank, q = scratch[6], scratch[7], scratch[8]
    node, par, fbytes = out_i[0], out_i[1], out_i[2]
    passes, recirc, lookups, simpl, drops = out_i[3], out_i[4], out_i[5], out_i[6], out_i[7]
    typ, wt, wbefore, wsub = scratch[9], scratch[10], scratch[11], scratch[12]
    ent, first, bnd = scratch[13], scratch[14], scratch[15]
    subsets, fallback_port = config[0], config[1]
    pred_p, pred_b, pred_m = config[2], config[3], config[4]
    k = 0
    off = 0
    for b in range(rows.shape[0]):
        r = rows[b]
        for j in range(off, off + counts[b]):  # the tree: receivers and their ancestors
            i = pos_t[r, ids[j]]
            while i >= 0 and mark[i] == 0:
                mark[i] = 1
                i = parent_t[r, i]
        off += counts[b]
        start = k
        starts[b] = start
        seen = 0
        switches = 0
        wsum = 0
        for i in range(n):  # preorder: compact index, stack positions, children
            prefix[i] = seen
            if mark[i] == 1:
                mark[i] = 0
                comp[i] = k
                loc[k] = i
                node[k] = node_t[r, i]
                p = parent_t[r, i]
                pos[k] = switches
                switches += sw_t[r, i]
                m[k] = 0
                sib[k] = 0
                if kind == MCGROUP:
                    q[k] = -1  # highest port block of a child
                elif kind == MIXED:  # the node's entry kind and its own entries
                    if sw_t[r, i] == 0:
                        typ[k] = 0
                    elif is_mc[node[k]] == 1:
                        typ[k] = _M
                    else:
                        typ[k] = _P if fallback_port == 1 else _B
                    wt[k] = 1 if typ[k] == _B or typ[k] == _M else 0
                if p >= 0:
                    par[k] = comp[p]
                    m[comp[p]] += 1
                    sib[comp[p]] += 1
                    child_rank[k] = sib[comp[p]]  # children come in port order
                    if kind == MCGROUP and block_t[r, i] > q[comp[p]]:
                        q[comp[p]] = block_t[r, i]
                    elif kind == MIXED and typ[comp[p]] == _P:
                        wt[k] += 1  # the parent's port entry for this node
                else:
                    par[k] = -1
                if kind == MIXED:
                    wbefore[k] = wsum
                    wsum += wt[k]
                    wsub[k] = wt[k]
                k += 1
                seen += 1
        prefix[n] = seen
        count = switches if kind == BITMASK or kind == MCGROUP else seen - 1
        if kind == MIXED:
            count = wsum
            for c in range(k - 1, start, -1):  # entries in each subtree, children first
                wsub[par[c]] += wsub[c]
        entries[b] = count
        for c in range(start, k):  # parents before children
            i = loc[c]
            p = par[c]
            is_sw = sw_t[r, i]
            rank = c - start
            below[c] = prefix[end_t[r, i]] - prefix[i] - 1
            depth = 0
            drops[c] = is_sw
            if kind == MCGROUP:
                top = q[c]
                q[c] = (pos[c] - pos[p] - 1) * is_sw if p >= 0 else 0
                passes[c] = (q[c] + subsets) * is_sw
                lookups[c] = passes[c]
                simpl[c] = subsets * is_sw
                if subsets == 1 or top == subsets - 1:
                    drops[c] = 0
                if p >= 0:
                    depth = q[p] + block_t[r, i] + 1
                carried = count - 1 - pos[p]
            elif kind == MIXED:
                tc = typ[c]
                if p >= 0:
                    tp = typ[p]
                    ent[c] = wbefore[c] if tp == _P else wbefore[p] + wt[p] - 1
                    first[c] = ent[c] + 1
                    if tp == _P and pred_p == 1 and child_rank[c] != m[p]:
                        bnd[c] = wbefore[c] + wsub[c]  # stops at the next own entry
                    else:
                        bnd[c] = bnd[p]
                    pred = pred_p if tp == _P else pred_b if tp == _B else pred_m
                    after = pred * (bnd[p] - ent[c] - 1)
                    depth = ent[c] - first[p] + 1 + after
                    if tp == _B:
                        depth += child_rank[c] - 1
                    passes[p] += after
                    carried = bnd[c] - ent[c] - 1
                else:
                    first[c] = 0
                    bnd[c] = count
                    carried = 0
                passes[c] = is_sw * (bnd[c] - first[c])
                if tc == _B:
                    passes[c] += m[c] - 1
                simpl[c] = 1 if tc == _M else m[c] * is_sw
                if tc == _M and wbefore[c] + wt[c] == bnd[c]:
                    drops[c] = 0  # its group entry was the last: the replicas replaced it
            elif kind == BITMASK:
                q[c] = (pos[c] - pos[p] - 1) * is_sw if p >= 0 else 0
                passes[c] = q[c] + m[c]
                lookups[c] = q[c] + 2 * m[c]
                simpl[c] = m[c]
                if p >= 0:
                    depth = q[p] + child_rank[c]
                carried = count - 1 - pos[p]
            elif kind == PORT_REACTIVE:
                passes[c] = (count - rank) * is_sw
                lookups[c] = 2 * passes[c]
                simpl[c] = m[c]
                depth = rank - (p - start)
                carried = count - rank
            else:  # predictive: port and hops
                passes[c] = below[c]
                lookups[c] = below[c] + m[c] - is_sw if kind == HOPS else 0
                simpl[c] = m[c] if kind == PORT_PREDICTIVE else 0
                carried = below[c]
                if p >= 0:
                    depth = below[p]
                    passes[p] += (p - start) + below[p] - rank
                    if kind == HOPS:
                        lookups[p] += carried
            if p >= 0:
                fbytes[c] = base + entry_bytes * carried
                out_t[c] = ((out_t[p] + switch_s) + (depth - 1) * pass_s) + delay_t[r, i]
            else:
                fbytes[c] = 0
                out_t[c] = feed_s + pub_delay[b]
        s_bytes = s_passes = s_recirc = s_lookups = s_simpl = 0
        most, latest = passes[start], -np.inf
        for c in range(start, k):  # every record is final here
            if kind == PORT_PREDICTIVE:
                lookups[c] = 2 * passes[c]
            elif kind == MIXED:
                lookups[c] = 2 * passes[c] + (m[c] if typ[c] == _B else 0)
            is_sw = sw_t[r, loc[c]]
            recirc[c] = passes[c] - is_sw
            s_bytes += fbytes[c]
            s_passes += passes[c]
            s_recirc += recirc[c]
            s_lookups += lookups[c]
            s_simpl += simpl[c]
            if passes[c] > most:
                most = passes[c]
            if is_sw == 0 and out_t[c] > latest:
                latest = out_t[c]
        sums[0, b], sums[1, b], sums[2, b] = s_bytes, s_passes, s_recirc
        sums[3, b], sums[4, b], sums[5, b] = s_lookups, s_simpl, most
        worst[b] = latest
    return k


if os.environ.get("STACKCAST_NO_JIT", "") in ("", "0"):
    try:
        import numba
    except ImportError:  # optional: the numpy path is used
        pass
    else:
        batch_kernel = numba.njit(cache=True, nogil=True)(_batch)
