"""Fast path of destination-label stacks (``destinations``): the walk over per-host paths.

The pass-by-pass reference (:func:`sim.engines.static.run_notification` with
:class:`~sim.dataplanes.neighbor_labels.reference.NeighborLabelsDataPlane`)
stays the definition. A destinations stack lists the receivers' DEST labels
by host id; every switch sends a label towards the BFS shortest path to its
host (:func:`sim.dataplanes.trees.next_hop_port`: the parent in the BFS tree
rooted at the host's switch). The walk is therefore the trie of the root-to-
receiver paths (a switch reached by two different path prefixes gets two
copies, each with its own labels). A switch receiving ``L`` labels scans
them one per pass (one ``check_dest`` lookup each), makes one clone per next
hop in the order of its first label ``k``, and each clone recirculates over
the ``L - 1 - k`` later labels (one lookup each) keeping those of its port:
``L + Σ_k (L - 1 - k)`` passes and as many lookups per arrival, one drop
(the original), and every copy leaves after pass ``L`` (seed 000 §4.2.2,
Fig. 4.2). First arrival times follow the reference's order of
floating-point operations: ``((t + switch_s) + (L - 1) pass_s) + delay``.

:class:`DestinationsFastPath` (a :class:`~sim.dataplanes.fast_path.FastPath`)
runs this walk per notification in :func:`walk_kernel`: compiled with numba
where it is installed (``impl="jit"``), else the same function in Python
(``impl="python"``); ``tests/sim/test_fast_paths.py`` checks both against
the reference. Oversized stacks (split or refused by the MTU policy),
receiver sets with the publisher or non-hosts are declined (the reference
runs).

References
----------
Seed 000 §4.2.2 (Fig. 4.2), §3.5.4 (delays); digest ch. 1-4 §3.7, §7.16.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel, Delivery, SwitchCount
from sim.dataplanes.fast_path import Encoder
from sim.dataplanes.packet import ETH_HEADER_BYTES, Notification
from sim.dataplanes.trees import bfs_next_hops
from sim.dataplanes.virtual_tree.codec import LabelFormat
from topologies.model import Topology

#: Columns of the per-notification summary of :func:`walk_kernel`.
FRAMES, BYTES, PASSES, ARRIVALS, MAX_PASSES, OK = range(6)


def _walk(roots: np.ndarray, ids: np.ndarray, counts: np.ndarray, pub_delay: np.ndarray,
          home: np.ndarray, host_delay: np.ndarray, nxt: np.ndarray, link_delay: np.ndarray,
          feed_s: float, switch_s: float, pass_s: float, base: int, label_bytes: int,
          summary: np.ndarray, worst: np.ndarray, work: np.ndarray, times: np.ndarray,
          gslot: np.ndarray, acc: np.ndarray, record: bool, rec: np.ndarray,
          rec_t: np.ndarray) -> int:
    """Walk each notification ``b`` (root switch ``roots[b]``, receivers ``ids`` (host
    indices by host id) in runs of ``counts[b]``): fill ``summary[b]`` (frames, bytes,
    passes, arrivals, most passes at a switch, 1 if walked) and ``worst[b]`` (latest
    arrival). With ``record``, rows of ``rec``/``rec_t`` list every switch visit
    ``(0, switch, passes, 0)`` and every frame ``(1, from, to, bytes)`` with its
    arrival time (node numbers: switches, then hosts); returns the rows written.

    ``work`` (9 rows), ``times``, ``gslot`` (all -1, left so) and ``acc`` (all 0,
    left so) are work arrays; ``nxt``/``link_delay`` are ``[host switch, switch]``
    next hops towards the host's switch and the delay of that link.
    """
    n_sw = nxt.shape[1]
    buf, st_s, st_a, st_l = work[0], work[1], work[2], work[3]
    gnode, gfirst, gcount, gpos, touched = work[4], work[5], work[6], work[7], work[8]
    nrec = 0
    off = 0
    for b in range(roots.shape[0]):
        r = counts[b]
        for j in range(r):
            buf[j] = ids[off + j]
        off += r
        top = r
        st_s[0], st_a[0], st_l[0] = roots[b], 0, r
        times[0] = feed_s + pub_delay[b]
        sp = 1
        frames, nbytes, passes, arrivals, most = 1, base + label_bytes * r, 0, 0, 0
        latest = -np.inf
        ok = 1
        visited = 0
        while sp > 0:
            sp -= 1
            s, a, n, t = st_s[sp], st_a[sp], st_l[sp], times[sp]
            ng = 0
            for j in range(a, a + n):  # next hop of every label, groups by first label
                h = buf[j]
                hs = home[h]
                nx = n_sw + h if hs == s else nxt[hs, s]
                if nx < 0:
                    ok = 0
                    break
                g = gslot[nx]
                if g < 0:
                    g = ng
                    gslot[nx] = g
                    gnode[g] = nx
                    gfirst[g] = j - a
                    gcount[g] = 0
                    ng += 1
                gcount[g] += 1
            if ok == 0:
                for g in range(ng):
                    gslot[gnode[g]] = -1
                break
            p = n
            for g in range(ng):
                p += n - 1 - gfirst[g]
            passes += p
            arrivals += 1
            if acc[s] == 0:
                touched[visited] = s
                visited += 1
            acc[s] += p
            if acc[s] > most:
                most = acc[s]
            if record:
                rec[nrec, 0], rec[nrec, 1], rec[nrec, 2], rec[nrec, 3] = 0, s, p, 0
                rec_t[nrec] = 0.0
                nrec += 1
            pos = top
            for g in range(ng):
                gpos[g] = pos
                pos += gcount[g]
            for j in range(a, a + n):  # stable partition of the labels by next hop
                h = buf[j]
                hs = home[h]
                nx = n_sw + h if hs == s else nxt[hs, s]
                g = gslot[nx]
                buf[gpos[g]] = h
                gpos[g] += 1
            out = t + switch_s + (n - 1) * pass_s
            start = top
            for g in range(ng):
                nx = gnode[g]
                cnt = gcount[g]
                gslot[nx] = -1
                fb = base + label_bytes * cnt
                frames += 1
                nbytes += fb
                if nx >= n_sw:
                    ta = out + host_delay[nx - n_sw]
                    if ta > latest:
                        latest = ta
                else:
                    ta = out + link_delay[home[buf[start]], s]
                    st_s[sp], st_a[sp], st_l[sp] = nx, start, cnt
                    times[sp] = ta
                    sp += 1
                if record:
                    rec[nrec, 0], rec[nrec, 1], rec[nrec, 2], rec[nrec, 3] = 1, s, nx, fb
                    rec_t[nrec] = ta
                    nrec += 1
                start += cnt
            top = pos
        for j in range(visited):
            acc[touched[j]] = 0
        summary[b, FRAMES], summary[b, BYTES], summary[b, PASSES] = frames, nbytes, passes
        summary[b, ARRIVALS], summary[b, MAX_PASSES], summary[b, OK] = arrivals, most, ok
        worst[b] = latest
    return nrec


#: The compiled :func:`_walk` (None without numba or with ``STACKCAST_NO_JIT=1``).
walk_kernel: Callable[..., Any] | None = None
if os.environ.get("STACKCAST_NO_JIT", "") in ("", "0"):
    try:
        import numba
    except ImportError:  # optional: the Python loop runs
        pass
    else:
        walk_kernel = numba.njit(cache=True, nogil=True)(_walk)


class DestinationsFastPath:
    """The destinations walk (module docstring) on one topology.

    A :class:`~sim.dataplanes.fast_path.FastPath`, built by
    :meth:`strategies.neighbor_labels.destinations.Destinations.fast_path`;
    the installed state must be that strategy's own ``install``.

    Parameters
    ----------
    topology : Topology
    fmt : LabelFormat
        Label widths (one DEST label per receiver).
    delays : DelayModel
        Analytic delay constants (seed 000 §3.5.4).
    encode : Encoder
        The strategy's encoder, for the encoding in :meth:`delivery`.
    frame_limit : int
        Largest header + payload in bytes (the MTU policy's); larger frames
        go to the reference.
    impl : {"auto", "jit", "python"}
        The numba kernel, the same loop in Python, or the kernel where numba is.
    """

    def __init__(self, topology: Topology, fmt: LabelFormat, delays: DelayModel,
                 encode: Encoder, frame_limit: int, impl: str = "auto") -> None:
        if impl not in ("auto", "jit", "python"):
            raise ValueError(f"impl must be auto, jit or python; got {impl!r}")
        if impl == "jit" and walk_kernel is None:
            raise ValueError("impl='jit' needs numba (pip install numba; STACKCAST_NO_JIT unset)")
        self._impl = "jit" if impl == "jit" or (impl == "auto" and walk_kernel) else "python"
        self.topology, self.fmt, self.delays = topology, fmt, delays
        self.encode, self.frame_limit = encode, frame_limit
        self.names = (*topology.switches, *topology.hosts)
        self.gid = {n: i for i, n in enumerate(self.names)}
        s = len(topology.switches)
        self.home = np.asarray([self.gid[topology.host_switch(h)] for h in topology.hosts],
                               np.int64)
        self.host_delay = np.asarray(
            [topology.ports(topology.host_switch(h))[
                topology.port_to(topology.host_switch(h), h)].link.delay_s
             for h in topology.hosts], np.float64)
        self.pub_delay = {h: topology.ports(h)[1].link.delay_s for h in topology.hosts}
        # rows of the switches with receivers, filled by _ensure (zeros, never read, until
        # then: the pages of rows never filled stay unallocated)
        self.nxt = np.zeros((s, s), np.int64)
        self.link_delay = np.zeros((s, s), np.float64)
        self._built = np.zeros(s, bool)
        self._gslot = np.full(len(self.names), -1, np.int64)
        self._acc = np.zeros(s, np.int64)

    @property
    def impl(self) -> str:
        """The implementation that runs: "jit" or "python"."""
        return self._impl

    @property
    def implementations(self) -> tuple[str, ...]:
        """The implementations available here (:meth:`using` builds each)."""
        return ("python",) if walk_kernel is None else ("jit", "python")

    def using(self, impl: str) -> DestinationsFastPath:
        """The same fast path computed by implementation ``impl``."""
        return DestinationsFastPath(self.topology, self.fmt, self.delays, self.encode,
                                    self.frame_limit, impl)

    # -- public API ---------------------------------------------------------------
    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int) -> list[dict[str, Any] | None]:
        """Row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS`) per notification;
        None where the reference must run."""
        ok, roots, ids, counts, pub_delay = self._inputs(publishers, receiver_sets,
                                                         payload_bytes)
        out: list[dict[str, Any] | None] = [None] * len(publishers)
        if not ok:
            return out
        summary, worst, _, _, _ = self._run(roots, ids, counts, pub_delay, payload_bytes,
                                            record=False)
        fmt = self.fmt
        rows, worst_ms, n_recv = summary.tolist(), (worst * 1e3).tolist(), counts.tolist()
        for j, i in enumerate(ok):
            row = rows[j]
            if not row[OK]:
                continue
            r = n_recv[j]
            out[i] = {
                "delivered": r, "false_positives": 0, "false_negatives": 0, "duplicates": 0,
                "header_entries": r, "header_bytes": fmt.size_bytes + fmt.label_bytes * r,
                "packets_sent": 1, "frames": row[FRAMES], "bytes": row[BYTES],
                "passes": row[PASSES], "recirculations": row[PASSES] - row[ARRIVALS],
                "lookups": row[PASSES], "circulations_simplified": 0,
                "max_switch_passes": row[MAX_PASSES], "delay_worst_ms": worst_ms[j],
                "link_false_positives": 0,  # every frame carries a receiver's label
            }
        return out

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The full :class:`~sim.dataplanes.delivery.Delivery` of one notification, or
        None where the reference must run."""
        pub = notification.publisher
        ok, roots, ids, counts, pub_delay = self._inputs([pub], [receivers], len(payload))
        if not ok:
            return None
        summary, _, rec, rec_t, nrec = self._run(roots, ids, counts, pub_delay, len(payload),
                                                 record=True)
        if not summary[0, OK]:
            return None
        names = self.names
        encoding = self.encode(self.topology, state, notification, receivers, payload)
        out = Delivery(publisher=pub, receivers=receivers, encoding=encoding)
        out.links[(pub, names[int(roots[0])])] = [
            1, ETH_HEADER_BYTES + len(payload) + self.fmt.header_bytes(int(counts[0]))]
        for (kind, a, b, c), t in zip(rec[:nrec].tolist(), rec_t[:nrec].tolist(), strict=True):
            if kind == 0:
                count = out.switches.setdefault(names[a], SwitchCount())
                count.passes += b
                count.recirculations += b - 1
                count.lookups += b
                out.drops += 1
                continue
            link = out.links.setdefault((names[a], names[b]), [0, 0])
            link[0] += 1
            link[1] += c
            if b >= len(self.nxt):
                out.delivered[names[b]] = out.delivered.get(names[b], 0) + 1
                out.first_arrival_s.setdefault(names[b], t)
        return out

    # -- internals ------------------------------------------------------------------
    def _inputs(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray,
                                             np.ndarray]:
        """The notifications the walk takes (one packet within the MTU, host receivers
        without the publisher), their root switches, receivers (host indices by
        host id, one run per notification) and access-link delays."""
        topo, gid, fmt = self.topology, self.gid, self.fmt
        n_sw = len(topo.switches)
        ok: list[int] = []
        roots: list[int] = []
        flat: list[int] = []
        counts: list[int] = []
        delay: list[float] = []
        for i, (pub, rs) in enumerate(zip(publishers, receiver_sets, strict=True)):
            if not rs or pub in rs or pub not in self.pub_delay:
                continue
            try:
                hosts = sorted(gid[h] - n_sw for h in rs)
            except KeyError:
                continue
            if (hosts[0] < 0 or len(hosts) > fmt.max_entries
                    or fmt.header_bytes(len(hosts)) + payload_bytes > self.frame_limit):
                continue  # a switch among the receivers, or beyond the MTU: the reference
            ok.append(i)
            roots.append(gid[topo.host_switch(pub)])
            flat.extend(hosts)
            counts.append(len(hosts))
            delay.append(self.pub_delay[pub])
        return (ok, np.asarray(roots, np.int64), np.asarray(flat, np.int64),
                np.asarray(counts, np.int64), np.asarray(delay, np.float64))

    def _ensure(self, homes: np.ndarray) -> None:
        """Next hops towards each switch in ``homes`` (rows of :attr:`nxt`)."""
        for h in np.unique(homes[~self._built[homes]]).tolist():
            parent, _, delay = bfs_next_hops(self.topology, h)  # delay: link to the parent
            self.nxt[h] = parent
            self.link_delay[h] = delay
            self._built[h] = True

    def _run(self, roots: np.ndarray, ids: np.ndarray, counts: np.ndarray,
             pub_delay: np.ndarray, payload_bytes: int, record: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        self._ensure(self.home[ids])
        nb, s = len(roots), len(self.topology.switches)
        most = int(counts.max()) * (s + 1) + 1
        work = np.empty((9, most), np.int64)  # every cell is written before it is read
        times = np.empty(most, np.float64)
        summary = np.zeros((nb, 6), np.int64)
        worst = np.zeros(nb, np.float64)
        rows = 2 * most if record else 1
        rec = np.empty((rows, 4), np.int64)
        rec_t = np.empty(rows, np.float64)
        base = ETH_HEADER_BYTES + payload_bytes + self.fmt.size_bytes
        d = self.delays
        kernel = walk_kernel if self._impl == "jit" and walk_kernel is not None else _walk
        nrec = kernel(roots, ids, counts, pub_delay, self.home, self.host_delay, self.nxt,
                      self.link_delay, d.feed_in_s, d.switch_s, d.pass_s, base,
                      self.fmt.label_bytes, summary, worst, work, times, self._gslot, self._acc,
                      record, rec, rec_t)
        return summary, worst, rec, rec_t, int(nrec)


def destinations_fast_path(topology: Topology, delays: DelayModel, encode: Encoder, *,
                           fmt: LabelFormat, frame_limit: int, impl: str = "auto"
                           ) -> DestinationsFastPath | None:
    """The fast path of destination-label stacks of format ``fmt`` on ``topology``, or
    None when host ids or ports do not fit the format (the reference raises then)."""
    if len(topology.hosts) - 1 > fmt.max_id:
        return None
    if any(p > fmt.bitmask_bits for sw in topology.switches for p in topology.ports(sw)):
        return None
    return DestinationsFastPath(topology, fmt, delays, encode, frame_limit, impl)
