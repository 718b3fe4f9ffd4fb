"""Horton's minimum cycle basis of the switch graph: ``vt-cycles`` candidates (seed 000 §6.3.1).

:func:`minimum_cycle_basis` is the definition: for every switch ``w`` and
switch pair ``(u, v)`` linked directly, the BFS paths ``w-u`` and ``w-v``
(:func:`sim.dataplanes.trees.bfs_parents`) plus the link ``(u, v)`` when they
meet only at ``w``; the distinct link sets sorted by length, then by their
sorted link ids; kept greedily while independent over GF(2).

:func:`cycle_basis_fast` gives the same basis with the candidates enumerated
by a compiled kernel (:func:`_horton_rows`, numba when installed, else the
same loop in Python) and sorted and deduplicated with numpy;
``tests/strategies/test_vt_cycle_basis.py`` checks both on random topologies.
``vt-cycles`` uses the fast one.

References
----------
Seed 000 §6.3.1; J. D. Horton, A polynomial-time algorithm to find the
shortest cycle basis of a graph (1987); digest ch. 5-7 §3.3.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from sim.dataplanes.trees import bfs_parents
from strategies.virtual_tree.steiner import encoder_graph
from topologies.model import Topology


def minimum_cycle_basis(topology: Topology) -> list[frozenset[int]]:
    """A minimum cycle basis of the switch graph as link sets (Horton, deterministic).

    Candidates: for every switch w and link (u, v), the BFS paths w-u and w-v
    plus (u, v) when they meet only at w; sorted by length, then by their
    sorted link ids; kept greedily while independent over GF(2).
    """
    g = encoder_graph(topology)
    eid = {pair: e for e, pair in enumerate(g.ends) if pair is not None}
    cands: set[frozenset[int]] = set()
    for w in range(len(g.names)):
        parent = {g.index[c]: g.index[p]
                  for c, p in bfs_parents(topology, g.names[w]).items()}

        def path(x: int, parent: dict[int, int] = parent, w: int = w) -> list[int]:
            out = [x]
            while x != w:
                x = parent[x]
                out.append(x)
            return out

        for (u, v), e in eid.items():
            pu, pv = path(u), path(v)
            if len(pu) + len(pv) < 4 or set(pu) & set(pv) != {w}:
                continue
            links = {e}
            for seq in (pu, pv):
                for a, b in zip(seq, seq[1:], strict=False):
                    links.add(eid[(a, b) if a < b else (b, a)])
            cands.add(frozenset(links))
    ordered = sorted(cands, key=lambda c: (len(c), sorted(c)))
    return _independent(topology, [sorted(c) for c in ordered])


def _independent(topology: Topology, ordered: list[list[int]]) -> list[frozenset[int]]:
    """The candidates (in order) kept greedily while independent over GF(2)."""
    greedy = _Greedy(topology)
    greedy.add(ordered)
    return greedy.basis


class _Greedy:
    """The GF(2) greedy of :func:`_independent`, fed candidates in order, in parts."""

    def __init__(self, topology: Topology) -> None:
        self.pivots: dict[int, int] = {}
        self.basis: list[frozenset[int]] = []
        self.need = topology.switch_graph.number_of_edges() - len(topology.switches) + 1

    @property
    def done(self) -> bool:
        return len(self.basis) >= self.need

    def add(self, ordered: list[list[int]]) -> None:
        """Keep each of the next candidates ``ordered`` that is independent of those kept."""
        pivots = self.pivots
        for c in ordered:
            if self.done:
                break
            vec = sum(1 << e for e in c)
            while vec:
                top = vec.bit_length() - 1
                if top not in pivots:
                    pivots[top] = vec
                    self.basis.append(frozenset(c))
                    break
                vec ^= pivots[top]


#: What fills a row after its link ids (larger than any link id: shorter rows sort first).
PAD = 1 << 62


def _horton_rows(indptr: np.ndarray, nbr: np.ndarray, pair_eid: np.ndarray,
                 pair_u: np.ndarray, pair_v: np.ndarray, pair_e: np.ndarray, w: int,
                 parent: np.ndarray, up_eid: np.ndarray, depth: np.ndarray,
                 mark: np.ndarray, out: np.ndarray) -> int:
    """The candidates of root ``w`` as rows of ``out``: [length, sorted link ids, padding].

    BFS from ``w`` with neighbours in port order (the first discoverer is the
    parent, as :func:`~sim.dataplanes.trees.bfs_parents`); ``pair_eid`` is the
    link id of each adjacency slot's switch pair (the largest one of parallel
    links, as the reference's pair map). Returns the number of rows.
    """
    n = indptr.shape[0] - 1
    depth[:] = -1
    depth[w] = 0
    parent[w] = w
    queue = mark  # the queue reuses ``mark``'s storage until the BFS ends
    queue[0] = w
    head, tail = 0, 1
    while head < tail:
        u = queue[head]
        head += 1
        for k in range(indptr[u], indptr[u + 1]):
            v = nbr[k]
            if depth[v] < 0:
                depth[v] = depth[u] + 1
                parent[v] = u
                up_eid[v] = pair_eid[k]
                queue[tail] = v
                tail += 1
    mark[:n] = 0
    rows = 0
    deepest = 0
    for x in range(n):
        deepest = max(deepest, depth[x])
    # a cycle has at most 2 * deepest + 1 links: its row needs that many columns plus one
    width = min(out.shape[1], 2 * deepest + 2)
    for i in range(pair_u.shape[0]):
        u, v = pair_u[i], pair_v[i]
        if depth[u] + depth[v] + 2 < 4:
            continue
        # the paths meet only at w: mark u's path, walk v's
        x = u
        while x != w:
            mark[x] = 1
            x = parent[x]
        ok = True
        x = v
        while x != w:
            if mark[x]:
                ok = False
                break
            x = parent[x]
        x = u
        while x != w:
            mark[x] = 0
            x = parent[x]
        if not ok:
            continue
        length = depth[u] + depth[v] + 1
        row = out[rows]
        row[0] = length
        row[1] = pair_e[i]
        j = 2
        for x in (u, v):
            while x != w:
                row[j] = up_eid[x]
                j += 1
                x = parent[x]
        body = row[1:j]
        body.sort()
        row[j:width] = PAD
        rows += 1
    return rows


#: :func:`_horton_rows`, compiled; None without numba (the Python loop runs).
horton_kernel: Callable[..., Any] | None = None
if os.environ.get("STACKCAST_NO_JIT", "") in ("", "0"):
    try:
        import numba
    except ImportError:  # optional: the plain Python loop runs
        pass
    else:
        horton_kernel = numba.njit(cache=True, nogil=True)(_horton_rows)


#: Bytes of candidate rows :func:`cycle_basis_fast` holds at once (then it goes by lengths).
BUDGET_BYTES = 384 << 20


def cycle_basis_fast(topology: Topology, budget_bytes: int = BUDGET_BYTES
                     ) -> list[frozenset[int]]:
    """:func:`minimum_cycle_basis`, with the candidates enumerated by :func:`_horton_rows`.

    Horton's candidates number about switches x links (32 million at 4,000
    switches of degree 4), so they are held by length: the candidates up to a
    length bound, sorted, feed the greedy; if it needs more, the next lengths
    are enumerated again. As the greedy takes the candidates in the order of
    their lengths, the basis is the same; memory stays about ``budget_bytes``
    of rows (and a few times that while they are sorted).
    """
    g = encoder_graph(topology)
    n = len(g.names)
    last: dict[tuple[int, int], int] = {}
    for e, pair in enumerate(g.ends):
        if pair is not None:
            last[pair] = e
    pairs = np.array([(u, v, e) for (u, v), e in last.items()], np.int64).reshape(-1, 3)
    slot_pair = np.array([last[(min(u, v), max(u, v))]
                          for u in range(n) for v in g.nbr[g.indptr[u]:g.indptr[u + 1]]],
                         np.int64)
    greedy = _Greedy(topology)
    if not len(pairs) or greedy.done:
        return greedy.basis
    kernel = horton_kernel or _horton_rows
    parent, up_eid, depth = (np.zeros(n, np.int64) for _ in range(3))
    mark = np.zeros(max(n, 1), np.int64)
    out = np.zeros((len(pairs), _row_width(g.indptr, g.nbr)), np.int64)

    def roots() -> Iterator[np.ndarray]:
        """Each root's candidate rows, in ``out`` (valid until the next)."""
        for w in range(n):
            rows = kernel(g.indptr, g.nbr, slot_pair, pairs[:, 0], pairs[:, 1], pairs[:, 2], w,
                          parent, up_eid, depth, mark, out)
            yield out[:rows]

    lo, hi = 0, n + 1  # lengths taken: lo < length <= hi
    while not greedy.done and lo <= n:
        found, held, counts = [], 0, np.zeros(n + 2, np.int64)
        for rows in roots():
            rows = rows[(rows[:, 0] > lo) & (rows[:, 0] <= hi)]
            counts += np.bincount(rows[:, 0], minlength=n + 2)
            if not len(rows):
                continue
            # only the columns its longest cycle uses (the rest is padding)
            found.append(np.unique(rows[:, :1 + int(rows[:, 0].max())], axis=0))
            held += found[-1].nbytes
            while held > budget_bytes:  # hold fewer lengths: drop the longest held
                shorter = np.flatnonzero(counts[lo + 1:hi])
                if not len(shorter):
                    break  # one length: held whole, over the budget
                hi = lo + 1 + int(shorter[-1])
                counts[hi + 1:] = 0
                found = [f[f[:, 0] <= hi] for f in found]
                held = sum(f.nbytes for f in found)
        if found:
            greedy.add(_sorted_rows(found))
        lo, hi = hi, n + 1
    return greedy.basis


def _sorted_rows(found: list[np.ndarray]) -> list[list[int]]:
    """The distinct rows of ``found``, in the candidates' order, as link-id lists."""
    width = max(f.shape[1] for f in found)
    table = np.unique(np.concatenate([
        np.pad(f, ((0, 0), (0, width - f.shape[1])), constant_values=PAD) for f in found]),
        axis=0)
    return [[int(e) for e in row[1:1 + row[0]]] for row in table]


def _row_width(indptr: np.ndarray, nbr: np.ndarray) -> int:
    """Columns enough for any candidate row: a cycle has at most twice the graph's diameter
    plus one links, and the diameter is at most twice the depth of a BFS from switch 0
    (2 n + 2 where that BFS does not reach every switch)."""
    n = len(indptr) - 1
    depth = np.full(n, -1, np.int64)
    depth[0] = 0
    frontier = [0]
    while frontier:
        nxt = []
        for u in frontier:
            for v in nbr[indptr[u]:indptr[u + 1]].tolist():
                if depth[v] < 0:
                    depth[v] = depth[u] + 1
                    nxt.append(v)
        frontier = nxt
    if (depth < 0).any():
        return 2 * n + 2
    return min(2 * n + 2, 2 * (2 * int(depth.max())) + 2)
