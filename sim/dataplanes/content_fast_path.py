"""Fast path of the content filters: the installed tables evaluated on each event, one walk.

The content filters (``pleroma-dz``, ``range-boxes``, ``camus-bdd``,
``kundel-id``, ``kundel-bitmask``) decide in every switch, from the event
their packet carries, which ports get a copy; false positives included,
that is what they deliver. :class:`ContentFastPath` (a
:class:`~sim.dataplanes.fast_path.FastPath`) computes what the pass-by-pass
reference (:func:`sim.engines.static.run_notification`) computes, without
packets: each state's tables are compiled once
(:mod:`sim.dataplanes.content_program`, by the family's
:class:`ContentFamily` in ``sim/dataplanes/<family>/fast_path.py``), each
event becomes its table keys, and :func:`sim.dataplanes.content_walk.walk_kernel`
walks the frames switch by switch (numba where installed). Frames and
bytes per link, passes, lookups, drops, deliveries, duplicates, first
arrivals bit for bit, header sizes: the reference's. It also computes the
strategy's per-notification metrics (link false positives on the routing
tree, network false positives against reference flows, the worst lookup
latency), which the strategy's ``extra`` callback turns into its
:class:`~strategies.base.ExtraMetrics` under ``metrics[i]["extra"]``.

Content filters evaluate the event, so :meth:`ContentFastPath.metrics` needs
each notification (``needs_notifications``) and its installed state
(``needs_states``); the per-state facts the controller kept besides the
tables (its data-plane configuration, lookup latencies, header, reference
flows) come from the strategy as a :class:`ContentState` (``state_info``).

Declined (``None``, the reference runs): a publisher or receiver that is
not a host, a notification without an event or with an event of another
width, tables with values beyond int64 (:class:`~sim.dataplanes.content_program.Unsupported`),
and walks the reference would end with an error (an action it cannot run, a
port that does not exist) or that cross more frames than a tree walk can.

References
----------
Seeds 001-004 (the data planes, see the families' reference models); seed
000 §3.5.4 (delay model); shared/DESIGN.md "Data planes" (fast paths proven
equal to the reference).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, is_not
from typing import Any, Protocol

import numpy as np

from sim.dataplanes import content_walk as walk
from sim.dataplanes.caches import Identity, Store
from sim.dataplanes.content_program import (
    Program,
    SwitchPiece,
    TopologyArrays,
    Unsupported,
    no_net,
    same_decisions,
    topology_arrays,
)
from sim.dataplanes.control_state import ControlState, SwitchConfig
from sim.dataplanes.delivery import METRIC_KEYS, DelayModel, Delivery, SwitchCount
from sim.dataplanes.fast_path import Encoder, KernelChoice
from sim.dataplanes.packet import ETH_HEADER_BYTES, Notification
from topologies.model import Topology

#: Notifications per kernel call (a call costs about 0.1 ms besides its notifications).
BATCH = 1024
IMPLS = ("jit", "python")
#: A switch without rules (no flows: every lookup misses).
_NO_RULES = SwitchPiece()


@dataclass(frozen=True, eq=False)
class ContentState:
    """What a content fast path knows of one installed state besides its tables.

    Attributes
    ----------
    model : object
        The family's data-plane model as configured when the state was built
        (layout, field orders).
    latency_us : numpy.ndarray
        Lookup latency of each switch (topology order) under the state, us.
    header : (int, int, int)
        Packets the publisher sends, header entries, header bytes (the
        strategy's encoding; the same for every event).
    event_key : object, optional
        Family-specific: how an event becomes its table key (the prefix
        filter's :class:`~sim.dataplanes.prefix_filter.fast_path.DzKey`).
    reference : mapping, optional
        Reference flows per switch (PLEROMA's unlimited flows, ingress port
        -> flow table) for the network false positives; None: they equal
        the link false positives.
    """

    model: Any
    latency_us: np.ndarray
    header: tuple[int, int, int]
    event_key: Any = None
    reference: Any = None


class ContentFamily(Protocol):
    """How one content-filter family's tables and events become kernel arrays."""

    def n_fields(self, info: ContentState) -> int:
        """Key columns of the family's rules."""
        ...

    def switch_key(self, switch: str, info: ContentState) -> Hashable:
        """What :meth:`switch_piece` depends on besides the switch's configuration."""
        ...

    def switch_piece(self, switch: str, config: SwitchConfig, info: ContentState
                     ) -> SwitchPiece:
        """The switch's compiled tables (raise ``Unsupported`` where they do not fit)."""
        ...

    def keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        """Table keys of each event (``values``: events x attributes), int64 rows."""
        ...

    def hashes(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        """The header's CRC32 of each event (Camus's ECMP bucket), or zeros."""
        ...

    def net_piece(self, flows: Any, info: ContentState) -> SwitchPiece:
        """One switch's reference flows (``info.reference[switch]``) as one-field rules."""
        ...

    def net_keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        """The reference flows' key of each event (events x 1)."""
        ...

    def net_to_keys(self, info: ContentState, lo: np.ndarray, hi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Bounds on the reference flows' key as bounds on the table key: ``(lo', hi')``
        with ``lo <= net_key <= hi`` iff ``lo' <= key <= hi'`` for every event, -1 where
        there are none (see :func:`~sim.dataplanes.content_program.same_decisions`)."""
        ...


def available_impls() -> tuple[str, ...]:
    """The kernel implementations on this machine ("jit" needs numba)."""
    return IMPLS if walk.jit_kernel() is not None else ("python",)


class ContentFastPath(KernelChoice):
    """The content filters' fast path on one topology (see the module docstring).

    Parameters
    ----------
    topology : Topology
    delays : DelayModel
    family : ContentFamily
        The family's compiler.
    encode : Encoder
        The strategy's encoder (the encoding of :meth:`delivery`).
    state_info : callable
        ``state_info(state)`` -> :class:`ContentState` of a state the strategy
        built (raises ``LookupError`` for others: declined).
    extras : callable
        ``extras(state, link_fp, network_fp, latency_us)`` -> the strategy's extra
        metrics (``metrics[i]["extra"]``) of notifications served by ``state`` in
        order, given their link and network false positives and worst lookup
        latencies as equally long lists (one call per batch of one state).
    tree_parent : numpy.ndarray
        The routing tree's parent of every node (switches, then hosts; -1 at the
        root): the paths link false positives and latencies are measured on.
    walked : bool
        Routes are not the tree (Camus's up ports): a crossing is a link false
        positive when no receiver was reached from it.
    impl : {"auto", "jit", "python"}
    """

    #: :meth:`metrics` needs each notification's installed state and its event.
    needs_states = True
    needs_notifications = True

    def __init__(self, topology: Topology, delays: DelayModel, family: ContentFamily,
                 encode: Encoder, state_info: Callable[[ControlState], ContentState],
                 extras: Callable[[ControlState, list[int], list[int], list[float]],
                                  list[Any]],
                 tree_parent: np.ndarray, walked: bool, impl: str = "auto") -> None:
        self.choose_kernels(impl, IMPLS, available_impls())
        self.topology = topology
        self.delays = delays
        self.family = family
        self.encode = encode
        self.state_info = state_info
        self.extras = extras
        self.tree_parent = tree_parent
        self.walked = walked
        self.arrays: TopologyArrays = topology_arrays(topology)
        self._hosts = frozenset(topology.hosts)
        self._programs: Store[Identity, Any] = Store("content programs", 4)
        self._pieces: Store[tuple[Any, ...], SwitchPiece] = Store(
            "content pieces", 4 * len(topology.switches) + 64)
        self._cap = 4 * self.arrays.n_slots + 16
        self._work = walk.work_arrays(len(self.arrays.names), self.arrays.n_slots, self._cap)
        kernel = walk.walk_kernel if self._impl == "python" else walk.jit_kernel()
        if kernel is None:  # numba went away after the check above
            raise RuntimeError("the compiled content kernel is not available")
        self._kernel: Callable[..., None] = kernel

    def using(self, impl: str) -> ContentFastPath:
        """The same fast path computed by implementation ``impl``."""
        return ContentFastPath(self.topology, self.delays, self.family, self.encode,
                               self.state_info, self.extras, self.tree_parent, self.walked, impl)

    # -- public API -------------------------------------------------------------------
    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int, states: Sequence[ControlState] | None = None,
                notifications: Sequence[Notification] | None = None
                ) -> list[dict[str, Any] | None]:
        """Row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS`, then ``extra``: the
        strategy's extra metrics) per notification; None where the reference must run,
        and for every notification without ``states`` and ``notifications``
        (:meth:`metric_batch` as one dictionary per row)."""
        return self.metric_batch(publishers, receiver_sets, payload_bytes, states,
                                 notifications).rows()

    def metric_batch(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                     payload_bytes: int, states: Sequence[ControlState] | None = None,
                     notifications: Sequence[Notification] | None = None) -> MetricBatch:
        """:meth:`metrics` as columns (what the cell pipeline builds its rows from)."""
        n = len(publishers)
        ints = np.zeros((len(_INT_KEYS), n), np.int64)
        delay_ms = np.zeros(n, np.float64)
        extras: list[Any] = [None] * n
        taken = np.zeros(n, bool)
        if states is None or notifications is None:
            return MetricBatch(ints, delay_ms, extras, taken)
        for idx in self._groups(publishers, receiver_sets, notifications, states):
            state = states[idx[0]]
            for a in range(0, len(idx), BATCH):
                part = idx[a:a + BATCH]
                lo, hi = part[0], part[-1] + 1
                if hi - lo == len(part):  # consecutive notifications: slices
                    pubs, sets, notes = publishers[lo:hi], receiver_sets[lo:hi], \
                        notifications[lo:hi]
                else:
                    pubs = [publishers[i] for i in part]
                    sets = [receiver_sets[i] for i in part]
                    notes = [notifications[i] for i in part]
                got = self._run(state, pubs, sets, notes, detail=False)
                if got is None:
                    continue
                info, m, f = got
                ok = m[:, walk.ERROR] == walk.OK
                counts = np.fromiter(map(len, sets), np.int64, len(sets))
                rows: Any
                if ok.all() and hi - lo == len(part):
                    rows = slice(lo, hi)
                else:
                    m, f, counts = m[ok], f[ok], counts[ok]
                    rows = np.asarray(part)[ok]
                got_extras = self.extras(state, m[:, walk.LINK_FP].tolist(),
                                         m[:, walk.NETWORK_FP].tolist(),
                                         f[:, walk.WORST_LATENCY].tolist())
                _fill(ints, delay_ms, rows, m, f, counts, info.header, payload_bytes)
                taken[rows] = True
                if isinstance(rows, slice):
                    extras[rows] = got_extras
                else:
                    for i, x in zip(rows.tolist(), got_extras, strict=True):
                        extras[i] = x
        return MetricBatch(ints, delay_ms, extras, taken)

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The full :class:`~sim.dataplanes.delivery.Delivery` of one notification (the
        strategy's own encoding), or None where the reference must run."""
        pub = notification.publisher
        if not self._takes(pub, receivers, notification):
            return None
        got = self._run(state, [pub], [receivers], [notification], detail=True)
        if got is None or got[1][0, walk.ERROR] != walk.OK:
            return None
        _, m, _ = got
        encoding = self.encode(self.topology, state, notification, receivers, payload)
        out = Delivery(publisher=pub, receivers=receivers, encoding=encoding)
        frame = encoding.packets[0].frame_bytes
        names, n_sw = self.arrays.names, self.arrays.n_switches
        trace, trace_t = self._trace
        nc = int(m[0, walk.CROSSINGS])
        src, dst, look = trace[:, :nc].tolist()
        times = trace_t[:nc].tolist()
        for u, v, lk, t in zip(src, dst, look, times, strict=True):
            rec = out.links.setdefault((names[u], names[v]), [0, 0])
            rec[0] += 1
            rec[1] += frame
            name = names[v]
            if v < n_sw:
                count = out.switches.setdefault(name, SwitchCount())
                count.passes += 1
                count.lookups += lk
            else:
                out.delivered[name] = out.delivered.get(name, 0) + 1
                out.first_arrival_s.setdefault(name, t)
        out.drops = int(m[0, walk.DROPS])
        return out

    # -- internals ----------------------------------------------------------------------
    def _groups(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                notifications: Sequence[Notification], states: Sequence[ControlState]
                ) -> Iterable[Sequence[int]]:
        """The notifications the kernel takes (:meth:`_takes`), by installed state in order
        of first use, each state's in order. One state for all of them and all taken (as
        the bench and cells without churn have them): checked at once, without a Python
        step per notification."""
        n = len(publishers)
        if len(receiver_sets) != n or len(notifications) != n or len(states) != n:
            raise ValueError("publishers, receiver sets, notifications and states differ "
                             "in length")
        hosts = self._hosts
        ids = list(map(id, states))
        if (n and ids.count(ids[0]) == n
                and all(map(is_not, map(_event, notifications), repeat(None)))
                and hosts.issuperset(publishers)
                and hosts.issuperset(chain.from_iterable(receiver_sets))
                and list(map(_publisher, notifications)) == list(publishers)):
            return [range(n)]
        groups: dict[int, list[int]] = {}
        last: ControlState | None = None
        idx: list[int] = []
        for i, (pub, rs, note, state) in enumerate(zip(publishers, receiver_sets, notifications,
                                                       states, strict=True)):
            if note.event is None or note.publisher != pub or pub not in hosts or not rs <= hosts:
                continue
            if state is not last:
                last, idx = state, groups.setdefault(id(state), [])
            idx.append(i)
        return groups.values()

    def _takes(self, pub: str, receivers: frozenset[str], note: Notification) -> bool:
        return (note.event is not None and pub in self._hosts and receivers <= self._hosts
                and note.publisher == pub)

    def _program(self, state: ControlState) -> tuple[ContentState, Program, tuple] | None:  # type: ignore[type-arg]
        """The state's info, compiled tables and reference flows (None: declined)."""
        key = Identity(state)
        hit = self._programs.get(key)
        if hit is None:
            hit = self._programs.put(key, self._compile(state) or ())
        return hit or None  # type: ignore[no-any-return]

    def _compile(self, state: ControlState) -> tuple[ContentState, Program, tuple] | None:  # type: ignore[type-arg]
        try:
            info = self.state_info(state)
        except LookupError:
            return None
        fam = self.family
        try:
            pieces = []
            for sw in self.topology.switches:
                config = state.config(sw)
                pkey = (Identity(config), fam.switch_key(sw, info))
                piece = self._pieces.get(pkey)
                if piece is None:
                    piece = self._pieces.put(pkey, fam.switch_piece(sw, config, info))
                pieces.append(piece)
            program = Program(self.arrays, pieces, fam.n_fields(info))
            if info.reference is None:
                net = no_net(self.arrays)
            else:
                net_pieces = []
                for sw in self.topology.switches:
                    flows = info.reference.get(sw)
                    if not flows:
                        net_pieces.append(_NO_RULES)
                        continue
                    nkey = (Identity(flows), "reference")
                    piece = self._pieces.get(nkey)
                    if piece is None:
                        piece = self._pieces.put(nkey, fam.net_piece(flows, info))
                    net_pieces.append(piece)
                reference = Program(self.arrays, net_pieces, 1)
                same = same_decisions(self.arrays, program, reference,
                                      lambda lo, hi: fam.net_to_keys(info, lo, hi))
                net = reference.net_args(same)
        except Unsupported:
            return None
        return info, program, net

    def _run(self, state: ControlState, pubs: Sequence[str], sets: Sequence[frozenset[str]],
             notes: Sequence[Notification], detail: bool
             ) -> tuple[ContentState, np.ndarray, np.ndarray] | None:
        """Kernel over one batch of one state: (info, int columns, float columns), the
        columns of :mod:`~sim.dataplanes.content_walk` (``out_m``, ``out_f``)."""
        compiled_state = self._program(state)
        if compiled_state is None:
            return None
        info, program, net = compiled_state
        fam, arrays = self.family, self.arrays
        try:
            values = np.asarray([n.event for n in notes], np.int64)
        except (OverflowError, ValueError):
            return None
        if values.ndim != 2 or info.header[0] != 1:  # one packet per event, as encoded
            return None
        try:
            keys = fam.keys(info, values)
            net_keys = (fam.net_keys(info, values) if info.reference is not None
                        else np.zeros((len(notes), 1), np.int64))
        except Unsupported:
            return None
        # publishers and receivers by node index, without a Python step per notification
        i64 = np.int64
        nb = len(pubs)
        index = arrays.gid.__getitem__
        pub_ids = np.fromiter(map(index, pubs), i64, nb)
        rcv_start = np.zeros(nb + 1, i64)
        np.cumsum(np.fromiter(map(len, sets), i64, nb), out=rcv_start[1:])
        rcv = np.fromiter(map(index, chain.from_iterable(sets)), i64, int(rcv_start[-1]))
        note_args = (pub_ids, arrays.slot_start[pub_ids], keys, net_keys,
                     fam.hashes(info, values), rcv, rcv_start)
        d = self.delays
        while True:
            out_m = np.zeros((nb, walk.N_COLUMNS), i64)
            out_f = np.zeros((nb, 2), np.float64)
            trace, trace_t = self._trace_buffers(self._cap if detail else 0)
            self._kernel(arrays.kernel_args(), self.tree_parent, program.rules, program.actions,
                         program.camus, program.bdd, net, info.latency_us, note_args,
                         (d.feed_in_s, d.switch_s, d.pass_s), int(self.walked), out_m, out_f,
                         int(detail), trace, trace_t, *self._work)
            full = out_m[:, walk.ERROR] == walk.TOO_MANY_FRAMES
            if not full.any() or self._cap >= 64 * arrays.n_slots + 16:
                break
            self._cap *= 4  # a walk longer than a tree's: more room, once or twice
            self._work = walk.work_arrays(len(arrays.names), arrays.n_slots, self._cap)
        return info, out_m, out_f

    def _trace_buffers(self, cap: int) -> tuple[np.ndarray, np.ndarray]:
        self._trace = (np.zeros((3, cap), np.int64), np.zeros(cap, np.float64))
        return self._trace


_event = attrgetter("event")
_publisher = attrgetter("publisher")


#: The integer row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS` but the delay),
#: in order: the rows of :class:`MetricBatch`'s ``ints``.
_INT_KEYS = tuple(k for k in METRIC_KEYS if k != "delay_worst_ms")


@dataclass(frozen=True, slots=True, eq=False)
class MetricBatch:
    """Row metrics of notifications as columns (:meth:`ContentFastPath.metric_batch`).

    Attributes
    ----------
    ints : numpy.ndarray
        One row per integer metric (``_INT_KEYS``, :data:`~sim.dataplanes.delivery.METRIC_KEYS`
        order without ``delay_worst_ms``), one column per notification (0 where not taken).
    delay_ms : numpy.ndarray
        ``delay_worst_ms`` per notification.
    extras : list
        The strategy's extra metrics per notification (None where not taken).
    taken : numpy.ndarray
        Whether the fast path computed the notification (False: the reference must run).
    """

    ints: np.ndarray
    delay_ms: np.ndarray
    extras: list[Any]
    taken: np.ndarray

    def column(self, key: str) -> np.ndarray:
        """The values of row metric ``key`` (:data:`~sim.dataplanes.delivery.METRIC_KEYS`)."""
        return self.delay_ms if key == "delay_worst_ms" else self.ints[_INT_KEYS.index(key)]

    def rows(self) -> list[dict[str, Any] | None]:
        """One dictionary per notification (:data:`~sim.dataplanes.delivery.METRIC_KEYS`,
        then ``extra``), None where not taken."""
        columns = zip(*self.ints.tolist(), self.delay_ms.tolist(), self.extras,
                      self.taken.tolist(), strict=True)
        return [{
            "delivered": d, "false_positives": fp, "false_negatives": fn, "duplicates": dup,
            "header_entries": he, "header_bytes": hb, "packets_sent": ps_, "frames": fr,
            "bytes": by, "passes": ps, "recirculations": rc, "lookups": lk,
            "circulations_simplified": cs, "max_switch_passes": mp, "delay_worst_ms": ms,
            "link_false_positives": w, "extra": x,
        } if ok else None for d, fp, fn, dup, he, hb, ps_, fr, by, ps, rc, lk, cs, mp, w, ms, x, ok
            in columns]


def _fill(ints: np.ndarray, delay_ms: np.ndarray, rows: Any, m: np.ndarray, f: np.ndarray,
          n_receivers: np.ndarray, header: tuple[int, int, int], payload_bytes: int) -> None:
    """Write the row metrics of notifications ``rows`` (a slice or indices) from the kernel's
    columns (``m``, ``f``: their rows of ``out_m``, ``out_f``), their receiver counts and one
    state's ``header``."""
    packets, entries, header_bytes = header
    frame = ETH_HEADER_BYTES + header_bytes + payload_bytes
    delivered = m[:, walk.DELIVERED]
    got = m[:, walk.DELIVERED_RECEIVERS]
    frames = m[:, walk.FRAMES]
    for key, values in (
            ("delivered", delivered), ("false_positives", delivered - got),
            ("false_negatives", n_receivers - got), ("duplicates", m[:, walk.DUPLICATES]),
            ("header_entries", entries), ("header_bytes", header_bytes),
            ("packets_sent", packets), ("frames", frames), ("bytes", frames * frame),
            ("passes", m[:, walk.PASSES]), ("lookups", m[:, walk.LOOKUPS]),
            ("max_switch_passes", m[:, walk.MAX_PASSES]),
            ("link_false_positives", m[:, walk.WASTE])):
        ints[_INT_KEYS.index(key), rows] = values
    delay_ms[rows] = f[:, walk.WORST_ARRIVAL] * 1e3
