"""Receiver models: who receives each notification.

A model is configured by a spec string (``uniform:percent=30``,
``frequency:subscribers=30``) and registered in :data:`RECEIVER_MODELS`.
``model.population(topology, rng)`` fixes everything that stays put during a
run (who subscribes to whom, per-host interest); ``population.receivers``
draws the receiver set of one notification.

- ``uniform`` (seed 000 §3.5.2, §4.4): round(percent/100 x |hosts|) hosts,
  uniformly, the publisher excluded (digest §7.4); capped at |hosts| - 1.
- ``frequency`` (seed 000 §5.4, Table 5.1): each publisher has
  ``subscribers`` percent of the other hosts as subscribers; each host has a
  fixed notification frequency drawn from U(freq_min, freq_max) percent; a
  subscriber receives a notification with that probability.

Every population implements :class:`Population`, optional features included:
it derives from :class:`PopulationBase`, which gives each optional feature a
do-nothing default, and overrides the ones it has (``stable`` in
``replacement``; ``at``, ``draw``, ``version`` and ``draws_events`` in
``content``; ``controller_view`` in ``clustered``; ``draw_runs`` in
``uniform``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, cast

import numpy as np

from sim.dataplanes import pcg64_draws
from sim.dataplanes.caches import Caches
from sim.dataplanes.content_space import Event
from sim.dataplanes.seeds import RunStreams
from topologies.model import Topology
from topologies.registry import Registry, check, make_params, parse_spec


class Population(Protocol):
    """What stays fixed during a cell; draws each notification's receivers.

    ``publishers`` and ``receivers`` are what every workload has. The other
    members are optional features; :class:`PopulationBase` gives each a
    do-nothing default, so callers use them without probing.

    Attributes
    ----------
    publishers : tuple of str
        The publishing hosts; runners draw each notification's publisher
        uniformly from them.
    draws_events : bool
        True when each notification draws an event that decides its
        receivers (content workloads, :meth:`draw`); the timed engine then
        draws per notification instead of fixing each publisher's
        subscribers. Default False.
    version : int or None
        Changes whenever what the controller knows changes (subscription
        churn of a view returned by :meth:`at`); a new version makes runners
        update the cached state. Default None (never changes).
    """

    @property
    def draws_events(self) -> bool: ...

    @property
    def version(self) -> int | None: ...

    @property
    def publishers(self) -> tuple[str, ...]: ...

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        """The receivers of one notification of ``publisher``."""
        ...

    def at(self, run: int) -> Population:
        """The population as it stands before notification ``run`` (what the
        controller knows; default: the population itself)."""
        ...

    def draw(self, publisher: str, run: int, rng: np.random.Generator
             ) -> tuple[Event | None, frozenset[str]]:
        """Notification ``run``'s event and its receivers (default: no event,
        :meth:`receivers`)."""
        ...

    def stable(self, publisher: str, run: int) -> frozenset[str] | None:
        """The publisher's stable subscribers at notification ``run``, which
        runners pass to strategies as ``Knowledge.stable`` (hybrid trees,
        seed 000 §4.3); default None (not known)."""
        ...

    def controller_view(self) -> object:
        """What a controller installs from, read by strategies through
        ``Knowledge.population`` (a
        :class:`strategies.virtual_tree.client_view.ControllerView` for
        clustered clients); default: the population itself."""
        ...

    def draw_runs(self, runs: RunStreams, publisher: str | None = None) -> DrawnRuns | None:
        """Every run's draws at once, or None (default) when the population does not
        batch them.

        Run ``r`` draws from ``runs``' generator ``r`` what the per-run draw
        of :func:`experiments.cells.workload.draw_notifications` draws from
        it: the publisher ``publishers[rng.integers(len(publishers))]`` (sent
        by ``publisher`` instead when given), then :meth:`draw`. Only
        populations whose content stays put (``at`` is the population itself,
        no events, no stable subscribers) offer it.
        """
        ...


class PopulationBase:
    """Base of every population: do-nothing defaults of :class:`Population`'s
    optional features (subclasses define ``publishers`` and ``receivers``)."""

    __slots__ = ()

    draws_events: bool = False
    version: int | None = None

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        raise NotImplementedError

    def at(self, run: int) -> Population:
        return cast("Population", self)  # every subclass is a Population

    def draw(self, publisher: str, run: int, rng: np.random.Generator
             ) -> tuple[Event | None, frozenset[str]]:
        return None, self.receivers(publisher, rng)

    def stable(self, publisher: str, run: int) -> frozenset[str] | None:
        return None

    def controller_view(self) -> object:
        return self

    def draw_runs(self, runs: RunStreams, publisher: str | None = None) -> DrawnRuns | None:
        return None


@dataclass(frozen=True, slots=True)
class DrawnRuns:
    """The draws of a cell's runs, as host indices (:meth:`Population.draw_runs`).

    Attributes
    ----------
    hosts : tuple of str
        The names the indices refer to (the topology's hosts, in order).
    publishers : ndarray of int64
        The sending host of each run.
    offsets : ndarray of int64
        Run ``r``'s receivers are ``receivers[offsets[r]:offsets[r + 1]]``.
    receivers : ndarray of int64
        The receivers of every run, run after run, in draw order.
    """

    hosts: tuple[str, ...]
    publishers: np.ndarray
    offsets: np.ndarray
    receivers: np.ndarray

    def __len__(self) -> int:
        return len(self.publishers)

    def publisher(self, run: int) -> str:
        return self.hosts[int(self.publishers[run])]

    def receiver_set(self, run: int) -> frozenset[str]:
        """Run ``run``'s receivers by name."""
        hosts = self.hosts
        return frozenset([hosts[i] for i in
                          self.receivers[self.offsets[run]:self.offsets[run + 1]].tolist()])


@dataclass(frozen=True, slots=True)
class StepAxis:
    """A receiver model whose notifications are the steps of one sweep.

    Notification ``run`` of a cell is step ``run`` (e.g. ``run x step`` % of
    the subscribers replaced), not a repetition: reports aggregate such rows
    per ``run`` instead of over the cell, plot them against
    ``x(params, run)`` and add running sums over ``run``.

    Parameters
    ----------
    label : str
        What the x value is, e.g. ``"subscribers replaced"``.
    unit : str
        Its unit, e.g. ``"%"``.
    x : callable
        ``(model params, run) -> x value``.
    """

    label: str
    unit: str
    x: Callable[[Any, int], float]


@dataclass(frozen=True, slots=True)
class ReceiverModelKind:
    name: str
    params: type
    build: Callable[[Any, Topology, np.random.Generator], Population]
    summary: str
    steps: StepAxis | None = None
    #: the builder takes a keyword ``caches`` (:class:`sim.dataplanes.caches.Caches`)
    takes_caches: bool = False


RECEIVER_MODELS: Registry[ReceiverModelKind] = Registry("receiver model")


def register_receiver_model(name: str, params: type, summary: str, *,
                            steps: StepAxis | None = None, takes_caches: bool = False
                            ) -> Callable:
    def deco(fn: Callable[[Any, Topology, np.random.Generator], Population]) -> Callable:
        RECEIVER_MODELS.add(name, ReceiverModelKind(name, params, fn, summary, steps,
                                                    takes_caches))
        return fn
    return deco


@dataclass(frozen=True)
class ReceiverModel:
    """A parsed, validated receiver-model spec."""

    spec: str
    kind: ReceiverModelKind
    params: Any

    def population(self, topology: Topology, rng: np.random.Generator,
                   caches: Caches | None = None) -> Population:
        """The population of one cell.

        ``caches`` (:class:`sim.dataplanes.caches.Caches`) lets models that
        memoise (``clustered``: its plans) reuse work across the cells that
        share it; None: nothing is reused (same result).
        """
        if self.kind.takes_caches:
            return self.kind.build(self.params, topology, rng, caches=caches)  # type: ignore[call-arg]
        return self.kind.build(self.params, topology, rng)


def load_builtin_receiver_models() -> None:
    """Import the modules that register the other built-in receiver models."""
    from sim.workloads import clustered, content, replacement, tenants  # noqa: F401


def receiver_model(spec: str) -> ReceiverModel:
    """Parse and validate a receiver-model spec string."""
    load_builtin_receiver_models()
    name, raw = parse_spec(spec)
    kind = RECEIVER_MODELS.get(name)
    return ReceiverModel(spec, kind, make_params(kind.params, raw, f"receiver model {spec!r}"))


def step_model_names() -> frozenset[str]:
    """Names of the receiver models that declare a :class:`StepAxis`."""
    load_builtin_receiver_models()
    return frozenset(n for n in RECEIVER_MODELS.names() if RECEIVER_MODELS.get(n).steps)


def step_x(spec: str, run: int) -> float | None:
    """The step-axis value of notification ``run`` under ``spec`` (None: no step axis)."""
    model = receiver_model(spec)
    return None if model.kind.steps is None else model.kind.steps.x(model.params, run)


def _sample(hosts: list[str], k: int, rng: np.random.Generator) -> frozenset[str]:
    if not k:
        return frozenset()
    return frozenset([hosts[i] for i in rng.choice(len(hosts), size=k, replace=False).tolist()])


# -- uniform ----------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class UniformParams:
    percent: float = 30.0

    def __post_init__(self) -> None:
        check(0 <= self.percent <= 100, f"percent must be in [0, 100], got {self.percent}")


@dataclass(frozen=True)
class UniformPopulation(PopulationBase):
    topology: Topology
    percent: float

    @property
    def publishers(self) -> tuple[str, ...]:
        return self.topology.hosts

    @cached_property
    def _others(self) -> dict[str, tuple[list[str], int]]:
        """Publisher -> the other hosts (topology order) and how many receive; filled on use."""
        return {}

    def _known(self, publisher: str) -> tuple[list[str], int]:
        known = self._others.get(publisher)
        if known is None:
            hosts = self.topology.hosts
            others = [h for h in hosts if h != publisher]
            known = self._others[publisher] = (
                others, min(round(self.percent / 100 * len(hosts)), len(others)))
        return known

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        return _sample(*self._known(publisher), rng)

    def draw_runs(self, runs: RunStreams, publisher: str | None = None) -> DrawnRuns | None:
        """Every run's publisher and receivers (see :meth:`Population.draw_runs`):
        ``rng.choice(len(hosts) - 1, k, replace=False)`` indexes the hosts
        other than the sender. Compiled where :mod:`sim.dataplanes.pcg64_draws`
        agrees with numpy, through numpy's generators otherwise (same draws)."""
        hosts = self.topology.hosts
        if not hosts or (publisher is not None and publisher not in hosts):
            return None  # the per-run draws (and their errors) apply
        n, count = len(hosts), runs.count
        k = self._known(hosts[0])[1]  # the same for every sender
        drawn = np.empty(count, np.int64)
        picks = np.empty((count, k), np.int64)
        if pcg64_draws.kernel_agrees() and pcg64_draws.publisher_and_sample is not None:
            pcg64_draws.publisher_and_sample(runs.words(), n, n - 1, k, drawn, picks)
        else:
            for run, rng in enumerate(runs.generators()):
                drawn[run] = rng.integers(n)
                if k:
                    picks[run] = rng.choice(n - 1, size=k, replace=False)
        sender = drawn if publisher is None else np.full(count, hosts.index(publisher), np.int64)
        picks += picks >= sender[:, None]  # skip the sender: indices into every host
        return DrawnRuns(hosts, sender, np.arange(0, count * k + 1, k, dtype=np.int64) if k
                         else np.zeros(count + 1, np.int64), picks.ravel())


@register_receiver_model("uniform", UniformParams,
                         "percent% of all hosts, uniformly, publisher excluded (seed 000 ch. 3-4)")
def _uniform(params: UniformParams, topology: Topology, rng: np.random.Generator) -> Population:
    return UniformPopulation(topology, params.percent)


# -- frequency ----------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class FrequencyParams:
    subscribers: float = 30.0
    freq_min: float = 1.0
    freq_max: float = 100.0

    def __post_init__(self) -> None:
        check(0 <= self.subscribers <= 100,
              f"subscribers must be a percentage in [0, 100], got {self.subscribers}")
        check(0 <= self.freq_min <= self.freq_max <= 100,
              "freq_min and freq_max must satisfy 0 <= freq_min <= freq_max <= 100")


@dataclass(frozen=True)
class FrequencyPopulation(PopulationBase):
    publishers: tuple[str, ...]
    subscribers: dict[str, tuple[str, ...]]
    frequency: dict[str, float]

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        subs = self.subscribers[publisher]
        draws = rng.random(len(subs))
        return frozenset(h for h, u in zip(subs, draws, strict=True) if u < self.frequency[h])


@register_receiver_model("frequency", FrequencyParams,
                         "per-publisher subscribers with a fixed per-host notification "
                         "frequency U(1%,100%) (seed 000 ch. 5)")
def _frequency(params: FrequencyParams, topology: Topology, rng: np.random.Generator
               ) -> Population:
    hosts = list(topology.hosts)
    freq = rng.uniform(params.freq_min / 100, params.freq_max / 100, size=len(hosts))
    subscribers = {}
    for pub in hosts:
        others = [h for h in hosts if h != pub]
        k = min(round(params.subscribers / 100 * len(hosts)), len(others))
        subscribers[pub] = tuple(sorted(_sample(others, k, rng), key=topology.host_id))
    frequency = dict(zip(hosts, freq.tolist(), strict=True))
    return FrequencyPopulation(tuple(hosts), subscribers, frequency)
