"""Flow-limit enforcers: the local enforcers and the global optimizer's greedy step.

- :func:`enforce_local`: after an install overflows a switch, merge leaf
  merge points until the switch is back at its effective limit; ``baseline``
  picks one uniformly at random over all merge trees of the switch, ``min-space``
  the one of minimum :func:`~strategies.prefix_filter.flow_limits.min_space_cost`.
- :func:`process_switch`: the global optimizer's PROCESSSWITCH (Alg. 4):
  greedy by cost per benefit (benefit = cardinality - 1), never overshooting
  the limit unless no candidate fits (then the cheapest, digest A5.2), costs
  updated after every merge.
- :func:`switch_order`: Alg. 3's order (hop groups from the publishers, least
  unprocessed upstream switches first; the [BUG]-corrected group update).

Deviations: the global candidates are the *leaf* merge points by default
(``candidates="leaf"``), re-derived around every merge; the thesis's
argument that a high-cardinality merge can be reproduced by lower-cardinality
ones at the same cost makes this the cheap equivalent; ``"all"`` evaluates
every merge point as Alg. 4 literally does.

References
----------
Seed 001 §5.3 (local enforcers, baseline and MS, 0.2 / 0.5 ms per call),
§5.4 (Alg. 3 and 4); digest seed001-004 A2, A5.2-A5.4.
"""

from __future__ import annotations

import heapq
import time
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from strategies.prefix_filter.dz import lcp
from strategies.prefix_filter.flow_limits import (
    PrefixTable,
    cheapest_leaf_merge,
    min_space_cost,
)

CostFn = Callable[[int, PrefixTable, str, Sequence[str]], float]


@dataclass
class EnforcerStats:
    """Local enforcer calls and their wall-clock time (seconds), merges done."""

    calls: int = 0
    seconds: float = 0.0
    merges: int = 0

    @property
    def ms_per_call(self) -> float:
        return self.seconds / self.calls * 1e3 if self.calls else 0.0


def total_flows(tables: Mapping[int, PrefixTable]) -> int:
    return sum(len(t) for t in tables.values())


def leaf_candidates(tables: Mapping[int, PrefixTable], reference: bool = False
                    ) -> list[tuple[int, str]]:
    """(port, node) of every leaf merge point, by port; ``reference`` computes them from
    the keys instead of the tables' incremental sets."""
    return [(port, m) for port in sorted(tables)
            for m in (tables[port].compute_leaf_merge_points() if reference
                      else tables[port].leaf_merge_points())]


def cheapest_merge(tables: Mapping[int, PrefixTable]) -> tuple[int, str] | None:
    """The MS pick: the leaf merge point of minimum (cost, port, node), from each table's
    memoised cheapest point (:func:`~strategies.prefix_filter.flow_limits.cheapest_leaf_merge`);
    a table the last install or merge did not write is not costed again."""
    best: tuple[float, int, str] | None = None
    for port in sorted(tables):
        hit = cheapest_leaf_merge(tables[port])
        if hit is not None and (best is None or (hit[0], port, hit[1]) < best):
            best = (hit[0], port, hit[1])
    return None if best is None else (best[1], best[2])


def cheapest_merge_reference(tables: Mapping[int, PrefixTable]) -> tuple[int, str] | None:
    """:func:`cheapest_merge` costing every leaf merge point of every table again."""
    cands = leaf_candidates(tables, reference=True)
    if not cands:
        return None
    return min(cands, key=lambda c: (min_space_cost(tables[c[0]], c[1]), c))


def enforce_local(tables: Mapping[int, PrefixTable], limit: int,
                  mode: Literal["baseline", "min-space"], rng: np.random.Generator,
                  stats: EnforcerStats | None = None, *, reference: bool = False
                  ) -> list[tuple[int, str]]:
    """Merge until the switch holds at most ``limit`` flows; the merges done.

    Stops early (over the limit) only when no merge point is left, i.e.
    every ingress table holds a single flow (digest A5.11: infeasible limit).
    ``reference`` recomputes every candidate and cost (no memo), the definition the
    memoised picks are tested against.
    """
    t0 = time.perf_counter()
    merges: list[tuple[int, str]] = []
    while total_flows(tables) > limit:
        pick: tuple[int, str] | None
        if mode == "baseline":
            cands = leaf_candidates(tables, reference)
            pick = cands[int(rng.integers(len(cands)))] if cands else None
        else:
            pick = cheapest_merge_reference(tables) if reference else cheapest_merge(tables)
        if pick is None:
            break
        tables[pick[0]].merge(pick[1])
        merges.append(pick)
    if stats is not None:
        stats.calls += 1
        stats.seconds += time.perf_counter() - t0
        stats.merges += len(merges)
    return merges


def _neighbour_nodes(table: PrefixTable, node: str) -> set[str]:
    """Merge-tree nodes whose leaf status may change after merging at ``node``."""
    keys = table.keys
    pos = bisect_left(keys, node)
    out: set[str] = set()
    lo, hi = max(pos - 1, 0), min(pos + 2, len(keys))
    window = keys[lo:hi]
    for a in range(len(window)):
        for b in range(a + 1, len(window)):
            out.add(lcp(window[a], window[b]))
    return out


def process_switch(tables: Mapping[int, PrefixTable], limit: int, cost: CostFn,
                   candidates: Literal["leaf", "all"] = "leaf") -> list[tuple[int, str]]:
    """Merge greedily by cost per benefit until at most ``limit`` flows (Alg. 4)."""
    heap: list[tuple[float, int, str, tuple[str, ...]]] = []
    memo: dict[tuple[int, str, tuple[str, ...], tuple[frozenset[int], ...]], float] = {}

    def block_of(port: int, node: str) -> tuple[str, ...] | None:
        t = tables[port]
        if candidates == "leaf":
            b = t.leaf_block(node)
            return None if b is None else tuple(b)
        b = t.block(node)
        return tuple(b) if len(b) >= 2 else None

    def push(port: int, node: str) -> None:
        block = block_of(port, node)
        if block is None:
            return
        t = tables[port]
        up = t.nearest_ancestor(node)
        sig = (port, node, block, tuple(t.flows[k] for k in block)
               + ((t.flows[up],) if up is not None else ()))
        c = memo.get(sig)
        if c is None:
            c = memo[sig] = cost(port, t, node, block)
        heapq.heappush(heap, (c / (len(block) - 1), port, node, block))

    for port in sorted(tables):
        t = tables[port]
        nodes = t.leaf_merge_points() if candidates == "leaf" else t.merge_points()
        for node in nodes:
            push(port, node)
    merges: list[tuple[int, str]] = []
    count = total_flows(tables)
    aside: list[tuple[float, int, str, tuple[str, ...]]] = []
    while count > limit:
        item = None
        while heap:
            cand = heapq.heappop(heap)
            if block_of(cand[1], cand[2]) != cand[3]:
                continue  # stale
            if count - (len(cand[3]) - 1) < limit:
                aside.append(cand)
                continue
            item = cand
            break
        if item is None:
            valid = [a for a in aside if block_of(a[1], a[2]) == a[3]]
            if not valid:
                break
            item = min(valid)  # overshoot rather than stay above the limit (A5.2)
            aside.remove(item)
        _, port, node, _ = item
        t = tables[port]
        t.merge(node)
        merges.append((port, node))
        count = total_flows(tables)
        touched = _neighbour_nodes(t, node)
        if candidates == "all":
            touched |= {m for m in t.merge_points() if node.startswith(m)}
        for m in touched:
            push(port, m)
        for a in aside:
            heapq.heappush(heap, a)
        aside = []
    return merges


def switch_order(switches: Sequence[str], upstream: Mapping[str, Mapping[str, Sequence[str]]]
                 ) -> list[str]:
    """Alg. 3's processing order.

    ``upstream[s][p]`` are the switches before ``s`` on publisher ``p``'s
    path (nearest last), absent if ``p``'s events never reach ``s``. Groups
    by the minimum number of switches before ``s``; inside a group, fewest
    unprocessed upstream switches first (ties by name order in
    ``switches``).
    """
    rank = {s: i for i, s in enumerate(switches)}
    hops = {s: min((len(v) for v in upstream.get(s, {}).values()), default=10**9)
            for s in switches}
    done: set[str] = set()
    order: list[str] = []
    for level in sorted(set(hops.values())):
        group = [s for s in switches if hops[s] == level]
        while group:
            def pending(s: str) -> int:
                ups: set[str] = set()
                for path in upstream.get(s, {}).values():
                    ups.update(path)
                return len(ups - done)

            s = min(group, key=lambda x: (pending(x), rank[x]))
            order.append(s)
            done.add(s)
            group.remove(s)
    return order
