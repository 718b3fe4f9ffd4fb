"""Tree walks of the multicast-group and mixed entry kinds (numpy), for the tree-walk fast path.

:class:`~sim.dataplanes.source_routing.fast_path.TreeWalkFastPath` runs these
closed forms for the walks ``"mcgroup"`` and ``"mixed"``; the numba kernel
of :mod:`sim.dataplanes.source_routing.fast_path_jit` computes the same
notification by notification. Both follow the reference
(:class:`~sim.dataplanes.source_routing.reference.SourceRoutingDataPlane`,
kinds ``mcgroup`` and ``mixed``) pass by pass.

``mcgroup``: switch/mc-group stacks (seed 000 §3.3.3, Listing 3.7, digest §3.4)
    The stack of switch-bitmask (one entry per tree switch, preorder,
    ``pos(u)``, ``q_u`` foreign entries above the own one), but the
    packet-replication engine makes all copies of a port subset in one pass:
    with the ports split into ``c`` blocks, switch ``u`` takes ``q_u + c``
    passes with one ``multicast_forward`` lookup each, counts ``c``
    simplified circulations, and the copy to a child whose port lies in
    block ``k`` leaves after pass ``q_u + k + 1`` carrying the
    ``L - 1 - pos(u)`` entries after ``u``'s own. The original is dropped
    only when ``c > 1`` and the last block has no tree child (group 0).
``mixed``: tagged entries (seed 000 §3.3.4, Fig. 3.7, digest §3.5, §3.11)
    Per tree switch one entry of its kind: mc-group switches (M) one group
    entry for all children (every combination installed, ``groups=all``),
    the others their ``fallback``: one bitmask entry (B) or one port entry
    per child (P), each port entry just before its child's subtree. Entries
    are keyed to preorder nodes (an M/B entry to its switch, a P entry to the
    child it serves; a node's parent's port entry comes before its own), so
    with ``W`` the exclusive prefix sum of entries per node, every arriving
    stack is a range ``[a_u, b_u)`` of the publisher's stack: ``a`` is one
    past the entry that made the copy; ``b`` is the parent's unless a
    predictive copy of a P entry that is not its switch's last stops at the
    next own entry (``W`` after the child's subtree). The original scans
    every arriving entry, one pass each plus ``m - 1`` for a B entry (two
    lookups a pass, plus ``check_bitmask`` on B passes); a predictive copy
    made at stack index ``e`` recirculates over the ``b_u - e - 1`` entries
    after its own (two lookups each). Copies leave after their creation pass
    (its index on the original's chain: ``e - a_u + 1``, plus the sibling
    rank - 1 on B entries) plus those recirculations, carrying
    ``b_c - e - 1`` entries. The original is dropped when its stack runs out,
    except after an M entry that was the last one (the replicas replaced it).

References
----------
Seed 000 §3.3.3-3.3.4 (Listings 3.7, Fig. 3.7), §3.5.4 (delays); digest ch.
1-4 §3.4-3.5, §3.11, §7.16.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.dataplanes.tree_tables import TreeTables
from topologies.model import Topology

#: Switch kinds of a mixed stack (per tree switch), in the order of ``predictive`` flags.
PORT, BITMASK, MCGROUP = 0, 1, 2


def port_block(ports: tuple[int, ...], c: int) -> dict[int, int]:
    """Block index of each port when ``ports`` (ascending) are split into ``c`` contiguous
    blocks, larger blocks first (as ``switch-mcgroup``'s ``port_blocks``)."""
    base, extra = divmod(len(ports), c)
    out, start = {}, 0
    for k in range(c):
        size = base + (1 if k < extra else 0)
        for p in ports[start:start + size]:
            out[p] = k
        start += size
    return out


class EntryTables:
    """What the mcgroup and mixed walks need beyond :class:`TreeTables`, per topology.

    Attributes
    ----------
    is_mc : (N,) int64
        1 for the mc-group switches of a mixed stack (global node index).
    block : (slots, N) int64
        ``[slot, preorder number]`` -> port block (of ``subsets``) of the link
        from the node's parent to it at the parent; 0 for roots and when
        ``subsets == 1``; a row per slot of the tree tables, filled by
        :meth:`ensure` for the root the slot holds.
    """

    def __init__(self, topology: Topology, tables: TreeTables, subsets: int,
                 mc_switches: frozenset[str]) -> None:
        self.tables = tables
        self.subsets = subsets
        n = tables.size
        self.is_mc = np.zeros(n, np.int64)
        for s in mc_switches:
            self.is_mc[tables.gid[s]] = 1
        self.block = np.zeros((tables.capacity, n), np.int64)
        self._root = np.full(tables.capacity, -1, np.int64)  # root of each block row
        self._keys = np.zeros(0, np.int64)
        self._vals = np.zeros(0, np.int64)
        if subsets > 1:
            keys, vals = [], []
            gid = tables.gid
            for sw in topology.switches:
                ports = topology.ports(sw)
                blk = port_block(tuple(sorted(ports)), subsets)
                for p, info in ports.items():
                    keys.append(gid[sw] * n + gid[info.neighbor])
                    vals.append(blk[p])
            order = np.argsort(keys)
            self._keys = np.asarray(keys, np.int64)[order]
            self._vals = np.asarray(vals, np.int64)[order]

    def ensure(self, rows: np.ndarray) -> None:
        """Fill the block rows of the slots ``rows`` of the tree tables (as
        :meth:`TreeTables.ensure` returned them) for the roots they hold."""
        if self.subsets == 1:
            return
        t, n = self.tables, self.tables.size
        stale = np.unique(rows)
        stale = stale[self._root[stale] != t.root_of[stale]]
        for r in stale.tolist():
            par = t.parent[r]
            up = t.node[r][np.maximum(par, 0)].astype(np.int64)
            keys = up * n + t.node[r]
            at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            self.block[r] = np.where(par >= 0, self._vals[at], 0)
            self._root[r] = t.root_of[r]


@dataclass(frozen=True, slots=True)
class EntryCounts:
    """Per tree node (compact index) counts of one walk; ``entries`` per notification."""

    passes: np.ndarray
    lookups: np.ndarray
    simplified: np.ndarray
    depth: np.ndarray
    carried: np.ndarray
    drops: np.ndarray
    entries: np.ndarray


def mcgroup_counts(*, subsets: int, is_sw: np.ndarray, nr: np.ndarray, par: np.ndarray,
                   starts: np.ndarray, b_of: np.ndarray, block: np.ndarray) -> EntryCounts:
    """The ``mcgroup`` walk (module docstring) over a batch's tree nodes.

    ``is_sw``, ``nr`` (0 at roots), ``par`` (roots: themselves), ``block`` (of
    the link into the node) per compact node; ``starts``/``b_of`` place the
    notifications.
    """
    before = np.cumsum(is_sw) - is_sw
    pos = before - before[starts][b_of]
    entries = np.add.reduceat(is_sw, starts)
    q = (pos - pos[par] - 1) * (is_sw * nr)
    passes = (q + subsets) * is_sw
    k = len(is_sw)
    if subsets > 1:  # dropped when the last block has no child (group 0)
        top = np.full(k, -1, np.int64)
        np.maximum.at(top, par[nr == 1], block[nr == 1])
        drops = is_sw * (top < subsets - 1)
    else:
        drops = np.zeros(k, np.int64)
    return EntryCounts(passes=passes, lookups=passes, simplified=subsets * is_sw,
                       depth=q[par] + block + 1, carried=entries[b_of] - 1 - pos[par],
                       drops=drops, entries=entries)


def mixed_counts(*, fallback_port: bool, predictive: tuple[bool, bool, bool],
                 is_sw: np.ndarray, is_mc: np.ndarray, nr: np.ndarray, par: np.ndarray,
                 m: np.ndarray, sib: np.ndarray, starts: np.ndarray, b_of: np.ndarray,
                 w_end: Callable[[np.ndarray], np.ndarray], by_level: np.ndarray,
                 bounds: np.ndarray) -> EntryCounts:
    """The ``mixed`` walk (module docstring) over a batch's tree nodes.

    ``w_end(w)`` gives, for the per-node entry counts ``w``, the entries of a
    notification's nodes before the end of each node's subtree; ``by_level``
    and ``bounds`` order the nodes by depth (parents first). ``predictive``:
    copies of port, bitmask and mc-group entries prune predictively.
    """
    mc = is_mc * is_sw
    other = is_sw - mc
    port = other if fallback_port else np.zeros_like(other)
    bits = other - port
    w = mc + bits + port[par] * nr
    csum = np.cumsum(w) - w
    start_w = csum - csum[starts][b_of]               # W: entries keyed before the node
    entries = np.add.reduceat(w, starts)
    end_w = w_end(w)
    own = start_w + w - 1                               # the node's own M/B entry
    ent = np.where(port[par] == 1, start_w, own[par])  # the entry that made the copy
    a = (ent + 1) * nr
    last = sib == m[par]
    stop = (port[par] == 1) & ~last if predictive[PORT] else np.zeros(len(w), bool)
    b = np.empty(len(w), np.int64)
    b[starts] = entries
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        c = by_level[lo:hi]
        b[c] = np.where(stop[c], end_w[c], b[par[c]])
    pred = nr * (port[par] * predictive[PORT] + bits[par] * predictive[BITMASK]
                 + mc[par] * predictive[MCGROUP])
    after = pred * (b[par] - ent - 1)                  # a predictive copy's recirculations
    depth = (ent - a[par] + 1) + bits[par] * (sib - 1) + after
    passes = is_sw * ((b - a) + bits * (m - 1))
    passes = passes + np.bincount(par, weights=after, minlength=len(w)).astype(np.int64)
    return EntryCounts(passes=passes, lookups=2 * passes + bits * m,
                       simplified=(port + bits) * m + mc, depth=depth, carried=b - ent - 1,
                       drops=is_sw - mc * (own == b - 1), entries=entries)
