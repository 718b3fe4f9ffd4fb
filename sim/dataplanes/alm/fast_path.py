"""Fast path of the ALM broker overlays: alm-all, alm-fork and alm-mcgroup in one loop.

The pass-by-pass reference (:func:`sim.engines.static.run_notification` with
:class:`~sim.dataplanes.alm.reference.AlmDataPlane` and the strategies'
brokers, :class:`sim.engines.static.BrokerHost`) stays the definition.
:class:`AlmFastPath` follows the same overlay messages without packets:

- the delivery tree is the shortest-path tree of the publisher's switch
  pruned to the receivers, children in port order
  (:func:`sim.dataplanes.trees.shortest_path_tree`); a tree switch uses its
  broker in ``alm-all``, or if it has two children or more (a fork) in
  ``alm-fork`` and ``alm-mcgroup``; a broker's targets are its children,
  each followed down through tunneling switches to the first broker switch
  or host (:func:`strategies.alm.brokers.overlay_plan`);
- the publisher sends one frame to the first overlay node; every overlay
  message is a frame along the SDN flows, i.e. the BFS next hops towards
  the target's switch (:func:`strategies.alm.brokers.flow_port`), then out
  of the host's port or the switch's broker port (a broker link has no
  propagation delay); every switch visit is one pass and one lookup;
- a broker that got a message at ``t`` sends its i-th copy (from 0) at
  ``t + broker_s + (i + 1) * feed_in_s`` back to its switch; in
  ``alm-mcgroup`` a broker with two targets or more sends one packet, which
  its switch replicates (one pass, two ingress lookups and one egress
  lookup per replica) and each replica leaves on the flow port of its
  target.

Frames are 14 B plus the payload; arrival times follow the reference's order
of floating-point operations. Every used link leads to a receiver, so no link
crossing is wasted; every receiver gets exactly one copy. The kernel is
:func:`overlay_kernel` (numba where installed, interpreted otherwise, as in
:mod:`sim.dataplanes.l2.fast_path_kernels`). Declined as in
:mod:`sim.dataplanes.l2.fast_path` (empty receiver sets included).

References
----------
Seed 000 §2.3 (i), §3.5.4 (the three variants); digest §3.1 (i), §7.16,
§7.17.
"""

from __future__ import annotations

import numpy as np

from sim.dataplanes.caches import Caches, or_fresh
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import Encoder
from sim.dataplanes.l2 import fast_path_kernels as kernels
from sim.dataplanes.l2.fast_path import WalkFastPath, route_tables
from topologies.model import Topology

#: The walks of :class:`AlmFastPath`.
ALM_WALKS = ("alm-all", "alm-fork", "alm-mcgroup")


def overlay_kernel(forks_only: int, mcgroup: int, parent_t: np.ndarray, sw_t: np.ndarray,
                   node_t: np.ndarray, pos_t: np.ndarray, host_sw: np.ndarray,
                   host_delay: np.ndarray, nh: np.ndarray, nd: np.ndarray, n_switches: int,
                   n_hosts: int, rows: np.ndarray, pubs: np.ndarray, pub_delay: np.ndarray,
                   ids: np.ndarray, counts: np.ndarray, feed_s: float, switch_s: float,
                   pass_s: float, broker_s: float, out_m: np.ndarray, out_t: np.ndarray,
                   detail: int, tr_i: np.ndarray, tr_t: np.ndarray, mark: np.ndarray,
                   scratch: np.ndarray, st_t: np.ndarray, visits: np.ndarray) -> None:
    """The overlay messages of each notification (module docstring).

    ``mark`` (tree size, all 0, left all 0) and ``visits`` (switches, all 0,
    left all 0) are reused; ``scratch`` (8 rows of the tree size) and
    ``st_t`` (tree size) are work space.
    """
    n = parent_t.shape[1]
    cap = tr_t.shape[0]
    comp, loc, par, kids = scratch[0], scratch[1], scratch[2], scratch[3]
    first, last, nxt, nn = scratch[4], scratch[5], scratch[6], scratch[7]
    st_sw, st_x, touched = scratch[8], scratch[9], scratch[10]
    nt = 0
    off = 0
    for b in range(rows.shape[0]):
        r = rows[b]
        mark[0] = 1
        for j in range(off, off + counts[b]):  # the tree: receivers and their ancestors
            i = pos_t[r, ids[j]]
            while mark[i] == 0:
                mark[i] = 1
                i = parent_t[r, i]
        off += counts[b]
        k = 0
        for i in range(n):  # preorder, children in port order
            if mark[i]:
                mark[i] = 0
                comp[i] = k
                loc[k] = i
                kids[k] = 0
                first[k] = -1
                nxt[k] = -1
                p = parent_t[r, i]
                if p >= 0:
                    pc = comp[p]
                    par[k] = pc
                    if kids[pc] == 0:
                        first[pc] = k
                    else:
                        nxt[last[pc]] = k
                    last[pc] = k
                    kids[pc] += 1
                else:
                    par[k] = -1
                k += 1
        for c in range(k - 1, -1, -1):  # next overlay node: down through tunneling switches
            if sw_t[r, loc[c]] == 0 or forks_only == 0 or kids[c] >= 2:
                nn[c] = c
            else:
                nn[c] = nn[first[c]]
        frames = 0
        passes = 0
        lookups = 0
        n_touched = 0
        delivered = 0
        worst = -np.inf
        # the publisher's frame to its switch, heading for the first overlay node
        root = node_t[r, 0]
        t = feed_s + pub_delay[b]
        frames += 1
        passes += 1
        lookups += 1
        visits[root] += 1
        touched[n_touched] = root
        n_touched += 1
        if detail:
            if nt < cap:
                tr_i[0, nt] = pubs[b]
                tr_i[1, nt] = root
                tr_i[2, nt] = 1
                tr_t[nt] = t
            nt += 1
        sp = 0
        st_sw[sp] = root
        st_t[sp] = t
        st_x[sp] = nn[0]
        sp += 1
        while sp > 0:  # a message at switch sw (arrived at t, looked up) towards x
            sp -= 1
            sw = st_sw[sp]
            t = st_t[sp]
            x = st_x[sp]
            g = node_t[r, loc[x]]
            home = host_sw[g - n_switches] if g >= n_switches else g
            te = (t + switch_s) + 0 * pass_s
            replicas = 0
            src = sw
            if sw != home:  # on towards the target's switch
                v = nh[home, sw]
                ta = te + nd[home, sw]
                lk = 1
            elif g >= n_switches:  # the target host
                v = g
                ta = te + host_delay[g - n_switches]
                lk = 0
                delivered += 1
                if ta > worst:
                    worst = ta
            else:  # this switch's broker: it answers, the answers come back in
                frames += 1
                if detail:
                    if nt < cap:
                        tr_i[0, nt] = sw
                        tr_i[1, nt] = n_switches + n_hosts + sw
                        tr_i[2, nt] = 0
                        tr_t[nt] = te
                    nt += 1
                src = n_switches + n_hosts + sw
                v = sw
                if mcgroup and kids[x] >= 2:
                    replicas = kids[x]
                    ta = (te + broker_s) + 1 * feed_s
                    lk = 2 + replicas
                else:
                    ta = te
                    lk = 1
            if replicas == 0 and src < n_switches + n_hosts:  # one frame on a switch link
                frames += 1
                if v < n_switches:
                    passes += 1
                    lookups += lk
                    if visits[v] == 0:
                        touched[n_touched] = v
                        n_touched += 1
                    visits[v] += 1
                    st_sw[sp] = v
                    st_t[sp] = ta
                    st_x[sp] = x
                    sp += 1
                if detail:
                    if nt < cap:
                        tr_i[0, nt] = src
                        tr_i[1, nt] = v
                        tr_i[2, nt] = lk
                        tr_t[nt] = ta
                    nt += 1
                continue
            # broker answers: one copy per target, or one packet the switch replicates
            if visits[sw] == 0:
                touched[n_touched] = sw
                n_touched += 1
            c = first[x]
            i = 0
            tr = ta
            while c >= 0:
                y = nn[c]
                if replicas == 0 or i == 0:
                    tr = ta if replicas else (te + broker_s) + (i + 1) * feed_s
                    frames += 1
                    passes += 1
                    lookups += lk
                    visits[sw] += 1
                    if detail:
                        if nt < cap:
                            tr_i[0, nt] = src
                            tr_i[1, nt] = sw
                            tr_i[2, nt] = lk
                            tr_t[nt] = tr
                        nt += 1
                if replicas == 0:
                    st_sw[sp] = sw
                    st_t[sp] = tr
                    st_x[sp] = y
                    sp += 1
                else:  # the replica leaves on the flow port of its target
                    gy = node_t[r, loc[y]]
                    hy = host_sw[gy - n_switches] if gy >= n_switches else gy
                    te2 = (tr + switch_s) + 0 * pass_s
                    frames += 1
                    if hy == sw:  # a local host (a broker target is never this switch)
                        v = gy
                        ta2 = te2 + host_delay[gy - n_switches]
                        delivered += 1
                        if ta2 > worst:
                            worst = ta2
                        lk2 = 0
                    else:
                        v = nh[hy, sw]
                        ta2 = te2 + nd[hy, sw]
                        lk2 = 1
                        passes += 1
                        lookups += 1
                        if visits[v] == 0:
                            touched[n_touched] = v
                            n_touched += 1
                        visits[v] += 1
                        st_sw[sp] = v
                        st_t[sp] = ta2
                        st_x[sp] = y
                        sp += 1
                    if detail:
                        if nt < cap:
                            tr_i[0, nt] = sw
                            tr_i[1, nt] = v
                            tr_i[2, nt] = lk2
                            tr_t[nt] = ta2
                        nt += 1
                c = nxt[c]
                i += 1
        most = 0
        for j in range(n_touched):
            s = touched[j]
            if visits[s] > most:
                most = visits[s]
            visits[s] = 0
        m = out_m[b]
        m[kernels.FRAMES] = frames
        m[kernels.PASSES] = passes
        m[kernels.LOOKUPS] = lookups
        m[kernels.MAX_PASSES] = most
        m[kernels.DELIVERED] = delivered
        m[kernels.DELIVERED_RECEIVERS] = delivered
        m[kernels.DROPS] = 0
        m[kernels.WASTE] = 0
        m[kernels.PACKETS] = 1
        m[kernels.TRACE_END] = nt
        out_t[b] = worst if delivered else 0.0


class AlmFastPath(WalkFastPath):
    """The broker overlays (module docstring) on one topology.

    Parameters
    ----------
    topology : Topology
    walk : {"alm-all", "alm-fork", "alm-mcgroup"}
    delays : DelayModel
        Analytic delay constants (seed 000 §3.5.4), ``broker_s`` included.
    encode : Encoder
        The strategy's encoder, for the encoding in :meth:`delivery`.
    impl : {"auto", "jit", "python"}
        As in :class:`sim.dataplanes.l2.fast_path.L2FastPath`.
    caches : Caches, optional
        Where the tree and route tables of ``topology`` are kept.
    """

    walks = ALM_WALKS

    def _kernel(self, args: dict[str, np.ndarray], out_m: np.ndarray, out_t: np.ndarray,
                detail: int, tr_i: np.ndarray, tr_t: np.ndarray) -> None:
        d, routes, t = self.delays, self.routes, self.tree
        rows = t.ensure(args["roots"])  # the roots' slots in the tree tables
        routes.ensure_all()  # messages head for any switch (its broker or hosts)
        n = t.size
        self.kernel("overlay", overlay_kernel)(
            int(self.walk != "alm-all"), int(self.walk == "alm-mcgroup"), t.parent, t.is_switch,
            t.node, t.pos_of, routes.host_sw, routes.host_delay, routes.nh, routes.nd,
            routes.n_switches, routes.n_hosts, rows, args["pubs"], args["pub_delay"],
            args["ids"], args["counts"], d.feed_in_s, d.switch_s, d.pass_s, d.broker_s,
            out_m, out_t, detail, tr_i, tr_t, self.buffer("mark", (n,), np.int64),
            self.buffer("scratch", (11, n), np.int64), self.buffer("st_t", (n,), np.float64),
            self.buffer("visits", (routes.n_switches,), np.int64))


def alm_fast_path(topology: Topology, delays: DelayModel, encode: Encoder, walk: str,
                  impl: str = "auto", caches: Caches | None = None) -> AlmFastPath | None:
    """The fast path of an ALM variant on ``topology``, or None where it does not apply
    (a disconnected network). ``caches``: where the per-topology tables are kept."""
    caches = or_fresh(caches)
    if not route_tables(topology, caches).connected:
        return None
    return AlmFastPath(topology, walk, delays, encode, impl, caches)
