"""PLEROMA's global optimizer, deployment and self-evaluation on the spanning tree.

- :class:`GlobalOptimizer`: Alg. 3 (switch order), Alg. 4 (greedy per
  switch) with the traffic (Alg. 5) or event-history (Alg. 6) cost; input
  spaces come from the upstream switches' *current* flows (processed ones
  merged, the rest unlimited, digest A5.4); affected links = tree links
  behind the egress port (worst case, A5.5). The new flow sets are deployed
  by Alg. 7 (:func:`strategies.prefix_filter.flow_limits.deployment_plan`), per switch
  shrinking tables first; the largest count seen is the deployment peak.
- :func:`emulate_links`: the self-evaluation's software emulation: the
  directed links an event with a given dz crosses under some flow tables.
- :func:`self_evaluate`: the network false-positive rate of the deployed
  flows against the unlimited ones on a sampled event window (seed 001
  §5.6).

References
----------
Seed 001 §5.4 (Alg. 3-6), §5.5 (Alg. 7), §5.6 (self-evaluation), §6.2
(network FP rate); digest seed001-004 A2, A5.3-A5.6.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from strategies.content_filter import TreeRouting
from strategies.prefix_filter.dz import contains_point, event_dz, intersect, normalize
from strategies.prefix_filter.flow_enforcers import process_switch, switch_order
from strategies.prefix_filter.flow_limits import (
    PathInfo,
    PrefixTable,
    deployment_plan,
    history_cost,
    traffic_cost,
)
from topologies.model import Topology

Tables = dict[str, dict[int, PrefixTable]]


class GlobalOptimizer:
    """One global pass over all switches (see the module docstring)."""

    def __init__(self, params: Any, routing: TreeRouting, view: Any,
                 rng: np.random.Generator) -> None:
        self.params = params
        self.routing = routing
        self.view = view
        self.rng = rng

    def _adv(self, pub: str, length: int) -> tuple[str, ...]:
        from strategies.prefix_filter.dz import decompose

        p = self.params
        return decompose(self.view.advertisements[pub], self.view.space, length, p.max_dz,
                         tuple(p.dims) or None)

    def run(self, physical: Tables, unlimited: Tables, length: int | None = None
            ) -> tuple[Tables, int]:
        """New flow tables for every switch and the deployment peak."""
        p = self.params
        limit = p.effective_limit
        topo = self.routing.topology
        length = length if length is not None else _length_of(unlimited)
        pubs = self.view.publishers
        switches = [s for s in topo.switches if any(len(t) for t in unlimited.get(s, {}).values())]
        upstream: dict[str, dict[str, list[str]]] = {}
        for s in switches:
            for pub in pubs:
                nodes = self.routing.path(pub, s)
                if topo.port_to(s, nodes[-2]) in unlimited[s]:
                    upstream.setdefault(s, {})[pub] = list(nodes[1:-1])
        current: Tables = {s: {i: t.copy() for i, t in unlimited[s].items()} for s in switches}
        adv = {pub: self._adv(pub, length) for pub in pubs}
        events: dict[str, list[str]] = {}
        if p.global_mode == "history":
            n = max(1, round(p.window * p.sampling))
            for pub in pubs:
                evs = self.view.event_window(pub, n, self.rng)
                events[pub] = sorted(event_dz(e, self.view.space, length, tuple(p.dims) or None)
                                     for e in evs)
        forwarded: dict[tuple[str, int, int], tuple[str, ...]] = {}

        def fwd(sw: str, inp: int, out: int) -> tuple[str, ...]:
            key = (sw, inp, out)
            if key not in forwarded:
                t = current.get(sw, {}).get(inp)
                forwarded[key] = (normalize(k for k in t.keys if out in t.flows[k])
                                  if t is not None else ())
            return forwarded[key]

        for s in switch_order(switches, upstream):
            tables = current[s]
            if sum(len(t) for t in tables.values()) <= limit:
                continue
            by_port: dict[int, list[PathInfo]] = {}
            for pub in upstream.get(s, {}):
                nodes = self.routing.path(pub, s)
                space: tuple[str, ...] = adv[pub]
                for j in range(1, len(nodes) - 1):
                    sw = nodes[j]
                    space = intersect(space, fwd(sw, topo.port_to(sw, nodes[j - 1]),
                                                 topo.port_to(sw, nodes[j + 1])))
                    if not space:
                        break
                if not space:
                    continue
                evs = tuple(e for e in events.get(pub, ()) if contains_point(space, e))
                by_port.setdefault(topo.port_to(s, nodes[-2]), []).append(PathInfo(
                    space, adv[pub], float(p.window), evs, p.sampling))
            links = {port: self.routing.links_behind(s, port) for port in topo.ports(s)}
            kind = traffic_cost if p.global_mode == "traffic" else history_cost

            def cost(port: int, t: PrefixTable, node: str, block: Sequence[str],
                     by_port: dict[int, list[PathInfo]] = by_port,
                     links: dict[int, int] = links, kind: Any = kind) -> float:
                return float(kind(t, node, by_port.get(port, []), links, block))

            process_switch(tables, limit, cost, p.global_candidates)
            for key in [k for k in forwarded if k[0] == s]:
                del forwarded[key]
        peak = 0
        out: Tables = {}
        for s in sorted(set(physical) | set(current)):
            new = current.get(s, {})
            peak = max(peak, switch_deployment_peak(physical.get(s, {}), new))
            out[s] = {i: t for i, t in new.items() if len(t)}
        return out, peak


def switch_deployment_peak(old: Mapping[int, PrefixTable], new: Mapping[int, PrefixTable]
                           ) -> int:
    """Largest flow count of one switch while Alg. 7 moves it from ``old`` to ``new``.

    Ingress tables that shrink are deployed first; within a table the
    writes follow :func:`strategies.prefix_filter.flow_limits.deployment_plan`.
    """
    ports = sorted(set(old) | set(new), key=lambda i: len(new.get(i, ())) - len(old.get(i, ())))
    counts = {i: len(old.get(i, ())) for i in ports}
    peak = sum(counts.values())
    for i in ports:
        plan = deployment_plan(old[i].flows if i in old else {},
                               new[i].flows if i in new else {})
        others = sum(c for j, c in counts.items() if j != i)
        peak = max(peak, others + plan.peak)
        counts[i] = len(new.get(i, ()))
    return peak


def _length_of(tables: Tables) -> int:
    return max((len(k) for per in tables.values() for t in per.values() for k in t.keys),
               default=0)


def emulate_links(tables: Tables, routing: TreeRouting, topology: Topology, publisher: str,
                  dz: str) -> set[tuple[str, str]]:
    """Directed links an event with dz ``dz`` from ``publisher`` crosses under ``tables``."""
    sw = topology.host_switch(publisher)
    links = {(publisher, sw)}
    queue = [(sw, topology.port_to(sw, publisher))]
    while queue:
        sw, inp = queue.pop()
        table = tables.get(sw, {}).get(inp)
        if table is None:
            continue
        for port in sorted(table.lpm(dz)):
            if port == inp:
                continue
            info = topology.ports(sw)[port]
            links.add((sw, info.neighbor))
            if not topology.is_host(info.neighbor):
                queue.append((info.neighbor, info.neighbor_port))
    return links


def self_evaluate(physical: Tables, unlimited: Tables, routing: TreeRouting, view: Any,
                  length: int, dims: tuple[int, ...] | None, window: int, sampling: float,
                  rng: np.random.Generator) -> float:
    """Network FP rate of ``physical`` on a sampled window (unlimited = reference)."""
    topo = routing.topology
    n = max(1, round(window * sampling))
    fp = total = 0
    for pub in view.publishers:
        for e in view.event_window(pub, n, rng):
            dz = event_dz(e, view.space, length, dims)
            got = emulate_links(physical, routing, topo, pub, dz)
            ref = emulate_links(unlimited, routing, topo, pub, dz)
            total += len(got)
            fp += len(got - ref)
    return fp / total if total else 0.0
