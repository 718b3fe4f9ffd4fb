"""Installing one subscription's flows on the switches of its tree paths (``pleroma-dz``).

For each publisher with related dz and each hop ``(switch, ingress, egress)``
of its tree path to the subscriber, every flow dz is counted in the logical
(unlimited) flow set and installed on the physical table of ``(switch,
ingress)`` by Algorithm 1; an install that pushes the switch over its
effective limit runs the local enforcer (seed 001 §4.2, §5.3; seed 004 §2.3
step 3; digest seed001-004 A1, A5.1).

- :func:`install_reference`: that loop, flow by flow, in (publisher, hop, dz)
  order: the definition.
- :func:`install_batched`: the same result with less work. Publishers behind
  the same ingress port of a switch give the same ``(switch, ingress,
  egress, flows)``; installing it again changes nothing, because an install
  or a merge never takes a port away from any point of a table's space
  (Algorithm 1 only unions ports and deletes flows an ancestor fully covers;
  a merge replaces a block by one flow with the union of its ports, §5.2), so
  each distinct hop is installed once, at its first occurrence, and the
  logical counters are raised by its multiplicity. The full-cover test of an
  install is :meth:`PrefixTable.carries` on the dz's prefixes, hashed once per
  subscription; only installs that change the table run Algorithm 1.

Both return the same records (one ``(switch, ingress, egress, flows)`` per
publisher and hop, what :meth:`PleromaDz._remove` takes back) and leave the
model, the enforcer's random stream and its statistics in the same state
(``tests/strategies/test_pleroma_install.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from strategies.prefix_filter.flow_enforcers import EnforcerStats, enforce_local
from strategies.prefix_filter.flow_limits import PrefixTable

Hop = tuple[str, int, int]
#: (switch, ingress port, egress port, flow dz) of one publisher's path through a switch
Record = tuple[str, int, int, tuple[str, ...]]
#: the flows of one publisher and the hops of its tree path to the subscriber
PathFlows = tuple[tuple[str, ...], Sequence[Hop]]


class InstallModel(Protocol):
    """The parts of :class:`~strategies.prefix_filter.pleroma.PleromaModel` an install writes."""

    logical: dict[str, dict[int, dict[str, dict[int, int]]]]
    physical: dict[str, dict[int, PrefixTable]]
    merged: dict[tuple[str, int], set[str]]
    peak: int


@dataclass(frozen=True, slots=True)
class Enforcer:
    """The local enforcer an overflowing install runs (seed 001 §5.3)."""

    limit: int
    mode: Literal["baseline", "min-space"]
    rng: np.random.Generator
    stats: EnforcerStats


def table_of(model: InstallModel, sw: str, inp: int
             ) -> tuple[dict[int, PrefixTable], PrefixTable]:
    """The physical tables of ``sw`` and its table for ingress ``inp`` (made if missing)."""
    tables = model.physical.setdefault(sw, {})
    table = tables.get(inp)
    if table is None:
        table = tables[inp] = PrefixTable()
    return tables, table


def after_install(model: InstallModel, sw: str, tables: dict[int, PrefixTable],
               enforcer: Enforcer) -> None:
    """Bookkeeping after an install that changed a table: peak, then the enforcer."""
    count = sum(len(t) for t in tables.values())
    model.peak = max(model.peak, count)
    if enforcer.limit and count > enforcer.limit:
        for port, node in enforce_local(tables, enforcer.limit, enforcer.mode, enforcer.rng,
                                        enforcer.stats):
            model.merged.setdefault((sw, port), set()).add(node)


def install_reference(model: InstallModel, paths: Sequence[PathFlows], enforcer: Enforcer
                      ) -> list[Record]:
    """Count and install every (publisher, hop, dz) in order (the definition)."""
    recs: list[Record] = []
    for flows, hops in paths:
        for sw, inp, out in hops:
            per = model.logical.setdefault(sw, {}).setdefault(inp, {})
            tables, table = table_of(model, sw, inp)
            for dz in flows:
                counter = per.get(dz)
                if counter is None:
                    counter = per[dz] = {}
                counter[out] = counter.get(out, 0) + 1
                if table.install(dz, (out,)):
                    after_install(model, sw, tables, enforcer)
            recs.append((sw, inp, out, flows))
    return recs


def distinct_hops(paths: Sequence[PathFlows]) -> tuple[list[Record], dict[Record, int]]:
    """The records of ``paths`` (one per publisher and hop) and each distinct one's
    multiplicity, first occurrences in order (dicts keep insertion order)."""
    recs: list[Record] = [(sw, inp, out, flows) for flows, hops in paths
                          for sw, inp, out in hops]
    times: dict[Record, int] = {}
    for rec in recs:
        times[rec] = times.get(rec, 0) + 1
    return recs, times


def with_prefixes(dz: str) -> tuple[str, frozenset[str]]:
    """``dz`` with the set of its prefixes, itself and the empty one included."""
    return dz, frozenset([dz[:i] for i in range(len(dz) + 1)])


def install_batched(model: InstallModel, paths: Sequence[PathFlows], enforcer: Enforcer
                    ) -> list[Record]:
    """:func:`install_reference` with each distinct hop installed once (module docstring)."""
    recs, times = distinct_hops(paths)
    pairs_of: dict[tuple[str, ...], tuple[tuple[str, frozenset[str]], ...]] = {}
    for (sw, inp, out, flows), n in times.items():
        per = model.logical.setdefault(sw, {}).setdefault(inp, {})
        tables, table = table_of(model, sw, inp)
        pairs = pairs_of.get(flows)
        if pairs is None:  # each dz with its prefixes (itself included), hashed once
            pairs = pairs_of[flows] = tuple(with_prefixes(dz) for dz in flows)
        carriers = table.carriers(out)
        for dz, pre in pairs:
            counter = per.get(dz)
            if counter is None:
                per[dz] = {out: n}
            else:
                counter[out] = counter.get(out, 0) + n
            # not table.carries(pre, out), with the carrier set of ``out`` held: writes
            # change it in place; only an install can make the first one
            if carriers is None or carriers.isdisjoint(pre):
                if table.install(dz, (out,)):
                    after_install(model, sw, tables, enforcer)
                carriers = table.carriers(out)
    return recs
