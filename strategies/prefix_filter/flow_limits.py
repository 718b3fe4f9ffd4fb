"""Flow limits for dz flows: merge trees, local and global enforcement, deployment.

A switch's flows are kept per ingress port in a :class:`PrefixTable` (dz ->
egress ports); it is both the flow table and its *merge tree* (seed 001
§5.2: a radix tree per (switch, ingress port) whose nodes are the longest
common prefixes of their children): the compressed-trie nodes are the flow
keys plus the longest common prefixes of lexicographically adjacent keys, and
a node's subtree is the contiguous block of keys it prefixes.

- :meth:`PrefixTable.install`: Algorithm 1 (full cover -> skip; partial
  cover -> port union both ways; delete what becomes fully covered).
- :func:`normalize_flows`: the unlimited flow set of a logical flow set (the
  fixpoint of Algorithm 1, order independent).
- :meth:`PrefixTable.merge`: merge at a node (dz = node key, ports = union).
- :func:`min_space_cost`, :func:`traffic_cost`, :func:`history_cost`: the
  MS, traffic (Alg. 5) and event-history (Alg. 6) costs.
- :func:`deployment_plan`: flow-limit-compliant deployment (Alg. 7).

Deviations (each flagged in the digest):
- MS cost uses ``region(f_m) - orig`` (the thesis's sign is reversed, [BUG]);
  a port the nearest covering flow already carries costs nothing, since that
  flow already sent the gap there (the thesis's formula ignores ancestors).
- Traffic/history costs intersect the input space with the advertisement
  (events only come from there) and exclude the merging switch itself
  ([BUG] note); history counts are divided by the sampling factor ``s``.
- A merged flow that its nearest covering flow now fully covers is deleted
  too (Algorithm 1's clean-up), so a merge may save one flow more than
  ``|m| - 1``.
- Alg. 7 is ordered: port-growing modifies, merges, pure deletes, unmerges,
  pure adds, port-shrinking modifies; this keeps the count at most one
  above the effective limit and never opens a false-negative window
  (verified by :func:`plan_is_safe`).

References
----------
Seed 001 §4.2 (Alg. 1), §5.1-5.2 (merge, false positives, merge tree),
§5.3 (local enforcers, MS cost), §5.4 (global optimizer, Alg. 3-6), §5.5
(Alg. 7), §5.6 (self-evaluation); digest seed001-004 A1-A2, A5.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush

from strategies.prefix_filter.dz import (
    contains_point,
    intersect_size,
    lcp,
    normalize,
    set_size,
    size,
    with_prefix,
)

Ports = frozenset[int]


class PrefixTable:
    """The flows of one (switch, ingress port): dz -> egress ports, kept sorted.

    Write only through :meth:`set`, :meth:`delete`, :meth:`install` and
    :meth:`merge`: they keep the memo of the leaf merge points (updated for the
    keys written since, :meth:`leaf_merge_points`) and of their MS costs
    (:func:`min_space_costs`) consistent.
    """

    __slots__ = ("flows", "keys", "_leaf", "_leaf_sorted", "_pending", "_cheapest", "_costs",
                 "_heap", "_written", "_carriers")

    def __init__(self, flows: Mapping[str, Iterable[int]] | None = None) -> None:
        self.flows: dict[str, Ports] = {k: frozenset(v) for k, v in (flows or {}).items()}
        self.keys: list[str] = sorted(self.flows)
        #: leaf merge points as of the last read (None: never computed)
        self._leaf: set[str] | None = None
        #: the same points, sorted (kept with them)
        self._leaf_sorted: list[str] = []
        #: keys inserted or deleted since the last read of the leaf merge points
        self._pending: set[str] = set()
        #: (MS cost, node) of the cheapest leaf merge point as it stands (None: not known)
        self._cheapest: tuple[float, str] | None = None
        #: MS cost per leaf merge point as of the last costing (None: never costed)
        self._costs: dict[str, float] | None = None
        #: (cost, node) of every costing since the heap was built; an entry is current
        #: while ``_costs[node]`` still equals its cost (:func:`cheapest_leaf_merge`)
        self._heap: list[tuple[float, str]] = []
        #: keys inserted, deleted or given other ports since the last costing
        self._written: set[str] = set()
        #: port -> keys whose flow carries it (None: not built yet; :meth:`carries`)
        self._carriers: dict[int, set[str]] | None = None

    def __len__(self) -> int:
        return len(self.flows)

    def copy(self) -> PrefixTable:
        out = PrefixTable()
        out.flows = dict(self.flows)
        out.keys = list(self.keys)
        return out

    def set(self, dz: str, ports: Ports) -> None:
        old = self.flows.get(dz)
        if old is None:
            insort(self.keys, dz)
            if self._leaf is not None:
                self._pending.add(dz)
        if self._carriers is not None:
            _recarry(self._carriers, dz, old or frozenset(), ports)
        self.flows[dz] = ports
        self._wrote(dz)

    def delete(self, dz: str) -> None:
        if self._carriers is not None:
            _recarry(self._carriers, dz, self.flows[dz], frozenset())
        del self.flows[dz]
        self.keys.pop(bisect_left(self.keys, dz))
        if self._leaf is not None:
            self._pending.add(dz)
        self._wrote(dz)

    def _wrote(self, dz: str) -> None:
        self._cheapest = None
        if self._costs is not None:
            self._written.add(dz)

    def ancestors(self, dz: str, strict: bool = False) -> list[str]:
        """Flow keys that cover ``dz`` (shortest first)."""
        end = len(dz) if strict else len(dz) + 1
        return [dz[:i] for i in range(end) if dz[:i] in self.flows]

    def nearest_ancestor(self, dz: str) -> str | None:
        for i in range(len(dz) - 1, -1, -1):
            if dz[:i] in self.flows:
                return dz[:i]
        return None

    def descendants(self, dz: str) -> Sequence[str]:
        """Keys strictly under ``dz``, parents before children."""
        block = with_prefix(self.keys, dz)
        return block[1:] if block and block[0] == dz else block

    def lpm(self, dz: str) -> Ports:
        """Ports of the longest flow covering the (event) dz, or the empty set."""
        for i in range(len(dz), -1, -1):
            hit = self.flows.get(dz[:i])
            if hit is not None:
                return hit
        return frozenset()

    def carries(self, prefixes: AbstractSet[str], port: int) -> bool:
        """True if a flow keyed by one of ``prefixes`` (the prefixes of a dz, itself
        included) carries ``port``: then ``install(dz, (port,))`` changes nothing
        (Algorithm 1's full cover, seed 001 §4.2). One disjointness test against the
        keys that carry ``port`` (kept up to date by :meth:`set` and :meth:`delete`)
        instead of a lookup per prefix; the caller hashes ``prefixes`` once.
        """
        keys = self.carriers(port)
        return keys is not None and not keys.isdisjoint(prefixes)

    def carriers(self, port: int) -> AbstractSet[str] | None:
        """The keys whose flow carries ``port`` (None: none ever did), the live set of the
        index :meth:`carries` tests against: :meth:`set` and :meth:`delete` change it in
        place, and only a write that gives ``port`` to a first key makes a new one.
        Read only."""
        if self._carriers is None:
            carriers: dict[int, set[str]] = {}
            for k, ports in self.flows.items():
                for p in ports:
                    carriers.setdefault(p, set()).add(k)
            self._carriers = carriers
        return self._carriers.get(port)

    # -- Algorithm 1 -------------------------------------------------------
    def install(self, dz: str, ports: Iterable[int]) -> bool:
        """Install flow ``(dz -> ports)`` by Algorithm 1; True if the table changed."""
        ports = frozenset(ports)
        anc = self.ancestors(dz)
        if any(self.flows[a] >= ports for a in anc):
            return False
        new = set(ports)
        for a in anc:
            new |= self.flows[a]
        fnew = frozenset(new)
        below = list(self.descendants(dz))
        for k in below:
            self.set(k, self.flows[k] | fnew)
        self.set(dz, fnew)
        self._drop_covered(below)
        return True

    def _drop_covered(self, keys: Iterable[str]) -> None:
        for k in keys:  # parents before children
            if k not in self.flows:
                continue
            up = self.nearest_ancestor(k)
            if up is not None and self.flows[up] >= self.flows[k]:
                self.delete(k)

    # -- merging -----------------------------------------------------------
    def block(self, node: str) -> Sequence[str]:
        """Keys in the subtree of merge-tree node ``node`` (itself included)."""
        return with_prefix(self.keys, node)

    def leaf_block(self, node: str) -> Sequence[str] | None:
        """The block of ``node`` if it is a leaf merge point (cardinality 2 or 3)."""
        block = self.block(node)
        if len(block) == 2:
            return block
        if len(block) == 3 and block[0] == node and lcp(block[1], block[2]) == node:
            return block
        return None

    def leaf_merge_points(self) -> list[str]:
        """The leaf merge points, sorted.

        Incremental: whether ``m`` is a leaf merge point depends only on the
        keys ``m`` prefixes (its block: two keys whose longest common prefix
        is ``m``, or ``m`` and two keys under it whose longest common prefix
        is ``m``), so a key inserted or deleted changes the status of its
        prefixes only; those are decided again, the rest is kept. Equal to
        :meth:`compute_leaf_merge_points` (``tests/strategies/test_flow_limit_memo.py``).
        """
        return list(self._leaf_points())

    def _leaf_points(self) -> list[str]:
        """:meth:`leaf_merge_points` as the live sorted list (read only)."""
        if self._leaf is None:
            self._leaf_sorted = self.compute_leaf_merge_points()
            self._leaf = set(self._leaf_sorted)
        elif self._pending:
            leaf, ordered = self._leaf, self._leaf_sorted
            nodes = {k[:i] for k in self._pending for i in range(len(k) + 1)}
            for m in nodes:
                if self._is_leaf(m):
                    if m not in leaf:
                        leaf.add(m)
                        insort(ordered, m)
                elif m in leaf:
                    leaf.discard(m)
                    del ordered[bisect_left(ordered, m)]
        self._pending = set()
        return self._leaf_sorted

    def _is_leaf(self, m: str) -> bool:
        keys = self.keys
        lo = bisect_left(keys, m)
        n = bisect_left(keys, m + "2", lo) - lo
        at = len(m)
        if n == 2:  # lcp(a, b) == m: a is m itself or they part right after m
            a, b = keys[lo], keys[lo + 1]
            return len(a) == at or a[at] != b[at]
        if n == 3:
            b, c = keys[lo + 1], keys[lo + 2]
            return keys[lo] == m and b[at] != c[at]
        return False

    def compute_leaf_merge_points(self) -> list[str]:
        """The leaf merge points computed from the keys (the reference of the memo)."""
        out: list[str] = []
        keys = self.keys
        for i in range(len(keys) - 1):
            m = lcp(keys[i], keys[i + 1])
            if (not out or out[-1] != m) and self.leaf_block(m) is not None:
                out.append(m)
        return sorted(set(out))

    def merge_points(self) -> list[str]:
        """Every merge-tree node with cardinality >= 2."""
        keys = self.keys
        nodes = set(keys) | {lcp(keys[i], keys[i + 1]) for i in range(len(keys) - 1)}
        return sorted(n for n in nodes if len(self.block(n)) >= 2)

    def merge(self, node: str) -> tuple[Ports, list[str]]:
        """Replace the flows under ``node`` by one flow ``(node -> union)``.

        Returns the merged ports and the removed keys (``node`` itself is
        reported removed if the merged flow ends fully covered).
        """
        block = list(self.block(node))
        ports: set[int] = set()
        for k in block:
            ports |= self.flows[k]
        for k in block:
            self.delete(k)
        merged = frozenset(ports)
        self.set(node, merged)
        up = self.nearest_ancestor(node)
        removed = [k for k in block if k != node]
        if up is not None and self.flows[up] >= merged:
            self.delete(node)
            removed.append(node)
        return merged, removed


def _recarry(carriers: dict[int, set[str]], dz: str, old: Ports, new: Ports) -> None:
    """Move ``dz`` between the carrier sets of :meth:`PrefixTable.carries` (ports old -> new)."""
    for p in old - new:
        carriers[p].discard(dz)
    for p in new - old:
        keys = carriers.get(p)
        if keys is None:
            carriers[p] = {dz}
        else:
            keys.add(dz)


def normalize_flows(logical: Mapping[str, Iterable[int]]) -> PrefixTable:
    """The unlimited flow table of logical flows ``dz -> ports`` (Algorithm 1's fixpoint).

    :func:`normalize_flows_reference` without the union when no key above covers the dz
    (most keys) and without sorting the kept keys again (they are kept in order); equal
    to it (``tests/strategies/test_flow_costs.py``).
    """
    out = PrefixTable()
    chain: list[tuple[str, Ports]] = []  # (key, propagated ports) of the current chain
    kept: dict[str, Ports] = {}
    for dz in sorted(logical):
        while chain and not dz.startswith(chain[-1][0]):
            chain.pop()
        if chain:
            inherited = chain[-1][1]
            ports = inherited.union(logical[dz])
            if ports != inherited:  # then not empty
                kept[dz] = ports
        else:
            ports = frozenset(logical[dz])
            if ports:
                kept[dz] = ports
        chain.append((dz, ports))
    out.flows = kept
    out.keys = list(kept)
    return out


def normalize_flows_reference(logical: Mapping[str, Iterable[int]]) -> PrefixTable:
    """:func:`normalize_flows` as first written (the definition)."""
    out = PrefixTable()
    stack: list[tuple[str, Ports]] = []  # (key, propagated ports) of the current chain
    kept: dict[str, Ports] = {}
    for dz in sorted(logical):
        while stack and not dz.startswith(stack[-1][0]):
            stack.pop()
        inherited = stack[-1][1] if stack else frozenset()
        ports = inherited | frozenset(logical[dz])
        stack.append((dz, ports))
        if ports and ports != inherited:
            kept[dz] = ports
    out.flows = kept
    out.keys = sorted(kept)
    return out


# -- costs -----------------------------------------------------------------


def _port_union(table: PrefixTable, block: Sequence[str], port: int) -> tuple[str, ...]:
    return normalize(k for k in block if port in table.flows[k])


def merge_ports(table: PrefixTable, block: Sequence[str]) -> Ports:
    out: set[int] = set()
    for k in block:
        out |= table.flows[k]
    return frozenset(out)


def min_space_cost(table: PrefixTable, node: str, block: Sequence[str] | None = None) -> float:
    """Space expansion of merging at ``node`` summed over egress ports (MS enforcer).

    Per port ``p`` of the merged flow: ``size(node) - size(∪ flows with p)``,
    as a fraction of the whole event space; 0 if the nearest covering flow
    already carries ``p``.
    """
    block = table.block(node) if block is None else block
    up = table.nearest_ancestor(node)
    covered = table.flows[up] if up is not None else frozenset()
    total = 0.0
    for p in merge_ports(table, block):
        if p not in covered:
            total += size(node) - set_size(k for k in block if p in table.flows[k])
    return total


def min_space_costs(table: PrefixTable) -> dict[str, float]:
    """MS cost of every leaf merge point of ``table`` (:func:`min_space_cost` of each).

    Incremental: the cost of node ``m`` is a function of its block (keys and
    ports) and of its nearest covering flow, so only a write to a key ``m``
    prefixes, or to a key that prefixes ``m``, changes it; the nodes no key
    written since the last costing touches keep their cost, the others (and
    new leaf merge points) are costed again, in the table's own dict (returned
    live: read only), and the points no longer leaves are dropped from it. Equal
    to costing every node (``tests/strategies/test_flow_limit_memo.py``).
    """
    leaf = table._leaf_points()
    costs = table._costs
    if costs is None:
        costs = table._costs = {m: min_space_cost(table, m) for m in leaf}
        table._heap = [(c, m) for m, c in costs.items()]
        heapify(table._heap)
    elif table._written:
        # in place: a node that stopped being a leaf point is a prefix of a written key
        # (its block changed); drop those, cost again what a written key touches
        points = table._leaf or set()  # set by _leaf_points above
        stale: set[str] = set()
        for k in table._written:
            stale.update([k[:i] for i in range(len(k) + 1)])
            stale.update(with_prefix(leaf, k))
        heap = table._heap
        for m in stale:
            if m in points:
                c = costs[m] = min_space_cost(table, m)
                heappush(heap, (c, m))
            elif m in costs:
                del costs[m]
        if len(heap) > 2 * len(costs) + 64:  # mostly outdated entries: rebuild
            heap[:] = [(c, m) for m, c in costs.items()]
            heapify(heap)
    table._written = set()
    return costs


def cheapest_leaf_merge(table: PrefixTable) -> tuple[float, str] | None:
    """``min((cost, node))`` over :func:`min_space_costs` (memoised until the next write);
    None if the table has no leaf merge point. The top of a heap of the costings, the
    outdated entries dropped as they surface (``tests/strategies/test_flow_limit_memo.py``
    checks it against the minimum over the costs)."""
    if table._cheapest is None:
        costs = min_space_costs(table)
        heap = table._heap
        while heap and costs.get(heap[0][1]) != heap[0][0]:
            heappop(heap)  # outdated: the node was costed again or is no leaf point now
        table._cheapest = heap[0] if heap else None
    return table._cheapest


@dataclass(frozen=True, slots=True)
class PathInfo:
    """What the global optimizer knows about one publisher's path into a switch.

    Attributes
    ----------
    input_space : tuple of str
        Normalised space of the publisher's events that reach the switch
        (intersection of what the upstream switches forward on the path).
    adv_space : tuple of str
        The publisher's advertisement space (normalised).
    traffic : float
        Events the publisher sent in the window (access-port counter).
    events : tuple of str
        Sampled events (dz of maximum length) of the publisher in the window,
        sorted, already restricted to ``input_space``.
    sampling : float
        Sampling factor ``s`` of the history collection.
    """

    input_space: tuple[str, ...]
    adv_space: tuple[str, ...]
    traffic: float = 0.0
    events: tuple[str, ...] = ()
    sampling: float = 1.0


def _wrong_ports(table: PrefixTable, node: str, block: Sequence[str]) -> list[int]:
    up = table.nearest_ancestor(node)
    covered = table.flows[up] if up is not None else frozenset()
    return sorted(p for p in merge_ports(table, block) if p not in covered)


def _near(norm: Sequence[str], node: str) -> Sequence[str]:
    """The members of the normalised space ``norm`` related to ``node``, in order: the one
    that covers ``node`` (at most one, and then none under it), else those under ``node``.

    Every other member is disjoint from ``node``'s region, so it adds nothing to the size of
    an intersection with a space inside that region (:func:`intersect_size` adds an exact
    ``0`` for it); dropping them keeps each sum bit for bit."""
    i = bisect_left(norm, node)
    if i < len(norm) and norm[i] == node:
        return (node,)
    if i > 0 and node.startswith(norm[i - 1]):
        return (norm[i - 1],)
    return with_prefix(norm, node)


def traffic_cost(table: PrefixTable, node: str, paths: Sequence[PathInfo],
                 links_behind: Mapping[int, int], block: Sequence[str] | None = None) -> float:
    """Estimated network false positives of merging at ``node`` (Alg. 5).

    For each path and each port ``p``: traffic x size(input ∩ wrong_p) /
    size(adv) x links behind ``p``, where ``wrong_p`` is the part of
    ``node``'s region the merged flows did not send to ``p``.

    :func:`traffic_cost_reference` with each port's union computed once per call (not per
    path) and the input space cut to the members related to ``node`` (:func:`_near`):
    the same terms added in the same order, so the same float
    (``tests/strategies/test_flow_costs.py``).
    """
    block = table.block(node) if block is None else block
    wrong = _wrong_ports(table, node, block)
    total = 0.0
    origs: list[tuple[int, tuple[str, ...]]] | None = None
    for path in paths:
        adv = set_size(path.adv_space)
        if not adv or not path.traffic:
            continue
        near = _near(path.input_space, node)
        in_node = intersect_size(near, (node,))
        if not in_node:
            continue
        if origs is None:
            origs = [(p, _port_union(table, block, p)) for p in wrong]
        for p, orig in origs:
            fp = in_node - intersect_size(near, orig)
            total += path.traffic * fp / adv * links_behind.get(p, 1)
    return total


def traffic_cost_reference(table: PrefixTable, node: str, paths: Sequence[PathInfo],
                           links_behind: Mapping[int, int],
                           block: Sequence[str] | None = None) -> float:
    """:func:`traffic_cost` as Alg. 5 reads, term by term (the definition)."""
    block = table.block(node) if block is None else block
    wrong = _wrong_ports(table, node, block)
    total = 0.0
    for path in paths:
        adv = set_size(path.adv_space)
        if not adv or not path.traffic:
            continue
        in_node = intersect_size(path.input_space, (node,))
        if not in_node:
            continue
        for p in wrong:
            orig = _port_union(table, block, p)
            fp = in_node - intersect_size(path.input_space, orig)
            total += path.traffic * fp / adv * links_behind.get(p, 1)
    return total


def history_cost(table: PrefixTable, node: str, paths: Sequence[PathInfo],
                 links_behind: Mapping[int, int], block: Sequence[str] | None = None) -> float:
    """Network false positives of merging at ``node`` on the sampled history (Alg. 6).

    Each sampled event inside ``node`` not covered by a merged flow with
    port ``p`` counts ``links_behind[p] / s``.

    :func:`history_cost_reference` with each port's union computed once per call, not per
    path (the same terms in the same order, ``tests/strategies/test_flow_costs.py``).
    """
    block = table.block(node) if block is None else block
    wrong = _wrong_ports(table, node, block)
    total = 0.0
    origs: list[tuple[int, tuple[str, ...]]] | None = None
    for path in paths:
        received = with_prefix(path.events, node)
        if not received:
            continue
        if origs is None:
            origs = [(p, _port_union(table, block, p)) for p in wrong]
        for p, orig in origs:
            fp = sum(1 for e in received if not contains_point(orig, e))
            total += fp * links_behind.get(p, 1) / path.sampling
    return total


def history_cost_reference(table: PrefixTable, node: str, paths: Sequence[PathInfo],
                           links_behind: Mapping[int, int],
                           block: Sequence[str] | None = None) -> float:
    """:func:`history_cost` as Alg. 6 reads, term by term (the definition)."""
    block = table.block(node) if block is None else block
    wrong = _wrong_ports(table, node, block)
    total = 0.0
    for path in paths:
        received = with_prefix(path.events, node)
        if not received:
            continue
        for p in wrong:
            orig = _port_union(table, block, p)
            fp = sum(1 for e in received if not contains_point(orig, e))
            total += fp * links_behind.get(p, 1) / path.sampling
    return total


# -- deployment (Alg. 7) -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Op:
    """One flow write on a (switch, ingress) table: INSERT / MODIFY / DELETE."""

    kind: str
    dz: str
    ports: Ports = frozenset()


@dataclass
class Plan:
    ops: list[Op] = field(default_factory=list)
    peak: int = 0


def deployment_plan(cur: Mapping[str, Ports], new: Mapping[str, Ports]) -> Plan:
    """Ordered writes from ``cur`` to ``new`` (one ingress table), with the peak count."""
    add = {k: v for k, v in new.items() if k not in cur}
    dele = {k: v for k, v in cur.items() if k not in new}
    ops: list[Op] = []
    shrink: list[Op] = []
    for k in sorted(set(cur) & set(new)):
        if cur[k] == new[k]:
            continue
        if new[k] >= cur[k]:
            ops.append(Op("MODIFY", k, new[k]))
        else:  # grow to the union first, shrink at the very end
            ops.append(Op("MODIFY", k, cur[k] | new[k]))
            shrink.append(Op("MODIFY", k, new[k]))
    for fa in sorted(add):  # merges: a new flow fully covering deleted ones
        covered = [fd for fd in sorted(dele) if fd.startswith(fa) and add[fa] >= dele[fd]]
        if covered:
            ops.append(Op("INSERT", fa, add.pop(fa)))
            for fd in covered:
                ops.append(Op("DELETE", fd))
                del dele[fd]
    unmerges = {fd: [fa for fa in sorted(add) if fa.startswith(fd) and dele[fd] >= add[fa]]
                for fd in sorted(dele)}
    for fd in sorted(dele):  # pure deletes first: they free room for the unmerges
        if not unmerges[fd]:
            ops.append(Op("DELETE", fd))
    for fd in sorted(dele):
        kids = [fa for fa in unmerges[fd] if fa in add]
        if not unmerges[fd]:
            continue
        for fa in kids:
            ops.append(Op("INSERT", fa, add.pop(fa)))
        ops.append(Op("DELETE", fd))
    for fa in sorted(add):
        ops.append(Op("INSERT", fa, add[fa]))
    ops.extend(shrink)
    count = peak = len(cur)
    for op in ops:
        count += 1 if op.kind == "INSERT" else -1 if op.kind == "DELETE" else 0
        peak = max(peak, count)
    return Plan(ops, peak)


def apply_ops(table: Mapping[str, Ports], ops: Iterable[Op]) -> dict[str, Ports]:
    out = dict(table)
    for op in ops:
        if op.kind == "DELETE":
            del out[op.dz]
        else:
            out[op.dz] = op.ports
    return out


def _lpm(flows: Mapping[str, Ports], dz: str) -> Ports:
    for i in range(len(dz), -1, -1):
        hit = flows.get(dz[:i])
        if hit is not None:
            return hit
    return frozenset()


def plan_is_safe(cur: Mapping[str, Ports], plan: Plan, required: Mapping[str, Ports]) -> bool:
    """True if no intermediate table misses a port ``required`` asks for (no FN window).

    Checks every cell of the partition induced by all keys involved (a
    representative dz per cell), which is exact for prefix tables.
    """
    states = [dict(cur)]
    for op in plan.ops:
        states.append(apply_ops(states[-1], [op]))
    keys = set(required)
    for s in states:
        keys |= set(s)
    reps = cell_representatives(sorted(keys))
    for s in states:
        for r in reps:
            if not _lpm(s, r) >= _lpm(required, r):
                return False
    return True


def cell_representatives(keys: list[str]) -> list[str]:
    """One dz inside every non-empty cell 'key minus its longer keys' (plus the root)."""
    out = []
    for k in [""] + keys:
        below = [x for x in with_prefix(keys, k) if x != k]
        if not below:
            out.append(k)
            continue

        def free(cell: str, below: list[str] = below) -> str | None:
            for bit in "01":
                c = cell + bit
                inside = [x for x in below if x.startswith(c)]
                if not inside:
                    return c
                if c in inside:
                    continue
                deeper = free(c, inside)
                if deeper is not None:
                    return deeper
            return None

        rep = free(k)
        if rep is not None:
            out.append(rep)
    return out
