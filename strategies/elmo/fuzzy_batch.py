"""Elmo's fuzzy match (:func:`strategies.elmo.prules.cluster_layer`) for many groups in
one compiled loop.

:func:`cluster_layers` takes one downstream layer of many groups as flat
arrays (each group's switches sorted by id, their bitmaps below 2**63) and
returns each group's :class:`~strategies.elmo.prules.Layer`. The kernel
(:func:`_fuzzy_labels`) runs the greedy of ``cluster_layer`` step for step
on a per-switch label (the p-rule a switch joined, -1 while unassigned):

- a group of at most ``max_prules`` switches: switch ``j`` gets p-rule ``j``;
- else for p-rule ``p`` (``left = max_prules - p`` p-rules left, while some
  switch is unassigned): the minimum k-union of the unassigned switches for
  ``k = min(max_ids, ceil(unassigned / left))`` (each step the unassigned,
  untaken switch whose bitmap ORed with those taken has the fewest bits,
  the first in id order on a tie: ``min_k_union``), then the longest prefix
  of it within the redundancy joins p-rule ``p``.

A p-rule's ids are its switches in id order and its bitmap their OR, the
rest the unassigned switches in id order: what ``cluster_layer`` builds
(unassigned switches keep their order there). ``tests/strategies/
test_elmo_batch.py`` checks the layers against ``cluster_layer`` on random
layers and limits. numba is optional: without it (or with
``STACKCAST_NO_JIT=1``) :data:`fuzzy_labels` is None and callers cluster
group by group with ``cluster_layer``, which defines the result.

References
----------
Elmo SIGCOMM 2019 §4 (controller); Elmo-MCast/numerical-evals
``pseudocodes/fuzzy_match.algo``, ``pseudocodes/min_k_union.algo``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from sim.dataplanes.elmo.codec import ElmoLayout, PRule, layer_widths
from sim.dataplanes.elmo.fabric import ElmoFabric
from strategies.elmo.prules import (
    ClusterLimits,
    Layer,
    Node,
    cluster_nodes,
    fit_budget,
    host_arrays,
    nodes_of_groups,
    or_by_switch,
)


def _numba_njit() -> Callable[..., Any] | None:
    """``numba.njit(cache=True, nogil=True)``; None without numba or with ``STACKCAST_NO_JIT=1``."""
    if os.environ.get("STACKCAST_NO_JIT", "") not in ("", "0"):
        return None
    try:
        import numba
    except ImportError:  # optional: callers cluster group by group
        return None
    return numba.njit(cache=True, nogil=True)  # type: ignore[no-any-return]


_NJIT = _numba_njit()


def _kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    return fn if _NJIT is None else _NJIT(fn)


_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@_kernel
def _popcount(x: np.uint64) -> np.int64:
    """Set bits of a 64-bit word (SWAR)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@_kernel
def _fuzzy_labels(starts: np.ndarray, bits: np.ndarray, max_prules: int, max_ids: int,
                  redundancy: int, labels: np.ndarray) -> None:
    """Group ``g``'s switches are ``starts[g]:starts[g + 1]`` of ``bits`` (uint64); writes
    each switch's p-rule (0, 1, ... in assignment order) or -1 into ``labels``."""
    taken = np.zeros(max(max_ids, 1), np.int64)
    for g in range(starts.shape[0] - 1):
        a, b = starts[g], starts[g + 1]
        n = b - a
        if n <= max_prules:
            for j in range(n):
                labels[a + j] = j
            continue
        for j in range(n):
            labels[a + j] = -1
        free = n
        for p in range(max_prules):
            if free == 0:
                break
            left = max_prules - p
            k_max = min(max_ids, (free + left - 1) // left)
            acc = np.uint64(0)
            for t in range(k_max):  # the minimum k-union; -2 marks a taken switch
                best = -1
                best_count = 65
                for j in range(n):
                    if labels[a + j] == -1:
                        c = _popcount(acc | bits[a + j])
                        if c < best_count:
                            best_count = c
                            best = j
                taken[t] = best
                labels[a + best] = -2
                acc |= bits[a + best]
            kept = 1
            for k in range(k_max, 0, -1):
                shared = np.uint64(0)
                for i in range(k):
                    shared |= bits[a + taken[i]]
                extra = 0
                for i in range(k):
                    extra += _popcount(shared ^ bits[a + taken[i]])
                if extra <= redundancy:
                    kept = k
                    break
            for i in range(k_max):
                labels[a + taken[i]] = p if i < kept else -1
            free -= kept


#: The compiled :func:`_fuzzy_labels` (None without numba or with ``STACKCAST_NO_JIT=1``).
fuzzy_labels: Callable[..., Any] | None = _fuzzy_labels if _NJIT is not None else None


def cluster_layers(starts: np.ndarray, ids: np.ndarray, bits: np.ndarray, max_prules: int,
                   max_ids: int, redundancy: int,
                   labels_of: Callable[..., Any] | None = None) -> list[Layer]:
    """:func:`~strategies.elmo.prules.cluster_layer` of every group: group ``g``'s
    switches are ``ids[starts[g]:starts[g + 1]]`` (ascending) with bitmaps ``bits``
    (int64, below 2**63). ``labels_of`` is the kernel (default :data:`fuzzy_labels`,
    which must not be None)."""
    kernel = fuzzy_labels if labels_of is None else labels_of
    assert kernel is not None
    labels = np.empty(len(ids), np.int64)
    kernel(starts.astype(np.int64), bits.astype(np.uint64), max_prules, max_ids, redundancy,
           labels)
    id_list, bit_list, label_list = ids.tolist(), bits.tolist(), labels.tolist()
    ends = starts.tolist()
    out = []
    for g in range(len(ends) - 1):
        a, b = ends[g], ends[g + 1]
        if b - a <= max_prules:
            out.append(Layer(tuple(PRule((i,), x) for i, x in
                                   zip(id_list[a:b], bit_list[a:b], strict=True)), ()))
            continue
        rules: dict[int, tuple[list[int], int]] = {}
        rest = []
        for j in range(a, b):
            label = label_list[j]
            if label < 0:
                rest.append((id_list[j], bit_list[j]))
            else:
                got = rules.get(label)
                if got is None:
                    rules[label] = ([id_list[j]], bit_list[j])
                else:
                    got[0].append(id_list[j])
                    rules[label] = (got[0], got[1] | bit_list[j])
        out.append(Layer(tuple(PRule(tuple(rules[p][0]), rules[p][1])
                               for p in range(len(rules))), tuple(rest)))
    return out


def cluster_groups(fabric: ElmoFabric, layout: ElmoLayout, offsets: np.ndarray,
                   hosts: np.ndarray, limits: ClusterLimits) -> list[tuple[Layer, Layer]]:
    """:func:`~strategies.elmo.prules.cluster_nodes` (spine, leaf) of the member leaves
    and pods of many groups: group ``i``'s host indices are
    ``hosts[offsets[i]:offsets[i + 1]]``. Compiled (:func:`cluster_layers`) when
    :data:`fuzzy_labels` is there and the bitmaps fit 63 bits, else group by group."""
    groups = len(offsets) - 1
    leaf_of, bit_of, pod_of, leaf_bit_of = host_arrays(fabric)
    if fuzzy_labels is None or bit_of is None or leaf_bit_of is None or not groups:
        return [cluster_nodes(layout, leaves, pods, limits)
                for leaves, pods in nodes_of_groups(fabric, offsets, hosts)]
    group = np.repeat(np.arange(groups, dtype=np.int64), np.diff(offsets))
    leaf_nodes = or_by_switch(groups, group, leaf_of[hosts], bit_of[hosts])
    pod_nodes = or_by_switch(groups, group, pod_of[hosts], leaf_bit_of[hosts])
    leaf = cluster_layers(*leaf_nodes, limits.leaf_prules, limits.max_ids,
                          limits.leaf_redundancy)
    spine = cluster_layers(*pod_nodes, limits.spine_prules, limits.max_ids,
                           limits.spine_redundancy)
    if not limits.header_bytes_max:
        return list(zip(spine, leaf, strict=True))
    leaves, pods = _node_lists(*leaf_nodes), _node_lists(*pod_nodes)
    return [fit_budget(layout, leaves[g], pods[g], spine[g], leaf[g], limits)
            for g in range(groups)]


def _node_lists(starts: np.ndarray, ids: np.ndarray, bits: np.ndarray) -> list[list[Node]]:
    pairs = list(zip(ids.tolist(), bits.tolist(), strict=True))
    ends = starts.tolist()
    return [pairs[ends[g]:ends[g + 1]] for g in range(len(ends) - 1)]


# -- the p-rules of many groups encoded at once -----------------------------------------


@_kernel
def _put(out: np.ndarray, at: int, value: np.uint64, width: int) -> int:
    """Write the ``width`` low bits of ``value`` MSB first at bit ``at`` of ``out``
    (zeroed); the bit after them."""
    for i in range(width):
        shift = width - 1 - i
        if shift < 64 and (value >> np.uint64(shift)) & np.uint64(1):
            out[(at + i) >> 3] |= np.uint8(0x80 >> ((at + i) & 7))
    return at + width


@_kernel
def _encode_rules(starts: np.ndarray, ids: np.ndarray, bits: np.ndarray, labels: np.ndarray,
                  count_bits: int, bitmap_bits: int, id_bits: int, out: np.ndarray,
                  ends: np.ndarray, counts: np.ndarray) -> None:
    """Group ``g``'s p-rules (the switches of label 0, 1, ..., in id order) in
    :func:`~sim.dataplanes.elmo.codec.encode_layer_reference`'s bytes, without the
    default p-rule, into ``out`` (zeroed) up to ``ends[g]``; ``counts[g]``: how many."""
    pos = 0
    for g in range(starts.shape[0] - 1):
        a, b = starts[g], starts[g + 1]
        rules = 0
        for j in range(a, b):
            if labels[j] + 1 > rules:
                rules = labels[j] + 1
        for p in range(rules):
            k = 0
            bitmap = np.uint64(0)
            for j in range(a, b):
                if labels[j] == p:
                    k += 1
                    bitmap |= bits[j]
            at = _put(out, 8 * pos, np.uint64(k - 1), count_bits)
            at = _put(out, at, bitmap, bitmap_bits)
            for j in range(a, b):
                if labels[j] == p:
                    at = _put(out, at, np.uint64(ids[j]), id_bits)
            pos = (at + 7) >> 3
        ends[g] = pos
        counts[g] = rules


#: One layer of one group, encoded: (p-rule bytes without the default, p-rules, rest).
EncodedLayer = tuple[bytes, int, list[Node]]


def encode_layers(starts: np.ndarray, ids: np.ndarray, bits: np.ndarray, max_prules: int,
                  max_ids: int, redundancy: int, layout: ElmoLayout, layer: str
                  ) -> list[EncodedLayer] | None:
    """Per group, :func:`~sim.dataplanes.elmo.prules.cluster_layer`'s p-rules encoded as
    :func:`~sim.dataplanes.elmo.codec.encode_layer` (no default) and its rest, without
    building the p-rules; None without the kernels or when a value does not fit its
    field (:func:`cluster_layers` and ``encode_layer`` then apply, and raise)."""
    if fuzzy_labels is None or encode_rules is None or not 1 <= max_ids <= layout.max_ids:
        return None
    bitmap_bits, id_bits = layer_widths(layout, layer)
    if len(ids) and (int(bits.max()) >= 1 << bitmap_bits or int(bits.min()) < 0
                     or int(ids.max()) >= 1 << id_bits or int(ids.min()) < 0):
        return None
    starts = starts.astype(np.int64)
    words = bits.astype(np.uint64)
    labels = np.empty(len(ids), np.int64)
    fuzzy_labels(starts, words, max_prules, max_ids, redundancy, labels)
    groups = len(starts) - 1
    out = np.zeros(len(ids) * -(-(layout.count_bits + bitmap_bits + id_bits) // 8), np.uint8)
    ends, counts = np.zeros(groups, np.int64), np.zeros(groups, np.int64)
    encode_rules(starts, ids.astype(np.int64), words, labels, layout.count_bits, bitmap_bits,
                 id_bits, out, ends, counts)
    raw = out.tobytes()
    cut = [0, *ends.tolist()]
    rest = labels < 0
    rest_starts = np.zeros(groups + 1, np.int64)
    np.cumsum(np.bincount(np.repeat(np.arange(groups), np.diff(starts))[rest],
                          minlength=groups), out=rest_starts[1:])
    pairs = list(zip(ids[rest].tolist(), bits[rest].tolist(), strict=True))
    r = rest_starts.tolist()
    n = counts.tolist()
    return [(raw[cut[g]:cut[g + 1]], n[g], pairs[r[g]:r[g + 1]]) for g in range(groups)]


#: The compiled :func:`_encode_rules` (None like :data:`fuzzy_labels`).
encode_rules: Callable[..., Any] | None = _encode_rules if _NJIT is not None else None


def encoded_groups(fabric: ElmoFabric, layout: ElmoLayout, offsets: np.ndarray,
                   hosts: np.ndarray, limits: ClusterLimits
                   ) -> list[tuple[EncodedLayer, EncodedLayer]] | None:
    """(spine, leaf) :func:`encode_layers` of the member pods and leaves of many groups
    (``hosts[offsets[i]:offsets[i + 1]]``); None where :func:`cluster_groups` must
    apply: no kernels, bitmaps past 63 bits, a header budget, a value too wide."""
    groups = len(offsets) - 1
    leaf_of, bit_of, pod_of, leaf_bit_of = host_arrays(fabric)
    if fuzzy_labels is None or bit_of is None or leaf_bit_of is None or not groups \
            or limits.header_bytes_max:
        return None
    group = np.repeat(np.arange(groups, dtype=np.int64), np.diff(offsets))
    leaf = encode_layers(*or_by_switch(groups, group, leaf_of[hosts], bit_of[hosts]),
                         limits.leaf_prules, limits.max_ids, limits.leaf_redundancy, layout,
                         "leaf")
    spine = encode_layers(*or_by_switch(groups, group, pod_of[hosts], leaf_bit_of[hosts]),
                          limits.spine_prules, limits.max_ids, limits.spine_redundancy, layout,
                          "spine")
    if leaf is None or spine is None:
        return None
    return list(zip(spine, leaf, strict=True))
