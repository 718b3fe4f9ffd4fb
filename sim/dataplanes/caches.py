"""The explicit cache object of one cell (or of the cells a runner runs together).

Memoisation that speeds up the simulator without changing what it computes
lives in one :class:`Caches` object that callers pass down, never in module
globals: the data-plane lookup memos, the vectorised table indexes, the
virtual-tree installs and compiled trees, the clustered workload plans, and
the per-topology trees and next hops of the tree-walking fast paths.
Each is a named, bounded LRU :class:`Store` with a documented lifetime.

Keys are values (frozen dataclasses, tuples of them) or the objects
themselves, held strongly and compared by identity through :class:`Identity`
(a topology, a switch configuration, a control state: equal *content* would
also be correct, but hashing it costs more than the memo saves). Holding the
object in the key means its identity cannot be reused while the entry lives,
which is what made the former ``id()``-keyed module globals fragile.

Lifetimes
---------
Whoever creates a :class:`Caches` decides what shares it:

- nobody passes one: every consumer falls back to a fresh ``Caches()``;
  results are the same, only slower (nothing is reused);
- one cell: the cell pipeline creates one and passes it to the strategy's
  data-plane model, to ``Knowledge`` and to the receiver model;
- the cells of one runner partition: the runner creates one per partition
  (per Spark task / local run) and passes it to every cell it runs, so the
  cells of one workload seed at other churn levels reuse its population plan
  and its virtual-tree install (seed 000 §6.6.2: every churn level starts
  from the 0 % layout).

A store never changes a result: a hit returns what a miss would compute
(``tests/experiments/test_cell_caches.py`` checks rows with shared and
fresh caches are equal).

References
----------
Seed 000 §6.6.2 (churn levels of one client distribution); DESIGN.md
"Layout and layers" (caches live in an explicit per-cell object).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Identity:
    """A key that holds ``obj`` strongly and compares it by identity.

    For objects whose value hash is expensive or undefined (switch
    configurations with mapping fields, control states, controller views).

    Parameters
    ----------
    obj : object
        The object; kept alive as long as the key is.
    """

    __slots__ = ("obj", "_hash")

    def __init__(self, obj: object) -> None:
        self.obj = obj
        self._hash = object.__hash__(obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.obj is self.obj

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Identity({type(self.obj).__name__})"


class Store(Generic[K, V]):
    """A bounded least-recently-used map.

    Parameters
    ----------
    name : str
        What it holds (for ``repr`` and error messages).
    limit : int
        Entries kept at most; the least recently used one is forgotten first.
    """

    __slots__ = ("name", "limit", "_data", "hits", "misses")

    def __init__(self, name: str, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"store {name!r}: limit must be >= 1, got {limit}")
        self.name = name
        self.limit = limit
        self._data: OrderedDict[K, V] = OrderedDict()
        #: lookups answered from the store / computed (for tests and benchmarks)
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        """The value of ``key`` (now the most recently used), or None."""
        value = self._data.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        self._data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key``, forgetting the oldest entry when full."""
        data = self._data
        data[key] = value
        data.move_to_end(key)
        while len(data) > self.limit:
            data.popitem(last=False)
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value of ``key``, computed by ``make()`` and remembered on a miss."""
        value = self.get(key)
        return self.put(key, make()) if value is None else value

    def keys(self) -> tuple[K, ...]:
        """The keys, least recently used first."""
        return tuple(self._data)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return f"Store({self.name!r}, {len(self._data)}/{self.limit})"


class Caches:
    """Every memo of one cell (or of the cells that share it); see the module docstring.

    Attributes
    ----------
    vt_lookups : Store
        ``(Identity(SwitchConfig), LabelFormat)`` -> the virtual-tree lookup
        memo of that configuration (:mod:`sim.dataplanes.virtual_tree.memo`).
        Lives as long as the states it was built for are simulated.
    table_index : Store
        ``(Identity(entries), table)`` -> the vectorised index of one large
        ternary/range table (:mod:`sim.dataplanes.table_index`); ``entries``
        is the configuration's tuple of entries of that table.
    vt_installs : Store
        Install key (strategy class, parameters, seed, ``Identity`` of the
        topology and of the controller's view) -> the installed
        ``ControlState`` (:mod:`strategies.virtual_tree.installation`).
        Shared by the cells of one seed at other churn levels.
    vt_compiled : Store
        ``(Identity(ControlState), Identity(Topology))`` -> the published VTs
        of that state in the encoder's form (``tree``, ``hybrid``: the stored
        trees it tells the publishers about, read as the encoder needs them;
        ``hybrid``: also their stable subscribers' node numbers).
    workload_plans : Store
        ``(Identity(Topology), workload key, rng state)`` -> a workload's
        drawn plan: the clustered population (:mod:`sim.workloads.clustered`;
        shared by the cells of one seed at other churn levels) and the tenants'
        datacenter (:mod:`sim.workloads.tenants`; shared by the slices of one
        seed).
    vt_tables : Store
        ``("links", Identity(Topology))`` -> the topology's links as the
        virtual-tree walk kernel's arrays, and ``("tables", LabelFormat)`` ->
        the installed tables of the states it walked
        (:mod:`sim.dataplanes.virtual_tree.walk_tables`; rows per state, pieces
        per switch configuration, forgotten at once past a size limit), and
        ``("edge labels", (Identity(Topology), LabelFormat))`` -> ``hybrid``'s edge
        labels (:class:`strategies.virtual_tree.hybrid.EdgeLabels`), and
        ``("edge table", ...)`` the same as arrays for its kernel
        (:class:`strategies.virtual_tree.hybrid_kernel.EdgeTable`).
    base_states : Store
        ``(strategy class, parameters, Identity(Topology))`` -> the
        receiver-independent part of that strategy's installs
        (:meth:`strategies.base.Strategy.state_builder`), which every install
        of a receiver-scoped strategy builds on. Lives as long as the cells
        of that topology run.
    cell_states : Store
        ``(strategy class, parameters, Identity(Topology))`` -> the installed
        state of a topology-scoped strategy whose install depends on nothing
        but these (``Strategy.cell_invariant``): the cells of a partition
        share it instead of installing it again (a spec's cells run strategy
        after strategy, so a few entries suffice; each is a whole install).
    fast_paths : Store
        ``(strategy class, parameters, Identity(Topology), DelayModel)`` ->
        ``(fast path or None,)`` of a ``cell_invariant`` strategy, with its
        tables and work buffers, shared by the cells of a partition (kept to
        a few: a tree walk's buffers are about 256 x nodes x 200 B, 26 MB at
        255 switches, resident as far as used).
    tree_tables : Store
        ``Identity(Topology)`` -> the shortest-path trees of its roots laid out
        for the tree-walking fast paths (:class:`sim.dataplanes.tree_tables.TreeTables`,
        a bounded number of roots each). Two topologies at most.
    route_tables : Store
        ``Identity(Topology)`` -> its unicast next hops towards the switches
        they were asked for (:class:`sim.dataplanes.l2.fast_path.RouteTables`,
        ``S x S`` at most). Two topologies at most.
    vt_candidates : Store
        Install key without ``max_rules`` -> the virtual-tree candidates of that
        install as far as drawn (:class:`strategies.virtual_tree.install_memo.CandidateTape`),
        replayed by the installs of the other rule budgets. A few entries
        suffice: a partition runs the budgets of one strategy one after another.
    vt_states : Store
        ``(LabelFormat, Identity(Topology), installed VTs, next id, rejected)`` ->
        the state :func:`strategies.virtual_tree.installation.build_state` builds of
        them: installs with other budgets that select the same VTs share it.
    vt_ports : Store
        ``Identity(Topology)`` -> the VT ports and connectivity of the link sets
        installed on it (:class:`strategies.virtual_tree.install_memo.TreePorts`).
    stored_configs : Store
        ``(Identity(SwitchConfig), entries, groups)`` -> that base switch
        configuration plus stored-tree rules
        (:mod:`strategies.virtual_tree.stored_trees`): receiver-scoped installs
        that store equal rules on a switch share one configuration object.
    group_configs : Store
        ``("derived configs", Identity(base state))`` -> the switch
        configurations per-notification group installs made on that base
        (:class:`~sim.dataplanes.derived_configs.DerivedConfigs`: ``multicast``'s
        tree switches, :mod:`strategies.l2.tree_groups`; ``bier``'s local
        groups, :mod:`strategies.bier.bift`; ``tree``'s stored tree of one
        receiver set, :func:`strategies.virtual_tree.stored_trees.one_tree_state`):
        installs that give a switch equal rules share one object. One entry per
        base (strategy and topology).
    flow_logical : Store
        ``(strategy class, Identity(Topology), dz length, dims, max_dz, the view's
        subscriptions and advertisements)`` -> ``pleroma-dz``'s first install without
        its physical tables (:class:`strategies.prefix_filter.pleroma_arrival.LogicalArrival`:
        logical counters, unlimited tables, hops), shared by the cells of one workload at
        other flow limits and algorithms. One entry: a partition runs those cells one
        after another, and an entry holds every logical flow of the network.
    flow_physical : Store
        That key with the flow limit, the local enforcer and its random stream's state ->
        the physical tables after that install's local enforcement
        (:class:`strategies.prefix_filter.pleroma_arrival.PhysicalArrival`), shared by
        ``min-space``, ``traffic`` and ``history`` at one limit (their global pass
        comes after it).
    cell_draws : Store
        ``("workload", Identity(Topology), receiver spec, workload seed)`` -> a static
        cell's workload (:func:`experiments.cells.workload.shared_workload`), and
        ``("draws", Identity(workload), notifications)`` -> its drawn notifications
        (:func:`experiments.cells.workload.shared_draws`, cells that run
        notification by notification): the cells of one workload at other
        strategies and parameters (a ch. 6 family's 73 cells, ten strategies per
        receiver point) draw them once. Two entries: one workload and its draws (a
        partition runs the cells of one workload one after another, and a
        population can be large: only the current one is kept).
    fast_metrics : Store
        ``(the strategy's encoder key, Identity(Topology), DelayModel, payload bytes,
        (Identity(state), notification, receivers) per notification)`` -> the fast
        path's row metrics of those notifications
        (:func:`experiments.cells.pipeline.shared_fast_metrics`): cells whose
        installs ended in one state (e.g. every rule budget that fits all of a
        strategy's candidates, :attr:`vt_states`) and whose encoders agree walk once.
        A few entries (each holds its states): a task runs a strategy's budgets one
        after another.
    """

    __slots__ = ("vt_lookups", "table_index", "vt_installs", "vt_compiled", "workload_plans",
                 "vt_tables", "base_states", "cell_states", "fast_paths", "tree_tables",
                 "route_tables", "vt_candidates", "vt_states", "vt_ports", "stored_configs",
                 "group_configs", "flow_logical", "flow_physical", "cell_draws", "fast_metrics")

    def __init__(self) -> None:
        self.vt_lookups: Store[tuple[Identity, Any], Any] = Store("vt_lookups", 4096)
        self.table_index: Store[tuple[Identity, str], Any] = Store("table_index", 512)
        self.vt_installs: Store[tuple[Any, ...], Any] = Store("vt_installs", 32)
        self.vt_compiled: Store[tuple[Identity, Identity], Any] = Store("vt_compiled", 16)
        self.workload_plans: Store[tuple[Any, ...], Any] = Store("workload_plans", 64)
        self.vt_tables: Store[tuple[str, Any], Any] = Store("vt_tables", 16)
        self.base_states: Store[tuple[Any, ...], Any] = Store("base_states", 32)
        self.cell_states: Store[tuple[Any, ...], Any] = Store("cell_states", 8)
        self.fast_paths: Store[tuple[Any, ...], Any] = Store("fast_paths", 4)
        self.tree_tables: Store[Identity, Any] = Store("tree_tables", 2)
        self.route_tables: Store[Identity, Any] = Store("route_tables", 2)
        self.vt_candidates: Store[tuple[Any, ...], Any] = Store("vt_candidates", 16)
        self.vt_states: Store[tuple[Any, ...], Any] = Store("vt_states", 16)
        self.vt_ports: Store[Identity, Any] = Store("vt_ports", 4)
        self.stored_configs: Store[tuple[Any, ...], Any] = Store("stored_configs", 4096)
        self.group_configs: Store[tuple[Any, ...], Any] = Store("group_configs", 8)
        self.flow_logical: Store[tuple[Any, ...], Any] = Store("flow_logical", 1)
        self.flow_physical: Store[tuple[Any, ...], Any] = Store("flow_physical", 4)
        self.cell_draws: Store[tuple[Any, ...], Any] = Store("cell_draws", 2)
        self.fast_metrics: Store[tuple[Any, ...], Any] = Store("fast_metrics", 4)

    def stores(self) -> tuple[Store[Any, Any], ...]:
        """Every store, in declaration order."""
        return tuple(getattr(self, name) for name in self.__slots__)

    def clear(self) -> None:
        """Forget everything (results stay the same; the next lookups are slower)."""
        for store in self.stores():
            store.clear()

    def __repr__(self) -> str:
        return "Caches(" + ", ".join(repr(s) for s in self.stores()) + ")"


def or_fresh(caches: Caches | None) -> Caches:
    """``caches``, or a fresh :class:`Caches` when None (correct, nothing reused)."""
    return caches if caches is not None else Caches()


__all__ = ["Caches", "Identity", "Store", "or_fresh"]
