"""Fast path of the L2 baselines: unicast, broadcast and multicast frames in one loop each.

The pass-by-pass reference (:func:`sim.engines.static.run_notification` with
:class:`~sim.dataplanes.l2.reference.L2DataPlane`) stays the definition. The
baselines' walks are fully determined by the routes the strategies install,
so :class:`L2FastPath` (a :class:`~sim.dataplanes.fast_path.FastPath`)
follows the same routes frame by frame without packets, tables or queues.
The walks (:data:`L2_WALKS`):

``unicast`` (strategies/l2/unicast.py)
    One frame per receiver, sent one after another in host-id order (the
    i-th from 0 leaves the publisher at ``(i + 1) * feed_in_s``), along the
    BFS next hops towards the receiver's switch
    (:func:`sim.dataplanes.trees.next_hop_port`): one pass and one lookup
    per switch visit, no drops.
``broadcast`` (strategies/l2/broadcast.py)
    One frame along the shortest-path tree of the publisher's switch pruned
    to every host but the publisher (:func:`sim.dataplanes.trees.shortest_path_tree`,
    the tree the strategy installs as multicast groups); every host reached
    that is not a receiver is a false positive, and every tree link from
    which no receiver is reached is wasted. A root without children has no
    group: one pass, one lookup, one drop.
``multicast`` (strategies/l2/multicast.py, ``tree="spt"``)
    One frame along the shortest-path tree pruned to the receivers.

Every frame is 14 B of Ethernet plus the payload; every switch visit is one
pass and one lookup; a copy leaves ``switch_s`` after it arrived and crosses
its link (the reference's order of floating-point operations, so arrival
times are bit-identical). The kernels are in
:mod:`sim.dataplanes.l2.fast_path_kernels` (numba where installed,
``impl="jit"``; the same functions interpreted otherwise, ``impl="python"``).

Declined (``None``, the reference runs): a publisher that is not a host, a
receiver that is not a host or is the publisher, and, except for broadcast,
an empty receiver set. The control state must be the strategy's own
``install`` for the notification's publisher and receiver set (the pipeline
installs exactly that); which parameters map to a walk is the strategies'
call in their :meth:`~strategies.base.Strategy.fast_path` hooks.

References
----------
Seed 000 §2.3, §3.5.4 (unicast, broadcast and multicast baselines); digest
ch. 1-4 §7.16, §7.18; shared/DESIGN.md "Data planes" (fast paths must be
property-tested against the pass-by-pass model).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sim.dataplanes.caches import Caches, Identity, or_fresh
from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel, Delivery, SwitchCount, broker_node
from sim.dataplanes.fast_path import Encoder, KernelChoice
from sim.dataplanes.l2 import fast_path_kernels as kernels
from sim.dataplanes.packet import ETH_HEADER_BYTES, Notification
from sim.dataplanes.tree_tables import tree_tables
from sim.dataplanes.trees import bfs_next_hops, bfs_parents
from topologies.model import Topology

#: Notifications per kernel call.
BATCH = 256
#: The walks of :class:`L2FastPath`.
L2_WALKS = ("unicast", "broadcast", "multicast")
IMPLS = ("jit", "python")


class RouteTables:
    """Unicast next hops towards every switch, and the hosts' attachment.

    Global node numbers as in the tree tables: switches ``0..S-1`` in
    topology order, hosts ``S..S+H-1`` in topology order (host id + S).
    ``nh[home, sw]`` is the next switch from ``sw`` towards ``home`` (the
    parent of ``sw`` in the BFS tree of ``home``, ties to the lowest name,
    :func:`sim.dataplanes.trees.next_hop_port`) and ``nd[home, sw]`` that
    link's delay (s); a row is filled the first time a notification needs it
    (:meth:`ensure`; the rows of other switches are zeros, never read, and take
    no memory until filled).
    """

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        s = self.n_switches = len(topology.switches)
        self.n_hosts = len(topology.hosts)
        self.sid = {sw: i for i, sw in enumerate(topology.switches)}
        self.host_sw = np.array([self.sid[topology.host_switch(h)] for h in topology.hosts],
                                np.int64)
        self.host_delay = np.array([topology.ports(h)[1].link.delay_s for h in topology.hosts],
                                   np.float64)
        self.nh = np.zeros((s, s), np.int64)
        self.nd = np.zeros((s, s), np.float64)
        self.built = np.zeros(s, bool)
        self.all_built = False
        self.connected = s == 0 or len(bfs_parents(topology, topology.switches[0])) == s - 1

    def ensure(self, homes: np.ndarray) -> None:
        """Fill the rows of the switches in ``homes`` that are not built yet."""
        for h in np.unique(homes[~self.built[homes]]).tolist():
            parent, _, delay = bfs_next_hops(self.topology, h)  # no dict per root kept
            self.nh[h] = parent
            self.nd[h] = delay
            self.built[h] = True

    def ensure_all(self) -> None:
        """Fill every row (the overlays route towards any switch)."""
        if not self.all_built:
            self.ensure(np.arange(self.n_switches))
            self.all_built = True

    def name(self, g: int) -> str:
        """Name of global node ``g`` (switch, host, or ``b:<switch>`` broker)."""
        topo, s, h = self.topology, self.n_switches, self.n_hosts
        if g < s:
            return topo.switches[g]
        if g < s + h:
            return topo.hosts[g - s]
        return broker_node(topo.switches[g - s - h])


def route_tables(topology: Topology, caches: Caches | None = None) -> RouteTables:
    """The route tables of ``topology`` kept in ``caches`` (``caches.route_tables``; new
    ones without ``caches``)."""
    if caches is None:
        return RouteTables(topology)
    return caches.route_tables.get_or_make(Identity(topology), lambda: RouteTables(topology))


def available_impls() -> tuple[str, ...]:
    """The kernel implementations on this machine ("jit" needs numba)."""
    return IMPLS if kernels.compiled("tree", kernels.tree_kernel) is not None else ("python",)


class WalkFastPath(KernelChoice):
    """What the L2 and ALM fast paths share: inputs, batches, metrics and deliveries.

    Subclasses set :attr:`walks`, say whether an empty receiver set is
    declined (:attr:`needs_receivers`) and implement :meth:`_kernel`.
    """

    walks: tuple[str, ...] = ()
    needs_receivers = True
    #: Whether the kernel takes each receiver set in host-id order.
    ordered = False

    def __init__(self, topology: Topology, walk: str, delays: DelayModel, encode: Encoder,
                 impl: str = "auto", caches: Caches | None = None) -> None:
        if walk not in self.walks:
            raise ValueError(f"walk must be one of {', '.join(self.walks)}; got {walk!r}")
        self.choose_kernels(impl, IMPLS, available_impls())
        self.topology = topology
        self.walk = walk
        self.delays = delays
        self.encode = encode
        self.caches = or_fresh(caches)  # where the tables live (shared with using())
        self.tree = tree_tables(topology, self.caches)
        self.routes = route_tables(topology, self.caches)
        self._gid = self.tree.gid
        self._hosts = frozenset(topology.hosts)
        self._buffers: dict[str, np.ndarray] = {}

    def using(self, impl: str) -> WalkFastPath:
        """The same fast path computed by implementation ``impl``."""
        return type(self)(self.topology, self.walk, self.delays, self.encode, impl, self.caches)

    def kernel(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Kernel ``fn`` in this fast path's implementation."""
        if self._impl == "python":
            return fn
        jit = kernels.compiled(name, fn)
        if jit is None:  # numba went away after construction
            raise RuntimeError("the compiled fast-path kernels are not available")
        return jit

    # -- public API ---------------------------------------------------------------
    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int) -> list[dict[str, Any] | None]:
        """Row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS`) per notification;
        None where the reference must run (see the module docstring)."""
        out: list[dict[str, Any] | None] = [None] * len(publishers)
        frame = ETH_HEADER_BYTES + payload_bytes
        for batch in self.tree.batches(publishers, BATCH):
            ok, args = self._inputs([publishers[i] for i in batch],
                                    [receiver_sets[i] for i in batch])
            if ok:
                m, t = self._run(args, detail=False)
                rows, worst = m.tolist(), (t * 1e3).tolist()
                for j, i in enumerate(ok):
                    k = batch[i]
                    out[k] = _row(rows[j], worst[j], len(receiver_sets[k]), frame)
        return out

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The full :class:`~sim.dataplanes.delivery.Delivery` of one notification, or None
        where the reference must run. The encoding is the strategy's own encoder's."""
        pub = notification.publisher
        ok, args = self._inputs([pub], [receivers])
        if not ok:
            return None
        m, _ = self._run(args, detail=True)
        tr_i, tr_t = self._buffers["tr_i"], self._buffers["tr_t"]
        encoding = self.encode(self.topology, state, notification, receivers, payload)
        out = Delivery(publisher=pub, receivers=receivers, encoding=encoding)
        routes, frame = self.routes, ETH_HEADER_BYTES + len(payload)
        s, h = routes.n_switches, routes.n_hosts
        src, dst, look = tr_i[:, :int(m[0, kernels.TRACE_END])].tolist()
        times = tr_t[:len(src)].tolist()
        for k, (u, v, lk) in enumerate(zip(src, dst, look, strict=True)):
            rec = out.links.setdefault((routes.name(u), routes.name(v)), [0, 0])
            rec[0] += 1
            rec[1] += frame
            name = routes.name(v)
            if v < s:
                count = out.switches.setdefault(name, SwitchCount())
                count.passes += 1
                count.lookups += lk
            elif v < s + h:
                out.delivered[name] = out.delivered.get(name, 0) + 1
                out.first_arrival_s.setdefault(name, times[k])
        out.drops = int(m[0, kernels.DROPS])
        return out

    # -- internals ----------------------------------------------------------------
    def _inputs(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]]
                ) -> tuple[list[int], dict[str, np.ndarray]]:
        """The notifications taken and the kernel's inputs for them."""
        topo, gid, hosts = self.topology, self._gid, self._hosts
        ok: list[int] = []
        pubs: list[int] = []
        roots: list[int] = []
        flat: list[int] = []
        counts: list[int] = []
        delay: list[float] = []
        for i, (pub, rs) in enumerate(zip(publishers, receiver_sets, strict=True)):
            if (not rs and self.needs_receivers) or pub in rs or pub not in hosts \
                    or not rs <= hosts:
                continue  # nothing to send, the publisher or a non-host receiving: reference
            ids = list(map(gid.__getitem__, rs))
            if self.ordered:
                ids.sort()  # host-id order (unicast's sending order)
            ok.append(i)
            pubs.append(gid[pub])
            roots.append(gid[topo.host_switch(pub)])
            flat.extend(ids)
            counts.append(len(ids))
            delay.append(topo.ports(pub)[1].link.delay_s)
        return ok, {"pubs": np.asarray(pubs, np.int64), "roots": np.asarray(roots, np.int64),
                    "ids": np.asarray(flat, np.int64), "counts": np.asarray(counts, np.int64),
                    "pub_delay": np.asarray(delay, np.float64)}

    def buffer(self, name: str, shape: tuple[int, ...], dtype: Any, zero: bool = False
               ) -> np.ndarray:
        """A reused work array of exactly ``shape`` rows/length at least (prefix views)."""
        buf = self._buffers.get(name)
        if buf is None or any(have < want for have, want in zip(buf.shape, shape, strict=True)):
            buf = np.zeros(shape, dtype)
            self._buffers[name] = buf
        elif zero:
            buf[...] = 0
        return buf

    def _run(self, args: dict[str, np.ndarray], detail: bool) -> tuple[np.ndarray, np.ndarray]:
        nb = len(args["roots"])
        out_m = np.zeros((nb, kernels.N_COLUMNS), np.int64)
        out_t = np.zeros(nb, np.float64)
        cap = 4 * (self.tree.size + self.routes.n_switches) if detail else 1
        while True:
            tr_i = self.buffer("tr_i", (3, cap), np.int64)
            tr_t = self.buffer("tr_t", (cap,), np.float64)
            self._kernel(args, out_m, out_t, int(detail), tr_i, tr_t)
            need = int(out_m[-1, kernels.TRACE_END]) if nb else 0
            if need <= tr_t.shape[0]:
                return out_m, out_t
            cap = need

    def _kernel(self, args: dict[str, np.ndarray], out_m: np.ndarray, out_t: np.ndarray,
                detail: int, tr_i: np.ndarray, tr_t: np.ndarray) -> None:
        raise NotImplementedError


def _row(m: list[int], worst_ms: float, n_receivers: int, frame: int) -> dict[str, Any]:
    """One notification's row metrics from the kernel's columns."""
    got = m[kernels.DELIVERED_RECEIVERS]
    return {
        "delivered": m[kernels.DELIVERED], "false_positives": m[kernels.DELIVERED] - got,
        "false_negatives": n_receivers - got, "duplicates": 0,
        "header_entries": 0, "header_bytes": 0, "packets_sent": m[kernels.PACKETS],
        "frames": m[kernels.FRAMES], "bytes": m[kernels.FRAMES] * frame,
        "passes": m[kernels.PASSES], "recirculations": 0, "lookups": m[kernels.LOOKUPS],
        "circulations_simplified": 0, "max_switch_passes": m[kernels.MAX_PASSES],
        "delay_worst_ms": worst_ms, "link_false_positives": m[kernels.WASTE],
    }


class L2FastPath(WalkFastPath):
    """The unicast, broadcast and multicast walks (module docstring) on one topology.

    Parameters
    ----------
    topology : Topology
    walk : {"unicast", "broadcast", "multicast"}
    delays : DelayModel
        Analytic delay constants (seed 000 §3.5.4).
    encode : Encoder
        The strategy's encoder, for the encoding in :meth:`delivery`.
    impl : {"auto", "jit", "python"}
        The numba kernels, the same kernels interpreted, or "auto" (numba
        when installed).
    caches : Caches, optional
        Where the tree and route tables of ``topology`` are kept.
    """

    walks = L2_WALKS

    def __init__(self, topology: Topology, walk: str, delays: DelayModel, encode: Encoder,
                 impl: str = "auto", caches: Caches | None = None) -> None:
        super().__init__(topology, walk, delays, encode, impl, caches)
        self.needs_receivers = walk != "broadcast"
        self.ordered = walk == "unicast"
        self._host_gids = np.arange(self.routes.n_switches,
                                    self.routes.n_switches + self.routes.n_hosts, dtype=np.int64)

    def _kernel(self, args: dict[str, np.ndarray], out_m: np.ndarray, out_t: np.ndarray,
                detail: int, tr_i: np.ndarray, tr_t: np.ndarray) -> None:
        d, routes = self.delays, self.routes
        if self.walk == "unicast":
            ids = args["ids"]
            routes.ensure(routes.host_sw[ids - routes.n_switches])
            self.kernel("unicast", kernels.unicast_kernel)(
                routes.host_sw, routes.host_delay, routes.nh, routes.nd, routes.n_switches,
                args["roots"], args["pubs"], args["pub_delay"], ids, args["counts"],
                d.feed_in_s, d.switch_s, d.pass_s, out_m, out_t, detail, tr_i, tr_t)
            return
        t = self.tree
        rows = t.ensure(args["roots"])  # the roots' slots in the tree tables
        n = t.size
        self.kernel("tree", kernels.tree_kernel)(
            int(self.walk == "broadcast"), t.parent, t.delay, t.is_switch, t.node, t.pos_of,
            self._host_gids, rows, args["pubs"], args["pub_delay"], args["ids"],
            args["counts"], d.feed_in_s, d.switch_s, d.pass_s, out_m, out_t, detail, tr_i, tr_t,
            self.buffer("mark", (n,), np.int64), self.buffer("times", (n,), np.float64))


def l2_fast_path(topology: Topology, delays: DelayModel, encode: Encoder, walk: str,
                 impl: str = "auto", caches: Caches | None = None) -> L2FastPath | None:
    """The fast path of an L2 baseline on ``topology``, or None where it does not apply
    (a disconnected network: the reference's install raises there). ``caches``: where
    the per-topology tables are kept (the strategy's)."""
    caches = or_fresh(caches)
    if not route_tables(topology, caches).connected:
        return None
    return L2FastPath(topology, walk, delays, encode, impl, caches)
