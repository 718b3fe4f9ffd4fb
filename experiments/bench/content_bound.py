"""The content filters in the bound item of ``stackcast bench`` (``bench_bound``).

The content filters (:data:`~experiments.bench.bound.CONTENT_BOUND_STRATEGIES`)
decide in the switches which hosts get an event, so their lower bound is
the same networkx computation as the other strategies' (a cached BFS
predecessor map per publisher root plus the union of the paths) to the
hosts whose subscriptions match each event, on content workloads
(:data:`~experiments.bench.bound.CONTENT_BOUND_WORKLOADS`). The engine is
the strategy's fast path (:mod:`sim.dataplanes.content_fast_path`) given
every notification with its event and the one installed state (no churn),
timed alternately with the bound in the same run.

References
----------
Issue 16 item 1 (every strategy within 3x of the lower bound); seeds
001-004 (the content filters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from experiments.bench.bound import fast_engine, lower_bound, paired_bound


def content_workload(notifications: int, topology: str, spec: str, seed: int = 1
                     ) -> tuple[Any, Any, list[Any]]:
    """The topology, the content view (no churn) and ``notifications`` notifications with
    their events and matched receivers, for the bound item's content filters."""
    from sim.dataplanes.packet import Notification
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    from topologies.specs import load_topology

    topo = load_topology(topology)
    view = receiver_model(spec.format(hosts=len(topo.hosts))).population(
        topo, child_rng(seed, "population")).at(0)
    notes = []
    for i in range(notifications):
        rng = child_rng(seed, "bench-content", i)
        pub = view.publishers[int(rng.integers(len(view.publishers)))]
        event, receivers = view.draw(pub, 0, rng)
        notes.append((Notification(i, pub, event=event), receivers))
    return topo, view, notes


def bound_content(topology: str, reps: int, notifications: int, payload_bytes: int,
                   strategies: Iterable[str], workloads: dict[str, str],
                   tick: Callable[[], None]) -> dict[str, Any]:
    """The bound item's content filters on one topology (see :data:`CONTENT_BOUND_WORKLOADS`)."""
    from sim.dataplanes.delivery import DelayModel
    from strategies.base import Knowledge, make_strategy

    res: dict[str, Any] = {}
    for kind, spec in workloads.items():
        topo, view, notes = content_workload(notifications, topology, spec)
        cases = [(n.publisher, r) for n, r in notes]
        pubs, sets = [p for p, _ in cases], [r for _, r in cases]
        share = 100 * sum(map(len, sets)) / len(sets) / len(topo.hosts)
        bound = lower_bound(topo, cases)
        for name in strategies:
            strategy = make_strategy(name)
            fast = strategy.fast_path(topo, DelayModel())
            label = f"{name} ({kind})"
            if fast is None:
                res[label] = {"skipped": "no fast path on this topology"}
                continue
            state = strategy.install(topo, Knowledge(population=view, seed=1))
            kw = {"states": [state] * len(notes), "notifications": [n for n, _ in notes]}

            engine, declined = fast_engine(fast, pubs, sets, payload_bytes, kw)
            if declined:
                res[label] = {"skipped": f"the fast path declines {declined} notifications"}
                continue
            res[label] = {**paired_bound(bound, engine, reps, fast.impl),
                          "receivers_pct": share, "workload": spec}
            tick()
    return res
