"""The strategy interface: control plane + publisher encoder.

A strategy names the data-plane family it runs on and provides

- ``install(topology, knowledge) -> ControlState``: what the controller puts
  on the switches given what it knows (the receiver sets to serve);
- ``update(topology, state, knowledge) -> ControlState``: the state after a
  change (default: install afresh; :func:`sim.dataplanes.control_state.diff` gives the writes);
- ``encode(topology, state, notification, receivers, payload) -> Encoding``:
  the packets the publisher injects;
- ``host_receive(...)``: what a host does with an arriving frame (default:
  accept it, send nothing; brokers and filtering hosts override it).

Strategies register by name in :data:`STRATEGIES` with a frozen parameter
dataclass; :func:`make_strategy` validates parameters and builds one.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import Encoding, Notification, Packet
from sim.dataplanes.pipeline import DataPlane, get_dataplane
from topologies.model import Topology
from topologies.registry import Registry, make_params


@dataclass(frozen=True, slots=True, kw_only=True)
class NoParams:
    """A strategy without parameters."""


@dataclass(frozen=True)
class Knowledge:
    """What the controller knows when it installs state.

    Attributes
    ----------
    receiver_sets : mapping
        Publisher -> the receiver sets (frozensets of hosts) it must be able
        to reach with the installed state (per-set strategies such as IP
        multicast and stored trees install exactly these).
    stable : mapping
        Publisher -> its stable subscribers (hybrid strategies; seed 000 §4.3).
    population : object, optional
        The workload's population (``sim.workloads.receivers.Population``), for
        strategies that install from publisher/subscriber relations, client
        clusters or notification statistics (virtual trees, seed 000 ch. 5-6;
        see ``strategies.virtual_tree.installation.workload_view``). None when unknown.
    seed : int
        Root seed of the strategy's own random choices during installation
        (``sim.dataplanes.seeds.child_rng(seed, component)``); runners pass the cell's
        workload seed.
    caches : Caches
        Where installs are remembered (:class:`sim.dataplanes.caches.Caches`;
        the virtual-tree strategies' ``vt_installs``). Runners pass one
        object to the cells that may share installs; default: a fresh one.
    """

    receiver_sets: Mapping[str, tuple[frozenset[str], ...]] = field(default_factory=dict)
    stable: Mapping[str, frozenset[str]] = field(default_factory=dict)
    population: Any = None
    seed: int = 0
    caches: Caches = field(default_factory=Caches, compare=False, repr=False)

    @property
    def publishers(self) -> tuple[str, ...]:
        return tuple(sorted(self.receiver_sets))

    @classmethod
    def for_notification(cls, publisher: str, receivers: frozenset[str]) -> Knowledge:
        return cls(receiver_sets={publisher: (receivers,)})


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtraMetrics:
    """A strategy's metrics of one notification beyond the engine's
    (:meth:`Strategy.extra_metrics`); every field has the value of a strategy
    that does not measure it. Result tables have one column per field, under
    the field's name. Content filters, seeds 001-004.

    Attributes
    ----------
    link_false_positives : int or None
        Frames on links that no receiver of the notification needed
        (content-exact, by the strategy's own routes; host links included).
        None: the strategy has no own measure; the static rows then count
        :func:`sim.dataplanes.link_waste.wasted_link_frames` (used links from
        which no receiver is reachable), so label stacks and virtual trees
        compare too.
    network_false_positives : int
        Seed 001's network false positives: frames on links the unlimited
        flow set would not use (merge-induced only; equals
        ``link_false_positives`` for exact filters).
    merge_ratio, merge_ratio_limited : float
        Mean over switches with flows of (unlimited - deployed) / unlimited,
        and the same over the switches whose unlimited count exceeds the
        limit (seed 001 A2/A5.7).
    flows_max : int
        Filter entries on the busiest switch.
    flow_limit : int
        Per-switch flow limit, 0 = none.
    flows_peak : int
        Peak filter entries on any switch while this state was deployed, in
        the strategy's write order (seed 001 Alg. 7); 0 when the state was
        reused.
    tcam_entries : int
        TCAM entries after range-to-prefix expansion.
    tcam_bits : int
        Sum of key bits over the TCAM entries.
    sram_entries : int
        Exact-match entries.
    stages_max : int
        Tables in sequence on the deepest switch.
    controller_wall_ms : float
        Wall-clock controller time of the install/update behind this state
        (0 when the state was reused). Measured, not simulated: NOT
        reproducible across runs.
    lookup_latency_us : float
        Worst receiver's sum of per-switch lookup latencies (table_cost
        latency model).
    switches_over_capacity : int
        Switches above a per-switch capacity by table kind (TCAM / SRAM
        entries, multicast groups, stages; content strategies' ``*_capacity``
        parameters, 0 = none).
    header_tree_labels, header_stop_labels, header_hop_labels : int
        Tree, stop and hop labels in the publisher's encoded header, over all
        its packets (seed 000 §5.2.4, Fig. 6.9b's "average header load" split
        by label type); the three add up to ``header_entries``. Counted from
        the header bytes by the virtual-tree family
        (:meth:`strategies.virtual_tree.data_plane.VirtualTreeModel.extra_metrics`);
        0 for strategies without typed labels.
    """

    link_false_positives: int | None = None
    network_false_positives: int = 0
    merge_ratio: float = 0.0
    merge_ratio_limited: float = 0.0
    flows_max: int = 0
    flow_limit: int = 0
    flows_peak: int = 0
    tcam_entries: int = 0
    tcam_bits: int = 0
    sram_entries: int = 0
    stages_max: int = 0
    controller_wall_ms: float = 0.0
    lookup_latency_us: float = 0.0
    switches_over_capacity: int = 0
    header_tree_labels: int = 0
    header_stop_labels: int = 0
    header_hop_labels: int = 0


#: The :class:`ExtraMetrics` fields that count a header's labels by type; a fast
#: path's row metrics may carry them under these names (``experiments/cells/pipeline.py``).
HEADER_LABEL_FIELDS = ("header_tree_labels", "header_stop_labels", "header_hop_labels")

NO_EXTRA_METRICS = ExtraMetrics()


@dataclass(frozen=True, slots=True)
class HostAction:
    """A host's reaction to a frame: deliver it to the application or not,
    and frames to send back (brokers), each with its delay in seconds."""

    deliver: bool = True
    send: tuple[tuple[Packet, float], ...] = ()


DELIVER = HostAction()


class Strategy:
    """Base class; subclasses set ``name``, ``dataplane`` and ``Params``."""

    name: ClassVar[str]
    dataplane: ClassVar[str]
    Params: ClassVar[type] = NoParams
    summary: ClassVar[str] = ""
    #: What the installed state depends on, so runners can reuse it:
    #: "topology" (same state for every notification), "publisher", or
    #: "receivers" (installed per receiver set, e.g. stored trees).
    scope: ClassVar[Literal["topology", "publisher", "receivers"]] = "receivers"
    #: True when what the cell pipeline asks of this strategy depends on nothing but
    #: its class, parameters and topology (and the delay model, for the fast path):
    #: ``install`` reads no ``Knowledge`` beyond the receiver sets its ``scope``
    #: hands it, and the object keeps no state between calls. Runners then share
    #: a topology-scoped install and the fast path between the cells of a
    #: partition (``Caches.cell_states``, ``Caches.fast_paths``);
    #: ``tests/experiments/test_cell_caches.py`` checks every strategy that says so.
    cell_invariant: ClassVar[bool] = False
    #: True when one install serves every cell of a workload seed, whatever part of
    #: the workload a cell sends (elmo installs all groups of a ``GroupSource``
    #: population once and keeps it in ``Caches.vt_installs``). The Spark runner
    #: then keeps such cells in one task, up to a slot's share of the spec
    #: (:func:`experiments.runners.spark.balance`), so the install runs once.
    workload_install: ClassVar[bool] = False

    #: Where this strategy object's memos live (data-plane lookups, compiled
    #: trees); see :meth:`use_caches`.
    _caches: Caches | None = None

    def __init__(self, params: Any = None) -> None:
        self.params = params if params is not None else self.Params()

    @property
    def caches(self) -> Caches:
        """This strategy's :class:`~sim.dataplanes.caches.Caches` (fresh until
        :meth:`use_caches` hands it the runner's)."""
        if self._caches is None:
            self._caches = Caches()
        return self._caches

    def use_caches(self, caches: Caches) -> None:
        """Keep this strategy's memos in ``caches`` from now on (runners share
        one object across the cells of a partition)."""
        self._caches = caches

    def model(self) -> DataPlane:
        """The data-plane model this strategy's packets run on.

        Default: the registered family ``self.dataplane``. Strategies whose
        field widths are parameters return a model configured with them.
        """
        return get_dataplane(self.dataplane)

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        raise NotImplementedError

    def state_scope(self) -> Literal["topology", "publisher", "receivers"]:
        """What the installed state depends on with these parameters: :attr:`scope`, or
        narrower where the parameters allow it (switch-mcgroup and mixed with every
        group installed: "topology"). The cell pipeline installs per its answer."""
        return self.scope

    def update(self, topology: Topology, state: ControlState, knowledge: Knowledge
               ) -> ControlState:
        """State after the controller learns ``knowledge`` (default: reinstall)."""
        return self.install(topology, knowledge)

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        raise NotImplementedError

    def encoder_key(self) -> Hashable | None:
        """Optional hook: a key equal for strategies whose :meth:`encode` gives the same
        encoding of every (state, notification, receivers), and whose fast path the
        same metrics (the cell pipeline then shares those metrics between cells that
        run the same notifications on the same state object:
        :func:`experiments.cells.pipeline.shared_fast_metrics`). Default None: never
        shared."""
        return None

    def base_rules(self, builder: StateBuilder, topology: Topology) -> None:
        """Optional hook: add the receiver-independent rules of :meth:`install`.

        What every install of these parameters on ``topology`` starts with
        (a receiver-scoped strategy's per-port rules and clone sessions),
        added to ``builder`` in the order ``install`` added them. Default:
        none. A strategy with such rules implements this and starts its
        ``install`` with :meth:`state_builder`.
        """

    def state_builder(self, topology: Topology) -> StateBuilder:
        """A :class:`StateBuilder` that already holds :meth:`base_rules`.

        The base rules are built once per (class, parameters, topology) and
        kept in ``caches.base_states``; the states built on them share its
        switch configurations and tables (equal to adding the rules anew:
        ``tests/strategies/test_base_rules.py``), so per-notification
        installs, their control writes and the lookup memos skip them.
        """
        return StateBuilder(base=self.base_state(topology))

    def base_state(self, topology: Topology) -> ControlState:
        """The state of :meth:`base_rules` alone (built once, see :meth:`state_builder`)."""
        key = (type(self), self.params, Identity(topology))
        base = self.caches.base_states.get(key)
        if base is None:
            plain = StateBuilder()
            self.base_rules(plain, topology)
            base = self.caches.base_states.put(key, plain.build(topology.switches))
        return base  # type: ignore[no-any-return]

    def host_receive(self, topology: Topology, host: str, packet: Packet,
                     notification: Notification) -> HostAction:
        return DELIVER

    def check_applicable(self, topology: Topology, population: Any) -> None:
        """Optional hook: raise ``SpecError`` if this strategy cannot run on
        ``topology`` with the workload ``population`` (default: it can).

        The driver calls it once per (topology, receiver model, strategy
        point) before any cell runs (:func:`experiments.cells.spec.validate_cells`),
        so a grid with one impossible cell writes nothing. Implementations
        make the same checks their ``install`` makes, cheaply.
        """

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """Optional hook: a closed-form static engine for this strategy on ``topology``.

        Default: None, every notification runs on the pass-by-pass reference
        (:func:`sim.engines.static.run_notification`). A data-plane family
        that computes its walk in closed form returns its
        :class:`~sim.dataplanes.fast_path.FastPath` configured with this
        strategy's parameters, ``delays`` and ``self.encode``, or None for
        parameters and topologies it does not model exactly. A subclass that
        changes ``encode``, ``host_receive`` or ``extra_metrics`` must not
        inherit a fast path silently (check ``type(self)``). The static engine
        (:func:`sim.engines.static.choose_static_path`) only calls this hook;
        ``tests/sim/test_fast_paths.py`` finds every registered strategy whose
        hook returns a fast path and checks it against the reference.

        References
        ----------
        shared/DESIGN.md "Data planes" (fast paths agree with the pass-by-pass
        model on randomized cases) and "Layout and layers" (one hook).
        """
        return None

    def extra_metrics(self, topology: Topology, state: ControlState,
                      notification: Notification, receivers: frozenset[str],
                      delivery: Any) -> ExtraMetrics:
        """Optional metrics of one notification beyond the engine's (default: none,
        :data:`NO_EXTRA_METRICS`).

        ``delivery`` is the static engine's :class:`sim.dataplanes.delivery.Delivery`.
        """
        return NO_EXTRA_METRICS


STRATEGIES: Registry[type[Strategy]] = Registry("strategy")


def register_strategy(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: register ``cls`` under ``cls.name``."""
    STRATEGIES.add(cls.name, cls)
    return cls


def make_strategy(name: str, params: Mapping[str, Any] | None = None) -> Strategy:
    """Build strategy ``name`` with validated ``params`` (strings or TOML values)."""
    load_builtin_strategies()
    cls = STRATEGIES.get(name)
    return cls(make_params(cls.Params, dict(params or {}), f"strategy {name!r}"))


def load_builtin_strategies() -> None:
    """Import the built-in strategy modules (they register themselves)."""
    import strategies.catalog  # noqa: F401
