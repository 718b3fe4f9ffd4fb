"""Virtual trees: records, capacity-checked installation, rules, updates, strategy base.

A *virtual tree* (VT) is a set of links stored network-wide under one tree id
(seed 000 §5.2). On every switch incident to one of its links the controller
installs one ``check_tree`` rule: tree label -> bitmask of the switch's VT
ports (bidirectional: any VT switch can be a source). Hosts need no rule.

Capacity (§5.4, Table 5.1, digest A8): ``max_rules`` bounds the ``check_tree``
rules of each switch; per-port ``check_hop`` / ``check_stop`` /
``extract_port`` rules and clone sessions are always present and free. A VT
is installed only if *every* switch it needs has room; ``on_full`` says what
happens otherwise: ``stop`` ends the installation (the literal reading of
the random strategy, §6.2.2) and ``skip`` tries the next candidate (A9).
Candidates with fewer than ``min_edges`` links are ignored (ε of Algorithm
5.2, ch. 6's "minimum installation requirement") and a link set already
installed is not installed twice.

Tree ids are 1, 2, ... in installation order and are never reused: the
state records ``next_tree_id`` and updates continue from it; an id that no
longer fits the label's id field raises (no wrap-around, digest §1.4).

Updates (§5.3.7): :func:`plan_update` computes the target VT set (a VT whose
link set is unchanged keeps its id) and the states of the thesis protocol:
install the new VTs, inform the publishers, delete the old ones. When a
switch cannot hold old and new VTs at once, the new VTs that do not fit are
installed in a second round after the deletions, so capacity is never
exceeded at any step. :func:`sim.dataplanes.control_state.diff` of consecutive states gives
the P4Runtime writes.

What the publishers are told (``ControlState.publisher_info``): the VTs
they may use (``virtual_trees``: ``[[id, [edge ids]], ...]``) and
``next_tree_id``; the encoder (:mod:`strategies.virtual_tree.encoder`) reads nothing
else.

Workload knowledge reaches installation through ``Knowledge.population``:
an object with ``controller_view()`` (:class:`sim.workloads.clustered.
ControllerView`), or one with ``publishers``, ``subscribers`` and
``frequency`` (the ``frequency`` receiver model of ch. 5).

Deviations: none from the thesis's stated rules; the capacity policy,
``min_edges``, duplicate suppression and the two-round update are the
digest's recommendations where the thesis is silent.

References
----------
Seed 000 §5.2.1 (bidirectional state), §5.2.6 (tables), §5.3.7 (update
protocol, no id reuse), §5.4 (Table 5.1 ``max_rules``), §6.2.2 (full
switches); digest ch. 5-7 §1.3, §1.4, §1.7, A8, A9.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any, ClassVar, Literal

import numpy as np

from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    StateBuilder,
    TableEntry,
    Write,
    diff,
)
from sim.dataplanes.packet import Notification
from sim.dataplanes.virtual_tree.codec import KIND_HOP, KIND_STOP, KIND_TREE, LabelFormat
from sim.dataplanes.virtual_tree.reference import (
    CHECK_TREE,
    KEY_LABEL,
    SET_TREE_PORTS,
    hop_label,
    install_port_rules,
    stop_label,
    tree_label,
    tree_ports_entry,
)
from strategies.base import Encoding, Knowledge, Strategy
from strategies.virtual_tree.client_view import ControllerView
from strategies.virtual_tree.data_plane import VirtualTreeModel
from strategies.virtual_tree.encoder import (
    CompiledTree,
    EncoderMode,
    EncoderOptions,
    SteinerMethod,
    TreeTables,
    compile_tree,
    encode_virtual_trees,
    encoder_graph,
    steiner_sph,
)
from strategies.virtual_tree.encoder_kernel import encode_kernel
from strategies.virtual_tree.encoder_tables import encode_arrays, installed_tables
from strategies.virtual_tree.install_memo import (  # noqa: F401 (link_ends, is_connected re-exported)
    CandidateTape,
    TreePorts,
    is_connected,
    link_ends,
    tree_ports,
)
from strategies.virtual_tree.labels import (
    LabelParams,
    check_receivers,
    encode_stacks,
    label_format,
    validate_label_params,
)
from strategies.virtual_tree.steiner_jit import sph_kernel
from topologies.model import Topology
from topologies.registry import SpecError, check

OnFull = Literal["stop", "skip"]


# -- records ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """A VT the strategy would like to install: its links (edge ids) and a name.

    ``group`` names a memory budget (see ``group_limits`` of
    :func:`install_trees`).
    """

    edges: frozenset[int]
    name: str = ""
    group: str = ""


@dataclass(frozen=True, slots=True)
class VirtualTree:
    """An installed VT."""

    tree_id: int
    edges: tuple[int, ...]
    name: str = ""
    group: str = ""


def switch_edges(topology: Topology, pairs: Iterable[tuple[str, str]]) -> frozenset[int]:
    """Edge ids of adjacent node pairs."""
    return frozenset(topology.ports(a)[topology.port_to(a, b)].link.edge_id for a, b in pairs)


def steiner_links(topology: Topology, switches: Iterable[str]) -> frozenset[int]:
    """Links of the shortest-path Steiner heuristic over ``switches`` (all weights 1).

    The tree grows from the lowest-index switch; ties as in
    :func:`strategies.virtual_tree.encoder.steiner_sph`. Calls the compiled
    routine with the graph's zero weights and result buffers kept
    (:func:`_sph_buffers`) rather than made per call; a tree it does not find
    (terminals not connected) goes to :func:`steiner_links_reference`, which
    raises its error. The same links as the reference
    (``tests/strategies/test_vt_install_fast.py``); vt-random and
    vt-random-variant draw thousands of these per install.
    """
    g = encoder_graph(topology)
    idx = sorted({g.index[s] for s in switches})
    if len(idx) < 2:
        return frozenset()
    if sph_kernel is None:
        return steiner_links_reference(topology, switches)
    zeros, edges, nodes = _sph_buffers(g)
    status, n_edges, _, _, _ = sph_kernel(g.arrays, zeros, zeros, idx[0],
                                          np.array(idx[1:], np.int64), -1, edges, nodes)
    if status != 0:
        return steiner_links_reference(topology, switches)
    return frozenset(edges[:n_edges].tolist())


#: id(graph) -> (graph, per-edge zeros, edge and node buffers) of :func:`steiner_links`
_BUFFERS: dict[int, tuple[Any, np.ndarray, np.ndarray, np.ndarray]] = {}


def _sph_buffers(g: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-edge zeros (no virtual links, no terminal host links: the kernel only reads
    them) and result buffers of ``g``, kept while ``g`` is (at most 64 graphs)."""
    hit = _BUFFERS.get(id(g))
    if hit is None or hit[0] is not g:
        if len(_BUFFERS) >= 64:
            _BUFFERS.clear()
        hit = _BUFFERS[id(g)] = (g, np.zeros(g.edge_count, np.uint8),
                                 np.empty(len(g.names), np.int64),
                                 np.empty(len(g.names), np.int64))
    return hit[1], hit[2], hit[3]


def steiner_links_reference(topology: Topology, switches: Iterable[str]) -> frozenset[int]:
    """:func:`steiner_links` through :func:`~strategies.virtual_tree.encoder.steiner_sph`
    (the definition)."""
    g = encoder_graph(topology)
    idx = sorted({g.index[s] for s in switches})
    if len(idx) < 2:
        return frozenset()
    edges, _ = steiner_sph(g, idx[0], idx)
    return frozenset(edges)


def host_links(topology: Topology, switches: Iterable[str]) -> frozenset[int]:
    """The links of every host attached to ``switches``."""
    out = set()
    for s in switches:
        for h in topology.hosts_of(s):
            out.add(topology.ports(s)[topology.port_to(s, h)].link.edge_id)
    return frozenset(out)


# -- installation -------------------------------------------------------------


@dataclass(frozen=True)
class Installation:
    """The outcome of :func:`install_trees`."""

    trees: tuple[VirtualTree, ...]
    next_id: int
    rejected: int
    usage: Mapping[str, int] = field(default_factory=dict)


def install_trees(topology: Topology, candidates: Iterable[Candidate], *, max_rules: int,
                  on_full: OnFull, fmt: LabelFormat, next_id: int = 1,
                  usage: Mapping[str, int] | None = None, min_edges: int = 2,
                  max_trees: int | None = None, max_failures: int | None = None,
                  group_limits: Mapping[str, int] | None = None,
                  exclude: Iterable[frozenset[int]] = (),
                  ports: TreePorts | None = None) -> Installation:
    """:func:`install_trees_reference` (parameters, outcome and errors), with the
    capacity of every candidate checked on bitmasks.

    Without ``group_limits``, a candidate is full when its switch mask
    (:meth:`TreePorts.switch_mask`, memoised per link set) meets the mask of the
    switches whose ``check_tree`` rules are used up, kept as VTs are installed:
    the same answer as asking every switch of its VT ports, without building
    the ports of candidates that are rejected (most of them once memory fills:
    vt-random-variant tries about a thousand per install); ``group_limits`` are
    kept the same way, one mask per limited group.
    ``tests/strategies/test_vt_install_fast.py`` compares the two.
    """
    memo = ports if ports is not None else TreePorts(topology)
    used = dict(usage or {})
    bits = memo.bits
    every = sum(bits.values())
    full = 0  # switches whose rules are used up: used.get(s, 0) >= max_rules
    for s, bit in bits.items():
        if used.get(s, 0) >= max_rules:
            full |= bit
    # per limited group: its switches whose group budget is used up
    limits = dict(group_limits or {})
    group_full = {g: every if limit <= 0 else 0 for g, limit in limits.items()}
    group_used: dict[tuple[str, str], int] = {}
    seen = set(exclude)
    trees: list[VirtualTree] = []
    rejected = failures = 0
    stop = on_full == "stop"
    for cand in candidates:
        if max_trees is not None and len(trees) >= max_trees:
            break
        edges = cand.edges
        if len(edges) < min_edges or edges in seen:
            continue
        mask = memo.switch_mask(edges)
        if mask & full or mask & group_full.get(cand.group, 0):
            rejected += 1
            failures += 1
            if stop or (max_failures is not None and failures >= max_failures):
                break
            continue
        if not memo.connected(edges):
            raise ValueError(f"virtual tree {cand.name or sorted(edges)} is not connected")
        failures = 0
        tree_label(fmt, next_id)  # raises FieldRangeError: ids never wrap around
        trees.append(VirtualTree(next_id, tuple(sorted(edges)), cand.name, cand.group))
        next_id += 1
        seen.add(edges)
        limit = limits.get(cand.group)
        for s in memo.ports(edges):
            n = used[s] = used.get(s, 0) + 1
            if n >= max_rules:
                full |= bits[s]
            if limit is not None:
                n = group_used[(cand.group, s)] = group_used.get((cand.group, s), 0) + 1
                if n >= limit:
                    group_full[cand.group] |= bits[s]
    return Installation(tuple(trees), next_id, rejected, used)


def install_trees_reference(topology: Topology, candidates: Iterable[Candidate], *, max_rules: int,
                            on_full: OnFull, fmt: LabelFormat, next_id: int = 1,
                            usage: Mapping[str, int] | None = None, min_edges: int = 2,
                            max_trees: int | None = None, max_failures: int | None = None,
                            group_limits: Mapping[str, int] | None = None,
                            exclude: Iterable[frozenset[int]] = (),
                            ports: TreePorts | None = None) -> Installation:
    """Install candidates in order while every switch they need has a free rule (the
    definition; :func:`install_trees` is the same with the capacity checked on bitmasks).

    Parameters
    ----------
    candidates : iterable of Candidate
        May be infinite if ``on_full="stop"``, ``max_trees`` or
        ``max_failures`` ends it.
    max_rules : int
        ``check_tree`` rules per switch.
    on_full : {"stop", "skip"}
        On a candidate that does not fit: end, or try the next one.
    next_id : int
        First tree id to hand out.
    usage : mapping, optional
        Rules already used per switch (kept VTs of an update).
    min_edges : int
        Candidates with fewer links are ignored.
    max_trees : int, optional
        Stop after installing this many VTs.
    max_failures : int, optional
        With ``skip``: stop after this many consecutive candidates that did
        not fit.
    group_limits : mapping, optional
        Group -> rules per switch that VTs of that group may use in total.
    exclude : iterable of frozenset
        Link sets that count as already installed.
    ports : TreePorts, optional
        Where the candidates' VT ports and connectivity are remembered (the
        same answers as computing them here).

    Raises
    ------
    ValueError
        If a candidate is not connected (a VT must be one subgraph).
    FieldRangeError
        If a tree id does not fit the label's id field.
    """
    memo = ports if ports is not None else TreePorts(topology)
    used = dict(usage or {})
    group_used: dict[tuple[str, str], int] = {}
    seen = set(exclude)
    trees: list[VirtualTree] = []
    rejected = failures = 0
    for cand in candidates:
        if max_trees is not None and len(trees) >= max_trees:
            break
        if len(cand.edges) < min_edges or cand.edges in seen:
            continue
        switches = memo.ports(cand.edges)
        limit = None if group_limits is None else group_limits.get(cand.group)
        full = any(used.get(s, 0) >= max_rules for s in switches) or (
            limit is not None and any(group_used.get((cand.group, s), 0) >= limit
                                      for s in switches))
        if full:
            rejected += 1
            failures += 1
            if on_full == "stop" or (max_failures is not None and failures >= max_failures):
                break
            continue
        if not memo.connected(cand.edges):
            raise ValueError(f"virtual tree {cand.name or sorted(cand.edges)} is not connected")
        failures = 0
        tree_label(fmt, next_id)  # raises FieldRangeError: ids never wrap around
        trees.append(VirtualTree(next_id, tuple(sorted(cand.edges)), cand.name, cand.group))
        next_id += 1
        seen.add(cand.edges)
        for s in switches:
            used[s] = used.get(s, 0) + 1
            group_used[(cand.group, s)] = group_used.get((cand.group, s), 0) + 1
    return Installation(tuple(trees), next_id, rejected, used)


def build_state(topology: Topology, fmt: LabelFormat, installed: Sequence[VirtualTree],
                next_id: int, published: Sequence[VirtualTree] | None = None,
                extra: Mapping[str, Any] | None = None, caches: Caches | None = None,
                ports: TreePorts | None = None) -> ControlState:
    """:func:`build_state_reference` (parameters, state and errors), with each VT's
    label and match made once and its port masks remembered per link set
    (:meth:`TreePorts.port_masks`) instead of once per switch; the entries are
    added in the reference's order (``tests/strategies/test_vt_install_fast.py``).
    """
    memo = ports if ports is not None else TreePorts(topology)
    builder = StateBuilder(base=port_rules(topology, fmt, caches))
    added: list[tuple[str, TableEntry]] = []
    for t in installed:
        edges = frozenset(t.edges)
        if edges and memo.ports(edges):  # the label first, as the reference's first entry
            match = ((KEY_LABEL, Exact(tree_label(fmt, t.tree_id))),)
            added.extend((sw, TableEntry(CHECK_TREE, match, SET_TREE_PORTS, (("ports", m),)))
                         for sw, m in memo.port_masks(edges, fmt))
    builder.add_entries(added)
    pub = installed if published is None else published
    info = {"virtual_trees": [[t.tree_id, list(t.edges), t.name, t.group] for t in pub],
            "next_tree_id": next_id, **(extra or {})}
    return builder.build(topology.switches, info)


def build_state_reference(topology: Topology, fmt: LabelFormat, installed: Sequence[VirtualTree],
                next_id: int, published: Sequence[VirtualTree] | None = None,
                extra: Mapping[str, Any] | None = None, caches: Caches | None = None,
                ports: TreePorts | None = None) -> ControlState:
    """Per-port rules on every switch plus one ``check_tree`` rule per VT switch (the
    definition; :func:`build_state` builds the same state faster).

    ``published`` (default: ``installed``) is what the publishers are told.
    ``caches``: where the per-port rules are kept (``caches.base_states``, one
    state per label format and topology that the built states share, as
    :meth:`strategies.base.Strategy.state_builder` does; the same state as
    adding them anew). ``ports``: where the VTs' ports are remembered (as
    :func:`install_trees`).
    """
    builder = StateBuilder(base=port_rules(topology, fmt, caches))
    for t in installed:
        vt_ports = (tree_ports(topology, t.edges) if ports is None
                    else ports.ports(frozenset(t.edges)))
        for sw, on in vt_ports.items():
            builder.add_entry(sw, tree_ports_entry(fmt, t.tree_id, on))
    pub = installed if published is None else published
    info = {"virtual_trees": [[t.tree_id, list(t.edges), t.name, t.group] for t in pub],
            "next_tree_id": next_id, **(extra or {})}
    return builder.build(topology.switches, info)


def port_rules(topology: Topology, fmt: LabelFormat, caches: Caches | None = None
               ) -> ControlState:
    """The per-port rules of every VT switch (hop, stop, port extraction, clone sessions)."""

    def build() -> ControlState:
        builder = StateBuilder()
        for sw in topology.switches:
            install_port_rules(builder, topology, sw, fmt)
        return builder.build(topology.switches)

    if caches is None:
        return build()
    return caches.base_states.get_or_make(  # type: ignore[no-any-return]
        ("virtual-tree port rules", fmt, Identity(topology)), build)


def published_trees(state: ControlState) -> tuple[VirtualTree, ...]:
    """The VTs the publishers were told about."""
    return tuple(VirtualTree(int(i), tuple(e), n, g)
                 for i, e, n, g in state.publisher_info.get("virtual_trees", ()))


def tree_rule_counts(state: ControlState) -> dict[str, int]:
    """``check_tree`` rules per switch."""
    return {s: c.entry_count("MyIngress.check_tree") for s, c in state.switches.items()}


# -- updates ------------------------------------------------------------------


@dataclass(frozen=True)
class UpdatePlan:
    """The states of one rule-base update and the writes between them.

    ``steps`` are ``(action, state)`` with action ``install``, ``inform`` or
    ``delete``, starting from the old state; ``writes`` concatenates
    :func:`sim.dataplanes.control_state.diff` of consecutive states.
    """

    steps: tuple[tuple[str, ControlState], ...]
    writes: tuple[Write, ...]

    @property
    def final(self) -> ControlState:
        return self.steps[-1][1]


def plan_update(topology: Topology, fmt: LabelFormat, old: ControlState,
                candidates: Iterable[Candidate], *, max_rules: int, on_full: OnFull,
                min_edges: int = 2, max_trees: int | None = None,
                max_failures: int | None = None,
                group_limits: Mapping[str, int] | None = None,
                caches: Caches | None = None) -> UpdatePlan:
    """Install-inform-delete from ``old`` to the VTs ``candidates`` select (§5.3.7).

    The target is what :func:`install_trees` would install from scratch, except
    that a candidate equal to an old VT keeps that VT (same id, no write).
    New VTs get ids from the old state's ``next_tree_id`` on. ``caches``: as
    for :func:`build_state`.
    """
    old_trees = published_trees(old)
    state_of = partial(build_state, topology, fmt, caches=caches)
    next_id = int(old.publisher_info.get("next_tree_id", 1))
    by_edges = {frozenset(t.edges): t for t in old_trees}
    # 1. target set, with a fresh capacity budget
    target = install_trees(topology, candidates, max_rules=max_rules, on_full=on_full, fmt=fmt,
                           next_id=1, min_edges=min_edges, max_trees=max_trees,
                           max_failures=max_failures, group_limits=group_limits)
    kept = [by_edges[frozenset(t.edges)] for t in target.trees if frozenset(t.edges) in by_edges]
    fresh = [Candidate(frozenset(t.edges), t.name, t.group) for t in target.trees
             if frozenset(t.edges) not in by_edges]
    kept_set = {t.tree_id for t in kept}
    doomed = [t for t in old_trees if t.tree_id not in kept_set]
    # 2. round 1: new VTs that fit next to every old VT
    usage = _usage(topology, old_trees)
    round1 = install_trees(topology, fresh, max_rules=max_rules, on_full="skip", fmt=fmt,
                           next_id=next_id, usage=usage, min_edges=min_edges)
    installed = [*old_trees, *round1.trees]
    steps: list[tuple[str, ControlState]] = [("old", old)]
    steps.append(("install", state_of(installed, round1.next_id,
                                         old_trees)))
    informed = [*kept, *round1.trees]
    steps.append(("inform", state_of(installed, round1.next_id, informed)))
    # 3. delete the old VTs the target does not keep
    if doomed:
        steps.append(("delete", state_of(informed, round1.next_id, informed)))
    # 4. round 2: the rest, now that the old VTs are gone
    done = {frozenset(t.edges) for t in round1.trees}
    rest = [c for c in fresh if c.edges not in done]
    next_id = round1.next_id
    if rest:
        round2 = install_trees(topology, rest, max_rules=max_rules, on_full="skip", fmt=fmt,
                               next_id=next_id, usage=_usage(topology, informed),
                               min_edges=min_edges)
        if round2.trees:
            final = [*informed, *round2.trees]
            next_id = round2.next_id
            steps.append(("install", state_of(final, next_id, informed)))
            steps.append(("inform", state_of(final, next_id, final)))
    writes: list[Write] = []
    for (_, a), (_, b) in zip(steps, steps[1:], strict=False):
        writes.extend(diff(a, b))
    return UpdatePlan(tuple(steps), tuple(writes))


def _usage(topology: Topology, trees: Iterable[VirtualTree]) -> dict[str, int]:
    used: dict[str, int] = {}
    for t in trees:
        for s in tree_ports(topology, t.edges):
            used[s] = used.get(s, 0) + 1
    return used


# -- workload knowledge -------------------------------------------------------


def workload_view(knowledge: Knowledge, strategy: str) -> ControllerView:
    """The publishers, subscriptions and clusters the controller knows.

    Raises
    ------
    SpecError
        If the knowledge carries no population that describes them.
    """
    pop = getattr(knowledge, "population", None)
    view = getattr(pop, "controller_view", None)
    if callable(view):
        result = view()
        if isinstance(result, ControllerView):
            return result
    subs = getattr(pop, "subscribers", None)
    if pop is not None and isinstance(subs, Mapping):
        freq = getattr(pop, "frequency", None) or {}
        pubs = tuple(getattr(pop, "publishers", tuple(subs)))
        return ControllerView(
            publishers=pubs,
            subscriptions={p: tuple((h, float(freq.get(h, 1.0))) for h in subs.get(p, ()))
                           for p in pubs})
    raise SpecError(f"strategy {strategy!r} needs the workload's publishers and subscribers: "
                    f"use a receiver model that defines them (frequency, clustered)")


# -- strategy base ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class VtParams(LabelParams):
    """Parameters shared by every virtual-tree strategy (plus the label widths).

    Parameters
    ----------
    max_rules : int
        ``check_tree`` rules per switch (Table 5.1; 0 = hop labels only).
    on_full : {"stop", "skip"}
        What installation does with a VT that does not fit (A9).
    min_edges : int
        Smallest VT installed, in links (ε + 1 of Algorithm 5.2).
    mode : {"sorted_single_pass", "best_improvement"}
        Encoder (Algorithm 5.1 pseudo-code, or the prose's rounds).
    patience : int, optional
        Early exit after that many non-improving candidates.
    steiner : {"sph", "kou", "mehlhorn"}
        Steiner heuristic of the encoder.
    prefilter : bool
        Only VTs touching the initial delivery tree are candidates.
    prune_unused : bool
        Drop selected VTs that carry no delivery edge.
    """

    max_rules: int = 40
    on_full: OnFull = "skip"
    min_edges: int = 2
    mode: EncoderMode = "sorted_single_pass"
    patience: int | None = None
    steiner: SteinerMethod = "sph"
    prefilter: bool = False
    prune_unused: bool = False

    def __post_init__(self) -> None:
        validate_vt_params(self)


def validate_vt_params(p: VtParams) -> None:
    """Validate the fields of :class:`VtParams` (subclasses call it)."""
    validate_label_params(p)
    check(p.on_oversize != "split", "on_oversize=split is not available for virtual-tree "
                                    "strategies (use error or jumbo)")
    check(p.max_rules >= 0, f"max_rules must be >= 0, got {p.max_rules}")
    check(p.on_full in ("stop", "skip"), f"on_full must be stop or skip; got {p.on_full!r}")
    check(p.min_edges >= 1, f"min_edges must be >= 1, got {p.min_edges}")
    check(p.mode in ("sorted_single_pass", "best_improvement"),
          f"mode must be sorted_single_pass or best_improvement; got {p.mode!r}")
    check(p.patience is None or p.patience >= 1,
          f"patience must be >= 1 or none, got {p.patience}")
    check(p.steiner in ("sph", "kou", "mehlhorn"),
          f"steiner must be sph, kou or mehlhorn; got {p.steiner!r}")


class VirtualTreeStrategy(VirtualTreeModel, Strategy):
    """Base of the VT strategies: subclasses yield :class:`Candidate` s.

    Installation does not depend on a notification's receivers
    (``scope="topology"``): the runner installs once per cell.

    Installs are remembered in ``knowledge.caches.vt_installs``
    (:class:`sim.dataplanes.caches.Caches`), keyed by the strategy class, its
    parameters, ``Knowledge.seed`` and the topology and controller view
    (:func:`workload_view`) objects themselves: a runner that passes one
    ``Caches`` to the cells of one seed at other churn levels (whose view is
    the 0 % layout, seed 000 §6.6.2) gets the same :class:`ControlState`
    object for all of them. This holds because every VT strategy's
    candidates depend on nothing else (``cache_installs = True``, inherited);
    a subclass whose candidates read anything more (instance attributes,
    receiver sets) sets ``cache_installs = False``. Knowledge with receiver
    sets or stable subscribers is never cached.

    A strategy whose candidates read neither the workload seed nor the
    controller's view (``reads_workload = False``: the topology alone, e.g.
    a spanning tree or a cycle basis) is keyed without them, so the cells of
    every receiver model and seed of a topology share its install. The
    candidates themselves are drawn once per key without ``max_rules``
    (``caches.vt_candidates``, :class:`~strategies.virtual_tree.install_memo.CandidateTape`)
    and the VT ports once per topology (``caches.vt_ports``), so installs
    with other rule budgets replay them; installs that select the same VTs
    share one state (``caches.vt_states``).
    """

    dataplane = "virtual_tree"
    Params = VtParams
    scope = "topology"
    cache_installs: ClassVar[bool] = True
    #: whether ``candidates`` reads ``Knowledge.seed`` or the population (see above)
    reads_workload: ClassVar[bool] = True

    # -- subclass hooks --
    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        """The VTs to install, in priority order."""
        raise NotImplementedError

    def install_limits(self) -> dict[str, Any]:
        """Extra keyword arguments of :func:`install_trees` (max_trees, ...)."""
        return {}

    # -- control plane --
    def _install_key(self, topology: Topology, knowledge: Knowledge) -> tuple[Any, ...] | None:
        """The key of ``caches.vt_installs`` for this install, or None when not cacheable.

        Parameters are frozen dataclasses of scalars and tuples, hence usable in a key.
        """
        if not self.cache_installs or knowledge.receiver_sets or knowledge.stable:
            return None
        return (type(self), self.params, *self._workload_key(knowledge), Identity(topology))

    def _workload_key(self, knowledge: Knowledge) -> tuple[Any, ...]:
        """What of ``knowledge`` the candidates read: the seed and the controller's view
        (``reads_workload``), or nothing."""
        if not self.reads_workload:
            return ()
        pop = knowledge.population
        view = pop.controller_view() if pop is not None else None
        return knowledge.seed, Identity(view)

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        key = self._install_key(topology, knowledge)
        if key is None:
            return self._install(topology, knowledge)
        return knowledge.caches.vt_installs.get_or_make(  # type: ignore[no-any-return]
            key, lambda: self._install(topology, knowledge))

    def _install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        fmt = label_format(self.params)
        p = self.params
        caches = knowledge.caches
        ports = caches.vt_ports.get_or_make(Identity(topology), lambda: TreePorts(topology))
        key = self._install_key(topology, knowledge)
        candidates: Iterable[Candidate]
        if key is None:
            candidates = self.candidates(topology, knowledge)
        else:  # the same candidates for every rule budget: drawn once
            candidates = caches.vt_candidates.get_or_make(
                (key[0], replace(p, max_rules=0), *key[2:]),
                lambda: CandidateTape(self.candidates(topology, knowledge)))
        inst = install_trees(topology, candidates, max_rules=p.max_rules, on_full=p.on_full,
                             fmt=fmt, min_edges=p.min_edges, ports=ports, **self.install_limits())
        # installs with equal outcomes (e.g. every budget that fits all candidates) share
        # one state, and with it its walk tables and compiled trees
        return caches.vt_states.get_or_make(  # type: ignore[no-any-return]
            (fmt, Identity(topology), inst.trees, inst.next_id, inst.rejected),
            lambda: build_state(topology, fmt, inst.trees, inst.next_id,
                                extra={"rejected_trees": inst.rejected}, caches=caches,
                                ports=ports))

    def update(self, topology: Topology, state: ControlState, knowledge: Knowledge
               ) -> ControlState:
        """The final state of :func:`plan_update` (install new, inform, delete old)."""
        return self.plan_update(topology, state, knowledge).final

    def plan_update(self, topology: Topology, state: ControlState, knowledge: Knowledge
                    ) -> UpdatePlan:
        p = self.params
        return plan_update(topology, label_format(p), state, self.candidates(topology, knowledge),
                           max_rules=p.max_rules, on_full=p.on_full, min_edges=p.min_edges,
                           caches=knowledge.caches, **self.install_limits())

    # -- publisher --
    def tree_tables(self, topology: Topology, state: ControlState) -> TreeTables:
        """The published VTs in the encoder's forms (``self.caches.vt_compiled``, per state)."""

        def build() -> TreeTables:
            g = encoder_graph(topology)
            trees = published_trees(state)
            return installed_tables(
                g, [t.tree_id for t in trees], [t.edges for t in trees],
                lambda: tuple(compile_tree(topology, g, t.tree_id, t.edges) for t in trees))

        return self.caches.vt_compiled.get_or_make(  # type: ignore[no-any-return]
            (Identity(state), Identity(topology)), build)

    def compiled_trees(self, topology: Topology, state: ControlState) -> Sequence[CompiledTree]:
        """The published VTs as :class:`CompiledTree` s (of :meth:`tree_tables`)."""
        return self.tree_tables(topology, state).trees

    def encoder_options(self) -> EncoderOptions:
        p = self.params
        return EncoderOptions(mode=p.mode, patience=p.patience, steiner=p.steiner,
                              prefilter=p.prefilter, prune_unused=p.prune_unused)

    @cached_property
    def _encoder_key(self) -> tuple[Any, ...]:
        return (type(self), replace(self.params, max_rules=0))

    def encoder_key(self) -> tuple[Any, ...]:
        """The class and the parameters but ``max_rules``: the rule budget bounds the
        install only; :meth:`encode` reads the label widths, the encoder options and
        the MTU policy of the parameters and the VTs of the state it is given (a
        subclass whose encoder reads ``max_rules`` overrides this)."""
        return self._encoder_key

    @cached_property
    def _encoder(self) -> tuple[LabelFormat, EncoderOptions, np.ndarray]:
        """(label format, encoder options, the kernel's label spec) of the parameters."""
        fmt = label_format(self.params)
        spec = np.array([fmt.id_bits, fmt.max_id, KIND_TREE, KIND_STOP, KIND_HOP], np.int64)
        return fmt, self.encoder_options(), spec

    def labels(self, topology: Topology, state: ControlState, publisher: str,
               receivers: frozenset[str]) -> list[int]:
        """Tree labels, then stops, then hops (digest A6)."""
        fmt, options, spec = self._encoder
        tables = self.tree_tables(topology, state)
        if encode_kernel is None or options.steiner != "sph":
            enc = encode_virtual_trees(topology, tables, publisher, receivers, options)
            return ([tree_label(fmt, t) for t in enc.trees]
                    + [stop_label(fmt, e) for e in enc.stops]
                    + [hop_label(fmt, e) for e in enc.hops])
        got = encode_arrays(topology, encoder_graph(topology), tables, publisher, receivers,
                            options, spec)
        if len(got.labels) == len(got.ids):
            return got.labels.tolist()  # type: ignore[no-any-return]
        # an id does not fit: the reference's label functions raise its error
        cut = got.n_trees + got.n_stops
        return ([tree_label(fmt, t) for t in got.ids[:got.n_trees].tolist()]
                + [stop_label(fmt, e) for e in got.ids[got.n_trees:cut].tolist()]
                + [hop_label(fmt, e) for e in got.ids[cut:].tolist()])

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        check_receivers(notification.publisher, receivers)
        if not receivers:
            return Encoding(())
        labels = self.labels(topology, state, notification.publisher, receivers)
        return encode_stacks(topology, self.params, self._encoder[0], notification, payload,
                             labels)
