"""Compiled kernel of the encoder's shortest-path Steiner heuristic (optional numba).

:data:`sph_kernel` is :func:`strategies.virtual_tree.steiner.steiner_sph_within` on the
full switch graph, statement for statement: the same 0-1 BFS (a deque as a
ring buffer: weight-0 links push to the front, weight-1 links to the back,
links scanned in port order, strict improvements only), the same choice of
the next terminal (smallest distance, ties to the lowest switch index), the
same path walk and the same budget test (weight plus the stop labels that are
already certain). It is ``None`` when numba is not installed; callers then run
the pure-Python routine. ``tests/strategies/test_vt_steiner.py`` checks that
both give the same tree, edge for edge, on random graphs, weights and budgets.

Set ``STACKCAST_NO_JIT=1`` to disable it.

References
----------
Seed 000 §5.2.7 (Algorithm 5.1, Steiner tree ``E_dist``); digest ch. 5-7 §1.6.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

sph_kernel: Callable[..., Any] | None = None


def _grow(buf: np.ndarray, head: int, size: int) -> tuple[np.ndarray, int, int]:
    """The full ring buffer ``buf`` copied in order into one twice its size."""
    cap = buf.shape[0]
    out = np.empty(2 * cap, np.int64)
    for i in range(size):
        out[i] = buf[(head + i) % cap]
    return out, 0, 2 * cap


def _sph(indptr: np.ndarray, nbr: np.ndarray, eid: np.ndarray, host_indptr: np.ndarray,
         host_eid: np.ndarray, virt: np.ndarray, terminal_link: np.ndarray, root: int,
         remaining: np.ndarray, budget: int, edges: np.ndarray, nodes: np.ndarray
         ) -> tuple[int, int, int, int, int]:
    """(status, tree links, tree switches, weight-1 links, stop labels).

    The tree's links and switches are written to ``edges`` and ``nodes``
    (each at least as long as the number of switches). Status 0 = tree, 1 =
    budget reached, 2 = the terminal ``edges[0]`` is not connected;
    ``budget < 0`` means none. The stop labels are the virtual links with an
    end on the tree that are not tree links, plus the virtual host links at
    tree switches that are not ``terminal_link`` s.
    """
    n = indptr.shape[0] - 1
    inf = 1 << 30
    dist = np.full(n, inf, np.int64)
    pred = np.full(n, -1, np.int64)
    pedge = np.full(n, -1, np.int64)
    in_tree = np.zeros(n, np.uint8)
    cap = n + nbr.shape[0] + 1
    buf = np.empty(cap, np.int64)
    active = np.ones(remaining.shape[0], np.uint8)
    left = remaining.shape[0]
    n_edges = 0
    nodes[0] = root
    n_nodes = 1
    path = np.empty(n, np.int64)
    weight = 0
    stops = 0
    in_tree[root] = 1
    # sources of the next 0-1 BFS: nodes[src_lo:n_nodes] walked backwards
    # (root first; then each new path, terminal end first)
    src_lo = 0
    while True:
        head = 0
        size = 0
        for k in range(n_nodes - 1, src_lo - 1, -1):
            s = nodes[k]
            buf[size] = s
            size += 1
            dist[s] = 0
        while size > 0:
            u = buf[head]
            head += 1
            if head == cap:
                head = 0
            size -= 1
            du = dist[u]
            du1 = du + 1
            for k in range(indptr[u], indptr[u + 1]):
                v = nbr[k]
                e = eid[k]
                if virt[e]:
                    if du < dist[v]:
                        dist[v] = du
                        pred[v] = u
                        pedge[v] = e
                        if size == cap:
                            buf, head, cap = _grow(buf, head, size)
                        head = head - 1 if head > 0 else cap - 1
                        buf[head] = v
                        size += 1
                elif du1 < dist[v]:
                    dist[v] = du1
                    pred[v] = u
                    pedge[v] = e
                    if size == cap:
                        buf, head, cap = _grow(buf, head, size)
                    tail = head + size
                    buf[tail if tail < cap else tail - cap] = v
                    size += 1
        if left == 0:
            w, s = _counts(indptr, nbr, eid, host_indptr, host_eid, virt, terminal_link,
                           in_tree, edges[:n_edges], nodes[:n_nodes])
            return 0, n_edges, n_nodes, w, s
        best = -1
        bd = inf
        for i in range(remaining.shape[0]):
            if active[i]:
                t = remaining[i]
                if best < 0 or dist[t] < bd:
                    best = t
                    bd = dist[t]
        if bd >= inf:
            edges[0] = best
            return 2, 0, 0, 0, 0
        weight += bd
        if budget >= 0 and weight + stops >= budget:
            return 1, 0, 0, 0, 0
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
            in_tree[v] = 1
            nodes[n_nodes] = v
            n_nodes += 1
        if budget >= 0 and weight + stops >= budget:
            return 1, 0, 0, 0, 0
        for i in range(remaining.shape[0]):
            if active[i] and in_tree[remaining[i]]:
                active[i] = 0
                left -= 1



def _counts(indptr: np.ndarray, nbr: np.ndarray, eid: np.ndarray, host_indptr: np.ndarray,
            host_eid: np.ndarray, virt: np.ndarray, terminal_link: np.ndarray,
            in_tree: np.ndarray, edges: np.ndarray, nodes: np.ndarray) -> tuple[int, int]:
    """(weight-1 tree links, stop labels) of a finished tree."""
    on_tree = np.zeros(virt.shape[0], np.uint8)
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
    return weight, stops


if os.environ.get("STACKCAST_NO_JIT", "") in ("", "0"):
    try:
        import numba
    except ImportError:  # optional: the pure-Python routine is used
        pass
    else:
        _grow = numba.njit(cache=True, nogil=True)(_grow)
        _counts = numba.njit(cache=True, nogil=True)(_counts)
        sph_kernel = numba.njit(cache=True, nogil=True)(_sph)
