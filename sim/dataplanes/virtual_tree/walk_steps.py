"""Per-notification steps of the virtual-tree walk kernel: labels, frames, counts.

What :func:`sim.dataplanes.virtual_tree.walk_kernel.walk_kernel` does around
its switch visits: enter a notification's labels in the direct-address region
(:func:`index_labels`), send a copy over a link (:func:`send`: frames per
directed link, hosts counted at once since the queue is first in, first out),
count what the row reads (:func:`count_notification`, :func:`waste`) and leave
the scratch as found (:func:`reset`). Plain functions on flat arrays
(:mod:`sim.dataplanes.virtual_tree.walk_layout`), compiled with the kernel.

References
----------
Seed 000 §3.5.4 (delay model); seed 001 §6.2 (link false positives).
"""

from __future__ import annotations

from typing import Any

from sim.dataplanes.virtual_tree.walk_layout import (
    K_LO,
    K_N,
    L_BFS,
    L_DENSE,
    L_DENSE_N,
    L_ENTRIES,
    L_FIRST,
    L_LAB,
    L_LIMIT,
    L_LINK_NB,
    L_LINK_NBPORT,
    L_LINK_PAIR,
    L_NODE,
    L_NODES,
    L_PACKETS,
    L_PAIR,
    L_PAIR_DST,
    L_PAIR_SRC,
    L_PAIRS,
    L_PORT_BASE,
    L_PORT_N,
    L_Q,
    L_Q_N,
    L_QT,
    L_RES,
    L_SWITCHES,
    NODE_COPIES,
    NODE_INTO,
    NODE_PASSES,
    NODE_REACHED,
    NODE_RECEIVER,
    NODE_USEFUL,
    NODE_USEFUL_LIST,
    NODE_VISITED,
    O_DELIVERED,
    O_DUP,
    O_FN,
    O_FP,
    O_MAX_PASSES,
    OUT_W,
    PACKET_W,
    PAIR_NEXT,
    PAIR_USED,
    Q_W,
    R_REACHED,
    R_USED,
)

#: :func:`send`'s answers besides the queue length: declined (no such port, or a
#: forwarding loop), or the queue is full.
SEND_DECLINED, SEND_FULL = -1, -2


def index_labels(bt: Any, sc: Any, lay: Any, pk_lo: int, pk_hi: int, on: bool) -> bool:
    """Enter (``on``) or clear the labels of packets ``pk_lo .. pk_hi - 1`` in the
    direct-address region (nothing to do without one); True if a packet holds a label
    twice (the batch finds those itself without the region)."""
    if lay[L_DENSE_N] == 0:
        return False
    n = 0
    twice = False
    for i in range(pk_lo, pk_hi):
        pk = lay[L_PACKETS] + PACKET_W * i
        lab_lo = bt[pk + K_LO]
        for q in range(bt[pk + K_N]):
            head = lay[L_DENSE] + bt[lay[L_LAB] + lab_lo + q]
            if on:
                if sc[head] != 0 and sc[lay[L_ENTRIES] + 3 * (sc[head] - 1)] == lab_lo:
                    twice = True
                x = lay[L_ENTRIES] + 3 * n
                sc[x] = lab_lo
                sc[x + 1] = q
                sc[x + 2] = sc[head]
                sc[head] = n + 1
                n += 1
            else:
                sc[head] = 0
    return twice


def send(tp: Any, td: Any, sc: Any, sf: Any, lay: Any, node: int, port: int, k: int,
          chain: int, t: float, qt: int) -> int:
    """Send a copy out of ``port`` of ``node`` at ``t``: count the frame on its link and
    hand the copy to the neighbour (a host counts it, a switch gets it queued). Returns
    the new queue length, :data:`SEND_DECLINED` (no such port, or more frames on the link
    than a loop-free walk sends) or :data:`SEND_FULL` (the queue is full)."""
    if port < 1 or port > tp[lay[L_PORT_N] + node]:
        return SEND_DECLINED
    j = tp[lay[L_PORT_BASE] + node] + port - 1
    nb = tp[lay[L_LINK_NB] + j]
    if nb < 0:
        return SEND_DECLINED
    pr = tp[lay[L_LINK_PAIR] + j]
    pairs, n_pairs, nodes, n_nodes = lay[L_PAIR], lay[L_PAIRS], lay[L_NODE], lay[L_NODES]
    res = lay[L_RES]
    if sc[pairs + pr] == 0:  # first use: list it, and chain it into its node's links
        sc[pairs + PAIR_USED * n_pairs + sc[res + R_USED]] = pr
        sc[res + R_USED] += 1
        into = nodes + NODE_INTO * n_nodes + tp[lay[L_PAIR_DST] + pr]
        sc[pairs + PAIR_NEXT * n_pairs + pr] = sc[into]
        sc[into] = pr + 1
    sc[pairs + pr] += 1
    if sc[pairs + pr] > lay[L_LIMIT]:
        return SEND_DECLINED
    if nb >= lay[L_SWITCHES]:  # a host
        copies = nodes + NODE_COPIES * n_nodes + nb
        if sc[copies] == 0:
            sc[nodes + NODE_REACHED * n_nodes + sc[res + R_REACHED]] = nb
            sc[res + R_REACHED] += 1
            sf[lay[L_FIRST] + nb] = t + td[j]
        sc[copies] += 1
        return qt
    if qt >= lay[L_Q_N]:
        return SEND_FULL
    q = lay[L_Q] + Q_W * qt
    sc[q] = nb
    sc[q + 1] = tp[lay[L_LINK_NBPORT] + j]
    sc[q + 2] = k
    sc[q + 3] = chain
    sf[lay[L_QT] + qt] = t + td[j]
    return qt + 1


def waste(tp: Any, bt: Any, sc: Any, lay: Any, pub: int, rc_lo: int, rc_hi: int) -> int:
    """Frames on used links from which no receiver is reachable over used links, the
    publisher's own link aside (:func:`sim.dataplanes.link_waste.wasted_link_frames`)."""
    nodes, n_nodes, pairs, n_pairs = lay[L_NODE], lay[L_NODES], lay[L_PAIR], lay[L_PAIRS]
    useful = nodes + NODE_USEFUL * n_nodes
    listed = nodes + NODE_USEFUL_LIST * n_nodes
    into = nodes + NODE_INTO * n_nodes
    src, dst, bfs = lay[L_PAIR_SRC], lay[L_PAIR_DST], lay[L_BFS]
    top = 0
    for x in range(rc_lo, rc_hi):  # receivers with a used link into them
        if sc[into + bt[x]] != 0:
            sc[bfs + top] = bt[x]
            top += 1
    nu = 0
    while top > 0:  # backwards over used links
        top -= 1
        v = sc[bfs + top]
        if sc[useful + v] != 0:
            continue
        sc[useful + v] = 1
        sc[listed + nu] = v
        nu += 1
        e = sc[into + v]
        while e != 0:
            sc[bfs + top] = tp[src + e - 1]
            top += 1
            e = sc[pairs + PAIR_NEXT * n_pairs + e - 1]
    wasted = 0
    for x in range(sc[lay[L_RES] + R_USED]):
        pr = sc[pairs + PAIR_USED * n_pairs + x]
        if sc[useful + tp[dst + pr]] == 0 and tp[src + pr] != pub:
            wasted += sc[pairs + pr]
    for x in range(nu):
        sc[useful + sc[listed + x]] = 0
    return wasted


def reset(tp: Any, bt: Any, sc: Any, lay: Any, n_vis: int, rc_lo: int, rc_hi: int) -> None:
    """Leave the scratch of one notification as found (all zero)."""
    nodes, n_nodes, pairs, n_pairs = lay[L_NODE], lay[L_NODES], lay[L_PAIR], lay[L_PAIRS]
    res = lay[L_RES]
    for x in range(n_vis):
        sc[nodes + NODE_PASSES * n_nodes + sc[nodes + NODE_VISITED * n_nodes + x]] = 0
    for x in range(sc[res + R_REACHED]):
        sc[nodes + NODE_COPIES * n_nodes + sc[nodes + NODE_REACHED * n_nodes + x]] = 0
    for x in range(rc_lo, rc_hi):
        sc[nodes + NODE_RECEIVER * n_nodes + bt[x]] = 0
    for x in range(sc[res + R_USED]):
        pr = sc[pairs + PAIR_USED * n_pairs + x]
        sc[pairs + pr] = 0
        sc[nodes + NODE_INTO * n_nodes + tp[lay[L_PAIR_DST] + pr]] = 0
    sc[res + R_USED] = 0
    sc[res + R_REACHED] = 0


def count_notification(bt: Any, sc: Any, sf: Any, lay: Any, out_i: Any, out_t: Any, b: int,
                       rc_lo: int, rc_hi: int, n_vis: int) -> None:
    """Deliveries, false positives and negatives, duplicates, the busiest switch's passes
    and the worst first arrival at a receiver of notification ``b``."""
    nodes, n_nodes = lay[L_NODE], lay[L_NODES]
    copies, receiver = nodes + NODE_COPIES * n_nodes, nodes + NODE_RECEIVER * n_nodes
    reached = sc[lay[L_RES] + R_REACHED]
    fp = dup = 0
    for x in range(reached):
        h = sc[nodes + NODE_REACHED * n_nodes + x]
        dup += sc[copies + h] - 1
        if sc[receiver + h] == 0:
            fp += 1
    fn = 0
    worst = 0.0
    got = False
    for x in range(rc_lo, rc_hi):
        h = bt[x]
        if sc[copies + h] == 0:
            fn += 1
        elif not got or sf[lay[L_FIRST] + h] > worst:
            worst = sf[lay[L_FIRST] + h]
            got = True
    top = 0
    for x in range(n_vis):
        top = max(top, sc[nodes + NODE_PASSES * n_nodes + sc[nodes + NODE_VISITED * n_nodes + x]])
    ob = OUT_W * b
    out_i[ob + O_DELIVERED] = reached
    out_i[ob + O_FP] = fp
    out_i[ob + O_FN] = fn
    out_i[ob + O_DUP] = dup
    out_i[ob + O_MAX_PASSES] = top
    out_t[b] = worst


#: What the kernel calls here (compiled where it is compiled).
STEPS = (index_labels, send, waste, reset, count_notification)
