"""``pleroma-dz``'s first install, shared between cells that differ in limit or algorithm.

A first install (no earlier model) adds every subscription in arrival order
(seed 001 §4.2, §5.3). What it computes splits in two:

- the *logical* part (:class:`LogicalArrival`): each subscription's dz, its
  paths and records, the logical flow counters and the unlimited flow tables
  (digest A5.1). It depends on the topology, the workload and the dz
  parameters, not on the flow limit or the algorithm: flowlimit-pleroma's 8
  cells of one (topology, workload) compute it alike;
- the *physical* part (:class:`PhysicalArrival`): Algorithm 1 and the local
  enforcer on the physical tables, hop by hop in the same order. It reads no
  logical counter, so it runs from the logical part's hops alone and depends
  on the limit, the local enforcer and its random stream's state, not on the
  global algorithm: ``min-space``, ``traffic`` and ``history`` ("local MS
  during arrival, then one global pass") with one limit compute it alike.

:func:`shared_arrival` keeps both in the runner's
:class:`~sim.dataplanes.caches.Caches` (``flow_logical``, ``flow_physical``)
and hands each install a model whose logical counters, physical tables and
merged sets are the shared ones, marked :attr:`PleromaModel.shared`: the
model copies them before its next write (:meth:`PleromaModel.own`), and the
unlimited tables are never written in place (a later change replaces a
switch's dict). The loop of :meth:`PleromaDz.build` over
:func:`~strategies.prefix_filter.pleroma_install.install_batched` stays the
definition; ``tests/strategies/test_pleroma_arrival.py`` checks that cells
run one after another on one ``Caches`` (and then churned) give the states,
flows, records, counters and random stream of each cell run alone on that
loop.

References
----------
Seed 001 §4.2 (Alg. 1), §5.3 (local enforcers), §6 (evaluation grid);
digest seed001-004 A5.1.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim.dataplanes.caches import Identity
from sim.dataplanes.content_space import Subscription
from strategies.prefix_filter.flow_enforcers import EnforcerStats
from strategies.prefix_filter.flow_limits import PrefixTable
from strategies.prefix_filter.pleroma_install import (
    Enforcer,
    Record,
    after_install,
    distinct_hops,
    table_of,
    with_prefixes,
)

if TYPE_CHECKING:
    from strategies.prefix_filter.pleroma import PleromaDz, PleromaModel

#: a distinct hop of one subscription: (switch, ingress, egress, each flow dz with
#: its prefixes, itself included)
Hop = tuple[str, int, int, tuple[tuple[str, frozenset[str]], ...]]
Tables = dict[str, dict[int, PrefixTable]]


@dataclass(frozen=True, slots=True)
class LogicalArrival:
    """The limit-independent part of a first install (module docstring). Shared: never
    written after it is made."""

    subs: dict[int, Subscription]
    sub_dz: dict[int, tuple[str, ...]]
    logical: dict[str, dict[int, dict[str, dict[int, int]]]]
    records: dict[int, list[Record]]
    #: the unlimited tables of :attr:`logical` (:meth:`PleromaModel.unlimited`'s result)
    unlimited: Tables
    #: every subscription's distinct hops, in install order, each with the flows whose
    #: (dz, egress) pair it counts first (hops with none left out)
    hops: tuple[Hop, ...]


@dataclass(frozen=True, slots=True)
class PhysicalArrival:
    """The physical flows after a first install's local enforcement, and what the
    enforcer left behind (its random stream's state, the statistics it added)."""

    physical: Tables
    merged: dict[tuple[str, int], set[str]]
    peak: int
    rng_state: Mapping[str, Any]
    calls: int
    seconds: float
    merges: int


def count_logical(logical: dict[str, dict[int, dict[str, dict[int, int]]]],
                  times: dict[Record, int]) -> list[tuple[str, ...]]:
    """Raise the logical counters of each distinct record by its multiplicity (the
    counting half of ``install_batched``, in its order); per record, the dz whose
    (dz, egress) pair had no count before it (its first occurrence)."""
    new: list[tuple[str, ...]] = []
    for (sw, inp, out, flows), n in times.items():
        per = logical.setdefault(sw, {}).setdefault(inp, {})
        first = []
        for dz in flows:
            counter = per.get(dz)
            if counter is None:
                per[dz] = {out: n}
                first.append(dz)
            elif out in counter:
                counter[out] += n
            else:
                counter[out] = n
                first.append(dz)
        new.append(tuple(first))
    return new


def install_physical(model: Any, hops: Sequence[Hop], enforcer: Enforcer) -> None:
    """The installing half of ``install_batched``: each hop's flows on its physical
    table by Algorithm 1 unless the table already carries them, the enforcer after
    each install that changed the table (``model``: ``physical``, ``merged``,
    ``peak``)."""
    for sw, inp, out, pairs in hops:
        tables, table = table_of(model, sw, inp)
        carriers = table.carriers(out)
        for dz, pre in pairs:
            if carriers is None or carriers.isdisjoint(pre):
                if table.install(dz, (out,)):
                    after_install(model, sw, tables, enforcer)
                carriers = table.carriers(out)


def _frozen(value: Any) -> Hashable:
    """A hashable copy of a random generator's state (nested dicts of numbers)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value  # type: ignore[no-any-return]


def view_key(view: Any) -> Hashable:
    """What a first install reads of the controller's view, as a value."""
    return (view.space, tuple(view.publishers), tuple(sorted(view.advertisements.items())),
            tuple(view.subscriptions))


def logical_arrival(strategy: PleromaDz, model: PleromaModel, topology: Any, view: Any
                    ) -> LogicalArrival:
    """Add ``view``'s subscriptions to the fresh ``model`` without its physical tables:
    dz, paths, new pairs, records, logical counters (as ``build``'s loop does), then the
    unlimited tables."""
    from strategies.prefix_filter.pleroma import new_pairs  # pleroma imports this module

    hops: list[Hop] = []
    prefixes: dict[str, tuple[str, frozenset[str]]] = {}  # dz -> (dz, its prefixes)
    for sub in view.subscriptions:
        if sub.sub_id in model.subs:
            continue
        paths = strategy._paths(model, topology, view, sub)
        model.mark(new_pairs(model.logical, paths))
        recs, times = distinct_hops(paths)
        model.records[sub.sub_id] = recs
        # a (dz, egress) pair already installed on (switch, ingress) is carried there from
        # then on (an install or a merge never takes a port away from a point of the
        # table's space, see pleroma_install): only first occurrences can change a table
        for (sw, inp, out, _), first in zip(times, count_logical(model.logical, times),
                                            strict=True):
            if first:
                hops.append((sw, inp, out, tuple(
                    prefixes.get(dz) or prefixes.setdefault(dz, with_prefixes(dz))
                    for dz in first)))
    return LogicalArrival(subs=model.subs, sub_dz=model.sub_dz, logical=model.logical,
                          records=model.records, unlimited=model.unlimited(), hops=tuple(hops))


def shared_arrival(strategy: PleromaDz, model: PleromaModel, topology: Any, view: Any) -> None:
    """Add every subscription of ``view`` to the fresh ``model`` from the arrivals the
    runner's caches hold (made here on a miss); see the module docstring."""
    p = strategy.params
    caches = strategy.caches
    key = (type(strategy), Identity(topology), model.length, model.dims, p.max_dz,
           view_key(view))
    fresh = type(model)(length=model.length, dims=model.dims, subs={}, sub_dz={},
                         adv_dz=model.adv_dz, logical={}, physical={}, records={})
    logical = caches.flow_logical.get(key)
    if logical is None:  # another workload: forget the last one's before making this one's
        caches.flow_logical.clear()
        caches.flow_physical.clear()
        logical = caches.flow_logical.put(key, logical_arrival(strategy, fresh, topology, view))
    rng = strategy._rng
    physical_key = (key, p.effective_limit, p.local_mode, _frozen(rng.bit_generator.state))
    physical = caches.flow_physical.get(physical_key)
    if physical is None:
        stats = EnforcerStats()
        scratch = type(model)(length=model.length, dims=model.dims, subs={}, sub_dz={},
                               adv_dz={}, logical={}, physical={}, records={})
        install_physical(scratch, logical.hops, Enforcer(p.effective_limit, p.local_mode,
                                                         rng, stats))
        physical = caches.flow_physical.put(physical_key, PhysicalArrival(
            physical=scratch.physical, merged=scratch.merged, peak=scratch.peak,
            rng_state=rng.bit_generator.state, calls=stats.calls, seconds=stats.seconds,
            merges=stats.merges))
    else:
        rng.bit_generator.state = physical.rng_state
    strategy.stats.calls += physical.calls
    strategy.stats.seconds += physical.seconds
    strategy.stats.merges += physical.merges
    model.subs.update(logical.subs)
    model.sub_dz.update(logical.sub_dz)
    model.records.update(logical.records)
    model.logical = logical.logical
    model.unlimited_cache = dict(logical.unlimited)
    model.dirty = {}
    model.physical = physical.physical
    model.merged = physical.merged
    model.peak = max(model.peak, physical.peak)
    model.since_global += len(logical.subs)
    model.shared = True

