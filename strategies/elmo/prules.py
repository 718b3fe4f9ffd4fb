"""Elmo's controller: shared p-rules, s-rules under a capacity, the default p-rule.

For one group and one downstream layer (the member leaves with their host
bitmaps, or the member pods with their leaf bitmaps) :func:`cluster_layer`
assigns at most ``max_prules`` p-rules (Elmo's H_max), each naming at most
``max_ids`` switches (K_max) whose bitmaps it ORs, with at most
``redundancy`` (R) extra ports over the switches it names: ``sum over its
switches of popcount(shared ^ own) <= R``. The greedy is the authors' "fuzzy
match" (Elmo §4; Elmo-MCast/numerical-evals ``pseudocodes/fuzzy_match.algo``,
``simulation/algorithms/fuzzy_match.py``):

- a layer with at most ``max_prules`` switches gets one p-rule per switch;
- otherwise, for p-rule ``i`` of ``max_prules``, try ``k`` from
  ``min(max_ids, ceil(unassigned / p-rules left))`` down to 1: take the ``k``
  switches of the *minimum k-union* (greedy: repeatedly the switch whose
  bitmap ORed with those taken has the fewest bits, ``pseudocodes/min_k_union.algo``)
  and keep them if their redundancy is within R (``k = 1`` always is).

The switches left over get an s-rule while their group table has room (a
per-switch capacity shared by all groups, filled in gid order), else they
fall to the layer's default p-rule, the OR of their bitmaps (or, with the
default p-rule off, stay unserved). :func:`plan_groups` does this for all
groups; spine s-rules are per pod (every spine of the pod holds them).

This is the deterministic ``fuzzy-match`` of the authors' code; their
evaluation scripts (``fab_optimizer_with_data.sh``) run ``random-fuzzy-match``,
whose minimum k-union takes each best candidate only with probability 2/3
(``common.py`` ``min_k_union_random``), which packs fewer switches per p-rule
and so leaves more to s-rules. Deviations from the authors' code, for
determinism: ties in the minimum k-union go to the switch with the lowest id
(their ``min`` takes the first of a list whose order their retries change);
a rejected k-union leaves the order unchanged. An optional header budget
(``header_bytes_max``) drops the last leaf p-rules, then the last spine
p-rules, until the group's largest header fits (their model sizes the header
through H_max only).

References
----------
Elmo SIGCOMM 2019 §3.2 (p-rule sharing, redundancy limit, s-rules, default
p-rule), §4 (controller); Elmo-MCast/numerical-evals ``pseudocodes/*.algo``,
``simulation/algorithms/fuzzy_match.py``, ``common.py`` (``min_k_union``),
``simulation/optimizer.py`` (per-switch rule counts across groups).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import ceil, inf

import numpy as np

from sim.dataplanes.elmo.codec import FIXED_BYTES, ElmoLayout, PRule
from sim.dataplanes.elmo.fabric import ElmoFabric
from sim.dataplanes.elmo.headers import GroupRules
from topologies.registry import SpecError

#: A layer's switch as the clustering sees it: (Elmo id, port bitmap).
Node = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer of one group: its shared p-rules and the switches without one."""

    prules: tuple[PRule, ...]
    rest: tuple[Node, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterLimits:
    """The controller's limits (the strategy's parameters, Elmo's names in brackets).

    Parameters
    ----------
    leaf_prules, spine_prules : int
        Shared p-rules per downstream layer in the header (H_max).
    max_ids : int
        Switches one p-rule may name (K_max).
    leaf_redundancy, spine_redundancy : int
        Extra ports a shared p-rule may add over its switches (R).
    leaf_srules, spine_srules : int
        Group-table entries (s-rules) per leaf and per spine.
    default_prule : bool
        Whether switches with neither p-rule nor s-rule fall to a default p-rule.
    header_bytes_max : int
        Largest header a group may need (0: no limit beyond H_max).
    """

    leaf_prules: int
    spine_prules: int
    max_ids: int
    leaf_redundancy: int
    spine_redundancy: int
    leaf_srules: int
    spine_srules: int
    default_prule: bool
    header_bytes_max: int = 0


#: From this many switches on, :func:`min_k_union` works on numpy arrays (64-bit bitmaps).
_VECTOR_FROM = 48


def min_k_union(nodes: Sequence[Node], k: int) -> list[int]:
    """Indices into ``nodes`` of ``k`` switches whose bitmaps' union is greedily small
    (each step the switch adding the fewest bits; ties to the lower index). The first
    ``j`` indices are those of ``min_k_union(nodes, j)``."""
    if len(nodes) >= _VECTOR_FROM and all(b < 1 << 64 for _, b in nodes):
        return _min_k_union_numpy(nodes, k)
    bitmaps = [b for _, b in nodes]
    acc = 0
    taken: list[int] = []
    for _ in range(k):
        counts: list[float] = [(acc | b).bit_count() for b in bitmaps]
        for i in taken:
            counts[i] = inf
        best = counts.index(min(counts))  # the lowest index of the least count
        taken.append(best)
        acc |= bitmaps[best]
    return taken


def _min_k_union_numpy(nodes: Sequence[Node], k: int) -> list[int]:
    """:func:`min_k_union` on a uint64 array (``argmin`` takes the lowest index of a tie)."""
    bitmaps = np.fromiter((b for _, b in nodes), np.uint64, len(nodes))
    acc = np.uint64(0)
    taken: list[int] = []
    for _ in range(k):
        counts = np.bitwise_count(bitmaps | acc).astype(np.int16)
        counts[taken] = 1 << 8  # more than any 64-bit union
        best = int(np.argmin(counts))
        taken.append(best)
        acc |= bitmaps[best]
    return taken


def cluster_layer(nodes: Sequence[Node], max_prules: int, max_ids: int,
                  redundancy: int) -> Layer:
    """Shared p-rules for ``nodes`` (sorted by id) and the nodes left over (module
    docstring, "fuzzy match"; the k-unions for k = kmax .. 1 are the prefixes of one
    greedy sequence, so it is computed once per p-rule)."""
    if len(nodes) <= max_prules:
        return Layer(tuple(PRule((i,), b) for i, b in nodes), ())
    unassigned = list(nodes)
    prules: list[PRule] = []
    for left in range(max_prules, 0, -1):
        if not unassigned:
            break
        picked = min_k_union(unassigned, min(max_ids, ceil(len(unassigned) / left)))
        for k in range(len(picked), 0, -1):
            shared = 0
            for i in picked[:k]:
                shared |= unassigned[i][1]
            if sum((shared ^ unassigned[i][1]).bit_count() for i in picked[:k]) <= redundancy:
                prules.append(PRule(tuple(sorted(unassigned[i][0] for i in picked[:k])), shared))
                for i in sorted(picked[:k], reverse=True):
                    del unassigned[i]
                break
    return Layer(tuple(prules), tuple(unassigned))


def group_nodes(fabric: ElmoFabric, hosts: Iterable[str]) -> tuple[list[Node], list[Node]]:
    """The member leaves (leaf id, host bitmap) and member pods (pod, leaf bitmap) of a
    group's hosts, each sorted by id."""
    return nodes_of(fabric, map(fabric.topology.host_id, hosts))


def nodes_of(fabric: ElmoFabric, indices: Iterable[int]) -> tuple[list[Node], list[Node]]:
    """:func:`group_nodes` of hosts given by their indices in ``topology.hosts``."""
    leaf_of, bit_of, pod_of, leaf_bit_of = host_columns(fabric)
    leaf_bits: dict[int, int] = {}
    pod_bits: dict[int, int] = {}
    for i in indices:
        leaf, pod = leaf_of[i], pod_of[i]
        leaf_bits[leaf] = leaf_bits.get(leaf, 0) | bit_of[i]
        pod_bits[pod] = pod_bits.get(pod, 0) | leaf_bit_of[i]
    return sorted(leaf_bits.items()), sorted(pod_bits.items())


def nodes_of_groups(fabric: ElmoFabric, offsets: np.ndarray, hosts: np.ndarray
                    ) -> list[tuple[list[Node], list[Node]]]:
    """:func:`nodes_of` of many groups at once: group ``i``'s host indices are
    ``hosts[offsets[i]:offsets[i + 1]]``; the bitmaps are ORed with numpy
    (``bitwise_or.reduceat`` over (group, switch) runs) when they fit 63 bits,
    else group by group."""
    groups = len(offsets) - 1
    leaf_of, bit_of, pod_of, leaf_bit_of = host_arrays(fabric)
    if bit_of is None or leaf_bit_of is None or not groups:
        return [nodes_of(fabric, hosts[offsets[i]:offsets[i + 1]].tolist())
                for i in range(groups)]
    group = np.repeat(np.arange(groups, dtype=np.int64), np.diff(offsets))
    return list(zip(_or_by_switch(groups, group, leaf_of[hosts], bit_of[hosts]),
                    _or_by_switch(groups, group, pod_of[hosts], leaf_bit_of[hosts]),
                    strict=True))


def _or_by_switch(groups: int, group: np.ndarray, switch: np.ndarray, bits: np.ndarray
                  ) -> list[list[Node]]:
    """Per group, its (switch, OR of its bits) sorted by switch."""
    starts, ids, merged = or_by_switch(groups, group, switch, bits)
    pairs = list(zip(ids.tolist(), merged.tolist(), strict=True))
    ends = starts.tolist()
    return [pairs[ends[i]:ends[i + 1]] for i in range(groups)]


def or_by_switch(groups: int, group: np.ndarray, switch: np.ndarray, bits: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, ids, bitmaps)``: group ``i``'s switches (ascending) and the OR of their
    ``bits`` at ``starts[i]:starts[i + 1]``, from one (group, switch, bits) row per host."""
    key = group * (int(switch.max()) + 1 if len(switch) else 1) + switch
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if len(key) else \
        np.zeros(0, np.int64)
    merged = np.bitwise_or.reduceat(bits[order], first) if len(first) else bits[:0]
    starts = np.searchsorted(group[order][first], np.arange(groups + 1))
    return starts.astype(np.int64), switch[order][first], merged


@lru_cache(maxsize=8)
def host_arrays(fabric: ElmoFabric) -> tuple[np.ndarray, np.ndarray | None, np.ndarray,
                                             np.ndarray | None]:
    """:func:`host_columns` as int64 arrays (the bit columns None when a bit is past 62)."""
    leaf_of, bit_of, pod_of, leaf_bit_of = host_columns(fabric)
    fits = all(b < 1 << 63 for b in (*bit_of, *leaf_bit_of))
    return (np.asarray(leaf_of, np.int64), np.asarray(bit_of, np.int64) if fits else None,
            np.asarray(pod_of, np.int64), np.asarray(leaf_bit_of, np.int64) if fits else None)


@lru_cache(maxsize=8)
def host_columns(fabric: ElmoFabric) -> tuple[tuple[int, ...], ...]:
    """Per host index in ``topology.hosts``: its leaf's id, its bit in the leaf's bitmap,
    its pod, its leaf's bit in the pod's bitmap (four columns)."""
    rows = []
    for h in fabric.topology.hosts:
        leaf = fabric.leaf_of(h)
        rows.append((fabric.leaf_id(leaf), 1 << fabric.host_bit[h], fabric.pod_of[leaf],
                     1 << fabric.leaf_bit[leaf]))
    return tuple(zip(*rows, strict=True)) if rows else ((), (), (), ())


def worst_header_bytes(layout: ElmoLayout, spine: Layer, leaf: Layer) -> int:
    """The largest header a sender of this group pushes (every section present)."""
    return (FIXED_BYTES + layout.up_leaf_bytes + layout.up_spine_bytes + layout.core_bytes
            + sum(layout.spine_rule_bytes(len(r.ids)) for r in spine.prules)
            + layout.spine_default_bytes
            + sum(layout.leaf_rule_bytes(len(r.ids)) for r in leaf.prules)
            + layout.leaf_default_bytes)


def _shrink(layer: Layer, nodes: Sequence[Node]) -> Layer:
    """``layer`` without its last p-rule (its switches join the rest, by id)."""
    bitmap = dict(nodes)
    back = [(i, bitmap[i]) for i in layer.prules[-1].ids]
    return Layer(layer.prules[:-1], tuple(sorted((*layer.rest, *back))))


def cluster_group(fabric: ElmoFabric, layout: ElmoLayout, hosts: Iterable[str],
                  limits: ClusterLimits) -> tuple[Layer, Layer]:
    """The spine and leaf layers of one group, within the header budget.

    Raises
    ------
    SpecError
        If ``header_bytes_max`` is too small even for a header without shared p-rules.
    """
    leaves, pods = group_nodes(fabric, hosts)
    return cluster_nodes(layout, leaves, pods, limits)


def cluster_nodes(layout: ElmoLayout, leaves: Sequence[Node], pods: Sequence[Node],
                  limits: ClusterLimits) -> tuple[Layer, Layer]:
    """:func:`cluster_group` of a group's member leaves and pods (:func:`nodes_of`)."""
    leaf = cluster_layer(leaves, limits.leaf_prules, limits.max_ids, limits.leaf_redundancy)
    spine = cluster_layer(pods, limits.spine_prules, limits.max_ids, limits.spine_redundancy)
    return fit_budget(layout, leaves, pods, spine, leaf, limits)


def fit_budget(layout: ElmoLayout, leaves: Sequence[Node], pods: Sequence[Node], spine: Layer,
               leaf: Layer, limits: ClusterLimits) -> tuple[Layer, Layer]:
    """The layers :func:`cluster_layer` gave ``leaves`` and ``pods``, shrunk to
    ``header_bytes_max`` (:func:`cluster_group`)."""
    budget = limits.header_bytes_max
    if budget:
        while worst_header_bytes(layout, spine, leaf) > budget and leaf.prules:
            leaf = _shrink(leaf, leaves)
        while worst_header_bytes(layout, spine, leaf) > budget and spine.prules:
            spine = _shrink(spine, pods)
        if worst_header_bytes(layout, spine, leaf) > budget:
            raise SpecError(f"header_bytes_max={budget} is below the "
                            f"{worst_header_bytes(layout, spine, leaf)} B an Elmo header needs "
                            "without shared p-rules on this topology")
    return spine, leaf


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """One group's outcome: what senders push, and its s-rules.

    ``leaf_srules``: (leaf id, host bitmap); ``spine_srules``: (pod, leaf bitmap).
    """

    rules: GroupRules
    leaf_srules: tuple[Node, ...]
    spine_srules: tuple[Node, ...]


def assign_rest(rest: Sequence[Node], usage: dict[int, int], capacity: int,
                default: bool) -> tuple[tuple[Node, ...], int | None]:
    """s-rules for the switches of ``rest`` that have room (``usage`` is updated), and
    the default bitmap of the others (None when there are none or it is off)."""
    srules: list[Node] = []
    fallback = None
    for node in rest:
        used = usage.get(node[0], 0)
        if used < capacity:
            usage[node[0]] = used + 1
            srules.append(node)
        elif default:
            fallback = (fallback or 0) | node[1]
    return tuple(srules), fallback


def plan_groups(fabric: ElmoFabric, layout: ElmoLayout,
                groups: Iterable[tuple[int, tuple[str, ...]]], limits: ClusterLimits
                ) -> list[GroupPlan]:
    """Every group's p-rules, s-rules and default p-rules, in the order given (gid
    order: earlier groups take group-table room first).

    The definition of the controller's outcome; the strategy's installs
    (:class:`strategies.elmo.assignment.Controller`, which keeps it up to date
    under churn) are property-tested against it.
    """
    leaf_usage: dict[int, int] = {}
    pod_usage: dict[int, int] = {}
    out = []
    for gid, hosts in groups:
        spine, leaf = cluster_group(fabric, layout, hosts, limits)
        spine_s, spine_default = assign_rest(spine.rest, pod_usage, limits.spine_srules,
                                             limits.default_prule)
        leaf_s, leaf_default = assign_rest(leaf.rest, leaf_usage, limits.leaf_srules,
                                           limits.default_prule)
        out.append(GroupPlan(GroupRules(gid, hosts, spine.prules, spine_default, leaf.prules,
                                        leaf_default), leaf_s, spine_s))
    return out
