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

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from sim.dataplanes.control_state import ControlState
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
    """

    receiver_sets: Mapping[str, tuple[frozenset[str], ...]] = field(default_factory=dict)
    stable: Mapping[str, frozenset[str]] = field(default_factory=dict)
    population: Any = None
    seed: int = 0

    @property
    def publishers(self) -> tuple[str, ...]:
        return tuple(sorted(self.receiver_sets))

    @classmethod
    def for_notification(cls, publisher: str, receivers: frozenset[str]) -> Knowledge:
        return cls(receiver_sets={publisher: (receivers,)})


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

    def __init__(self, params: Any = None) -> None:
        self.params = params if params is not None else self.Params()

    def model(self) -> DataPlane:
        """The data-plane model this strategy's packets run on.

        Default: the registered family ``self.dataplane``. Strategies whose
        field widths are parameters return a model configured with them.
        """
        return get_dataplane(self.dataplane)

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        raise NotImplementedError

    def update(self, topology: Topology, state: ControlState, knowledge: Knowledge
               ) -> ControlState:
        """State after the controller learns ``knowledge`` (default: reinstall)."""
        return self.install(topology, knowledge)

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        raise NotImplementedError

    def host_receive(self, topology: Topology, host: str, packet: Packet,
                     notification: Notification) -> HostAction:
        return DELIVER

    def extra_metrics(self, topology: Topology, state: ControlState,
                      notification: Notification, receivers: frozenset[str],
                      delivery: Any) -> Mapping[str, float]:
        """Optional metrics of one notification beyond the engine's (default: none).

        ``delivery`` is the static engine's :class:`sim.engines.static.Delivery`.
        Keys must be columns of :data:`experiments.cells.schema.EXTRA_COLUMNS`;
        runners fill the columns a strategy does not return with their
        defaults (0).
        """
        return {}


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
