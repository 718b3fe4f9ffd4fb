"""Shared pieces of the content-filter strategies (seeds 001-004).

- :func:`content_view`: the content workload a controller installs from
  (``Knowledge.population`` must be a :class:`sim.workloads.content.ContentView`
  or a population with ``at``).
- :class:`TreeRouting`: one spanning tree connecting all hosts (seed 001
  §2.3: "one spanning tree covering the whole space"; seed 004 reuses it):
  unique paths, next-hop ports, the links behind a port.
- :class:`GroupAllocator`: stable multicast-group ids per switch across
  updates, so churn rewrites only groups whose port set changed.
- :class:`ContentStrategy`: the strategy base (topology scope, wall-clock
  bookkeeping, link false positives, table cost and lookup latency metrics).

References
----------
Seed 001 §2.3 (spanning tree, routes), §6.2 (network false positives);
seed 004 §3 (Configurator and Containers per switch); digest seed001-004
Part C (quantities to track).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np

from sim.dataplanes.content_fast_path import ContentFamily, ContentFastPath, ContentState
from sim.dataplanes.content_program import topology_arrays
from sim.dataplanes.control_state import ControlState, StateBuilder, SwitchConfig
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.packet import Notification
from sim.dataplanes.trees import spanning_tree
from strategies.base import ExtraMetrics, Knowledge, Strategy
from strategies.table_cost import LatencyModel, StateCost, TableCapacity
from topologies.model import Topology
from topologies.registry import SpecError, check


def content_view(knowledge: Knowledge, strategy: str) -> Any:
    """The :class:`~sim.workloads.content.ContentView` in ``knowledge``.

    Raises
    ------
    SpecError
        If the workload is not content-based.
    """
    pop = knowledge.population
    if pop is not None and not hasattr(pop, "subscriptions") and hasattr(pop, "at"):
        pop = pop.at(0)
    if pop is None or not hasattr(pop, "subscriptions") or not hasattr(pop, "space"):
        raise SpecError(f"strategy {strategy!r} filters content: use the 'content' receiver "
                        f"model (content:subs=...,dims=...)")
    return pop


class TreeRouting:
    """The spanning tree of ``topology`` rooted at ``root`` (default: the first switch)."""

    def __init__(self, topology: Topology, root: str | None = None) -> None:
        self.topology = topology
        self.root = root or topology.switches[0]
        tree = spanning_tree(topology, self.root)
        self.parent: dict[str, str] = dict(tree.parent)
        self.children: dict[str, tuple[str, ...]] = dict(tree.children)
        depth = {self.root: 0}
        for node in tree.preorder():
            if node != self.root:
                depth[node] = depth[self.parent[node]] + 1
        self.depth = depth
        size: dict[str, int] = {}
        for node in reversed(list(tree.preorder())):
            size[node] = 1 + sum(size[c] for c in self.children.get(node, ()))
        self.subtree = size
        self.nodes = len(depth)
        self._paths: dict[tuple[str, str], tuple[str, ...]] = {}

    def path(self, a: str, b: str) -> tuple[str, ...]:
        """Nodes from ``a`` to ``b`` along the tree (both included)."""
        key = (a, b)
        hit = self._paths.get(key)
        if hit is not None:
            return hit
        up_a, up_b = [a], [b]
        x, y = a, b
        while self.depth[x] > self.depth[y]:
            x = self.parent[x]
            up_a.append(x)
        while self.depth[y] > self.depth[x]:
            y = self.parent[y]
            up_b.append(y)
        while x != y:
            x, y = self.parent[x], self.parent[y]
            up_a.append(x)
            up_b.append(y)
        out = tuple(up_a + up_b[-2::-1])
        self._paths[key] = out
        return out

    def hops(self, src: str, dst: str) -> list[tuple[str, int, int]]:
        """(switch, ingress port, egress port) along the path from host ``src`` to ``dst``."""
        nodes = self.path(src, dst)
        port = self.topology.port_to
        return [(nodes[i], port(nodes[i], nodes[i - 1]), port(nodes[i], nodes[i + 1]))
                for i in range(1, len(nodes) - 1)]

    def links_behind(self, switch: str, port: int) -> int:
        """Tree links in the component reached through ``port`` (its own link included)."""
        nb = self.topology.ports(switch)[port].neighbor
        if self.parent.get(nb) == switch:
            return self.subtree[nb]
        if self.parent.get(switch) == nb:
            return self.nodes - self.subtree[switch]
        return 0

    def needed_links(self, publisher: str, receivers: Iterable[str]) -> set[tuple[str, str]]:
        """Directed links on the tree paths from ``publisher`` to ``receivers``."""
        out: set[tuple[str, str]] = set()
        for r in receivers:
            nodes = self.path(publisher, r)
            out.update(zip(nodes, nodes[1:], strict=False))
        return out

    @cached_property
    def tree_ports(self) -> dict[str, tuple[int, ...]]:
        """Switch -> its ports on tree links."""
        out: dict[str, list[int]] = {}
        for child, par in self.parent.items():
            out.setdefault(par, []).append(self.topology.port_to(par, child))
            if not self.topology.is_host(child):
                out.setdefault(child, []).append(self.topology.port_to(child, par))
        return {s: tuple(sorted(v)) for s, v in out.items()}


def link_false_positives(links: Mapping[tuple[str, str], list[int]],
                         needed: set[tuple[str, str]]) -> int:
    """Frames on directed links outside ``needed``."""
    return sum(fb[0] for link, fb in links.items() if link not in needed)


def walked_false_positives(topology: Topology, strategy: Strategy, state: ControlState,
                           publisher: str, packets: Iterable[Any],
                           receivers: frozenset[str]) -> int:
    """Link crossings from which no receiver was reached (re-walking the data plane).

    For strategies whose routes are not one spanning tree (Camus's ECMP up
    port): every frame crossing is kept with its parent crossing; crossings
    with no receiver downstream are false positives (the publisher's access
    link excepted).
    """
    model = strategy.model()
    sw0 = topology.host_switch(publisher)
    parent: list[int] = []
    useful: list[bool] = []
    queue: list[tuple[str, int, Any, int]] = []
    for pkt in packets:
        parent.append(-1)
        useful.append(True)
        queue.append((sw0, topology.port_to(sw0, publisher), pkt, len(parent) - 1))
    while queue:
        node, inp, pkt, idx = queue.pop()
        if topology.is_host(node):
            if node in receivers:
                j = idx
                while j >= 0 and not useful[j]:
                    useful[j] = True
                    j = parent[j]
            continue
        result = model.process(node, state.config(node), pkt, inp)
        for emit in result.emitted:
            info = topology.ports(node)[emit.port]
            parent.append(idx)
            useful.append(False)
            queue.append((info.neighbor, info.neighbor_port, emit.packet, len(parent) - 1))
    return sum(1 for u in useful if not u)


class GroupAllocator:
    """Stable multicast-group ids per switch (reused while the port set lives)."""

    def __init__(self) -> None:
        self._ids: dict[str, dict[tuple[int, ...], int]] = {}

    def assign(self, switch: str, port_sets: Iterable[tuple[int, ...]]) -> dict[tuple[int, ...],
                                                                                int]:
        """Ids for the port sets in use now; sets no longer used free their id."""
        wanted = sorted(set(port_sets))
        old = self._ids.get(switch, {})
        kept = {ps: gid for ps, gid in old.items() if ps in set(wanted)}
        used = set(kept.values())
        nxt = 1
        for ps in wanted:
            if ps in kept:
                continue
            while nxt in used:
                nxt += 1
            kept[ps] = nxt
            used.add(nxt)
        self._ids[switch] = kept
        return kept


class SwitchConfigCache:
    """Reuses a switch's :class:`SwitchConfig` while its signature is unchanged.

    ``signature`` is any comparable value that changes whenever the switch's
    controller-side source does (a Container's ``(id, version)``, a filter
    set); an unchanged switch keeps the very same config object, which keeps
    ``diff`` and the data-plane indexes cheap and counts a recompilation
    only where one happened.
    """

    def __init__(self) -> None:
        self._configs: dict[str, tuple[Any, SwitchConfig]] = {}
        self.rebuilt = 0

    def config(self, switch: str, signature: Any, fill: Any) -> SwitchConfig:
        hit = self._configs.get(switch)
        if hit is not None and signature is not None and hit[0] == signature:
            return hit[1]
        self.rebuilt += 1
        builder = StateBuilder()
        fill(builder)
        cfg = builder.build([switch]).switches[switch]
        self._configs[switch] = (signature, cfg)
        return cfg


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyParams:
    """Lookup latency model parameters shared by the content strategies.

    Parameters
    ----------
    latency : str
        ``constant`` (TCAM/ASIC: ``latency_base_us`` per lookup) or
        ``linear`` (seed 004's Netronome: base + per-entry x (entries - 1)).
    latency_base_us, latency_per_entry_us, latency_multicast_us : float
        Defaults are seed 004's measurement (6.4 us, 1.12 us/entry, +0.8 us
        when replicating).
    tcam_capacity, sram_capacity, group_capacity, stage_capacity : int
        Per-switch capacities by table kind: TCAM entries (after range
        expansion when ``ranges = "expand"``), SRAM (all-exact) entries,
        multicast groups, tables in sequence; 0 = unlimited. Switches above
        any of them are counted in the ``switches_over_capacity`` column
        (digest seed002-003 C.2 "Utilisation", D15: the seeds give no
        absolute capacities).
    """

    latency: Literal["constant", "linear"] = "constant"
    latency_base_us: float = 6.4
    latency_per_entry_us: float = 1.12
    latency_multicast_us: float = 0.8
    tcam_capacity: int = 0
    sram_capacity: int = 0
    group_capacity: int = 0
    stage_capacity: int = 0

    def __post_init__(self) -> None:
        self.latency_model()  # validates the latency fields
        for name in ("tcam_capacity", "sram_capacity", "group_capacity", "stage_capacity"):
            check(getattr(self, name) >= 0, f"{name} must be >= 0 (0 = unlimited); "
                                            f"got {getattr(self, name)}")

    def capacities(self) -> TableCapacity:
        """Per-switch capacities by table kind (0 = unlimited); reported, not enforced."""
        return TableCapacity(tcam_entries=self.tcam_capacity, sram_entries=self.sram_capacity,
                             multicast_groups=self.group_capacity, stages=self.stage_capacity)

    def latency_model(self) -> LatencyModel:
        return LatencyModel(kind=self.latency, base_us=self.latency_base_us,
                            per_entry_us=self.latency_per_entry_us,
                            multicast_us=self.latency_multicast_us)


class StateMap:
    """Values kept per installed state, by the state's identity, for as long as it lives.

    Entries leave when their state is garbage (a weak reference's callback), so an
    identity is never reused while its entry lives.
    """

    def __init__(self) -> None:
        self._data: dict[int, tuple[weakref.ref[ControlState], Any]] = {}

    def put(self, state: ControlState, value: Any) -> None:
        key = id(state)
        data = self._data

        def forget(_: object) -> None:  # the state is garbage: its identity may be reused
            data.pop(key, None)

        data[key] = (weakref.ref(state, forget), value)

    def get(self, state: ControlState) -> Any:
        """The value of ``state``; ``LookupError`` if it has none."""
        hit = self._data.get(id(state))
        if hit is None or hit[0]() is not state:
            raise LookupError("state was not built by this strategy instance")
        return hit[1]


@dataclass(eq=False)
class StateRecord:
    """What the controller knows of one state it built, for the rows of its notifications.

    ``content`` feeds the fast path (:class:`~sim.dataplanes.content_fast_path.ContentState`);
    ``extra`` holds the state's own metrics (cost, flows); the first row of the state
    also gets the controller's wall time and the deployment peak (seed 001 Alg. 7),
    later rows 0 (the state was reused).
    """

    content: ContentState
    extra: ExtraMetrics
    wall_ms: float
    peak: int
    fresh: bool = True
    _rows: dict[tuple[Any, ...], ExtraMetrics] = field(default_factory=dict)

    def row_extra(self, link_fp: int, network_fp: int, latency_us: float) -> ExtraMetrics:
        """The :class:`ExtraMetrics` of the next row served by this state."""
        first, self.fresh = self.fresh, False
        key = (link_fp, network_fp, latency_us, first)
        hit = self._rows.get(key)
        return self._made(key) if hit is None else hit

    def row_extras(self, link_fp: list[int], network_fp: list[int], latency_us: list[float]
                   ) -> list[ExtraMetrics]:
        """:meth:`row_extra` of the next ``len(link_fp)`` rows served by this state, in order."""
        if not link_fp:
            return []
        out = [self.row_extra(link_fp[0], network_fp[0], latency_us[0])]
        keys = list(zip(link_fp[1:], network_fp[1:], latency_us[1:],
                        [False] * (len(link_fp) - 1), strict=True))
        rows = self._rows
        for key in dict.fromkeys(keys):  # each distinct key once, in order of first use
            if key not in rows:
                self._made(key)
        out += map(rows.__getitem__, keys)
        return out

    def _made(self, key: tuple[int, int, float, bool]) -> ExtraMetrics:
        link_fp, network_fp, latency_us, first = key
        hit = self._rows[key] = replace(
            self.extra, link_false_positives=link_fp, network_false_positives=network_fp,
            lookup_latency_us=latency_us, controller_wall_ms=self.wall_ms if first else 0.0,
            flows_peak=self.peak if first else 0)
        return hit


class ContentStrategy(Strategy):
    """Base of the content filters: state from all subscriptions, metrics hook.

    Subclasses implement :meth:`build` (install or update from the content
    view) and :meth:`state_cost`; they may override :meth:`network_links`
    (links the reference, e.g. unlimited, state would use). Every state a
    build returns gets a :class:`StateRecord` (:meth:`record_of`), so the
    rows of any state, not only the last one built, can be computed later
    (the fast path does them all at once after the cell's installs).
    """

    scope: ClassVar[Literal["topology", "publisher", "receivers"]] = "topology"
    #: True if every packet follows the spanning tree (:class:`TreeRouting`);
    #: otherwise link false positives come from re-walking the data plane.
    tree_routed: ClassVar[bool] = True

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self._records = StateMap()
        #: per-switch costs of the configurations seen (``table_cost.state_cost``'s memo)
        self.cost_memo: dict[str, Any] = {}
        self.routing: TreeRouting | None = None

    def check_applicable(self, topology: Topology, population: Any) -> None:
        content_view(Knowledge(population=population), self.name)

    def routing_for(self, topology: Topology) -> TreeRouting:
        if self.routing is None or self.routing.topology is not topology:
            self.routing = TreeRouting(topology)
        return self.routing

    # -- install / update with wall-clock bookkeeping ------------------------
    def build(self, topology: Topology, view: Any, previous: ControlState | None
              ) -> ControlState:
        raise NotImplementedError

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        return self._timed(topology, knowledge, None)

    def update(self, topology: Topology, state: ControlState, knowledge: Knowledge
               ) -> ControlState:
        return self._timed(topology, knowledge, state)

    def _timed(self, topology: Topology, knowledge: Knowledge,
               previous: ControlState | None) -> ControlState:
        view = content_view(knowledge, self.name)
        t0 = time.perf_counter()
        state = self.build(topology, view, previous)
        wall_ms = (time.perf_counter() - t0) * 1e3
        self._records.put(state, self._record(topology, view, state, wall_ms))
        return state

    def _record(self, topology: Topology, view: Any, state: ControlState, wall_ms: float
                ) -> StateRecord:
        """The state's record, taken right after its build (the controller's memory then)."""
        cost = self.state_cost(topology, state)
        latency = self.params.latency_model()
        lat = np.array([latency.lookup_us(cost.filter_entries.get(sw, 0),
                                          cost.replicates.get(sw, False))
                        for sw in topology.switches], np.float64)
        extra = ExtraMetrics(
            flows_max=max(cost.filter_entries.values(), default=0),
            tcam_entries=cost.tcam_entries, tcam_bits=cost.tcam_bits,
            sram_entries=cost.sram_entries, stages_max=cost.stages,
            switches_over_capacity=len(self.params.capacities().overflowing_switches(state,
                                                                                   cost)))
        flows: dict[str, Any] = self.flow_metrics(topology, state)  # ExtraMetrics fields
        peak = int(flows.pop("flows_peak", 0))
        if flows:
            extra = replace(extra, **flows)
        probe = Notification(0, topology.hosts[0], event=(0,) * view.space.d)
        enc = self.encode(topology, state, probe, frozenset(), b"")
        content = ContentState(model=self.model(), latency_us=lat,
                               header=(len(enc.packets), enc.header_entries, enc.header_bytes),
                               **self.content_extras(topology, state))
        return StateRecord(content=content, extra=extra, wall_ms=wall_ms, peak=peak)

    def record_of(self, state: ControlState) -> StateRecord:
        """The :class:`StateRecord` of a state this instance built (``LookupError`` otherwise)."""
        return self._records.get(state)  # type: ignore[no-any-return]

    def content_extras(self, topology: Topology, state: ControlState) -> dict[str, Any]:
        """Family-specific :class:`~sim.dataplanes.content_fast_path.ContentState` fields
        (``event_key``, ``reference``) of a state just built; none by default."""
        return {}

    # -- metrics ---------------------------------------------------------------
    def state_cost(self, topology: Topology, state: ControlState) -> StateCost:
        raise NotImplementedError

    def network_links(self, topology: Topology, state: ControlState,
                      notification: Notification, receivers: frozenset[str]
                      ) -> set[tuple[str, str]] | None:
        """Links the reference state would use (None: the exact receivers' paths)."""
        return None

    def flow_metrics(self, topology: Topology, state: ControlState) -> dict[str, float]:
        """Flow-limit metrics (merge ratio, flows per switch) of a state just built."""
        return {}

    def extra_metrics(self, topology: Topology, state: ControlState,
                      notification: Notification, receivers: frozenset[str],
                      delivery: Any) -> ExtraMetrics:
        record = self.record_of(state)
        routing = self.routing_for(topology)
        # the publisher's own access link is never a false positive: no filter can avoid it
        pub = notification.publisher
        needed = routing.needed_links(pub, receivers) | {(pub, topology.host_switch(pub))}
        if self.tree_routed:
            lfp = link_false_positives(delivery.links, needed)
        else:
            lfp = walked_false_positives(topology, self, state, pub, delivery.encoding.packets,
                                         receivers)
        ref = self.network_links(topology, state, notification, receivers)
        nfp = lfp if ref is None else link_false_positives(delivery.links, ref)
        lat = record.content.latency_us
        index = topology.switch_id
        worst = 0.0
        for r in receivers:
            total = 0.0
            for sw in routing.path(pub, r)[1:-1]:
                total += lat[index(sw)]
            worst = max(worst, total)
        return record.row_extra(lfp, nfp, float(worst))

    # -- fast path ---------------------------------------------------------------
    def content_fast_path(self, topology: Topology, delays: DelayModel,
                          family: ContentFamily) -> ContentFastPath | None:
        """The content fast path of this strategy on ``topology`` (the concrete classes'
        :meth:`fast_path` hooks call it), or None where the routing tree does not span
        the network."""
        routing = self.routing_for(topology)
        arrays = topology_arrays(topology)
        if len(routing.depth) != len(arrays.names):
            return None
        parent = np.full(len(arrays.names), -1, np.int64)
        for node, par in routing.parent.items():
            parent[arrays.gid[node]] = arrays.gid[par]
        return ContentFastPath(topology, delays, family, self.encode, self._content_of,
                               self._row_extras, parent, walked=not self.tree_routed)

    def _content_of(self, state: ControlState) -> ContentState:
        return self.record_of(state).content

    def _row_extras(self, state: ControlState, link_fp: list[int], network_fp: list[int],
                    latency_us: list[float]) -> list[ExtraMetrics]:
        return self.record_of(state).row_extras(link_fp, network_fp, latency_us)
