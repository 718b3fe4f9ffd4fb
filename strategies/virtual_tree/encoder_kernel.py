"""Compiled greedy loop of the virtual-tree encoder (seed 000 Algorithm 5.1; optional numba).

:func:`encode_loop` is :func:`strategies.virtual_tree.encoder._encode` with the
shortest-path heuristic, step for step, over flat arrays: the initial
Steiner tree, the candidate order (overlap with the initial delivery tree,
then size, descending, then tree id), the lower-bound skip, one
:func:`~strategies.virtual_tree.steiner_jit.sph_run` per remaining
candidate with the same budget, the acceptance test, ``best_improvement``'s
rounds, ``patience``, ``prefilter``, ``prune_unused``, the stop set and the
hop order. ``tests/strategies/test_vt_encoder_kernel.py`` checks that it
gives the reference's encodings, label for label, on random topologies,
trees, receivers and options.

What it does differently, none of which changes a result:

- The lower bound ``|T'| + (pieces - 1) + host hops`` is kept incrementally:
  components of the selected VTs as switch labels, a candidate's pieces from
  its own switches only (the reference unites switch bitmasks).
- A candidate's trial weights are the selected ones plus its new links, set
  and reset in place; every buffer is allocated once per notification.
- Only the final stop set is built (the reference builds one per accepted
  candidate; only the last is kept).
- A candidate that adds no switch link to the virtual ones (its links are
  all selected already, or the new ones are host links) leaves every
  switch link's weight, hence the Steiner tree, as it is: its cost is the
  best one plus its label, minus the receiver host links it makes virtual,
  plus the new host links at tree switches that become stops; no Steiner
  computation.
- The candidate order is a stable counting sort by overlap of the per-state
  order by (size descending, tree id) (:func:`tree_order`).
- A candidate that adds the very links an earlier candidate of the same scan
  added (no tree taken in between: the same trial) is passed over without
  its lower bound or Steiner run: the earlier one was not taken or has been
  bettered since, and so would this one (:func:`_seen_fresh`). Nested and
  overlapping VTs (``vt-clusters``, ``vt-partitions``) make such repeats
  common once the larger VT is selected.

Without numba (or with ``STACKCAST_NO_JIT=1``) :data:`encode_kernel` is
``None`` and the encoder runs its pure-Python reference.

References
----------
Seed 000 §5.2.7 (Algorithm 5.1); digest ch. 5-7 §1.6, A1-A3.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from strategies.virtual_tree.steiner_jit import sph_run, sph_workspace

#: :func:`encode_loop`, compiled; None without numba.
encode_kernel: Callable[..., Any] | None = None

#: ``mode`` codes of :func:`encode_loop`.
SINGLE_PASS, BEST_IMPROVEMENT = 0, 1
#: What :func:`encode_loop`'s packed arguments hold, in order.
GRAPH_PARTS = ("indptr", "nbr", "eid", "host_indptr", "host_eid", "end_a", "end_b",
               "link_switch", "host_switch", "host_edge", "host_link_ptr", "host_link_eid")
TREE_PARTS = ("tree_ids", "t_ptr", "t_edges", "t_node_ptr", "t_nodes", "order")
#: ``label_spec`` of :func:`encode_loop` that packs no labels.
NO_LABELS = np.array([-1, 0, 0, 0, 0], np.int64)


def pack(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One int64 array holding ``arrays`` one after the other, and where each starts
    (one call argument instead of many: numba's call overhead grows with them)."""
    parts = np.zeros(len(arrays) + 1, np.int64)
    parts[1:] = np.cumsum([len(a) for a in arrays])
    blob = np.concatenate([np.zeros(0, np.int64), *(np.asarray(a, np.int64) for a in arrays)])
    return blob, parts


def tree_order(sizes: np.ndarray, tree_ids: np.ndarray) -> np.ndarray:
    """Tree positions by size (descending), then tree id: the candidate order of equal overlap."""
    return np.lexsort((tree_ids, -sizes)).astype(np.int64)


def encode_loop(graph_blob: np.ndarray, graph_parts: np.ndarray, tree_blob: np.ndarray,
                tree_parts: np.ndarray, publisher: int, receivers: np.ndarray, mode: int,
                patience: int, prefilter: bool, prune: bool, label_spec: np.ndarray,
                tally: np.ndarray, unique_fresh: bool = True
                ) -> tuple[int, np.ndarray, int, int, np.ndarray, np.ndarray]:
    """Algorithm 5.1 for one notification.

    Parameters
    ----------
    graph_blob, graph_parts : numpy.ndarray
        The topology's arrays (:data:`GRAPH_PARTS` of
        :class:`~strategies.virtual_tree.steiner.EncoderGraph`) packed by :func:`pack`.
    tree_blob, tree_parts : numpy.ndarray
        The trees' arrays (:data:`TREE_PARTS`) packed by :func:`pack`: tree
        ``k`` has id ``tree_ids[k]``, edge ids ``t_edges[t_ptr[k]:t_ptr[k + 1]]``
        (ascending) and switch indices (its mask)
        ``t_nodes[t_node_ptr[k]:t_node_ptr[k + 1]]``; ``order`` is :func:`tree_order`.
    publisher : int
        Host id of the publisher.
    receivers : numpy.ndarray
        Host ids of the receivers (distinct, any order, never the publisher).
    mode : int
        :data:`SINGLE_PASS` or :data:`BEST_IMPROVEMENT`.
    patience : int
        < 0: none.
    prefilter, prune : bool
    label_spec : numpy.ndarray
        ``[id_bits, max_id, tree kind, stop kind, hop kind]`` of the label
        format (``id_bits < 0``: no labels, :data:`NO_LABELS`).
    tally : numpy.ndarray of int64
        Counters the loop adds to: ``[0]`` Steiner runs of candidates, ``[1]``
        candidates passed over as a repeat of an earlier trial (:func:`_seen_fresh`).
    unique_fresh : bool
        Pass over repeated trials (default); False evaluates every candidate
        (for the tests: both give the same encoding).

    Returns
    -------
    (status, ids, n_trees, n_stops, labels, delivery)
        Status 0, or 2 with ``ids[0]`` the switch that is not connected (3:
        :func:`~strategies.virtual_tree.steiner_jit.sph_run` failed its deque bound).
        ``ids``: the selected tree ids in selection order, then the stop edge
        ids (ascending), then the hop edge ids (grouped by switch, depth
        first); ``labels``: their labels (``(kind << id_bits) | id``), empty if
        an id does not fit ``0..max_id`` (or no labels were asked);
        ``delivery``: the delivery edges (tree links, then receiver host links).
    """
    gp, tp = graph_blob, graph_parts
    graph = (gp[tp[0]:tp[1]], gp[tp[1]:tp[2]], gp[tp[2]:tp[3]], gp[tp[3]:tp[4]],
             gp[tp[4]:tp[5]])
    end_a, end_b, link_switch = gp[tp[5]:tp[6]], gp[tp[6]:tp[7]], gp[tp[7]:tp[8]]
    host_switch, host_edge = gp[tp[8]:tp[9]], gp[tp[9]:tp[10]]
    host_link_ptr, host_link_eid = gp[tp[10]:tp[11]], gp[tp[11]:tp[12]]
    tb, tq = tree_blob, tree_parts
    tree_ids, t_ptr, t_edges = tb[tq[0]:tq[1]], tb[tq[1]:tq[2]], tb[tq[2]:tq[3]]
    t_node_ptr, t_nodes, order = tb[tq[3]:tq[4]], tb[tq[4]:tq[5]], tb[tq[5]:tq[6]]
    n = graph[0].shape[0] - 1
    n_edge_ids = end_a.shape[0]
    n_trees = t_ptr.shape[0] - 1
    work, in_tree, on_tree, deque, buckets = sph_workspace(n, n_edge_ids)
    # -- the notification: terminals, receiver links, terminal host links
    hosts = np.sort(receivers)
    n_recv = hosts.shape[0]
    recv_sw = host_switch[hosts]
    recv_e = host_edge[hosts]
    root = host_switch[publisher]
    is_term = np.zeros(n, np.uint8)
    for s in recv_sw:
        is_term[s] = 1
    is_term[root] = 1
    n_rem = 0
    for v in range(n):
        if is_term[v] and v != root:
            n_rem += 1
    remaining = np.empty(n_rem, np.int64)
    n_rem = 0
    for v in range(n):
        if is_term[v] and v != root:
            remaining[n_rem] = v
            n_rem += 1
    terminal_link = np.zeros(n_edge_ids, np.uint8)
    is_recv_edge = np.zeros(n_edge_ids, np.uint8)
    for h in hosts:
        for k in range(host_link_ptr[h], host_link_ptr[h + 1]):
            terminal_link[host_link_eid[k]] = 1
    for k in range(host_link_ptr[publisher], host_link_ptr[publisher + 1]):
        terminal_link[host_link_eid[k]] = 1
    for e in recv_e:
        is_recv_edge[e] = 1
    # -- the initial Steiner tree (no virtual links) and its cost
    virt = np.zeros(n_edge_ids, np.uint8)
    best_edges = np.empty(n, np.int64)
    best_nodes = np.empty(n, np.int64)
    status, nbe, nbn, weight, stops, buckets = sph_run(
        graph, virt, terminal_link, root, remaining, -1, best_edges, best_nodes, work,
        in_tree, on_tree, deque, buckets)
    empty = np.empty(0, np.int64)
    if status >= 2:
        bad = np.empty(1, np.int64)
        bad[0] = best_edges[0]
        return status, bad, 0, 0, empty, empty
    host = n_recv
    best_cost = weight + host + stops
    best_weight, best_stops = weight, stops
    # -- candidates: overlap with the initial delivery edges, stable by the per-state order
    initial = np.zeros(n_edge_ids, np.uint8)
    for i in range(nbe):
        initial[best_edges[i]] = 1
    for e in recv_e:
        initial[e] = 1
    dt_node = np.zeros(n, np.uint8)
    for i in range(nbn):
        dt_node[best_nodes[i]] = 1
    overlap = np.zeros(n_trees, np.int64)
    keep = np.ones(n_trees, np.uint8)
    top = 0
    for k in range(n_trees):
        c = 0
        for j in range(t_ptr[k], t_ptr[k + 1]):
            c += initial[t_edges[j]]
        overlap[k] = c
        top = max(top, c)
        if prefilter:
            hit = False
            for j in range(t_node_ptr[k], t_node_ptr[k + 1]):
                v = t_nodes[j]
                if dt_node[v] or is_term[v]:
                    hit = True
                    break
            keep[k] = hit
    count = np.zeros(top + 2, np.int64)
    for k in range(n_trees):
        if keep[k]:
            count[top - overlap[k] + 1] += 1
    for i in range(1, top + 2):
        count[i] += count[i - 1]
    cands = np.empty(count[top + 1], np.int64)
    for k in order:
        if keep[k]:
            slot = top - overlap[k]
            cands[count[slot]] = k
            count[slot] += 1
    # -- the lower bound's components: labels of the selected VTs' switches
    comp = np.full(n, -1, np.int64)
    comp_term = np.zeros(n_trees + 1, np.uint8)
    seen = np.zeros(n_trees + 1, np.int64)
    stamp = 0
    pieces = n_rem + 1
    # -- buffers of the trials
    trial_edges = np.empty(n, np.int64)
    trial_nodes = np.empty(n, np.int64)
    round_edges = np.empty(n, np.int64)
    round_nodes = np.empty(n, np.int64)
    max_size = 0
    for k in range(n_trees):
        max_size = max(max_size, t_ptr[k + 1] - t_ptr[k])
    fresh = np.empty(max_size, np.int64)
    chosen = np.empty(n_trees, np.int64)
    n_chosen = 0
    pool = cands.copy()
    n_pool = cands.shape[0]
    idle = 0
    # the fresh link sets of this scan's candidates (see :func:`_seen_fresh`)
    cap = 4
    while cap < 2 * n_pool + 2:
        cap *= 2
    fresh_key = np.zeros(cap, np.int64)
    fresh_scan = np.zeros(cap, np.int64)
    fresh_tree = np.zeros(cap, np.int64)
    fresh_n = np.zeros(cap, np.int64)
    scan = 0
    # a round scans the pool from ``first`` for the best candidate (best_improvement) or
    # for the next one that improves (single pass: accepted, the scan goes on after it)
    first = 0
    while first < n_pool:
        scan += 1
        bound = best_cost
        pick = -1
        pick_pieces = 0
        pick_host = 0
        pick_weight = 0
        pick_stops = 0
        nre = 0
        nrn = 0
        for i in range(first, n_pool):
            if mode == SINGLE_PASS and patience >= 0 and idle >= patience:
                break
            t = pool[i]
            # pieces of the selected VTs plus t
            stamp += 1
            dec = 0
            merged_term = False
            for j in range(t_node_ptr[t], t_node_ptr[t + 1]):
                v = t_nodes[j]
                c = comp[v]
                if c < 0:
                    if is_term[v]:
                        dec += 1
                        merged_term = True
                elif seen[c] != stamp:
                    seen[c] = stamp
                    if comp_term[c]:
                        dec += 1
                        merged_term = True
            t_pieces = pieces - dec + (1 if merged_term else 0)
            # trial weights: t's links become virtual
            n_fresh = 0
            fresh_switch_links = 0
            fresh_stops = 0  # new virtual host links at tree switches (same tree)
            t_host = host
            key = 0
            for j in range(t_ptr[t], t_ptr[t + 1]):
                e = t_edges[j]
                if not virt[e]:
                    virt[e] = 1
                    fresh[n_fresh] = e
                    n_fresh += 1
                    key += _link_hash(e)
                    t_host -= is_recv_edge[e]
                    if end_a[e] >= 0:
                        fresh_switch_links += 1
                    elif dt_node[link_switch[e]] and not terminal_link[e]:
                        fresh_stops += 1
            if _seen_fresh(key, n_fresh, t, scan, fresh_key, fresh_scan, fresh_tree, fresh_n,
                           virt, t_edges, t_ptr, unique_fresh):
                # the same links as an earlier candidate of this scan: the same trial,
                # which was not taken (or not bettered), so this one is not either
                tally[1] += 1
                for j in range(n_fresh):
                    virt[fresh[j]] = 0
                idle += 1
                continue
            trees = n_chosen + 1
            ok = False
            ne = nn = weight = stops = 0
            if trees + max(0, t_pieces - 1) + t_host < bound:
                budget = bound - t_host - trees
                if budget > 0 and fresh_switch_links == 0:
                    # the switch links weigh as before: the Steiner tree is the best one
                    weight, stops = best_weight, best_stops + fresh_stops
                    ok = weight + t_host + trees + stops < bound
                    if ok:
                        ne, nn = nbe, nbn
                        trial_edges[:nbe] = best_edges[:nbe]
                        trial_nodes[:nbn] = best_nodes[:nbn]
                elif budget > 0:
                    tally[0] += 1
                    status, ne, nn, weight, stops, buckets = sph_run(
                        graph, virt, terminal_link, root, remaining, budget, trial_edges,
                        trial_nodes, work, in_tree, on_tree, deque, buckets)
                    if status == 3:
                        return 3, empty, 0, 0, empty, empty
                    ok = status == 0 and weight + t_host + trees + stops < bound
            for j in range(n_fresh):
                virt[fresh[j]] = 0
            if not ok:
                idle += 1
                continue
            bound = weight + t_host + trees + stops
            pick, pick_pieces, pick_host = i, t_pieces, t_host
            pick_weight, pick_stops = weight, stops
            trial_edges, round_edges = round_edges, trial_edges
            trial_nodes, round_nodes = round_nodes, trial_nodes
            nre, nrn = ne, nn
            if mode == SINGLE_PASS:
                break  # accepted now; the scan goes on with the next candidate
        if pick < 0:
            break
        # accept pool[pick]
        t = pool[pick]
        stamp += 1
        _select(t, n_chosen, stamp, comp, comp_term, seen, is_term, t_edges, t_ptr, t_nodes,
                t_node_ptr, virt)
        chosen[n_chosen] = t
        n_chosen += 1
        pieces, host, best_cost = pick_pieces, pick_host, bound
        best_weight, best_stops = pick_weight, pick_stops
        best_edges, round_edges = round_edges, best_edges
        best_nodes, round_nodes = round_nodes, best_nodes
        nbe, nbn = nre, nrn
        _mark(dt_node, best_nodes, nbn)
        idle = 0
        if mode == SINGLE_PASS:
            first = pick + 1
        else:
            for i in range(pick, n_pool - 1):
                pool[i] = pool[i + 1]
            n_pool -= 1
    # -- prune_unused: keep the selected VTs that carry a delivery edge
    used = initial  # reused as the delivery-edge flags
    used[:] = 0
    for i in range(nbe):
        used[best_edges[i]] = 1
    for e in recv_e:
        used[e] = 1
    if prune and n_chosen > 0:
        kept = 0
        for i in range(n_chosen):
            t = chosen[i]
            hit = False
            for j in range(t_ptr[t], t_ptr[t + 1]):
                if used[t_edges[j]]:
                    hit = True
                    break
            if hit:
                chosen[kept] = t
                kept += 1
        n_chosen = kept
        virt[:] = 0
        for i in range(n_chosen):
            t = chosen[i]
            for j in range(t_ptr[t], t_ptr[t + 1]):
                virt[t_edges[j]] = 1
    # -- the stop set of the selected VTs
    dt_node[:] = 0
    for i in range(nbn):
        dt_node[best_nodes[i]] = 1
    is_stop = np.zeros(n_edge_ids, np.uint8)
    n_stops = 0
    for i in range(n_chosen):
        t = chosen[i]
        for j in range(t_ptr[t], t_ptr[t + 1]):
            e = t_edges[j]
            a = end_a[e]
            if a >= 0:
                hit = (dt_node[a] or dt_node[end_b[e]]) and not used[e]
            else:
                hit = dt_node[link_switch[e]] and not terminal_link[e]
            if hit and not is_stop[e]:
                is_stop[e] = 1
                n_stops += 1
    stop_ids = np.empty(n_stops, np.int64)
    n_stops = 0
    for e in range(n_edge_ids):
        if is_stop[e]:
            stop_ids[n_stops] = e
            n_stops += 1
    hops = _preorder_hops(end_a, end_b, best_edges[:nbe], root, recv_sw, recv_e, virt, n)
    delivery = np.empty(nbe + n_recv, np.int64)
    delivery[:nbe] = best_edges[:nbe]
    delivery[nbe:] = recv_e
    ids = np.empty(n_chosen + n_stops + hops.shape[0], np.int64)
    for i in range(n_chosen):
        ids[i] = tree_ids[chosen[i]]
    ids[n_chosen:n_chosen + n_stops] = stop_ids
    ids[n_chosen + n_stops:] = hops
    return 0, ids, n_chosen, n_stops, _labels(ids, n_chosen, n_stops, label_spec), delivery


def _link_hash(e: int) -> int:
    """A 32-bit mix of link id ``e`` (summed over a set: a key of the set)."""
    m = ((e + 1) * 0x9E3779B1) & 0xFFFFFFFF
    m = ((m ^ (m >> 15)) * 0x2C1B3C6D) & 0xFFFFFFFF
    return m ^ (m >> 12)


def _seen_fresh(key: int, n_fresh: int, t: int, scan: int, fresh_key: np.ndarray,
                fresh_scan: np.ndarray, fresh_tree: np.ndarray, fresh_n: np.ndarray,
                virt: np.ndarray, t_edges: np.ndarray, t_ptr: np.ndarray, enabled: bool
                ) -> bool:
    """Whether an earlier candidate of scan ``scan`` added the same links as tree ``t``
    (its ``n_fresh`` new links, now set in ``virt``, with ``key`` the sum of their
    :func:`_link_hash`); if not, ``t`` is entered.

    Within a scan the selected trees, the best cost and the bound only change when a
    candidate is taken, so two candidates with the same new links make the same
    trial (the same weights, receiver host links and tree count): the same lower
    bound, the same Steiner run, the same cost. The earlier one was not taken, or
    it was and the bound has only fallen since (best improvement), so the later
    one is not taken either: passing over it changes nothing. The table
    (open addressing, entries of other scans are free) keeps the first candidate
    of each key; a match is checked link by link: the earlier tree's links are
    all virtual now (selected or new) and it added as many.
    """
    if not enabled:
        return False
    mask = fresh_key.shape[0] - 1
    slot = (key ^ (key >> 17) ^ n_fresh) & mask
    while fresh_scan[slot] == scan:
        if fresh_key[slot] == key and fresh_n[slot] == n_fresh:
            p = fresh_tree[slot]
            same = True
            for j in range(t_ptr[p], t_ptr[p + 1]):
                if not virt[t_edges[j]]:
                    same = False
                    break
            if same:
                return True
        slot = (slot + 1) & mask
    fresh_scan[slot] = scan
    fresh_key[slot] = key
    fresh_tree[slot] = t
    fresh_n[slot] = n_fresh
    return False


def _labels(ids: np.ndarray, n_trees: int, n_stops: int, spec: np.ndarray) -> np.ndarray:
    """The labels of ``ids`` (trees, stops, hops) by ``spec`` (see :func:`encode_loop`)."""
    id_bits, max_id = spec[0], spec[1]
    if id_bits < 0:
        return np.empty(0, np.int64)
    out = np.empty(ids.shape[0], np.int64)
    for i in range(ids.shape[0]):
        x = ids[i]
        if x < 0 or x > max_id:
            return np.empty(0, np.int64)
        kind = spec[2] if i < n_trees else spec[3] if i < n_trees + n_stops else spec[4]
        out[i] = (kind << id_bits) | x
    return out


def _mark(flags: np.ndarray, items: np.ndarray, count: int) -> None:
    """``flags`` = 1 at ``items[:count]``, 0 elsewhere."""
    flags[:] = 0
    for i in range(count):
        flags[items[i]] = 1


def _select(t: int, label: int, stamp: int, comp: np.ndarray, comp_term: np.ndarray,
            seen: np.ndarray, is_term: np.ndarray, t_edges: np.ndarray, t_ptr: np.ndarray,
            t_nodes: np.ndarray, t_node_ptr: np.ndarray, virt: np.ndarray) -> None:
    """Make tree ``t`` selected: its links virtual, its switches and the components
    they touch one component ``label`` (``stamp``: a fresh mark of ``seen``)."""
    for j in range(t_ptr[t], t_ptr[t + 1]):
        virt[t_edges[j]] = 1
    merged_term = False
    for j in range(t_node_ptr[t], t_node_ptr[t + 1]):
        v = t_nodes[j]
        c = comp[v]
        if c < 0:
            merged_term = merged_term or is_term[v] == 1
        elif seen[c] != stamp:
            seen[c] = stamp
            merged_term = merged_term or comp_term[c] == 1
    for v in range(comp.shape[0]):
        c = comp[v]
        if c >= 0 and seen[c] == stamp:
            comp[v] = label
    for j in range(t_node_ptr[t], t_node_ptr[t + 1]):
        comp[t_nodes[j]] = label
    comp_term[label] = 1 if merged_term else 0


def _preorder_hops(end_a: np.ndarray, end_b: np.ndarray, edges: np.ndarray, root: int,
                   recv_sw: np.ndarray, recv_e: np.ndarray, virt: np.ndarray, n: int
                   ) -> np.ndarray:
    """Physical delivery edges grouped by switch (its receivers' host links in host
    order, then its child links by child index) in depth-first order from ``root``."""
    deg = np.zeros(n + 1, np.int64)
    for e in edges:
        deg[end_a[e] + 1] += 1
        deg[end_b[e] + 1] += 1
    for i in range(n):
        deg[i + 1] += deg[i]
    fill = deg[:n].copy()
    nb_node = np.empty(deg[n], np.int64)
    nb_edge = np.empty(deg[n], np.int64)
    for e in edges:
        a, b = end_a[e], end_b[e]
        nb_node[fill[a]], nb_edge[fill[a]] = b, e
        fill[a] += 1
        nb_node[fill[b]], nb_edge[fill[b]] = a, e
        fill[b] += 1
    # receivers per switch, in host order
    rdeg = np.zeros(n + 1, np.int64)
    for s in recv_sw:
        rdeg[s + 1] += 1
    for i in range(n):
        rdeg[i + 1] += rdeg[i]
    rfill = rdeg[:n].copy()
    r_edge = np.empty(recv_e.shape[0], np.int64)
    for i in range(recv_e.shape[0]):
        s = recv_sw[i]
        r_edge[rfill[s]] = recv_e[i]
        rfill[s] += 1
    out = np.empty(edges.shape[0] + recv_e.shape[0], np.int64)
    n_out = 0
    stack = np.empty(n + 1, np.int64)
    parent = np.full(n, -1, np.int64)
    kid_node = np.empty(n, np.int64)
    kid_edge = np.empty(n, np.int64)
    stack[0] = root
    depth = 1
    while depth > 0:
        depth -= 1
        v = stack[depth]
        for k in range(rdeg[v], rdeg[v + 1]):
            if not virt[r_edge[k]]:
                out[n_out] = r_edge[k]
                n_out += 1
        n_kids = 0
        for k in range(deg[v], deg[v + 1]):
            w = nb_node[k]
            if w != parent[v]:
                # insertion by (child, edge)
                j = n_kids
                while j > 0 and (kid_node[j - 1] > w
                                 or (kid_node[j - 1] == w and kid_edge[j - 1] > nb_edge[k])):
                    kid_node[j] = kid_node[j - 1]
                    kid_edge[j] = kid_edge[j - 1]
                    j -= 1
                kid_node[j] = w
                kid_edge[j] = nb_edge[k]
                n_kids += 1
        for j in range(n_kids - 1, -1, -1):
            parent[kid_node[j]] = v
            stack[depth] = kid_node[j]
            depth += 1
        for j in range(n_kids):
            if not virt[kid_edge[j]]:
                out[n_out] = kid_edge[j]
                n_out += 1
    return out[:n_out].copy()


if os.environ.get("STACKCAST_NO_JIT", "") in ("", "0"):
    try:
        import numba
    except ImportError:  # optional: the pure-Python reference encoder is used
        pass
    else:
        _link_hash = numba.njit(cache=True, nogil=True)(_link_hash)
        _seen_fresh = numba.njit(cache=True, nogil=True)(_seen_fresh)
        _select = numba.njit(cache=True, nogil=True)(_select)
        _preorder_hops = numba.njit(cache=True, nogil=True)(_preorder_hops)
        _labels = numba.njit(cache=True, nogil=True)(_labels)
        _mark = numba.njit(cache=True, nogil=True)(_mark)
        encode_kernel = numba.njit(cache=True, nogil=True)(encode_loop)
