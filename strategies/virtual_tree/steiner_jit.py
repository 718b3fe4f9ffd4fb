"""Compiled kernel of the encoder's shortest-path Steiner heuristic (optional numba).

:func:`sph_run` is :func:`strategies.virtual_tree.steiner.steiner_sph_within` on the
full switch graph, step for step: the same 0-1 BFS (a deque: weight-0 links
push to the front, weight-1 links to the back, links scanned in port order,
strict improvements only), the same choice of the next terminal (smallest
distance, ties to the lowest switch index; here the lowest bit of the lowest
non-empty distance bucket), the same path walk and the same budget test
(weight plus the stop labels that are already certain, including the
weight-0 links hanging off the tree that later paths cannot all use: see
:func:`~strategies.virtual_tree.steiner.steiner_sph_within`). It works in
caller-owned buffers (:func:`sph_workspace`), so the encoder's greedy loop
(:mod:`strategies.virtual_tree.encoder_kernel`) runs it once per candidate
without allocating; :data:`sph_kernel` is the same routine with fresh
buffers. Without numba (or with ``STACKCAST_NO_JIT=1``) they stay plain
Python and :data:`sph_kernel` is ``None``: callers then run the pure-Python
routine. ``tests/strategies/test_vt_steiner.py`` checks that both give the
same tree, edge for edge, on random graphs, weights and budgets.

References
----------
Seed 000 §5.2.7 (Algorithm 5.1, Steiner tree ``E_dist``); digest ch. 5-7 §1.6.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

#: Rows of the int64 work array of :func:`sph_run`.
DIST, PRED, PEDGE, PATH, ACTIVE, TERM_POS, HANG = range(7)
_INF = 1 << 30
#: de Bruijn sequence and table: the index of the lowest set bit of a 64-bit word
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_LOW_BIT = np.zeros(64, np.int64)
for _i in range(64):
    _LOW_BIT[((1 << _i) * 0x03F79D71B4CB0A89 & (2**64 - 1)) >> 58] = _i

#: :func:`sph_run` with fresh buffers, compiled; None without numba.
sph_kernel: Callable[..., Any] | None = None


def sph_workspace(n_switches: int, edge_count: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Buffers of :func:`sph_run`: (work, in_tree, on_tree, deque, buckets)."""
    work = np.empty((7, max(n_switches, 1)), np.int64)
    work[TERM_POS, :] = -1
    work[HANG, :] = 0
    return (work, np.zeros(n_switches, np.uint8), np.zeros(edge_count, np.uint8),
            np.empty(4 * n_switches + 4, np.int64), np.zeros((1, 1), np.uint64))


def _move(buckets: np.ndarray, p: int, old: int, new: int) -> None:
    """Terminal position ``p`` from distance bucket ``old`` to ``new`` (-1: none);
    ``buckets[d, 0]`` counts bucket ``d``, its bits start at word 1."""
    word, bit = 1 + (p >> 6), np.uint64(1) << np.uint64(p & 63)
    if 0 <= old < _INF:
        buckets[old, word] &= ~bit
        buckets[old, 0] -= np.uint64(1)
    if new >= 0:
        buckets[new, word] |= bit
        buckets[new, 0] += np.uint64(1)


def _first(buckets: np.ndarray, low_bit: np.ndarray) -> int:
    """The lowest terminal position of the lowest non-empty bucket, or -1."""
    for d in range(buckets.shape[0]):
        if buckets[d, 0]:
            for w in range(1, buckets.shape[1]):
                x = buckets[d, w]
                if x:
                    return (w - 1) * 64 + low_bit[((x & (~x + np.uint64(1))) * _DEBRUIJN)
                                                  >> np.uint64(58)]
    return -1


def sph_run(graph: tuple[np.ndarray, ...], virt: np.ndarray, terminal_link: np.ndarray,
            root: int, remaining: np.ndarray, budget: int, edges: np.ndarray,
            nodes: np.ndarray, work: np.ndarray, in_tree: np.ndarray, on_tree: np.ndarray,
            deque: np.ndarray, buckets: np.ndarray
            ) -> tuple[int, int, int, int, int, np.ndarray]:
    """(status, tree links, tree switches, weight-1 links, stop labels, buckets).

    Parameters
    ----------
    graph : tuple of numpy.ndarray
        ``(indptr, nbr, eid, host_indptr, host_eid)`` of
        :class:`~strategies.virtual_tree.steiner.EncoderGraph`.
    virt, terminal_link : numpy.ndarray of uint8
        Per edge id: weight 0 (a virtual link); a host link of a terminal host.
    root : int
    remaining : numpy.ndarray of int64
        The terminals other than ``root``, ascending, distinct.
    budget : int
        Give up once the weight plus the certain stops reach it; < 0: never.
    edges, nodes : numpy.ndarray of int64
        Receive the tree's links and switches (each at least as long as the
        number of switches).
    work, in_tree, on_tree, deque, buckets : numpy.ndarray
        :func:`sph_workspace`, as this routine leaves them (``in_tree``,
        ``on_tree``, the buckets and the terminal positions are restored);
        ``buckets`` may be replaced by a larger one (returned).

    Returns
    -------
    tuple
        Status 0 = tree, 1 = budget reached, 2 = the terminal ``edges[0]`` is
        not connected, 3 = the deque bound failed (cannot happen). The stop
        labels are the virtual links with an end on the tree that are not tree
        links, plus the virtual host links at tree switches that are not
        ``terminal_link`` s.

    Notes
    -----
    The next terminal is the lowest set bit of the lowest non-empty distance
    bucket (bitsets over the positions in ``remaining``, ascending like the
    switch indices), which is the reference's choice (smallest distance, then
    lowest index); the buckets are filled after the first 0-1 BFS and kept
    as later ones lower distances.
    """
    indptr, nbr, eid = graph[0], graph[1], graph[2]
    dist, pred, pedge, path = work[DIST], work[PRED], work[PEDGE], work[PATH]
    active, term_pos, hang = work[ACTIVE], work[TERM_POS], work[HANG]
    dist[:] = _INF
    pedge[root] = -1
    n_rem = remaining.shape[0]
    for i in range(n_rem):
        active[i] = 1
        term_pos[remaining[i]] = i
    tracking = False
    left = n_rem
    n_edges = 0
    nodes[0] = root
    n_nodes = 1
    weight = 0
    stops = 0
    in_tree[root] = 1
    status = 0
    # with a budget: weight-0 links from the tree to each outside switch (``hang``),
    # their count and their distinct outside ends; certain stops: hanging - min(left, ends)
    hanging = 0
    ends = 0
    if budget >= 0:
        for k in range(indptr[root], indptr[root + 1]):
            w = nbr[k]
            if virt[eid[k]] and w != root:
                hang[w] += 1
                hanging += 1
                if hang[w] == 1:
                    ends += 1
    # sources of the next 0-1 BFS: nodes[src_lo:n_nodes] walked backwards
    # (root first; then each new path, terminal end first)
    src_lo = 0
    # the deque: a 0-1 BFS pushes a node at most twice per round (its distance falls to
    # the level being popped plus 0 or 1, then at most once more by one), so 2n pushes
    # to either end of a buffer of 4n + 4 entries started in the middle never overflow
    mid = deque.shape[0] // 2
    while True:
        head = mid
        tail = mid
        for k in range(n_nodes - 1, src_lo - 1, -1):
            s = nodes[k]
            deque[tail] = s
            tail += 1
            dist[s] = 0
        while head < tail:
            u = deque[head]
            head += 1
            degree = indptr[u + 1] - indptr[u]
            if head < degree or tail + degree > deque.shape[0]:
                status = 3  # cannot happen (see above); never write out of bounds
                break
            du = dist[u]
            du1 = du + 1
            for k in range(indptr[u], indptr[u + 1]):
                v = nbr[k]
                e = eid[k]
                if virt[e]:
                    if du < dist[v]:
                        if tracking and term_pos[v] >= 0 and active[term_pos[v]]:
                            _move(buckets, term_pos[v], dist[v], du)
                        dist[v] = du
                        pred[v] = u
                        pedge[v] = e
                        head -= 1
                        deque[head] = v
                elif du1 < dist[v]:
                    if tracking and term_pos[v] >= 0 and active[term_pos[v]]:
                        _move(buckets, term_pos[v], dist[v], du1)
                    dist[v] = du1
                    pred[v] = u
                    pedge[v] = e
                    deque[tail] = v
                    tail += 1
        if status:
            break
        if left == 0:
            break
        if not tracking:
            # fill the buckets: distances only fall from here on
            top = 0
            for i in range(n_rem):
                d = dist[remaining[i]]
                if d < _INF:
                    top = max(top, d)
            words = 1 + (n_rem + 63) // 64
            if buckets.shape[0] <= top or buckets.shape[1] < words:
                buckets = np.zeros((max(top + 1, buckets.shape[0]),
                                    max(words, buckets.shape[1])), np.uint64)
            for i in range(n_rem):
                d = dist[remaining[i]]
                if d < _INF:
                    _move(buckets, i, -1, d)
            tracking = True
        p = _first(buckets, _LOW_BIT)
        if p < 0:  # no terminal reachable: the reference names the lowest one left
            for i in range(n_rem):
                if active[i]:
                    edges[0] = remaining[i]
                    break
            status = 2
            break
        best = remaining[p]
        weight += dist[best]
        if budget >= 0 and weight + stops + hanging - min(left, ends) >= budget:
            status = 1
            break
        n_path = 0
        v = best
        while not in_tree[v]:
            path[n_path] = v
            n_path += 1
            edges[n_edges] = pedge[v]
            n_edges += 1
            v = pred[v]
        src_lo = n_nodes
        for j in range(n_path - 1, -1, -1):  # attachment end first
            v = path[j]
            ev = pedge[v]
            for k in range(indptr[v], indptr[v + 1]):
                w = nbr[k]
                e = eid[k]
                if virt[e] and in_tree[w] and e != ev and e != pedge[w]:
                    stops += 1
            if budget >= 0:
                hanging -= hang[v]
                if hang[v] > 0:
                    ends -= 1
                hang[v] = 0
                for k in range(indptr[v], indptr[v + 1]):
                    w = nbr[k]
                    if virt[eid[k]] and not in_tree[w] and w != v:
                        hang[w] += 1
                        hanging += 1
                        if hang[w] == 1:
                            ends += 1
            in_tree[v] = 1
            nodes[n_nodes] = v
            n_nodes += 1
            q = term_pos[v]
            if q >= 0 and active[q]:
                active[q] = 0
                left -= 1
                _move(buckets, q, dist[v], -1)
        if budget >= 0 and weight + stops + hanging - min(left, ends) >= budget:
            status = 1
            break
    if budget >= 0:  # hang back to zero: only neighbours of tree switches were counted
        for j in range(n_nodes):
            v = nodes[j]
            for k in range(indptr[v], indptr[v + 1]):
                hang[nbr[k]] = 0
    if status == 0:
        weight, stops = _counts(graph, virt, terminal_link, in_tree, on_tree,
                                edges[:n_edges], nodes[:n_nodes])
    for k in range(n_nodes):
        in_tree[nodes[k]] = 0
    for i in range(n_rem):
        t = remaining[i]
        if tracking and active[i] and dist[t] < _INF:
            _move(buckets, i, dist[t], -1)
        term_pos[t] = -1
    if status != 0:
        return status, 0, 0, 0, 0, buckets
    return 0, n_edges, n_nodes, weight, stops, buckets


def _counts(graph: tuple[np.ndarray, ...], virt: np.ndarray, terminal_link: np.ndarray,
            in_tree: np.ndarray, on_tree: np.ndarray, edges: np.ndarray, nodes: np.ndarray
            ) -> tuple[int, int]:
    """(weight-1 tree links, stop labels) of a finished tree (``on_tree`` left zero)."""
    indptr, nbr, eid, host_indptr, host_eid = graph
    weight = 0
    for e in edges:
        on_tree[e] = 1
        if not virt[e]:
            weight += 1
    stops = 0
    for v in nodes:
        for k in range(indptr[v], indptr[v + 1]):
            e = eid[k]
            if virt[e] and not on_tree[e] and (not in_tree[nbr[k]] or v < nbr[k]):
                stops += 1
        for k in range(host_indptr[v], host_indptr[v + 1]):
            e = host_eid[k]
            if virt[e] and not terminal_link[e]:
                stops += 1
    for e in edges:
        on_tree[e] = 0
    return weight, stops


def _sph(graph: tuple[np.ndarray, ...], virt: np.ndarray, terminal_link: np.ndarray, root: int,
         remaining: np.ndarray, budget: int, edges: np.ndarray, nodes: np.ndarray
         ) -> tuple[int, int, int, int, int]:
    """:func:`sph_run` with fresh buffers: (status, tree links, tree switches, weight, stops)."""
    n = graph[0].shape[0] - 1
    work, in_tree, on_tree, deque, buckets = sph_workspace(n, virt.shape[0])
    status, n_edges, n_nodes, weight, stops, _ = sph_run(
        graph, virt, terminal_link, root, remaining, budget, edges, nodes, work, in_tree,
        on_tree, deque, buckets)
    return status, n_edges, n_nodes, weight, stops


if os.environ.get("STACKCAST_NO_JIT", "") in ("", "0"):
    try:
        import numba
    except ImportError:  # optional: the pure-Python routine is used
        pass
    else:
        sph_workspace = numba.njit(cache=True, nogil=True)(sph_workspace)
        _move = numba.njit(cache=True, nogil=True)(_move)
        _first = numba.njit(cache=True, nogil=True)(_first)
        _counts = numba.njit(cache=True, nogil=True)(_counts)
        sph_run = numba.njit(cache=True, nogil=True)(sph_run)
        sph_kernel = numba.njit(cache=True, nogil=True)(_sph)
