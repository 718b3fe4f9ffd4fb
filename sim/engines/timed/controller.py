"""The controller of the timed engine: churn, recomputation, timed P4Runtime writes.

A :class:`Controller` owns the ground truth (each publisher's subscribers)
and the state it last computed (``target``). Churn is subscribe,
unsubscribe and client migration, one Poisson stream
(:class:`~sim.engines.timed.config.Churn`).
Every change updates the truth at once and triggers an update, unless one
is running (then the changes wait and the next update serves them all):

1. recompute: ``strategy.update(topology, target, knowledge)`` after
   ``compute_s``, where the knowledge is every publisher's current
   subscriber set (strategies whose ``scope`` is ``topology`` or
   ``publisher`` keep their state: the active publishers do not change, so
   only the inform step remains);
2. check capacity (:mod:`sim.engines.timed.capacity`); an update that does not fit goes to
   the strategy's ``on_overflow`` hook, else to the ``overflow`` policy;
3. write :func:`sim.dataplanes.control_state.diff` (old target -> new) to the switches in the
   strategy's update order (``strategy.update_order`` if it sets one, else
   the config's): *make-before-break* = inserts and modifies, then inform
   the publishers, then deletes (seed 000 §5.2 for virtual trees: install
   new, inform publishers, delete old); *simultaneous* = everything at once.

Writes: per switch, requests of up to ``write_batch`` writes, one after
another, each taking ``write_rtt_s + write_latency_s x writes``; the switches
are written in parallel. A request's writes take effect together when it
completes (the switch's tables change at that instant). Informing takes
``inform_s``; from then on each publisher encodes with the new state and the
receiver set it was computed for, never before.

Stale state: a notification is *exposed* when its publisher's view differed
from the truth when it was published, or a write landed while any of its
frames was in flight. For exposed notifications :meth:`Controller.misdelivery`
compares what happened with the static engine on freshly installed state for
the true receivers: receivers that state reaches but the run missed (stale
false negatives), hosts reached that it would not reach (stale false
positives), and extra copies.

References
----------
Seed 000 §4.4.3 (rule updates under churn), §5.2 (virtual-tree update
protocol); digest seeds 001-004 Part C (churn as SimPy processes, writes per
change, time from subscribe to rule active).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sim.dataplanes.control_state import (
    ControlState,
    MulticastGroup,
    SwitchConfig,
    TableEntry,
    Write,
    diff,
)
from sim.dataplanes.packet import Notification
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.engines.timed.capacity import OccupancyTracker, overflow_fallback, violations
from sim.engines.timed.config import Capacity, Churn
from sim.engines.timed.engine import NoteRecord, TimedEngine
from strategies.base import Knowledge, Strategy
from topologies.model import Topology


@dataclass(slots=True)
class Change:
    """One subscription change; ``t_served`` is when the update serving it finished."""

    cid: int
    t: float
    kind: str
    host: str
    publishers: tuple[str, ...]
    target: str | None = None
    t_served: float | None = None
    rejected: bool = False

    @property
    def convergence_s(self) -> float | None:
        return None if self.t_served is None else self.t_served - self.t


@dataclass(slots=True)
class Update:
    """One recomputation and its writes."""

    t_start: float
    changes: tuple[int, ...]
    t_end: float = 0.0
    inserts: int = 0
    modifies: int = 0
    deletes: int = 0
    rejected: bool = False
    overflow: bool = False

    @property
    def writes(self) -> int:
        return self.inserts + self.modifies + self.deletes


def apply_writes(config: SwitchConfig, writes: Iterable[Write]) -> SwitchConfig:
    """``config`` after ``writes`` (INSERT/MODIFY replace by key, DELETE removes).

    Entries keep their position; new ones are appended to their table.
    """
    tables: dict[str, dict[Any, Any]] = {t: {e.key: e for e in es}
                                         for t, es in config.tables.items()}
    groups: dict[Any, Any] = dict(config.multicast_groups)
    sessions: dict[Any, Any] = dict(config.clone_sessions)
    for w in writes:
        ent = w.entity
        store: dict[Any, Any]
        ident: Any
        if isinstance(ent, TableEntry):
            store, ident = tables.setdefault(ent.table, {}), ent.key
        elif isinstance(ent, MulticastGroup):
            store, ident = groups, ent.group_id
        else:
            store, ident = sessions, ent.session_id
        if w.type == "DELETE":
            store.pop(ident, None)
        else:
            store[ident] = ent
    return SwitchConfig(tables={t: tuple(es.values()) for t, es in tables.items() if es},
                        multicast_groups=groups, clone_sessions=sessions)


def same_config(a: SwitchConfig, b: SwitchConfig) -> bool:
    """Whether two configurations hold the same entries, groups and sessions."""
    if a is b:
        return True
    ta = {e.key: e for es in a.tables.values() for e in es}
    tb = {e.key: e for es in b.tables.values() for e in es}
    return (ta == tb and dict(a.multicast_groups) == dict(b.multicast_groups)
            and dict(a.clone_sessions) == dict(b.clone_sessions))


@dataclass
class Misdelivery:
    """Stale-state accounting of one exposed notification."""

    stale_false_negatives: int = 0
    stale_false_positives: int = 0
    extra_duplicates: int = 0

    @property
    def misdeliveries(self) -> int:
        return self.stale_false_positives + self.extra_duplicates


@dataclass
class Controller:
    """Churn processes and timed updates on a :class:`~sim.engines.timed.engine.TimedEngine`.

    Parameters
    ----------
    engine : TimedEngine
        Its ``state`` is the initial target (already installed).
    subscriptions : mapping
        Active publisher -> its initial subscribers (the initial truth; the
        engine's state must have been installed for exactly these sets).
    churn, capacity : Churn, Capacity
    seed : int
        Root of the churn generator (``child_rng(seed, "churn")``).
    knowledge : Knowledge
        What every recomputation knows besides the receiver sets (e.g. the
        workload's population); its ``receiver_sets`` are replaced.
    """

    engine: TimedEngine
    subscriptions: Mapping[str, frozenset[str]]
    churn: Churn = field(default_factory=Churn)
    capacity: Capacity = field(default_factory=Capacity)
    seed: int = 0
    knowledge: Knowledge = field(default_factory=Knowledge)
    changes: list[Change] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    write_times: list[float] = field(default_factory=list)
    initial_violations: int = 0

    def __post_init__(self) -> None:
        eng = self.engine
        self.topology: Topology = eng.topology
        self.strategy: Strategy = eng.strategy
        self.target: ControlState = eng.state
        self.publishers = tuple(sorted(self.subscriptions, key=self.topology.host_id))
        for pub in self.publishers:
            eng.set_truth(pub, frozenset(self.subscriptions[pub]))
            eng.inform(pub, self.target, eng.truth[pub])
        self.occupancy = OccupancyTracker(eng.installed(), eng.env.now)
        self.initial_violations = len(violations(self.target, self.capacity))
        self._pending: list[Change] = []
        self._unserved: list[Change] = []
        self._busy = False
        self._refs: dict[tuple[Any, ...], Any] = {}

    # -- churn ------------------------------------------------------------------------
    def start(self, until: float) -> None:
        """Start the churn process; no change happens after ``until``."""
        if self.churn.active and self.publishers:
            self.engine.env.process(self._churn(until))

    def subscriptions_now(self) -> int:
        return sum(len(self.engine.truth[p]) for p in self.publishers)

    def _churn(self, until: float) -> Any:
        """Process: subscription changes as one Poisson stream whose rate is the sum of
        the kinds' rates (:meth:`Churn.rates`, re-evaluated after every change, which is
        exact because the rates only change at changes); stops at ``until``."""
        env, churn = self.engine.env, self.churn
        rng = child_rng(self.seed, "churn")
        initial = self.subscriptions_now()
        while True:
            sub, unsub, mig = churn.rates(self.subscriptions_now(), initial)
            total = sub + unsub + mig
            if total <= 0:
                return
            yield env.timeout(rng.exponential(1.0 / total))
            if env.now > until:
                return
            u = rng.random() * total
            kind = "subscribe" if u < sub else "unsubscribe" if u < sub + unsub else "migrate"
            self.change(kind, rng)

    def change(self, kind: str, rng: Any) -> Change | None:
        """Draw one change of ``kind`` with ``rng`` and :meth:`apply` it (None: impossible)."""
        truth = self.engine.truth
        hosts = self.topology.hosts
        if kind == "subscribe":
            free = [(p, h) for p in self.publishers for h in hosts
                    if h != p and h not in truth[p]]
            if not free:
                return None
            pub, host = free[int(rng.integers(len(free)))]
            return self.apply(kind, host, (pub,))
        if kind == "unsubscribe":
            pairs = [(p, h) for p in self.publishers
                     for h in sorted(truth[p], key=self.topology.host_id)]
            if not pairs:
                return None
            pub, host = pairs[int(rng.integers(len(pairs)))]
            return self.apply(kind, host, (pub,))
        if kind == "migrate":
            subscribed = sorted({h for p in self.publishers for h in truth[p]},
                                key=self.topology.host_id)
            idle = [h for h in hosts if h not in self.publishers
                    and not any(h in truth[p] for p in self.publishers)]
            if not subscribed or not idle:
                return None
            host = subscribed[int(rng.integers(len(subscribed)))]
            target = idle[int(rng.integers(len(idle)))]
            return self.apply(kind, host, tuple(p for p in self.publishers if host in truth[p]),
                              target)
        raise ValueError(f"unknown change kind {kind!r}")

    def apply(self, kind: str, host: str, publishers: tuple[str, ...],
              target: str | None = None) -> Change:
        """Change the truth now and schedule the update that serves it.

        ``subscribe``/``unsubscribe``: ``host`` joins/leaves ``publishers``;
        ``migrate``: ``host``'s subscriptions to ``publishers`` move to ``target``.
        """
        eng = self.engine
        truth = eng.truth
        for pub in publishers:
            if pub not in truth:
                raise ValueError(f"{pub} is not an active publisher")
            if kind == "subscribe":
                eng.set_truth(pub, truth[pub] | {host})
            elif kind == "unsubscribe":
                eng.set_truth(pub, truth[pub] - {host})
            elif kind == "migrate" and target is not None:
                eng.set_truth(pub, (truth[pub] - {host}) | {target})
            else:
                raise ValueError(f"bad change {kind!r} (migrate needs a target)")
        change = Change(len(self.changes), eng.env.now, kind, host, publishers, target)
        self.changes.append(change)
        eng.recorder.event(eng.env.now, "change", kind, host, publishers)
        self._pending.append(change)
        if not self._busy:
            self._busy = True
            eng.env.process(self._update())
        return change

    # -- updates ------------------------------------------------------------------------
    def _update(self) -> Any:
        """Process: serve pending changes, one update at a time (see the module docstring)."""
        eng, cfg = self.engine, self.engine.config
        env = eng.env
        while self._pending:
            changes, self._pending = self._pending, []
            upd = Update(t_start=env.now, changes=tuple(c.cid for c in changes))
            self.updates.append(upd)
            if cfg.compute_s > 0:
                yield env.timeout(cfg.compute_s)
            snapshot = {p: eng.truth[p] for p in self.publishers}
            knowledge = dataclasses.replace(
                self.knowledge, receiver_sets={p: (r,) for p, r in snapshot.items()})
            if self.strategy.scope == "receivers":
                new = self.strategy.update(self.topology, self.target, knowledge)
            else:  # state independent of receiver sets (publishers are fixed): no writes
                new = self.target
            found = violations(new, self.capacity)
            if found:
                fallback = overflow_fallback(self.strategy, self.topology, self.target, new,
                                             found)
                if fallback is not None and not violations(fallback, self.capacity):
                    new = fallback
                elif cfg.overflow == "reject":
                    upd.rejected = True
                    upd.t_end = env.now
                    for c in changes:
                        c.rejected = True
                    self._unserved.extend(changes)
                    continue
                else:
                    upd.overflow = True
            writes = diff(self.target, new)
            for w in writes:
                if w.type == "INSERT":
                    upd.inserts += 1
                elif w.type == "MODIFY":
                    upd.modifies += 1
                else:
                    upd.deletes += 1
            order = getattr(self.strategy, "update_order", cfg.update_order)
            if order == "make-before-break":
                yield from self._write([w for w in writes if w.type != "DELETE"])
                yield from self._inform(new, snapshot)
                yield from self._write([w for w in writes if w.type == "DELETE"])
            else:
                procs = [env.process(self._write(writes)), env.process(self._inform(new, snapshot))]
                yield env.all_of(procs)
            for sw in {w.switch for w in writes}:  # the exact target object, same content
                if same_config(eng.switches[sw].config, new.config(sw)):
                    eng.set_config(sw, new.config(sw))
            self.target = new
            upd.t_end = env.now
            for c in (*self._unserved, *changes):  # earlier rejected changes are served too
                c.t_served = env.now
            self._unserved = []
        self._busy = False

    def _inform(self, new: ControlState, snapshot: Mapping[str, frozenset[str]]) -> Any:
        """Process: after ``inform_s`` every publisher encodes with ``new``."""
        env = self.engine.env
        if self.engine.config.inform_s > 0:
            yield env.timeout(self.engine.config.inform_s)
        for pub in self.publishers:
            self.engine.inform(pub, new, snapshot[pub])

    def _write(self, writes: list[Write]) -> Any:
        """Process: every switch's writes in parallel; returns when all are applied."""
        env = self.engine.env
        per_switch: dict[str, list[Write]] = {}
        for w in writes:
            per_switch.setdefault(w.switch, []).append(w)
        procs = [env.process(self._switch_writer(sw, ws)) for sw, ws in sorted(per_switch.items())]
        if procs:
            yield env.all_of(procs)

    def _switch_writer(self, switch: str, writes: list[Write]) -> Any:
        """Process: one switch's writes as requests of ``write_batch``, one after another;
        each takes ``write_rtt_s + write_latency_s x size`` and then takes effect."""
        eng = self.engine
        cfg, env = eng.config, eng.env
        for i in range(0, len(writes), cfg.write_batch):
            batch = writes[i:i + cfg.write_batch]
            yield env.timeout(cfg.write_rtt_s + cfg.write_latency_s * len(batch))
            node = eng.switches[switch]
            eng.set_config(switch, apply_writes(node.config, batch))
            self.occupancy.update(env.now, switch, node.config)
            self.write_times.append(env.now)
            eng.recorder.event(env.now, "write", switch, tuple(w.type for w in batch))

    # -- accounting --------------------------------------------------------------------
    def exposed(self, note: NoteRecord) -> bool:
        """Published with a stale view, or a write landed while it was in flight."""
        if note.view_stale:
            return True
        i = bisect.bisect_right(self.write_times, note.t_pub)
        return i < len(self.write_times) and self.write_times[i] <= note.t_last

    def misdelivery(self, note: NoteRecord) -> Misdelivery:
        """Stale false negatives/positives and extra copies of an exposed notification
        against the static engine on fresh state for its true receivers."""
        event = note.notification.event
        key = (note.publisher, note.receivers, event)
        ref = self._refs.get(key)
        if ref is None:
            state = self.engine.state if self.strategy.scope != "receivers" else \
                self.strategy.install(self.topology, dataclasses.replace(
                    self.knowledge, receiver_sets={note.publisher: (note.receivers,)}))
            ref = run_notification(self.topology, self.strategy, state,
                                   Notification(0, note.publisher, event=event), note.receivers,
                                   self.engine.payload)
            self._refs[key] = ref
        ref_hosts = set(ref.delivered)
        return Misdelivery(
            stale_false_negatives=sum(1 for h in note.receivers
                                      if h in ref_hosts and h not in note.delivered),
            stale_false_positives=sum(1 for h in note.delivered if h not in ref_hosts),
            extra_duplicates=max(note.duplicates - ref.duplicates, 0))
