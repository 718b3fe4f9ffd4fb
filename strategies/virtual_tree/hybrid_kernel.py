"""``hybrid``'s header labels from the cached shortest-path tree of the publisher's root.

:func:`strategies.virtual_tree.hybrid.hybrid_stacks` (the definition) builds the
delivery tree D (the shortest-path tree pruned to the receivers) and T' (the
same pruned to the stable subscribers) as Python trees per notification and
reads the header off their preorders: the tree label if T' and D share an
edge, then the stop labels (T' edges, in T' preorder, hanging off D but not in
it), then the hop labels (D edges outside T', in D preorder).

Both trees are subtrees of one spanning tree, the BFS tree of the root with
every host under its switch and children in port order, which
:class:`sim.dataplanes.tree_tables.TreeTables` lays out in preorder once per
root. A subtree's preorder is the spanning preorder restricted to its nodes,
so :func:`hybrid_labels` marks D's and T''s nodes by walking up the cached
predecessor positions (as the hand-written lower bound does) and reads both
label lists in one sorted pass over the marked positions. Labels come from
:class:`EdgeTable`, every edge's hop and stop label made once per topology
and format.

:func:`pack_header` writes the header's bytes (Size field, tree label, stops,
hops, big endian) from the labels :func:`hybrid_labels` left in its buffer,
so the encoder makes no Python list of them.

Both are plain Python that numba compiles (:func:`kernel`, :func:`packer`);
``STACKCAST_NO_JIT=1`` or no numba runs them interpreted.
``tests/strategies/test_hybrid_kernel.py`` checks both forms against
:func:`~strategies.virtual_tree.hybrid.hybrid_stacks` on random topologies,
receivers and stable sets, and :func:`pack_header` against
:meth:`~sim.dataplanes.virtual_tree.codec.LabelFormat.encode`.

References
----------
Seed 000 §4.3 (Fig. 4.3), §5.2.4-5.2.6 (tree/hop/stop labels); §3.2
(preorder, port order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sim.dataplanes.l2.fast_path_kernels import compiled
from sim.dataplanes.tree_tables import TreeTables
from sim.dataplanes.virtual_tree.codec import FieldRangeError, LabelFormat
from sim.dataplanes.virtual_tree.reference import hop_label, stop_label
from topologies.model import Topology

#: Outcome codes of :func:`hybrid_labels` (its first return value).
OK, UNREACHABLE = 0, 1


class EdgeTable:
    """Every link's hop and stop label per directed neighbour pair, as arrays.

    Node numbers are :class:`~sim.dataplanes.tree_tables.TreeTables`' (switches,
    then hosts). The neighbours of node ``u`` are ``nb[start[u]:start[u + 1]]``
    (one per neighbour, the link :meth:`~topologies.model.Topology.port_to`
    names); ``hop[e]`` and ``stop[e]`` are the labels of that link's edge id.
    ``valid`` is False when some label does not fit the format or int64 (wider
    than 63 bits): the encoder then runs the definition, which raises where it
    would.
    """

    def __init__(self, topology: Topology, fmt: LabelFormat) -> None:
        names = (*topology.switches, *topology.hosts)
        gid = {n: i for i, n in enumerate(names)}
        start, nb, hop, stop = [0], [], [], []
        valid = fmt.label_bits <= 63  # the labels fit int64
        for u in names:
            for info in topology.ports(u).values():
                v = info.neighbor
                port = topology.port_to(u, v)
                if topology.ports(u)[port] is not info:
                    continue  # a parallel link: the edge is port_to's
                labels = (-1, -1)
                if valid:
                    try:
                        labels = (hop_label(fmt, info.link.edge_id),
                                  stop_label(fmt, info.link.edge_id))
                    except FieldRangeError:
                        valid = False
                hop.append(labels[0])
                stop.append(labels[1])
                nb.append(gid[v])
            start.append(len(nb))
        self.gid = gid
        #: the hosts' node numbers
        self.host_gid = {h: gid[h] for h in topology.hosts}
        self.valid = valid
        self.start = np.array(start, np.int64)
        self.nb = np.array(nb, np.int64)
        self.hop = np.array(hop, np.int64)
        self.stop = np.array(stop, np.int64)
        n = len(names)
        #: per-call work buffers: node marks (zero between calls), touched positions
        self.mark = np.zeros(n, np.int64)
        self.touched = np.zeros(n, np.int64)
        self.out = np.zeros(2 * n, np.int64)
        #: the header's bytes (:func:`pack_header`): a 4-byte Size field at most, then
        #: at most ``2 n + 1`` labels of at most 8 bytes
        self.header = np.zeros(4 + 8 * (2 * n + 1), np.uint8)


def hybrid_labels(node: np.ndarray, parent: np.ndarray, pos_of: np.ndarray,
                  targets: np.ndarray, n_receivers: int, start: np.ndarray, nb: np.ndarray,
                  hop: np.ndarray, stop: np.ndarray, mark: np.ndarray, touched: np.ndarray,
                  out: np.ndarray) -> tuple[int, int, int, int]:
    """The stop and hop labels of one notification (plain Python that numba compiles).

    Parameters
    ----------
    node, parent, pos_of : ndarray
        The root's row of :class:`~sim.dataplanes.tree_tables.TreeTables`.
    targets : ndarray
        Node numbers of the receivers (the first ``n_receivers``), then of the
        stable subscribers.
    start, nb, hop, stop : ndarray
        :class:`EdgeTable`'s arrays.
    mark, touched, out : ndarray
        Work buffers (``out`` at least twice as long as ``mark``); ``mark`` is
        all zeros on entry and on return.

    Returns
    -------
    status : int
        :data:`OK`, or :data:`UNREACHABLE` (a target the root's row does not
        reach; nothing else is valid).
    n_stops, n_hops : int
        ``out[:n_stops]`` are the stop labels, ``out[half:half + n_hops]`` the
        hop labels (``half = len(mark)``).
    used : int
        1 if T' and D share an edge (the header carries the tree label).
    """
    # mark D's positions (bit 1) and T''s (bit 2): each target and its ancestors
    mark[0] = 1  # the root (position 0) is in D
    touched[0] = 0
    count = 1
    for i in range(targets.shape[0]):
        x = targets[i]
        bit = 1 if i < n_receivers else 2
        p = pos_of[x]
        if node[p] != x:
            for j in range(count):
                mark[touched[j]] = 0
            return UNREACHABLE, 0, 0, 0
        while p >= 0 and not mark[p] & bit:
            if mark[p] == 0:
                touched[count] = p
                count += 1
            mark[p] |= bit
            p = parent[p]
    seen = touched[:count]
    seen.sort()  # preorder: the subtrees' preorders are the spanning tree's, restricted
    used = 0
    for i in range(1, count):
        if mark[seen[i]] == 3:
            used = 1
            break
    half = mark.shape[0]
    n_stops = n_hops = 0
    for i in range(1, count):
        p = seen[i]
        m = mark[p]
        up = parent[p]
        # a D edge outside T' (a hop label), or a T' edge hanging off D (a stop label);
        # no array is bound to a name in the loop (numba would count its references)
        if m != 1 and not (m == 2 and used and mark[up] & 1):
            continue
        u, v = node[up], node[p]
        label = -1
        for e in range(start[u], start[u + 1]):
            if nb[e] == v:
                label = hop[e] if m == 1 else stop[e]
                break
        if m == 1:
            out[half + n_hops] = label
            n_hops += 1
        else:
            out[n_stops] = label
            n_stops += 1
    for i in range(count):
        mark[seen[i]] = 0
    return OK, n_stops, n_hops, used


def kernel() -> Callable[..., Any]:
    """:func:`hybrid_labels`, compiled where numba is installed (and not disabled)."""
    return compiled("hybrid_kernel.hybrid_labels", hybrid_labels) or hybrid_labels


def pack_header(out: np.ndarray, n_stops: int, n_hops: int, tree: int, label_bytes: int,
                size_bytes: int, buf: np.ndarray) -> int:
    """The header's bytes into ``buf`` (plain Python that numba compiles): the Size field,
    then the tree label (if ``tree >= 0``), the stop and the hop labels of
    :func:`hybrid_labels`' ``out``, each big endian (what
    :meth:`~sim.dataplanes.virtual_tree.codec.LabelFormat.encode` writes); returns how
    many bytes it wrote. The labels must fit ``label_bytes`` and their count
    ``size_bytes`` (the caller checks)."""
    half = out.shape[0] // 2
    n = n_stops + n_hops + (1 if tree >= 0 else 0)
    k = 0
    for b in range(size_bytes - 1, -1, -1):
        buf[k] = (n >> (8 * b)) & 255
        k += 1
    if tree >= 0:
        for b in range(label_bytes - 1, -1, -1):
            buf[k] = (tree >> (8 * b)) & 255
            k += 1
    for i in range(n_stops + n_hops):
        label = out[i] if i < n_stops else out[half + i - n_stops]
        for b in range(label_bytes - 1, -1, -1):
            buf[k] = (label >> (8 * b)) & 255
            k += 1
    return k


def packer() -> Callable[..., Any]:
    """:func:`pack_header`, compiled where numba is installed (and not disabled)."""
    return compiled("hybrid_kernel.pack_header", pack_header) or pack_header


def label_counts(rows: TreeTables, edges: EdgeTable, root: str, receivers: np.ndarray,
                 stable: np.ndarray, run: Callable[..., Any] | None = None
                 ) -> tuple[int, int, bool] | None:
    """:func:`hybrid_labels` on one notification: how many stop and hop labels it left in
    ``edges.out`` (until the next call) and whether T' and D share an edge, or None where
    the definition must run (a label that does not fit the format, a node the root
    does not reach)."""
    if not edges.valid:
        return None
    r = rows.gid[root]
    k = int(rows.slot_of[r])
    if k < 0:
        k = int(rows.ensure(np.array([r], np.int64))[0])
    status, n_stops, n_hops, used = (run or kernel())(
        rows.node[k], rows.parent[k], rows.pos_of[k], np.concatenate((receivers, stable)),
        len(receivers), edges.start, edges.nb, edges.hop, edges.stop, edges.mark,
        edges.touched, edges.out)
    if status != OK:
        return None
    return n_stops, n_hops, bool(used)


def out_labels(edges: EdgeTable, n_stops: int, n_hops: int) -> list[int]:
    """The stop then hop labels :func:`label_counts` left in ``edges.out``."""
    out, half = edges.out, len(edges.mark)
    return out[:n_stops].tolist() + out[half:half + n_hops].tolist()


def header_stack(edges: EdgeTable, n_stops: int, n_hops: int, tree: int, fmt: LabelFormat,
                 pack: Callable[..., Any] | None = None) -> bytes:
    """The stack of ``[tree] + stops + hops`` (:func:`label_counts`; ``tree`` < 0: none)
    as :meth:`~sim.dataplanes.virtual_tree.codec.LabelFormat.encode` makes it; the
    caller checks that the count fits the Size field. ``pack``: :func:`pack_header`
    (default: :func:`packer`)."""
    n = (pack or packer())(edges.out, n_stops, n_hops, tree, fmt.label_bytes,
                           fmt.size_bytes, edges.header)
    return edges.header[:n].tobytes()
