"""Row metrics of a batch of encoded notifications through the virtual-tree walk kernel.

:class:`WalkBatch` lays a batch out for
:func:`sim.dataplanes.virtual_tree.walk_kernel.walk_kernel`: each
notification's publisher, the row of its installed state
(:class:`~sim.dataplanes.virtual_tree.walk_tables.WalkTables`), its packets
(labels as the switches parse them, sorted copies for lookups, frame bytes)
and its receivers; runs the kernel (compiled, or interpreted on lists) and
returns the row metrics. It declines (None) what the Python walk declines
before walking: a publisher that is not a host, a packet with a repeated
label, a header the label counts cannot decode (``count_labels`` raises);
the kernel declines the rest.

The header's tree, stop and hop labels (``header_*_labels``) are counted as
:func:`sim.dataplanes.virtual_tree.codec.count_labels` counts them, from each
packet's header bytes.

References
----------
Seed 000 §5.2.4 (label types), §5.2.6; shared/DESIGN.md "Data planes".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, cast

import numpy as np

from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.packet import ETH_HEADER_BYTES, Encoding
from sim.dataplanes.virtual_tree import walk_layout as wk
from sim.dataplanes.virtual_tree.codec import (
    KIND_HOP,
    KIND_STOP,
    KIND_TREE,
    LabelFormat,
)
from sim.dataplanes.virtual_tree.walk_kernel import (
    SOURCE_DIGEST,
    STALE,
    compiled,
    walk_kernel,
)
from sim.dataplanes.virtual_tree.walk_tables import WalkTables, WalkTopology
from topologies.model import Topology

#: Row-metric names of the header's label counts (``strategies.base.HEADER_LABEL_FIELDS``).
LABEL_FIELDS = ("header_tree_labels", "header_stop_labels", "header_hop_labels")
#: Queue entries and chain links the kernel starts with (doubled when a walk needs more),
#: and beyond which a notification is left to the Python walk.
FIRST_QUEUE = 1024
MAX_SCRATCH = 1 << 25
#: Notifications laid out at once.
BATCH = 1024
#: Big-endian unsigned dtypes of the label widths (bytes) numpy reads directly.
_UNSIGNED: dict[int, np.dtype[Any]] = {1: np.dtype(">u1"), 2: np.dtype(">u2"), 4: np.dtype(">u4"),
                                      8: np.dtype(">u8")}
#: Label widths up to which the kernel finds labels in a stack by direct address (a
#: scratch region of ``2 ** label_bits`` entries) instead of by binary search.
DENSE_BITS = 16


def _shifted(fallback: Callable[[int], dict[str, Any] | None], offset: int, i: int
             ) -> dict[str, Any] | None:
    return fallback(offset + i)


def _labels_array(chunks: Sequence[bytes | Sequence[int]], label_bytes: int) -> np.ndarray:
    """The labels of ``chunks`` in order, as int64: each chunk a packet's labels, either as
    the header's bytes after ``Size`` (``label_bytes`` each, big endian, as the codec
    writes them; read at once, not label by label) or as integers."""
    if all(type(c) is bytes for c in chunks):
        if not chunks:
            return np.zeros(0, dtype=np.int64)
        return np.frombuffer(b"".join(cast(Sequence[bytes], chunks)),
                             dtype=_UNSIGNED[label_bytes]).astype(np.int64)
    return np.concatenate([np.zeros(0, dtype=np.int64), *(
        np.frombuffer(c, dtype=_UNSIGNED[label_bytes]).astype(np.int64) if type(c) is bytes
        else np.array(c, dtype=np.int64) for c in chunks)])


def _label_counts(fmt: LabelFormat, n: int, lab: np.ndarray, packets: np.ndarray,
                  counted_by: list[int], other: list[int], other_by: list[int]
                  ) -> tuple[list[list[int]], list[int]]:
    """Tree, stop and hop labels per notification, and labels of no type (count_labels
    raises): the parsed labels of packets whose header holds exactly them, else those
    decoded from the header (``other``)."""
    kinds = np.concatenate([lab, np.array(other, dtype=np.int64)])
    kinds >>= fmt.id_bits
    sizes = packets[wk.K_N::wk.PACKET_W]
    by = np.concatenate([np.repeat(np.array(counted_by, dtype=np.int64), sizes),
                         np.array(other_by, dtype=np.int64)])
    kinds, by = kinds[by >= 0], by[by >= 0]
    per_kind = [np.bincount(by, weights=kinds == kind, minlength=n).astype(np.int64)
                for kind in (KIND_TREE, KIND_STOP, KIND_HOP)]
    invalid = np.bincount(by, minlength=n) - sum(per_kind)
    return [c.tolist() for c in per_kind], invalid.tolist()


class WalkBatch:
    """The kernel's inputs and scratch for one topology, delay model and label format.

    Parameters
    ----------
    topology, delays, fmt
    caches : Caches
        Holds the topology's :class:`WalkTopology` and the format's
        :class:`WalkTables` (``caches.vt_tables``).
    impl : {"jit", "python"}
        The compiled kernel or the interpreted one.
    """

    def __init__(self, topology: Topology, delays: DelayModel, fmt: LabelFormat,
                 caches: Caches, impl: str) -> None:
        self.topology = topology
        self.delays = delays
        self.fmt = fmt
        self.impl = impl
        self.links: WalkTopology = caches.vt_tables.get_or_make(
            ("links", Identity(topology)), lambda: WalkTopology(topology))
        self.tables: WalkTables = caches.vt_tables.get_or_make(
            ("tables", fmt), lambda: WalkTables(fmt))
        self._queue = FIRST_QUEUE
        self._chain = FIRST_QUEUE
        self._sc: np.ndarray | None = None
        self._sf: np.ndarray | None = None
        self._hosts = frozenset(topology.hosts)

    def kernel(self) -> Callable[..., Any]:
        if self.impl == "python":
            return walk_kernel
        jit = compiled()
        if jit is None:
            raise RuntimeError("the compiled virtual-tree walk kernel is not available")
        return jit

    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                encodings: Sequence[Encoding | None], states: Sequence[ControlState],
                fallback: Callable[[int], dict[str, Any] | None]
                ) -> list[dict[str, Any] | None]:
        """Row metrics per notification (None: declined; ``encodings[i]`` None: the
        encoder raised); ``fallback(i)`` computes one the kernel's scratch cannot hold."""
        out: list[dict[str, Any] | None] = []
        for a in range(0, len(publishers), BATCH):
            b = min(a + BATCH, len(publishers))
            out.extend(self._batch(publishers[a:b], receiver_sets[a:b], encodings[a:b],
                                   states[a:b], partial(_shifted, fallback, a)))
        return out

    def _batch(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
               encodings: Sequence[Encoding | None], states: Sequence[ControlState],
               fallback: Callable[[int], dict[str, Any] | None]
               ) -> list[dict[str, Any] | None]:
        fmt, tables = self.fmt, self.tables
        if tables.size() > tables.LIMIT:
            tables.clear()
        index = self.links.index
        sb, lb = fmt.size_bytes, fmt.label_bytes
        notes: list[int] = []
        rc: list[int] = []
        packets: list[int] = []
        lab: list[bytes | Sequence[int]] = []  # per packet its labels (see _labels_array)
        n_lab = 0
        whole = lb in _UNSIGNED  # labels read from a header's bytes at once
        counted_by: list[int] = []  # per packet: the notification whose labels count its own
        other: list[int] = []  # labels count_labels decodes where the switches parse others
        other_by: list[int] = []
        unknown: list[int] = []  # receivers that are no node (never delivered)
        rows: list[int] = []  # notification -> its row in ``notes``, or -1 (declined)
        hosts, row_of, topology = self._hosts, tables.row, self.topology
        for i, (pub, receivers, enc, state) in enumerate(
                zip(publishers, receiver_sets, encodings, states, strict=True)):
            rows.append(-1)
            if enc is None or pub not in hosts:
                continue
            mine: list[tuple[Sequence[int], int, int, int, bytes | Sequence[int]]] = []
            extra: list[int] = []
            try:
                for p in enc.packets:
                    parsed = fmt.parse(p)
                    if parsed is None:
                        mine.append(((), p.frame_bytes, p.frame_bytes, -1, ()))
                        extra.extend(fmt.decode(p.header)[0])
                        continue
                    labels = parsed[0]
                    same = len(p.header) == sb + len(labels) * lb
                    if not same:  # what count_labels decodes differs from what is parsed
                        extra.extend(fmt.decode(p.header)[0])
                    mine.append((labels, ETH_HEADER_BYTES + sb + len(parsed[1]), p.frame_bytes,
                                 i if same else -1, p.header[sb:] if same and whole else labels))
            except ValueError:  # count_labels raises it: the reference's extra metrics do too
                continue
            k0 = len(packets) // wk.PACKET_W
            for stack, rest, frame, by, chunk in mine:
                packets += (n_lab, len(stack), rest, frame)
                n_lab += len(stack)
                lab.append(chunk)
                counted_by.append(by)
            if extra:
                other.extend(extra)
                other_by.extend([i] * len(extra))
            found = list(map(index.get, receivers))
            n_unknown = found.count(None)
            ids = [x for x in found if x is not None] if n_unknown else found
            rows[i] = len(notes) // wk.NOTE_W
            notes += (index[pub], row_of(state, topology), k0, k0 + len(mine), len(rc),
                      len(rc) + len(ids))
            rc.extend(ids)  # type: ignore[arg-type]
            unknown.append(n_unknown)
        # the labels and packets as arrays once (hundreds of labels per notification)
        lab_a, pk = _labels_array(lab, lb), np.array(packets, dtype=np.int64)
        per_kind, invalid = _label_counts(fmt, len(rows), lab_a, pk, counted_by, other,
                                          other_by)
        result = self._run(notes, rc, pk, lab_a)
        out: list[dict[str, Any] | None] = []
        for i, row in enumerate(rows):
            got = result.get(row) if row >= 0 and not invalid[i] else None
            if got is None:  # declined
                out.append(None)
            elif got == "fallback":
                out.append(fallback(i))
            else:
                enc = encodings[i]
                assert enc is not None
                m, worst = got
                out.append({
                    "delivered": m[wk.O_DELIVERED], "false_positives": m[wk.O_FP],
                    "false_negatives": m[wk.O_FN] + unknown[row], "duplicates": m[wk.O_DUP],
                    "header_entries": enc.header_entries, "header_bytes": enc.header_bytes,
                    "packets_sent": len(enc.packets), "frames": m[wk.O_FRAMES],
                    "bytes": m[wk.O_BYTES], "passes": m[wk.O_PASSES],
                    "recirculations": m[wk.O_RECIRC], "lookups": m[wk.O_LOOKUPS],
                    "circulations_simplified": 0, "max_switch_passes": m[wk.O_MAX_PASSES],
                    "delay_worst_ms": worst * 1e3, "link_false_positives": m[wk.O_WASTE],
                    LABEL_FIELDS[0]: per_kind[0][i], LABEL_FIELDS[1]: per_kind[1][i],
                    LABEL_FIELDS[2]: per_kind[2][i]})
        return out

    def _run(self, notes: list[int], rc: list[int], packets: np.ndarray, lab: np.ndarray
             ) -> dict[int, Any]:
        """Run the kernel over the laid-out notifications: row -> (metrics, worst first
        arrival) or "fallback" (its walk outgrew the scratch); declined rows are absent."""
        n_notes = len(notes) // wk.NOTE_W
        if not n_notes:
            return {}
        bt, lay, repeated = self._batch_array(notes, rc, packets, lab)
        out_i = np.zeros(wk.OUT_W * n_notes, dtype=np.int64)
        out_t = np.zeros(n_notes)
        lists = self.impl == "python"
        tb = self.tables.array(as_list=lists)
        kernel = self.kernel()
        tp, td = self.links.lists() if lists else (self.links.tp, self.links.td)
        d = self.delays
        fallback: set[int] = set()
        start = 0
        stale = False
        while start >= 0:
            sc, sf = self._scratch(lay)
            args = [np.array(lay, dtype=np.int64), tp, td, tb, bt, sc, sf, out_i, out_t]
            if lists:
                args = [a if isinstance(a, list) else a.tolist() for a in args]
            try:
                done = kernel(SOURCE_DIGEST, start, n_notes, d.feed_in_s, d.switch_s, d.pass_s,
                              *args)
            except BaseException:
                self._sc = None  # its zero regions may not be zero any more
                raise
            if done == STALE:  # compiled (and cached) from other sources than these
                if stale:
                    raise RuntimeError("the virtual-tree walk kernel stays stale after a "
                                       "recompilation")
                stale = True
                kernel.recompile()  # type: ignore[attr-defined]
                continue
            if lists:
                out_i[:], out_t[:] = args[-2], args[-1]
            if done < 0:
                break
            if max(self._queue, self._chain) >= MAX_SCRATCH:
                fallback.add(done)
                start = done + 1 if done + 1 < n_notes else -1
            else:
                self._queue *= 2
                self._chain *= 2
                start = done
        rows = out_i.reshape(-1, wk.OUT_W).tolist()
        times = out_t.tolist()
        result: dict[int, Any] = {}
        for r in range(n_notes):
            if r in repeated:
                continue
            if r in fallback:
                result[r] = "fallback"
            elif rows[r][wk.O_STATUS] == wk.DONE:
                result[r] = (rows[r], times[r])
        return result

    def _batch_array(self, notes: list[int], rc: list[int], packets: np.ndarray,
                     lab: np.ndarray
                     ) -> tuple[np.ndarray, list[int], set[int]]:
        """``bt`` (notifications, receivers, packets, labels in stack order, and without
        the kernel's direct-address region ascending with their positions), the layout
        of everything but the queue and chain, and the notifications found holding a
        label twice (emptied: declined; the kernel finds them with the region)."""
        links, fmt = self.links, self.fmt
        lab_a = lab
        pk = packets.reshape(-1, wk.PACKET_W)
        notes_a = np.array(notes, dtype=np.int64)
        dense = 1 << fmt.label_bits if fmt.label_bits <= DENSE_BITS else 0
        repeated: set[int] = set()
        slab = spos = np.zeros(0, dtype=np.int64)
        if not dense:  # labels found by binary search: ascending per packet, and repeats
            of_label = np.repeat(np.arange(len(pk), dtype=np.int64), pk[:, wk.K_N])
            order = np.lexsort((lab_a, of_label)).astype(np.int64)
            slab = lab_a[order]
            spos = order - pk[of_label[order], wk.K_LO]
            same = (slab[1:] == slab[:-1]) & (of_label[order][1:] == of_label[order][:-1])
            repeated = set(np.searchsorted(notes_a[wk.N_PK_HI::wk.NOTE_W],
                                           of_label[order][1:][same], side="right").tolist())
            for r in repeated:
                notes_a[wk.NOTE_W * r + wk.N_PK_HI] = notes_a[wk.NOTE_W * r + wk.N_PK_LO]
        regions = (notes_a, np.array(rc, dtype=np.int64), pk.reshape(-1), lab_a, slab, spos)
        n_nodes = len(links.index)
        m = int(pk[:, wk.K_N].max(initial=0)) + 2
        clones = m + fmt.bitmask_bits + self.tables.max_outs + 1
        cum = np.concatenate([[0], np.cumsum(pk[:, wk.K_N])])
        per_note = cum[notes_a[wk.N_PK_HI::wk.NOTE_W]] - cum[notes_a[wk.N_PK_LO::wk.NOTE_W]]
        # regions that stay zero between notifications first, at fixed offsets (kept)
        sizes = (wk.NODE_REGIONS * n_nodes, wk.PAIR_REGIONS * links.n_pairs, dense,
                 n_nodes + links.n_pairs + 1, wk.STACK_REGIONS * m, (wk.CL_W + 1) * clones,
                 wk.RES_W, 3 * int(per_note.max(initial=0)) if dense else 0)
        starts = np.cumsum([0, *sizes]).tolist()
        lay = [0] * wk.LAYOUT_W
        lay[wk.L_NODES], lay[wk.L_SWITCHES], lay[wk.L_PAIRS] = (
            n_nodes, links.n_switches, links.n_pairs)
        lay[wk.L_LIMIT], lay[wk.L_LBYTES] = links.limit, fmt.label_bytes
        lay[wk.L_PORT_BASE:wk.L_PAIR_DST + 1] = links.offsets
        lay[wk.L_NOTES:wk.L_SPOS + 1] = np.cumsum([0, *(len(r) for r in regions[:-1])]).tolist()
        (lay[wk.L_NODE], lay[wk.L_PAIR], lay[wk.L_DENSE], lay[wk.L_BFS], lay[wk.L_STACK],
         lay[wk.L_CL], lay[wk.L_RES], lay[wk.L_ENTRIES], lay[wk.L_Q]) = starts
        lay[wk.L_STACK_M], lay[wk.L_CL_N], lay[wk.L_DENSE_N] = m, clones, dense
        lay[wk.L_FIRST], lay[wk.L_QT] = 0, n_nodes
        return np.concatenate(regions), lay, repeated

    def _scratch(self, lay: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """``sc`` and ``sf`` for layout ``lay`` (which gets the queue and chain): kept
        between runs, whose regions that must start zero stay zero (the kernel leaves
        them so; the stack marks and counters are cleared here)."""
        lay[wk.L_Q_N], lay[wk.L_CH_N] = self._queue, self._chain
        lay[wk.L_CH] = lay[wk.L_Q] + wk.Q_W * self._queue
        need = lay[wk.L_CH] + wk.CH_W * self._chain
        if self._sc is None or len(self._sc) < need:
            self._sc = np.zeros(need, dtype=np.int64)
        else:
            self._sc[lay[wk.L_STACK]:lay[wk.L_CL]] = 0
            self._sc[lay[wk.L_RES]:lay[wk.L_ENTRIES]] = 0
        n_floats = lay[wk.L_QT] + self._queue
        if self._sf is None or len(self._sf) < n_floats:
            self._sf = np.zeros(n_floats)
        return self._sc, self._sf
