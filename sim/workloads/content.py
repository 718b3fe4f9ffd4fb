"""Receiver model ``content``: receivers are the hosts whose subscriptions match the event.

Spec string (all :class:`~sim.dataplanes.content_space.ContentParams` keys plus the ones
below)::

    content:subs=100,publishers=1,dims=2,bits=16,dist=uniform,width=0.2,
            churn=0,churn_mode=replace

The population fixes the publishers (``publishers`` distinct hosts), one
advertisement per publisher, the subscriber hosts (``subscribers`` hosts, 0 =
every non-publisher host) and ``subs`` subscriptions placed on them
uniformly at random (seed 001 §6.1). Each notification draws one event of
the publisher (inside its advertisement) and the receivers are the hosts
with a matching subscription (the publisher itself excluded).

Churn: after notification ``run`` the subscription set has seen
``run x churn`` changes: ``replace`` removes a random subscription and adds a
new one per change (subscription churn), ``add`` only adds (the dynamic run
of seed 001 Fig. 6.7). :meth:`ContentPopulation.at` returns the
:class:`ContentView` at a run; its ``version`` changes whenever the
subscriptions do, so runners reinstall (or update) the state.

What strategies read (``Knowledge.population`` is a :class:`ContentView`):
``space``, ``advertisements``, ``subscriptions``, ``version``,
``event_window`` (a sample of the publisher's recent events, the history of
seed 001 Alg. 6) and, for receiver-set strategies such as virtual trees,
``publishers``, ``subscribers`` (publisher -> hosts with an overlapping
subscription) and ``frequency`` (host -> estimated probability that an event
matches one of its subscriptions).

References
----------
Seed 001 §6.1 (placement, workloads), Fig. 6.7 (subscriptions added at a
fixed rate); seed 004 §5 (6-7 subscribers, 20-100 subscriptions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from sim.dataplanes.content_space import (
    AttributeSpace,
    Box,
    ContentGenerator,
    ContentParams,
    Event,
    Subscription,
    SubscriptionIndex,
)
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import PopulationBase, register_receiver_model
from topologies.model import Topology
from topologies.registry import check


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentModelParams(ContentParams):
    """Parameters of ``content:...`` (plus those of :class:`ContentParams`).

    Parameters
    ----------
    subs : int
        Subscriptions at the start.
    publishers : int
        Publishing hosts (distinct, uniformly drawn).
    subscribers : int
        Subscriber hosts (0 = every host that is not a publisher).
    churn : int
        Subscription changes per notification.
    churn_mode : str
        ``replace`` (unsubscribe + subscribe) or ``add`` (subscribe only).
    freq_samples : int
        Events used to estimate each host's match frequency.
    """

    subs: int = 100
    publishers: int = 1
    subscribers: int = 0
    churn: int = 0
    churn_mode: Literal["replace", "add"] = "replace"
    freq_samples: int = 200

    def __post_init__(self) -> None:
        ContentParams.__post_init__(self)
        check(self.subs >= 0, "subs must be >= 0")
        check(self.publishers >= 1, "publishers must be >= 1")
        check(self.subscribers >= 0, "subscribers must be >= 0")
        check(self.churn >= 0, "churn must be >= 0")
        check(self.freq_samples >= 1, "freq_samples must be >= 1")


class ContentView(PopulationBase):
    """The content workload as it stands at one moment (what a controller knows).

    A :class:`~sim.workloads.receivers.Population` whose events decide the
    receivers (``draws_events``); ``version`` counts the subscription changes
    it has seen, ``at`` returns the view itself (a view does not change).
    """

    draws_events = True
    version: int

    def __init__(self, *, generator: ContentGenerator, publishers: tuple[str, ...],
                 advertisements: Mapping[str, Box], subscriptions: tuple[Subscription, ...],
                 version: int, freq_seed: int, freq_samples: int) -> None:
        self.generator = generator
        self.publishers = publishers
        self.advertisements = dict(advertisements)
        self.subscriptions = subscriptions
        self.version = version
        self._freq_seed = freq_seed
        self._freq_samples = freq_samples

    @property
    def space(self) -> AttributeSpace:
        return self.generator.space

    @cached_property
    def index(self) -> SubscriptionIndex:
        return SubscriptionIndex(self.subscriptions, self.space.d)

    def event(self, publisher: str, run: int, rng: np.random.Generator) -> Event:
        return self.generator.event(rng, self.advertisements[publisher], run)

    def receivers_of(self, publisher: str, event: Event) -> frozenset[str]:
        """Hosts with a subscription matching ``event`` (the publisher excluded)."""
        return self.index.hosts_matching(event) - {publisher}

    def draw(self, publisher: str, run: int, rng: np.random.Generator
             ) -> tuple[Event, frozenset[str]]:
        """One notification's event and its receivers."""
        event = self.event(publisher, run, rng)
        return event, self.receivers_of(publisher, event)

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        """Receivers of a fresh event (the :class:`~sim.workloads.receivers.Population`
        protocol)."""
        return self.draw(publisher, self.version, rng)[1]

    def event_window(self, publisher: str, count: int, rng: np.random.Generator,
                     t: int | None = None) -> list[Event]:
        """``count`` events of ``publisher`` as published around event time ``t``."""
        return self.generator.events(rng, self.advertisements[publisher], count,
                                     self.version if t is None else t)

    @cached_property
    def subscriptions_by_host(self) -> dict[str, tuple[Subscription, ...]]:
        out: dict[str, list[Subscription]] = {}
        for s in self.subscriptions:
            out.setdefault(s.host, []).append(s)
        return {h: tuple(v) for h, v in out.items()}

    @cached_property
    def subscribers(self) -> dict[str, tuple[str, ...]]:
        """Publisher -> hosts with a subscription overlapping its advertisement."""
        out = {}
        for p in self.publishers:
            adv = self.advertisements[p]
            hosts = {s.host for s in self.subscriptions if s.host != p and s.box.overlaps(adv)}
            out[p] = tuple(sorted(hosts, key=lambda h: (len(h), h)))
        return out

    @cached_property
    def frequency(self) -> dict[str, float]:
        """Host -> fraction of sampled events matching one of its subscriptions."""
        rng = child_rng(self._freq_seed, "frequency", self.version)
        counts: dict[str, int] = {}
        n = self._freq_samples
        for i in range(n):
            pub = self.publishers[i % len(self.publishers)]
            for h in self.index.hosts_matching(self.event(pub, self.version, rng)):
                counts[h] = counts.get(h, 0) + 1
        return {h: counts.get(h, 0) / n for h in self.subscriptions_by_host}


class ContentPopulation(PopulationBase):
    """Publishers, advertisements and the evolving subscription set of one cell.

    A :class:`~sim.workloads.receivers.Population` whose events decide the
    receivers (``draws_events``); its ``version`` stays None, the
    :class:`ContentView` of each run (:meth:`at`) carries the version.
    """

    draws_events = True

    def __init__(self, params: ContentModelParams, topology: Topology,
                 rng: np.random.Generator) -> None:
        self.params = params
        self.root = int(rng.integers(1 << 62))
        self.generator = ContentGenerator(params, child_rng(self.root, "generator"))
        hosts = list(topology.hosts)
        check(len(hosts) > params.publishers,
              f"content: {params.publishers} publishers need more than {len(hosts)} hosts")
        place = child_rng(self.root, "placement")
        pubs = sorted((hosts[int(i)] for i in place.choice(len(hosts), params.publishers,
                                                             replace=False)),
                      key=topology.host_id)
        self.publishers = tuple(pubs)
        others = [h for h in hosts if h not in set(pubs)]
        if params.subscribers:
            k = min(params.subscribers, len(others))
            others = sorted((others[int(i)] for i in place.choice(len(others), k, replace=False)),
                            key=topology.host_id)
        self.subscriber_hosts = tuple(others)
        adv_rng = child_rng(self.root, "advertisements")
        self.advertisements = {p: self.generator.advertisement_box(adv_rng) for p in pubs}
        sub_rng = child_rng(self.root, "subscriptions")
        self._initial = tuple(self._new_subscription(i, sub_rng) for i in range(params.subs))
        self._cache: tuple[int, list[Subscription], int] = (0, list(self._initial), params.subs)
        self._views: dict[int, ContentView] = {}

    def _new_subscription(self, sub_id: int, rng: np.random.Generator) -> Subscription:
        k = int(rng.integers(len(self.subscriber_hosts)))
        return Subscription(sub_id, self.subscriber_hosts[k],
                            self.generator.subscription_box(rng, host_hotspot=k))

    def _subscriptions_after(self, changes: int) -> tuple[Subscription, ...]:
        done, subs, next_id = self._cache
        if changes < done:
            done, subs, next_id = 0, list(self._initial), self.params.subs
        subs = list(subs)
        for i in range(done, changes):
            rng = child_rng(self.root, "churn", i)
            if self.params.churn_mode == "replace" and subs:
                subs.pop(int(rng.integers(len(subs))))
            subs.append(self._new_subscription(next_id, rng))
            next_id += 1
        self._cache = (changes, subs, next_id)
        return tuple(subs)

    def at(self, run: int) -> ContentView:
        """The workload as it stands before notification ``run``."""
        version = run if self.params.churn else 0
        view = self._views.get(version)
        if view is None:
            subs = self._subscriptions_after(version * self.params.churn)
            view = ContentView(generator=self.generator, publishers=self.publishers,
                               advertisements=self.advertisements, subscriptions=subs,
                               version=version, freq_seed=self.root,
                               freq_samples=self.params.freq_samples)
            self._views = {version: view}  # runs are sequential: keep the latest only
        return view

    def draw(self, publisher: str, run: int, rng: np.random.Generator
             ) -> tuple[Event, frozenset[str]]:
        return self.at(run).draw(publisher, run, rng)

    def receivers(self, publisher: str, rng: np.random.Generator) -> frozenset[str]:
        """Receivers of a fresh event (the :class:`~sim.workloads.receivers.Population`
        protocol)."""
        return self.at(0).draw(publisher, 0, rng)[1]


@register_receiver_model("content", ContentModelParams,
                         "content-based: events matched against subscription boxes "
                         "(seeds 001-004)")
def _content(params: ContentModelParams, topology: Topology, rng: np.random.Generator
             ) -> ContentPopulation:
    return ContentPopulation(params, topology, rng)
