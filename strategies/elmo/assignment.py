"""Elmo's controller over all groups: s-rule queues per switch, kept up to date under churn.

:func:`strategies.elmo.prules.plan_groups` defines the outcome: groups in
gid order, each switch left without a p-rule (a group's ``rest``) gets an
s-rule while its table has room, else the layer's default p-rule. Since a
group names each switch at most once per layer, that greedy is, per switch,
"the first ``capacity`` groups, in gid order, whose rest holds this switch
get its s-rules" (Elmo §3.2, §4; Elmo-MCast/numerical-evals
``simulation/optimizer.py`` counts rules per switch the same way). A
:class:`SwitchQueues` keeps, per switch of one layer (leaf ids, or pods for
the spine layer), those groups in gid order with the switch's bitmap in
each; its first ``capacity`` entries are the switch's s-rules.

:class:`Controller` holds the queues of both layers, each group's rest
(only groups that have one) and the published groups
(:class:`~sim.dataplanes.elmo.published.PublishedGroups`). :meth:`~Controller.build`
plans all groups at once; :meth:`~Controller.update` re-plans the groups of a
join/leave step and nothing else: a changed group leaves the queues of the
switches no longer in its rest and enters those newly in it; an entry that
enters or leaves the first ``capacity`` of a queue moves at most one other
group across that line (the one at the boundary), whose default p-rule is
recomputed. The queues after an update are those a full recompute builds,
so the s-rules, defaults and headers are the same
(``tests/strategies/test_elmo_churn.py`` checks it on random populations and
join/leave sequences).

References
----------
Elmo SIGCOMM 2019 §3.2 (s-rules under a per-switch capacity, default
p-rule), §4 (controller), §5.1 (1M join/leave events);
Elmo-MCast/numerical-evals ``simulation/optimizer.py``, ``simulation/dynamic.py``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence

import numpy as np

from sim.dataplanes.elmo.codec import LEAF_DEFAULT, SPINE_DEFAULT, ElmoLayout, PRule, encode_layer
from sim.dataplanes.elmo.fabric import ElmoFabric
from sim.dataplanes.elmo.headers import (
    PackedGroup,
    index_bytes,
    indices_key,
    pack_layers,
    unpack_layers,
)
from sim.dataplanes.elmo.published import ArenaBuilder, PublishedGroups
from strategies.elmo.fuzzy_batch import EncodedLayer, cluster_groups, encoded_groups
from strategies.elmo.prules import (
    ClusterLimits,
    Layer,
    Node,
    cluster_nodes,
    nodes_of,
)

#: One layer's switches without a p-rule in a group: (switch id, bitmap), by id.
Rest = tuple[Node, ...]


class SwitchQueues:
    """Per switch of one layer, the groups whose rest holds it, in gid order, with
    the switch's bitmap in each; the first ``capacity`` hold its s-rules."""

    __slots__ = ("capacity", "gids", "bits")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.gids: dict[int, array[int]] = {}
        self.bits: dict[int, list[int]] = {}

    def copy(self) -> SwitchQueues:
        out = SwitchQueues(self.capacity)
        out.gids = {s: a[:] for s, a in self.gids.items()}
        out.bits = {s: b[:] for s, b in self.bits.items()}
        return out

    def _queue(self, switch: int) -> tuple[array[int], list[int]]:
        gids = self.gids.get(switch)
        if gids is None:
            gids = self.gids[switch] = array("i")
            self.bits[switch] = []
        return gids, self.bits[switch]

    def append(self, switch: int, gid: int, bits: int) -> bool:
        """Queue ``gid`` last (a full build, gids ascending); whether it got an s-rule."""
        gids, values = self._queue(switch)
        gids.append(gid)
        values.append(bits)
        return len(gids) <= self.capacity

    def holds(self, switch: int, gid: int) -> bool:
        """Whether ``gid`` (queued at ``switch``) has an s-rule there."""
        return bisect_left(self.gids[switch], gid) < self.capacity

    def insert(self, switch: int, gid: int, bits: int) -> int | None:
        """Queue ``gid`` in gid order; the gid that lost its s-rule to it, if any."""
        gids, values = self._queue(switch)
        i = bisect_left(gids, gid)
        gids.insert(i, gid)
        values.insert(i, bits)
        return gids[self.capacity] if i < self.capacity < len(gids) else None

    def remove(self, switch: int, gid: int) -> int | None:
        """Unqueue ``gid``; the gid that got an s-rule in its place, if any."""
        gids, values = self.gids[switch], self.bits[switch]
        i = bisect_left(gids, gid)
        del gids[i]
        del values[i]
        if not gids:
            del self.gids[switch], self.bits[switch]
        return gids[self.capacity - 1] if i < self.capacity <= len(gids) else None

    def set_bits(self, switch: int, gid: int, bits: int) -> None:
        self.bits[switch][bisect_left(self.gids[switch], gid)] = bits

    def holders(self, switch: int) -> tuple[tuple[int, int], ...]:
        """The s-rules of ``switch``: (gid, bitmap) in gid order."""
        gids = self.gids.get(switch)
        if not gids or not self.capacity:
            return ()
        cap = self.capacity
        return tuple(zip(gids[:cap].tolist(), self.bits[switch][:cap], strict=True))

    def switches(self) -> list[int]:
        """The switches with a queue, ascending."""
        return sorted(self.gids)

    def entries(self) -> int:
        return sum(len(g) for g in self.gids.values())


class Controller:
    """Elmo's controller state for one strategy and topology (module docstring).

    Parameters
    ----------
    fabric : ElmoFabric
    layout : ElmoLayout
        The header widths the published layers are encoded with.
    limits : ClusterLimits
    """

    def __init__(self, fabric: ElmoFabric, layout: ElmoLayout, limits: ClusterLimits) -> None:
        self.fabric = fabric
        self.layout = layout
        self.limits = limits
        self.leaf = SwitchQueues(limits.leaf_srules)
        self.pod = SwitchQueues(limits.spine_srules)
        #: gid -> (spine rest, leaf rest), for groups with a rest
        self.rests: dict[int, tuple[Rest, Rest]] = {}
        self.published = PublishedGroups.build(())
        self._hosts = len(fabric.topology.hosts)

    def copy(self) -> Controller:
        """An independent controller in the same state (the published groups are shared:
        they are immutable)."""
        out = Controller.__new__(Controller)
        out.fabric, out.layout, out.limits = self.fabric, self.layout, self.limits
        out.leaf, out.pod = self.leaf.copy(), self.pod.copy()
        out.rests = dict(self.rests)
        out.published = self.published
        out._hosts = self._hosts
        return out

    def _cluster(self, hosts: Sequence[int]) -> tuple[Layer, Layer]:
        leaves, pods = nodes_of(self.fabric, hosts)
        return cluster_nodes(self.layout, leaves, pods, self.limits)

    # -- all groups ------------------------------------------------------------------
    def build(self, groups: Iterable[tuple[int, Sequence[int]]]) -> None:
        """Plan ``groups`` ((gid, host indices ascending), gids 0..n-1 in order) afresh."""
        self._clear()
        builder = ArenaBuilder()
        for gid, hosts in groups:
            self._add(builder, gid, indices_key(hosts, self._hosts), *self._cluster(hosts))
        self.published = PublishedGroups(builder.finish())

    def build_batches(self, batches: Iterable[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """:meth:`build` of groups given in batches ``(first gid, offsets, hosts)``: gid
        ``first + i`` has host indices ``hosts[offsets[i]:offsets[i + 1]]`` (ascending),
        the batches' gids 0..n-1 in order. A batch is clustered and its p-rules
        encoded at once (:func:`~strategies.elmo.fuzzy_batch.encoded_groups`, else
        clustered at once, :func:`~strategies.elmo.fuzzy_batch.cluster_groups`) and
        its hosts keys cut from one array; the outcome is :meth:`build`'s."""
        self._clear()
        builder = ArenaBuilder()
        width = index_bytes(self._hosts)
        for first, offsets, hosts in batches:
            raw = indices_key(hosts, self._hosts)
            cuts = (offsets * width).tolist()
            encoded = encoded_groups(self.fabric, self.layout, offsets, hosts, self.limits)
            if encoded is not None:
                for i, (spine_enc, leaf_enc) in enumerate(encoded):
                    self._add_encoded(builder, first + i, raw[cuts[i]:cuts[i + 1]], spine_enc,
                                      leaf_enc)
                continue
            layers = cluster_groups(self.fabric, self.layout, offsets, hosts, self.limits)
            for i, (spine, leaf) in enumerate(layers):
                self._add(builder, first + i, raw[cuts[i]:cuts[i + 1]], spine, leaf)
        self.published = PublishedGroups(builder.finish())

    def _clear(self) -> None:
        self.leaf = SwitchQueues(self.limits.leaf_srules)
        self.pod = SwitchQueues(self.limits.spine_srules)
        self.rests = {}

    def _add(self, builder: ArenaBuilder, gid: int, key: bytes, spine: Layer,
             leaf: Layer) -> None:
        """Queue group ``gid`` (the next one) behind those before it and publish it."""
        spine_default, leaf_default = self._queue(gid, spine.rest, leaf.rest)
        builder.append(pack_layers(gid, key, spine.prules, spine_default, leaf.prules,
                                   leaf_default, self.layout))

    def _add_encoded(self, builder: ArenaBuilder, gid: int, key: bytes, spine: EncodedLayer,
                     leaf: EncodedLayer) -> None:
        """:meth:`_add` of layers whose p-rules come encoded (:func:`pack_layers`' record:
        the default p-rule's bytes appended, the counts and flags in ``shape``)."""
        (spine_bytes, spine_rules, spine_rest), (leaf_bytes, leaf_rules, leaf_rest) = spine, leaf
        spine_default, leaf_default = self._queue(gid, tuple(spine_rest), tuple(leaf_rest))
        flags = 0
        if spine_default is not None:
            spine_bytes += encode_layer((), spine_default, self.layout, "spine")
            flags |= SPINE_DEFAULT
        if leaf_default is not None:
            leaf_bytes += encode_layer((), leaf_default, self.layout, "leaf")
            flags |= LEAF_DEFAULT
        builder.append(PackedGroup(gid, key, spine_bytes, leaf_bytes,
                                   spine_rules | leaf_rules << 8 | flags << 16))

    def _queue(self, gid: int, spine_rest: Rest, leaf_rest: Rest
               ) -> tuple[int | None, int | None]:
        """Queue group ``gid``'s rests (gid the next one): the default p-rules."""
        default = self.limits.default_prule
        spine_default = leaf_default = None
        for s, b in spine_rest:
            if not self.pod.append(s, gid, b) and default:
                spine_default = (spine_default or 0) | b
        for s, b in leaf_rest:
            if not self.leaf.append(s, gid, b) and default:
                leaf_default = (leaf_default or 0) | b
        if spine_rest or leaf_rest:
            self.rests[gid] = (spine_rest, leaf_rest)
        return spine_default, leaf_default

    # -- a join/leave step --------------------------------------------------------------
    def update(self, groups: Iterable[tuple[int, Sequence[int]]]) -> tuple[set[int], set[int]]:
        """Re-plan the changed ``groups`` ((gid, host indices ascending) at the new
        version); the leaf ids and pods whose queues changed (their s-rules may have)."""
        touched_leaf: set[int] = set()
        touched_pod: set[int] = set()
        moved: set[int] = set()  # groups that crossed a queue's capacity line
        fresh: dict[int, tuple[bytes, tuple[PRule, ...], tuple[PRule, ...]]] = {}
        for gid, hosts in groups:
            key = indices_key(hosts, self._hosts)
            if key == self.published.hosts(gid):
                continue  # same hosts (a sender-only VM, or one on a member host): same plan
            spine, leaf = self._cluster(hosts)
            old_spine, old_leaf = self.rests.pop(gid, ((), ()))
            _requeue(self.pod, gid, old_spine, spine.rest, touched_pod, moved)
            _requeue(self.leaf, gid, old_leaf, leaf.rest, touched_leaf, moved)
            if spine.rest or leaf.rest:
                self.rests[gid] = (spine.rest, leaf.rest)
            fresh[gid] = (key, spine.prules, leaf.prules)
        records = []
        for gid in sorted(fresh.keys() | moved):
            got = fresh.get(gid)
            if got is None:
                old = self.published[gid]
                spine_rules, _, leaf_rules, _ = unpack_layers(old, self.layout)
                got = (old.hosts, spine_rules, leaf_rules)
            key, spine_rules, leaf_rules = got
            spine_rest, leaf_rest = self.rests.get(gid, ((), ()))
            records.append(pack_layers(gid, key, spine_rules,
                                       self._default(self.pod, gid, spine_rest), leaf_rules,
                                       self._default(self.leaf, gid, leaf_rest), self.layout))
        self.published = self.published.with_groups(records)
        return touched_leaf, touched_pod

    def _default(self, queues: SwitchQueues, gid: int, rest: Rest) -> int | None:
        """The default p-rule of ``gid``'s layer: the OR of its rest without s-rules."""
        if not self.limits.default_prule:
            return None
        out = None
        for s, b in rest:
            if not queues.holds(s, gid):
                out = (out or 0) | b
        return out


def _requeue(queues: SwitchQueues, gid: int, old: Rest, new: Rest, touched: set[int],
             moved: set[int]) -> None:
    """Move ``gid`` from the queues of its ``old`` rest to those of its ``new`` one."""
    old_bits, new_bits = dict(old), dict(new)
    for s in old_bits:
        if s not in new_bits:
            touched.add(s)
            other = queues.remove(s, gid)
            if other is not None:
                moved.add(other)
    for s, b in new:
        was = old_bits.get(s)
        if was is None:
            touched.add(s)
            other = queues.insert(s, gid, b)
            if other is not None:
                moved.add(other)
        elif was != b:
            touched.add(s)
            queues.set_bits(s, gid, b)
