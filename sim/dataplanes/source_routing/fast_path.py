"""Fast path of the label stacks that walk the shortest-path tree: the same counts in closed form.

The pass-by-pass reference (:func:`sim.engines.static.run_notification` with
:class:`~sim.dataplanes.source_routing.reference.SourceRoutingDataPlane` or
:class:`~sim.dataplanes.neighbor_labels.reference.NeighborLabelsDataPlane`)
stays the definition. For the stacks whose walk is fully determined by the
delivery tree, :class:`TreeWalkFastPath` (a
:class:`~sim.dataplanes.fast_path.FastPath`) computes what that walk yields
(deliveries, frames and bytes per directed link, passes, recirculations,
lookups and the thesis's simplified circulations per switch, drops, header
sizes, first arrival times) with numpy over the shortest-path tree, for a
batch of notifications at once. The walks (:data:`WALKS`):

``bitmask``: switch/bitmask stacks (reactive pruning, seed 000 §3.3.2, digest §3.3, §3.11)
    One entry per tree switch in preorder; ``pos(u)`` its index. Switch ``u``
    pops ``q_u = pos(u) - pos(parent) - 1`` foreign entries, then serves its
    ``m_u`` tree children one set bit per pass: ``q_u + m_u`` passes,
    ``q_u + 2 m_u`` lookups, ``m_u`` simplified circulations; the copy for
    the j-th child (port order) leaves after pass ``q_u + j`` and carries the
    ``L - 1 - pos(u)`` entries after ``u``'s own.
``port-predictive``, ``port-reactive``: switch/port stacks (seed 000 §3.3.1, Listing 3.3)
    Digest §3.2. One entry per tree edge in preorder. Predictive pruning: ``u`` receives
    the ``L_u`` entries of its subtree, scans them one per pass, and each
    copy recirculates over the ``L_u - 1 - p_j`` entries after its own entry
    ``p_j``; every copy leaves after pass ``L_u`` and carries its child's
    subtree. Reactive: ``u`` receives every entry after its parent's entry
    for it; copies leave right after the pass that made them.
``hops``: neighbour labels (seed 000 §4.2.1, digest §3.6)
    The tree's nodes in preorder (root omitted); like predictive switch-port
    except that a copy stops looking up labels at the next neighbour label
    (configured by :mod:`sim.dataplanes.neighbor_labels.fast_path`).
``mcgroup``, ``mixed``: switch/mc-group stacks (§3.3.3) and tagged mixed stacks (§3.3.4)
    The closed forms of :mod:`sim.dataplanes.source_routing.fast_path_entries`.

How: per topology, the spanning shortest-path tree from every root switch
(the tree of :func:`sim.dataplanes.trees.shortest_path_tree`, hosts as
leaves) is laid out once in preorder with children in port order, so a
subtree is an index range. A notification's delivery tree is the set of
nodes whose range holds a receiver (prefix sums over the receivers), its
stack positions are prefix sums over that set, and every count above is a
gather or a ``bincount`` over the tree's nodes, for a batch of notifications
at once. Where numba is installed,
:mod:`sim.dataplanes.source_routing.fast_path_jit` computes the same in one
compiled loop per notification (``impl="jit"``, the default then;
``impl="numpy"`` or ``STACKCAST_NO_JIT=1`` forces the array version); both
are property-tested.

Link delays and the analytic delay model of seed 000 §3.5.4 are applied in
exactly the reference's order of floating-point operations, so arrival
times are bit-identical. Anything outside these cases (oversized stacks,
receiver sets with the publisher, broker or replying hosts) is left to the
reference: :meth:`TreeWalkFastPath.metrics` returns ``None`` for such a
notification. Which strategies and parameters map to a walk (shortest-path
trees in port order only) is the strategies' call, in their
:meth:`~strategies.base.Strategy.fast_path` hooks (switch-bitmask,
switch-port, switch-mcgroup, mixed, hops); :func:`source_routing_fast_path` configures the walk
from a :class:`~sim.dataplanes.source_routing.codec.StackLayout`.
``tests/sim/test_fast_paths.py`` checks on random topologies, receiver sets
and parameters that :meth:`TreeWalkFastPath.delivery` equals the reference
exactly and that :meth:`TreeWalkFastPath.metrics` equals
:func:`~sim.dataplanes.delivery.row_metrics` of the reference delivery.

References
----------
Seed 000 §3.3.1-3.3.2, §3.5.4, §4.2.1; digest ch. 1-4 §3.2-3.3, §3.6,
§3.11, §7.7-7.10, §7.16; shared/DESIGN.md "Data planes" (fast paths must be
property-tested against the pass-by-pass model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from sim.dataplanes.caches import Caches, or_fresh
from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import METRIC_KEYS, DelayModel, Delivery, SwitchCount
from sim.dataplanes.fast_path import Encoder, MetricColumns
from sim.dataplanes.packet import ETH_HEADER_BYTES, Notification
from sim.dataplanes.source_routing.codec import StackLayout
from sim.dataplanes.source_routing.fast_path_entries import (
    EntryTables,
    mcgroup_counts,
    mixed_counts,
)
from sim.dataplanes.tree_tables import tree_tables
from topologies.model import Topology
from topologies.registry import check

#: Notifications per numpy batch (memory ~ BATCH x nodes x 40 B).
BATCH = 256

# -- the fast path ----------------------------------------------------------------

#: The walks :class:`TreeWalkFastPath` computes (see the module docstring).
Walk = Literal["bitmask", "port-predictive", "port-reactive", "hops", "mcgroup", "mixed"]
WALKS: tuple[Walk, ...] = ("bitmask", "port-predictive", "port-reactive", "hops", "mcgroup",
                           "mixed")


@dataclass(frozen=True, slots=True, kw_only=True)
class StackWalk:
    """What distinguishes one stack's walk: its kind and its header widths.

    Parameters
    ----------
    walk : {"bitmask", "port-predictive", "port-reactive", "hops"}
        The closed form (module docstring).
    size_bytes : int
        Bytes of the ``Size`` field ahead of the entries.
    entry_bytes : int
        Bytes per stack entry.
    max_entries : int
        Most entries a stack may have (field widths, STACK_SIZE); longer
        stacks go to the reference.
    frame_limit : int
        Largest header + payload in bytes (the MTU policy's); larger frames
        go to the reference.
    subsets : int
        ``mcgroup``: c, the port blocks of each switch's groups.
    fallback : {"bitmask", "port"}
        ``mixed``: the entry kind of switches without multicast groups.
    predictive : tuple of bool
        ``mixed``: whether copies of port, bitmask and mc-group entries prune
        predictively.
    mc_switches : frozenset of str
        ``mixed``: the switches that hold every multicast group.
    """

    walk: Walk
    size_bytes: int
    entry_bytes: int
    max_entries: int
    frame_limit: int
    subsets: int = 1
    fallback: Literal["bitmask", "port"] = "bitmask"
    predictive: tuple[bool, bool, bool] = (False, False, False)
    mc_switches: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        check(self.walk in WALKS, f"walk must be one of {', '.join(WALKS)}; got {self.walk!r}")
        check(self.size_bytes >= 0 and self.entry_bytes > 0,
              f"stack widths must be positive; got size_bytes={self.size_bytes}, "
              f"entry_bytes={self.entry_bytes}")
        check(self.subsets >= 1, f"subsets must be >= 1, got {self.subsets}")
        check(self.fallback in ("bitmask", "port"),
              f"fallback must be bitmask or port; got {self.fallback!r}")


def source_routing_fast_path(topology: Topology, delays: DelayModel, encode: Encoder, *,
                             layout: StackLayout,
                             kind: Literal["bitmask", "port", "mcgroup", "mixed"],
                             pruning: Literal["predictive", "reactive"], stack_size: int,
                             frame_limit: int, impl: str = "auto", subsets: int = 1,
                             fallback: Literal["bitmask", "port"] = "bitmask",
                             predictive: tuple[bool, bool, bool] = (False, False, False),
                             mc_switches: frozenset[str] = frozenset(),
                             caches: Caches | None = None) -> TreeWalkFastPath:
    """The fast path of a switch/bitmask, switch/port, switch/mc-group or mixed stack
    in preorder of the shortest-path tree, children in port order.

    Parameters
    ----------
    topology, delays
        The network and the analytic delay constants (seed 000 §3.5.4).
    encode
        The strategy's encoder (its packets go into :meth:`TreeWalkFastPath.delivery`).
    layout : StackLayout
        Field widths of the stack.
    kind : {"bitmask", "port", "mcgroup", "mixed"}
        ``<switch id, port bitmask>`` entries per tree switch (always
        reactive pruning, seed 000 §3.3.2), ``<switch id, port>`` entries
        per tree edge (§3.3.1), ``<switch id, group = port bitmask>`` entries
        per tree switch with every group of ``subsets`` port blocks installed
        (§3.3.3), or tagged entries (§3.3.4) as in
        :mod:`sim.dataplanes.source_routing.fast_path_entries`.
    pruning : {"predictive", "reactive"}
        Clone post-processing of switch/port stacks (Listing 3.3).
    stack_size : int
        STACK_SIZE of the program (entries a frame within the MTU can carry).
    frame_limit : int
        Largest header + payload in bytes.
    impl : {"auto", "jit", "numpy"}
        As in :class:`TreeWalkFastPath`.
    subsets, fallback, predictive, mc_switches
        mcgroup and mixed stacks: as in :class:`StackWalk`.
    caches : Caches, optional
        Where the tree tables of ``topology`` are kept (the strategy's).

    The caller has checked that the widths address ``topology`` (the
    reference raises the same error per notification otherwise).
    """
    walk: Walk = (kind if kind != "port"
                  else "port-predictive" if pruning == "predictive" else "port-reactive")
    shape = StackWalk(walk=walk, size_bytes=layout.size_bytes, entry_bytes=layout.entry_bytes,
                      max_entries=min(layout.max_entries, stack_size), frame_limit=frame_limit,
                      subsets=subsets, fallback=fallback, predictive=predictive,
                      mc_switches=mc_switches)
    return TreeWalkFastPath(topology, shape, delays, encode, impl, caches)


def _segments(offsets: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Positions ``offsets[r]`` .. ``offsets[r + 1] - 1`` of each ``r`` of ``runs``, in order."""
    lengths = offsets[runs + 1] - offsets[runs]
    ends = np.cumsum(lengths)
    return np.repeat(offsets[runs] - (ends - lengths), lengths) + np.arange(ends[-1] if len(ends)
                                                                             else 0)


@dataclass(frozen=True, slots=True)
class _Receivers:
    """Receivers of a batch: global node indices, notification after notification."""

    ids: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True, slots=True)
class _Batch:
    """Results of a batch over its tree nodes (compact index: notification, then preorder)."""

    starts: np.ndarray        # compact index of each notification's root
    node: np.ndarray          # global node index
    parent: np.ndarray        # compact index of the parent (roots: -1)
    t: np.ndarray             # first arrival time
    frame_bytes: np.ndarray   # bytes of the frame parent -> node (roots: 0)
    passes: np.ndarray
    recirculations: np.ndarray
    lookups: np.ndarray
    simplified: np.ndarray
    entries: np.ndarray       # header entries per notification
    pub_bytes: np.ndarray     # bytes of the publisher's frame per notification
    drops: np.ndarray | None = None  # originals dropped per node (None: one per switch)
    sums: np.ndarray | None = None   # per notification, made by the compiled walk (_sums)
    worst: np.ndarray | None = None  # per notification, made by the compiled walk (_sums)


class TreeWalkFastPath:
    """Closed-form static walk of one stack (:class:`StackWalk`) on one topology.

    A :class:`~sim.dataplanes.fast_path.FastPath`. Strategies build it in their
    :meth:`~strategies.base.Strategy.fast_path` hook (through
    :func:`source_routing_fast_path` or
    :func:`sim.dataplanes.neighbor_labels.fast_path.hops_fast_path`). The
    installed state must be the strategy's own ``install`` (its rules do not
    depend on subscriptions).

    Parameters
    ----------
    topology : Topology
    shape : StackWalk
        The walk and the stack's widths.
    delays : DelayModel
        Analytic delay constants (seed 000 §3.5.4).
    encode : Encoder
        The strategy's encoder, for the encoding in :meth:`delivery`.
    impl : {"auto", "jit", "numpy"}
        "jit" (the numba kernel of :mod:`sim.dataplanes.source_routing.fast_path_jit`),
        "numpy", or "auto" (the kernel when numba is there).
    caches : Caches, optional
        Where the tree tables of ``topology`` are kept.
    """

    def __init__(self, topology: Topology, shape: StackWalk, delays: DelayModel,
                 encode: Encoder, impl: str = "auto", caches: Caches | None = None) -> None:
        from sim.dataplanes.source_routing.fast_path_jit import batch_kernel

        if impl not in ("auto", "jit", "numpy"):
            raise ValueError(f"impl must be auto, jit or numpy; got {impl!r}")
        if impl == "jit" and batch_kernel is None:
            raise ValueError("impl='jit' needs numba (pip install numba; STACKCAST_NO_JIT unset)")
        #: "jit" (the compiled kernel) or "numpy"
        self._impl = "jit" if impl == "jit" or (impl == "auto" and batch_kernel) else "numpy"
        self.topology = topology
        self.shape = shape
        self.delays = delays
        self.encode = encode
        self.caches = or_fresh(caches)  # where the tables live (shared with using())
        self.tables = tree_tables(topology, self.caches)
        self.entry_tables = (EntryTables(topology, self.tables, shape.subsets, shape.mc_switches)
                             if shape.walk in ("mcgroup", "mixed") else None)
        self._gid = self.tables.gid
        self._host_index = {h: i for i, h in enumerate(topology.hosts)}
        self._per_host: tuple[np.ndarray, np.ndarray] | None = None
        self._buffers: dict[str, np.ndarray] = {}

    @property
    def impl(self) -> str:
        """The implementation that runs: "jit" or "numpy"."""
        return self._impl

    @property
    def implementations(self) -> tuple[str, ...]:
        """The implementations available here (:meth:`using` builds each)."""
        from sim.dataplanes.source_routing.fast_path_jit import batch_kernel

        return ("numpy",) if batch_kernel is None else ("jit", "numpy")

    def using(self, impl: str) -> TreeWalkFastPath:
        """The same fast path computed by implementation ``impl``."""
        return TreeWalkFastPath(self.topology, self.shape, self.delays, self.encode, impl,
                                self.caches)

    # -- public API -------------------------------------------------------------
    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int) -> list[dict[str, Any] | None]:
        """Row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS`) per notification;
        None where the reference must run (see the module docstring).
        :meth:`metric_columns` of the same notifications by host index."""
        return self.metric_columns(*self._host_indices(publishers, receiver_sets),
                                   payload_bytes).rows()

    def metric_columns(self, publishers: np.ndarray, offsets: np.ndarray,
                       receivers: np.ndarray, payload_bytes: int) -> MetricColumns:
        """Row metrics of notification ``i``, from host ``publishers[i]`` to the distinct
        hosts ``receivers[offsets[i]:offsets[i + 1]]`` (indices into
        ``topology.hosts``), one array per metric
        (:class:`~sim.dataplanes.fast_path.MetricColumns`). Declined: no
        receivers, the publisher among them, or a stack or frame too large.

        The notifications the walk takes run in batches of :data:`BATCH`,
        grouped by publisher switch (their tree-table rows stay in cache);
        each notification's figures are its own, whatever its batch.
        """
        n = len(publishers)
        counts = np.diff(offsets)
        own = np.zeros(n, bool)  # the publisher among the receivers (rare: found by position)
        hits = np.flatnonzero(receivers == np.repeat(publishers, counts))
        own[np.searchsorted(offsets, hits, side="right") - 1] = True
        host_root, host_delay = self._host_tables()
        roots = host_root[publishers]
        todo = np.flatnonzero((counts > 0) & ~own)
        todo = todo[np.argsort(roots[todo], kind="stable")]
        taken = np.zeros(n, bool)
        cols = {k: np.zeros(n, np.float64 if k == "delay_worst_ms" else np.int64)
                for k in METRIC_KEYS}
        fam, n_sw = self.shape, self.tables.n_switches
        step = min(BATCH, self.tables.capacity)  # roots of a batch fit the tree tables
        for a in range(0, len(todo), step):
            sel = todo[a:a + step]
            recv = _Receivers(n_sw + receivers[_segments(offsets, sel)], counts[sel])
            b = self._run(roots[sel], recv, host_delay[publishers[sel]], payload_bytes)
            hdr = fam.size_bytes + fam.entry_bytes * b.entries
            fits = (hdr + payload_bytes <= fam.frame_limit) & (b.entries <= fam.max_entries)
            starts, at = b.starts, sel[fits]
            taken[at] = True
            sums, worst = self._sums(b, n_sw)
            cols["packets_sent"][at] = 1
            for key, values in (
                    ("delivered", recv.counts), ("header_entries", b.entries),
                    ("header_bytes", hdr),
                    ("frames", np.diff(np.append(starts, len(b.node)))),  # tree edges + access
                    ("bytes", sums[0] + b.pub_bytes), ("passes", sums[1]),
                    ("recirculations", sums[2]), ("lookups", sums[3]),
                    ("circulations_simplified", sums[4]), ("max_switch_passes", sums[5]),
                    ("delay_worst_ms", worst * 1e3)):
                cols[key][at] = values[fits]
        # false positives/negatives, duplicates and link waste stay 0: a pruned tree
        # reaches exactly the receivers, and every used link leads to one
        return MetricColumns(taken, cols)

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The full :class:`~sim.dataplanes.delivery.Delivery` of one notification, or None
        where the reference must run. The encoding is the strategy's own encoder's."""
        if self.metrics([notification.publisher], [receivers], len(payload))[0] is None:
            return None
        pubs, offsets, flat = self._host_indices([notification.publisher], [receivers])
        host_root, host_delay = self._host_tables()
        recv = _Receivers(self.tables.n_switches + flat, np.diff(offsets))
        b = self._run(host_root[pubs], recv, host_delay[pubs], len(payload))
        names, n_sw = self.tables.names, self.tables.n_switches
        pub = notification.publisher
        encoding = self.encode(self.topology, state, notification, receivers, payload)
        out = Delivery(publisher=pub, receivers=receivers, encoding=encoding)
        out.links[(pub, names[b.node[0]])] = [1, int(b.pub_bytes[0])]
        drops = None if b.drops is None else b.drops.tolist()
        for i, g in enumerate(b.node.tolist()):
            name = names[g]
            if g >= n_sw:
                out.delivered[name] = 1
                out.first_arrival_s[name] = float(b.t[i])
            else:
                out.switches[name] = SwitchCount(
                    passes=int(b.passes[i]), recirculations=int(b.recirculations[i]),
                    lookups=int(b.lookups[i]), circulations_simplified=int(b.simplified[i]))
                out.drops += 1 if drops is None else drops[i]
            if b.parent[i] >= 0:
                out.links[(names[b.node[b.parent[i]]], name)] = [1, int(b.frame_bytes[i])]
        return out

    # -- internals --------------------------------------------------------------
    def _host_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Per host (topology order): the tree-table row of its switch, its access-link delay."""
        if self._per_host is None:
            topo, gid = self.topology, self._gid
            self._per_host = (
                np.array([gid[topo.host_switch(h)] for h in topo.hosts], np.intp),
                np.array([topo.ports(h)[1].link.delay_s for h in topo.hosts], np.float64))
        return self._per_host

    def _host_indices(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Publishers, offsets and receivers by host index (:meth:`metric_columns`' form);
        a notification naming anything but hosts gets no receivers (declined: the
        reference runs it)."""
        index = self._host_index
        n = len(publishers)
        pubs = np.zeros(n, np.intp)
        counts = np.zeros(n + 1, np.intp)
        flat: list[int] = []
        for i, (pub, rs) in enumerate(zip(publishers, receiver_sets, strict=True)):
            p = index.get(pub)
            if p is not None and rs <= index.keys():
                pubs[i] = p
                flat.extend(map(index.__getitem__, rs))
                counts[i + 1] = len(rs)
        return pubs, np.cumsum(counts), np.asarray(flat, np.intp)

    def _run(self, roots: np.ndarray, recv: _Receivers, pub_delay: np.ndarray,
             payload_bytes: int) -> _Batch:
        rows = self.tables.ensure(roots)  # the roots' slots in the tree tables
        if self.entry_tables is not None:
            self.entry_tables.ensure(rows)
        if self.impl == "jit":
            return self._run_jit(rows, recv, pub_delay, payload_bytes)
        return self._run_numpy(rows, recv, pub_delay, payload_bytes)

    def _run_jit(self, rows: np.ndarray, recv: _Receivers, pub_delay: np.ndarray,
                 payload_bytes: int) -> _Batch:
        from sim.dataplanes.source_routing.fast_path_jit import KERNEL_CODES, batch_kernel

        t, fam, d = self.tables, self.shape, self.delays
        kind = KERNEL_CODES[fam.walk]
        nb = len(rows)
        out_i = self._buffer("out_i", (8, nb * t.size), np.int64)
        out_t = self._buffer("out_t", (nb * t.size,), np.float64)
        scratch = self._buffer("scratch", (16, max(nb * t.size, t.size + 1)), np.int64)
        mark = self._buffer("mark", (t.size,), np.int64)  # zeros, and the kernel leaves it so
        starts = np.empty(nb, np.int64)
        entries = np.empty(nb, np.int64)
        sums = np.empty((6, nb), np.int64)
        worst = np.empty(nb, np.float64)
        base = ETH_HEADER_BYTES + payload_bytes + fam.size_bytes
        if batch_kernel is None:  # numba went away after construction
            raise RuntimeError("the compiled fast-path kernel is not available")
        et = self.entry_tables
        block, is_mc = ((et.block, et.is_mc) if et is not None
                        else (np.zeros((1, 1), np.int64), np.zeros(1, np.int64)))
        config = np.array([fam.subsets, fam.fallback == "port", *fam.predictive], np.int64)
        k = batch_kernel(kind, t.parent, t.end, t.delay, t.is_switch, t.node, t.pos_of, rows,
                         recv.ids, recv.counts, pub_delay, d.feed_in_s, d.switch_s, d.pass_s,
                         base, fam.entry_bytes, out_i, out_t, starts, entries, scratch, mark,
                         block, is_mc, config, sums, worst)
        node, par, frame_bytes, passes, recirculations, lookups, simplified, drops = out_i[:, :k]
        return _Batch(starts=starts, node=node, parent=par, t=out_t[:k],
                      frame_bytes=frame_bytes, passes=passes, recirculations=recirculations,
                      lookups=lookups, simplified=simplified, entries=entries,
                      pub_bytes=base + fam.entry_bytes * entries,
                      drops=drops if et is not None else None, sums=sums, worst=worst)

    @staticmethod
    def _sums(b: _Batch, n_sw: int) -> tuple[np.ndarray, np.ndarray]:
        """Per notification of ``b``: the sums of its frame bytes, passes, recirculations,
        lookups and simplified circulations, the most passes at one switch (rows 0-5), and
        its latest arrival at a host (-inf if none). The compiled walk made them as it
        went."""
        if b.sums is not None and b.worst is not None:
            return b.sums, b.worst
        starts = b.starts
        sums = [np.add.reduceat(r, starts)
                for r in (b.frame_bytes, b.passes, b.recirculations, b.lookups, b.simplified)]
        most = np.maximum.reduceat(b.passes, starts)
        worst = np.maximum.reduceat(np.where(b.node >= n_sw, b.t, -np.inf), starts)
        return np.stack([*sums, most]), worst

    def _buffer(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        """A reused work array at least ``shape`` large (fresh memory costs page faults).

        The :class:`_Batch` of :meth:`_run_jit` views these arrays: it is only
        valid until the next call, which is how :meth:`metrics` and
        :meth:`delivery` use it.
        """
        buf = self._buffers.get(name)
        if buf is None or any(have < want for have, want in zip(buf.shape, shape, strict=True)):
            buf = np.zeros(shape, dtype)
            self._buffers[name] = buf
        return buf  # whole (contiguous, one compiled signature); callers use a prefix

    def _run_numpy(self, rows: np.ndarray, recv: _Receivers, pub_delay: np.ndarray,
                   payload_bytes: int) -> _Batch:
        t, fam, d = self.tables, self.shape, self.delays
        n, nb = t.size, len(rows)
        # tree nodes: preorder ranges [i, end) holding a receiver
        bidx = np.repeat(np.arange(nb), recv.counts)
        rgid = recv.ids
        hits = np.zeros((nb, n + 1), np.int32)
        hits[bidx, t.pos_of[rows[bidx], rgid] + 1] = 1
        below_recv = hits.cumsum(axis=1, dtype=np.int32)  # receivers before preorder k
        marked = np.take_along_axis(below_recv, t.end[rows], axis=1) > below_recv[:, :-1]
        idx = np.flatnonzero(marked)                 # compact: notification, then preorder
        k = len(idx)
        b_of = idx // n
        loc = idx - b_of * n
        tix = rows[b_of] * n + loc                    # into the raveled tables
        starts = np.searchsorted(idx, np.arange(nb) * n)
        rank = np.arange(k) - starts[b_of]           # preorder number among tree nodes
        # every array below runs over all tree nodes; a root is its own parent and
        # ``nr`` (0 for roots) keeps it out of every per-edge quantity
        nr = np.ones(k, np.int64)
        nr[starts] = 0
        comp = np.empty(nb * n, np.intp)
        comp[idx] = np.arange(k)
        par = comp[b_of * n + np.maximum(t.parent.ravel()[tix], 0)]
        m = np.bincount(par, minlength=k)              # tree children (+1 at roots)
        m[starts] -= 1
        lv = t.depth.ravel()[tix]
        by_level = np.argsort(lv.astype(np.int16), kind="stable")  # by depth (radix sort)
        is_sw = t.is_switch.ravel()[tix]               # 1 for switches, 0 for hosts
        bounds = np.searchsorted(lv[by_level], np.arange(1, int(lv.max(initial=0)) + 2))
        drops = None
        # hosts have no children, no arriving stack to scan: every count below is 0 for them
        if fam.walk in ("bitmask", "mixed"):
            # siblings are contiguous, in port order, among a level's nodes in preorder
            pks, lvs = par[by_level], lv[by_level]
            new_run = np.ones(k, bool)
            new_run[1:] = (pks[1:] != pks[:-1]) | (lvs[1:] != lvs[:-1])
            at = np.arange(k)
            sib = np.empty(k, np.intp)
            sib[by_level] = at - np.maximum.accumulate(np.where(new_run, at, 0)) + 1
        if fam.walk in ("mcgroup", "mixed"):
            et = self.entry_tables
            assert et is not None  # built for these walks
            if fam.walk == "mcgroup":
                got = mcgroup_counts(subsets=fam.subsets, is_sw=is_sw, nr=nr, par=par,
                                     starts=starts, b_of=b_of, block=et.block.ravel()[tix])
            else:
                def w_end(w: np.ndarray) -> np.ndarray:
                    grid = np.zeros((nb, n + 1), np.int64)
                    grid[b_of, loc + 1] = w
                    np.cumsum(grid, axis=1, out=grid)
                    return grid.ravel()[b_of * (n + 1) + t.end.ravel()[tix]]

                got = mixed_counts(fallback_port=fam.fallback == "port",
                                   predictive=fam.predictive, is_sw=is_sw,
                                   is_mc=et.is_mc[t.node.ravel()[tix]], nr=nr, par=par, m=m,
                                   sib=sib, starts=starts, b_of=b_of, w_end=w_end,
                                   by_level=by_level, bounds=bounds)
            passes, lookups, simplified = got.passes, got.lookups, got.simplified
            depth, carried, entries, drops = got.depth, got.carried, got.entries, got.drops
        elif fam.walk == "bitmask":
            before = np.cumsum(is_sw) - is_sw          # tree switches before, whole batch
            pos = before - before[starts][b_of]        # index of the switch's stack entry
            entries = np.add.reduceat(is_sw, starts)
            q = (pos - pos[par] - 1) * (is_sw * nr)    # foreign entries popped
            passes = q + m
            lookups = q + 2 * m
            simplified = m
            depth = q[par] + sib
            carried = entries[b_of] - 1 - pos[par]
        else:
            entries = np.diff(np.append(starts, k)) - 1
            marked_cs = np.zeros((nb, n + 1), np.int32)
            np.cumsum(marked, axis=1, out=marked_cs[:, 1:])
            below = marked_cs.ravel()[b_of * (n + 1) + t.end.ravel()[tix]] - rank - 1
            if fam.walk != "port-reactive":             # port predictive, hops
                trailing = (rank[par] + below[par] - rank) * nr
                passes = below + np.bincount(par, weights=trailing, minlength=k).astype(np.int64)
                depth = below[par]
                carried = below
                if fam.walk == "hops":
                    sub = np.bincount(par, weights=carried * nr, minlength=k).astype(np.int64)
                    lookups = below + sub + m - is_sw
                    simplified = np.zeros(k, np.int64)
                else:
                    lookups = 2 * passes
                    simplified = m
            else:                                      # port reactive
                total = entries[b_of]
                passes = (total - rank) * is_sw
                lookups = 2 * passes
                simplified = m
                depth = rank - rank[par]
                carried = total - rank
        recirculations = passes - is_sw
        base = ETH_HEADER_BYTES + payload_bytes + fam.size_bytes
        frame_bytes = (base + fam.entry_bytes * carried) * nr
        # arrival times, level by level, in the reference's order of operations
        time = np.empty(k, np.float64)
        time[starts] = d.feed_in_s + pub_delay
        delay = t.delay.ravel()[tix]
        step = (depth - 1) * d.pass_s
        for a, z in zip(bounds[:-1], bounds[1:], strict=True):
            c = by_level[a:z]
            time[c] = ((time[par[c]] + d.switch_s) + step[c]) + delay[c]
        par[starts] = -1
        return _Batch(starts=starts, node=t.node.ravel()[tix], parent=par, t=time,
                      frame_bytes=frame_bytes, passes=passes, recirculations=recirculations,
                      lookups=lookups, simplified=simplified, entries=entries,
                      pub_bytes=base + fam.entry_bytes * entries, drops=drops)

