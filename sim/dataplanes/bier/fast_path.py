"""Fast path of the BIER family: the pass-by-pass walk's counts without packets or tables.

The reference (:func:`sim.engines.static.run_notification` with
:class:`~sim.dataplanes.bier.reference.BierDataPlane`) stays the definition.
With the ``bier`` strategy's own install (every BFR's BIFT on the BFS next
hops, :mod:`strategies.bier.bift`) what a BIER packet does is fixed by its
bits, and :class:`BierFastPath` (a :class:`~sim.dataplanes.fast_path.FastPath`)
computes it copy by copy:

- the publisher sends one packet per set its receivers' BFERs touch, in SI
  order, the i-th (from 0) at ``(i + 1) * feed_in_s``;
- a copy of a set's packet at switch ``x`` with bits ``B``: the bits whose
  BFER is ``x`` (the local group) and the others grouped by their next hop
  ``nh[e, x]`` (the parent of ``x`` in the BFS tree of BFER ``e``,
  :class:`~sim.dataplanes.l2.fast_path.RouteTables`, the tree the BIFT is
  built from). Groups are served in the order of their lowest bit, one pass
  each, so the j-th group (from 0) leaves after pass ``j + 1``; the local
  group adds the local-delivery pass, its frames leaving after pass
  ``j + 2``. Passes at ``x``: groups + local (lookups the same,
  recirculations one fewer); a copy with the group's bits and TTL - 1 goes
  to each neighbour group, a carried frame to each receiver at ``x``.

Frames: the publisher's link and every copy between switches carry
``14 + 12 + BSL/8 + 14 + payload`` bytes, host links the carried event
frame (``14 + payload``). Times follow the reference's order of
floating-point operations (``((t + switch_s) + (depth - 1) * pass_s) +
link delay``), so they are bit-identical.

Declined (the reference runs): a publisher that is not a host, receivers
that are not hosts or include the publisher, an empty receiver set, a frame
beyond the MTU (the encoder raises), and a notification in which a copy's
TTL would expire. The fast path is not offered on a disconnected network
(BIFT entries are missing there). With every BFER reached exactly once
and each BFER's receivers served by one group, no frame is wasted
(``link_false_positives`` 0), nothing is dropped, and no host gets a
duplicate.

The kernel (:mod:`sim.dataplanes.bier.fast_path_kernel`) runs compiled
with numba where installed (``impl="jit"``), else interpreted
(``impl="python"``); ``tests/sim/test_fast_paths.py`` and
``tests/strategies/test_bier.py`` check both against the reference.

References
----------
RFC 8279 §6.5; RFC 8296 §2; uni-tue-kn/p4-bier Bier.p4; seed 000 §3.5.4
(delay model); shared/DESIGN.md "Data planes".
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from sim.dataplanes.bier import fast_path_kernel as kernel
from sim.dataplanes.bier.codec import bier_header_bytes
from sim.dataplanes.bier.domain import BferChoice, bier_domain
from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel, Delivery, SwitchCount
from sim.dataplanes.fast_path import Encoder, KernelChoice
from sim.dataplanes.l2.fast_path import RouteTables, route_tables
from sim.dataplanes.l2.fast_path_kernels import compiled
from sim.dataplanes.packet import ETH_HEADER_BYTES, Notification
from topologies.model import Topology

#: Notifications per kernel call.
BATCH = 256
IMPLS = ("jit", "python")


class BierTables:
    """Per (topology, BFER choice, BSL): BFER indices, the hosts' BFERs, next hops.

    ``bfer_sw[b]``: the switch index of the BFER with BFR-id ``b + 1``;
    ``host_bfr[h]``: the BFR-id - 1 of host ``h``'s switch (-1: none);
    ``nh_t[x, b]``, ``nd_t[x, b]`` (:meth:`next_hops`): the next switch from
    ``x`` towards BFER ``b`` and that link's delay, the rows of
    :class:`~sim.dataplanes.l2.fast_path.RouteTables` of the BFERs laid out
    by switch, so a copy's bits are read along one row.
    """

    def __init__(self, topology: Topology, bsl_bits: int, bfers: BferChoice) -> None:
        domain = bier_domain(topology, bsl_bits, bfers)
        sid = {sw: i for i, sw in enumerate(topology.switches)}
        self.bfer_sw = np.asarray([sid[sw] for sw in domain.bfers], np.int64)
        self.host_bfr = np.asarray([domain.bfr_id.get(topology.host_switch(h), 0) - 1
                                    for h in topology.hosts], np.int64)
        self.width = max(len(topology.switches), len(domain.bfers)) + 1
        self.names = (*topology.switches, *topology.hosts)
        self.topology = topology
        self._next: tuple[np.ndarray, np.ndarray] | None = None

    def next_hops(self) -> tuple[np.ndarray, np.ndarray]:
        """``(nh_t, nd_t)``, built on first use (one BFS per BFER)."""
        if self._next is None:
            routes = route_tables(self.topology)
            routes.ensure(self.bfer_sw)
            self._next = (np.ascontiguousarray(routes.nh[self.bfer_sw].T, np.int32),
                          np.ascontiguousarray(routes.nd[self.bfer_sw].T))
        return self._next


@lru_cache(maxsize=16)
def bier_tables(topology: Topology, bsl_bits: int, bfers: BferChoice) -> BierTables:
    return BierTables(topology, bsl_bits, bfers)


def available_impls() -> tuple[str, ...]:
    """The kernel implementations on this machine ("jit" needs numba)."""
    return IMPLS if compiled("bier", kernel.bier_kernel) is not None else ("python",)


class BierFastPath(KernelChoice):
    """The BIER walk (module docstring) on one topology with one parameter set.

    Parameters
    ----------
    topology : Topology
        A connected network.
    delays : DelayModel
        Analytic delay constants (seed 000 §3.5.4).
    encode : Encoder
        The strategy's encoder, for the encoding in :meth:`delivery`.
    bsl_bits, bfers, ttl, mtu_bytes
        The ``bier`` strategy's parameters.
    impl : {"auto", "jit", "python"}
        The numba kernel, the same kernel interpreted, or "auto" (numba when
        installed).
    """

    def __init__(self, topology: Topology, delays: DelayModel, encode: Encoder, *,
                 bsl_bits: int, bfers: BferChoice, ttl: int, mtu_bytes: int,
                 impl: str = "auto") -> None:
        self.choose_kernels(impl, IMPLS, available_impls())
        self.topology = topology
        self.delays = delays
        self.encode = encode
        self.bsl_bits, self.bfers, self.ttl, self.mtu_bytes = bsl_bits, bfers, ttl, mtu_bytes
        self.tables = bier_tables(topology, bsl_bits, bfers)
        self.routes: RouteTables = route_tables(topology)
        self.header_bytes = bier_header_bytes(bsl_bits)
        self._hid = {h: i for i, h in enumerate(topology.hosts)}
        self._buffers: dict[str, np.ndarray] = {}

    def using(self, impl: str) -> BierFastPath:
        """The same fast path computed by implementation ``impl``."""
        return BierFastPath(self.topology, self.delays, self.encode, bsl_bits=self.bsl_bits,
                            bfers=self.bfers, ttl=self.ttl, mtu_bytes=self.mtu_bytes, impl=impl)

    # -- public API ---------------------------------------------------------------
    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int) -> list[dict[str, Any] | None]:
        """Row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS`) per notification;
        None where the reference must run (module docstring)."""
        out: list[dict[str, Any] | None] = [None] * len(publishers)
        if self.header_bytes + payload_bytes > self.mtu_bytes:
            return out
        bier_frame = ETH_HEADER_BYTES + self.header_bytes + payload_bytes
        plain_frame = ETH_HEADER_BYTES + payload_bytes
        for a in range(0, len(publishers), BATCH):
            ok, args = self._inputs(publishers[a:a + BATCH], receiver_sets[a:a + BATCH])
            if not ok:
                continue
            m, t = self._run(args, detail=False)
            rows, worst = m.tolist(), (t * 1e3).tolist()
            for j, i in enumerate(ok):
                r = rows[j]
                if r[kernel.DECLINED]:
                    continue
                got, bier, plain, passes = (r[kernel.DELIVERED], r[kernel.BIER_FRAMES],
                                            r[kernel.PLAIN_FRAMES], r[kernel.PASSES])
                out[a + i] = {
                    "delivered": got, "false_positives": 0,
                    "false_negatives": len(receiver_sets[a + i]) - got, "duplicates": 0,
                    "header_entries": r[kernel.PACKETS],
                    "header_bytes": r[kernel.PACKETS] * self.header_bytes,
                    "packets_sent": r[kernel.PACKETS], "frames": bier + plain,
                    "bytes": bier * bier_frame + plain * plain_frame, "passes": passes,
                    "recirculations": passes - r[kernel.VISITS], "lookups": passes,
                    "circulations_simplified": 0, "max_switch_passes": r[kernel.MAX_PASSES],
                    "delay_worst_ms": worst[j], "link_false_positives": 0,
                }
        return out

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The full :class:`~sim.dataplanes.delivery.Delivery` of one notification, or None
        where the reference must run. The encoding is the strategy's own encoder's."""
        pub = notification.publisher
        if self.header_bytes + len(payload) > self.mtu_bytes:
            return None
        ok, args = self._inputs([pub], [receivers])
        if not ok:
            return None
        m, _ = self._run(args, detail=True)
        if m[0, kernel.DECLINED]:
            return None
        encoding = self.encode(self.topology, state, notification, receivers, payload)
        out = Delivery(publisher=pub, receivers=receivers, encoding=encoding)
        names, s = self.tables.names, len(self.topology.switches)
        sizes = (ETH_HEADER_BYTES + len(payload),
                 ETH_HEADER_BYTES + self.header_bytes + len(payload))
        end = int(m[0, kernel.TRACE_END])
        src, dst, passes, bier = self._buffers["tr_i"][:, :end].tolist()
        times = self._buffers["tr_t"][:end].tolist()
        for u, v, p, kind, t in zip(src, dst, passes, bier, times, strict=True):
            rec = out.links.setdefault((names[u], names[v]), [0, 0])
            rec[0] += 1
            rec[1] += sizes[kind]
            if v < s:
                count = out.switches.setdefault(names[v], SwitchCount())
                count.passes += p
                count.recirculations += p - 1
                count.lookups += p
            else:
                out.delivered[names[v]] = out.delivered.get(names[v], 0) + 1
                out.first_arrival_s.setdefault(names[v], t)
        return out

    # -- internals ----------------------------------------------------------------
    def _inputs(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]]
                ) -> tuple[list[int], dict[str, np.ndarray]]:
        """The notifications taken and the kernel's inputs for them."""
        topo, hid, s = self.topology, self._hid, len(self.topology.switches)
        ok: list[int] = []
        pubs: list[int] = []
        roots: list[int] = []
        flat: list[int] = []
        counts: list[int] = []
        delay: list[float] = []
        for i, (pub, rs) in enumerate(zip(publishers, receiver_sets, strict=True)):
            if not rs or pub in rs or pub not in hid or not rs <= hid.keys():
                continue  # nothing to send, the publisher or a non-host receiving: reference
            ok.append(i)
            p = hid[pub]
            pubs.append(s + p)
            roots.append(int(self.routes.host_sw[p]))
            flat.extend(map(hid.__getitem__, rs))
            counts.append(len(rs))
            delay.append(topo.ports(pub)[1].link.delay_s)
        return ok, {"pubs": np.asarray(pubs, np.int64), "roots": np.asarray(roots, np.int64),
                    "ids": np.asarray(flat, np.int64), "counts": np.asarray(counts, np.int64),
                    "pub_delay": np.asarray(delay, np.float64)}

    def buffer(self, name: str, shape: tuple[int, ...], dtype: Any, fill: int | None = None
               ) -> np.ndarray:
        """A reused work array of at least ``shape`` (filled with ``fill`` when new)."""
        buf = self._buffers.get(name)
        if buf is None or any(have < want for have, want in zip(buf.shape, shape, strict=True)):
            buf = np.zeros(shape, dtype) if fill is None else np.full(shape, fill, dtype)
            self._buffers[name] = buf
        return buf

    def _scratch(self) -> np.ndarray:
        """The kernel's scratch rows (left in their initial state by every call)."""
        buf = self._buffers.get("scratch")
        if buf is None:
            buf = np.zeros((11, self.tables.width), np.int64)
            buf[2] = -1
            self._buffers["scratch"] = buf
        return buf

    def _run(self, args: dict[str, np.ndarray], detail: bool) -> tuple[np.ndarray, np.ndarray]:
        t, routes, d = self.tables, self.routes, self.delays
        ids = args["ids"]
        nh_t, nd_t = t.next_hops()
        nb = len(args["roots"])
        out_m = np.zeros((nb, kernel.N_COLUMNS), np.int64)
        out_t = np.zeros(nb, np.float64)
        n_bfers = len(t.bfer_sw)
        run = (kernel.bier_kernel if self._impl == "python"
               else compiled("bier", kernel.bier_kernel))
        if run is None:  # numba went away after construction
            raise RuntimeError("the compiled BIER kernel is not available")
        cap = 2 * (len(ids) + len(routes.nh)) + 8 if detail else 1
        while True:
            tr_i = self.buffer("tr_i", (4, cap), np.int64)
            tr_t = self.buffer("tr_t", (cap,), np.float64)
            run(t.host_bfr, t.bfer_sw, nh_t, nd_t, routes.host_delay,
                routes.n_switches, self.bsl_bits, self.ttl,
                args["roots"], args["pubs"], args["pub_delay"], ids, args["counts"],
                d.feed_in_s, d.switch_s, d.pass_s, out_m, out_t, int(detail), tr_i, tr_t,
                self._scratch(), self.buffer("rnext", (max(len(ids), 1),), np.int64),
                self.buffer("st_i", (5 * (n_bfers + 1),), np.int64),
                self.buffer("st_t", (n_bfers + 1,), np.float64))
            need = int(out_m[-1, kernel.TRACE_END]) if nb else 0
            if need <= tr_t.shape[0]:
                return out_m, out_t
            cap = need


def bier_fast_path(topology: Topology, delays: DelayModel, encode: Encoder, *, bsl_bits: int,
                   bfers: BferChoice, ttl: int, mtu_bytes: int,
                   impl: str = "auto") -> BierFastPath | None:
    """The BIER fast path on ``topology``, or None on a disconnected network (BIFT
    entries missing there) or where the BFR-ids do not fit."""
    if not route_tables(topology).connected:
        return None
    try:
        bier_domain(topology, bsl_bits, bfers)
    except ValueError:
        return None
    return BierFastPath(topology, delays, encode, bsl_bits=bsl_bits, bfers=bfers, ttl=ttl,
                        mtu_bytes=mtu_bytes, impl=impl)
