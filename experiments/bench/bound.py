"""The bound item of ``stackcast bench``: engine cost per notification against a lower bound.

Engine cost per notification (CPU time of the strategy's fast path over
``notifications`` at once) against the lower bound of issue 16 item 1: a
hand-written networkx computation of the same delivery (a cached BFS
predecessor map per publisher root, built before timing, plus the union of
the root-to-receiver paths), timed alternately in the same run, on
jellyfish:switches=255 and 1000 (degree 4, 30 % receivers, 50 B), for every
strategy of :data:`BOUND_STRATEGIES`, and for the content filters
(:data:`CONTENT_BOUND_STRATEGIES`, :mod:`experiments.bench.content_bound`)
on the content workloads of :data:`CONTENT_BOUND_WORKLOADS`. Prints the
ratio (target: at most 3x). Exactness is the property tests'
(tests/sim/test_fast_paths.py, tests/sim/test_fast_content.py); a fast path
that declines a notification is reported, not timed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from experiments.bench.common import judge, mark, median, rate, static_workload

BOUND_TOPOLOGIES = ("jellyfish:switches=255,degree=4,hosts=1,seed=1",
                    "jellyfish:switches=1000,degree=4,hosts=1,seed=1")
BOUND_STRATEGIES = ("switch-bitmask", "switch-port", "switch-mcgroup", "mixed", "hops",
                    "destinations", "unicast", "broadcast",
                    "multicast", "alm-all", "alm-fork", "alm-mcgroup",
                    # virtual-tree labels: the engine's time includes the strategy's encoder
                    "tree", "hybrid", "source-routed", "vt-broadcast", "vt-random",
                    "vt-random-variant", "vt-cycles", "vt-partitions", "vt-relation",
                    "vt-freq-relation", "vt-clusters", "vt-hybrid")
#: The content filters, on content workloads (their receivers: the hosts whose
#: subscriptions match each event; ``{hosts}``: one subscription per host on average):
#: "dense", Siena-like half-plane filters on one attribute (about 32 % of the hosts
#: receive), and "sparse", equality filters on both attributes over 7 x 7 values (2 %).
CONTENT_BOUND_STRATEGIES = ("pleroma-dz", "range-boxes", "camus-bdd", "kundel-id",
                            "kundel-bitmask")
CONTENT_BOUND_WORKLOADS = {
    "dense": "content:subs={hosts},publishers=2,dims=2,bits=12,dist=siena,preds=1,"
             "ops=0/1/1/0,values=8",
    "sparse": "content:subs={hosts},publishers=2,dims=2,bits=12,dist=siena,preds=2,"
              "ops=1/0/0/0,values=7,zipf=0",
}


def paired_bound(bound: Callable[[], int], engine: Callable[[], int], reps: int,
                 impl: str, walk: Callable[[], int] | None = None) -> dict[str, Any]:
    """The bound item's figures of one engine: CPU us per notification of ``engine`` and
    ``bound`` (and ``walk``, the engine without its encoder, where given) timed
    alternately ``reps`` times, medians and their ratio, judged."""
    bound_us, engine_us, walk_us = [], [], []
    for _ in range(reps):
        bound_us.append(1e6 / rate(bound)[1])
        engine_us.append(1e6 / rate(engine)[1])
        if walk is not None:
            walk_us.append(1e6 / rate(walk)[1])
    ratio = median(engine_us) / median(bound_us)
    out = {"impl": impl, "engine_us": median(engine_us), "bound_us": median(bound_us),
           "ratio": ratio, "target": judge("bound", "ratio", ratio)}
    if walk_us:
        out.update(walk_us=median(walk_us), walk_ratio=median(walk_us) / median(bound_us))
    return out


def fast_engine(fast: Any, pubs: list[str], sets: list[frozenset[str]], payload_bytes: int,
                kw: dict[str, Any]) -> tuple[Callable[[], int], int]:
    """What the bound item times, the fast path's metrics of every notification at once as
    a cell takes them (``metric_batch`` where the fast path has it: the content filters,
    whose cells build their rows from its columns), and how many of them it declines (a
    fast path that declines is not timed)."""
    batch = getattr(fast, "metric_batch", None)

    def engine() -> int:
        if batch is not None:
            batch(pubs, sets, payload_bytes, **kw)
        else:
            fast.metrics(pubs, sets, payload_bytes, **kw)
        return len(pubs)

    return engine, sum(m is None for m in fast.metrics(pubs, sets, payload_bytes, **kw))


def lower_bound(topo: Any, cases: list[tuple[str, frozenset[str]]]) -> Callable[[], int]:
    """The issue's lower bound: networkx BFS predecessors per root (cached, built here)
    and the union of the paths to the receivers, per notification."""
    import networkx as nx

    graph = nx.Graph()
    for node in (*topo.switches, *topo.hosts):
        graph.add_edges_from((node, p.neighbor) for p in topo.ports(node).values())
    preds = {root: dict(nx.bfs_predecessors(graph, root))
             for root in {topo.host_switch(p) for p, _ in cases}}
    roots = [topo.host_switch(p) for p, _ in cases]

    def run() -> int:
        for root, (_, receivers) in zip(roots, cases, strict=True):
            pred = preds[root]
            union = {root}
            for node in receivers:
                while node not in union:
                    union.add(node)
                    node = pred[node]
        return len(cases)

    return run


def _bound_states(topo: Any, strategy: Any, fast: Any,
                  cases: list[tuple[str, frozenset[str]]]) -> dict[str, Any]:
    """``states=`` for a fast path that reads the installed state (``needs_states``): one
    install told every receiver set and a frequency population (30 subscribers)."""
    if not getattr(fast, "needs_states", False):
        return {}
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model
    from strategies.base import Knowledge

    sets: dict[str, list[frozenset[str]]] = {}
    for pub, receivers in cases:
        sets.setdefault(pub, []).append(receivers)
    pop = receiver_model("frequency:subscribers=30").population(topo, child_rng(1, "population"))
    state = strategy.install(topo, Knowledge(population=pop, seed=1, receiver_sets={
        p: tuple(r) for p, r in sets.items()}))
    return {"states": [state] * len(cases)}


def _walk_alone(fast: Any, pubs: list[str], sets: list[frozenset[str]], payload_bytes: int,
                kw: dict[str, Any]) -> Callable[[], int] | None:
    """The fast path's walk on encodings made beforehand, for fast paths that split the two
    (``encodings`` / ``walk_metrics``, the virtual-tree labels); else None."""
    if not hasattr(fast, "walk_metrics"):
        return None
    states = kw["states"]
    encodings = fast.encodings(pubs, sets, payload_bytes, states)

    def run() -> int:
        fast.walk_metrics(pubs, sets, encodings, states)
        return len(pubs)

    return run


def bench_bound(reps: int = 3, notifications: int = 400,
                strategies: Iterable[str] = BOUND_STRATEGIES,
                topologies: Iterable[str] = BOUND_TOPOLOGIES, payload_bytes: int = 50,
                tick: Callable[[], None] = lambda: None,
                content_strategies: Iterable[str] = CONTENT_BOUND_STRATEGIES,
                content_workloads: dict[str, str] | None = None) -> dict[str, Any]:
    """Engine cost per notification against the lower bound (see the module docstring);
    the content filters on :data:`CONTENT_BOUND_WORKLOADS` (or ``content_workloads``)."""
    from sim.dataplanes.delivery import DelayModel
    from strategies.base import make_strategy

    workloads = CONTENT_BOUND_WORKLOADS if content_workloads is None else content_workloads
    content_strategies = tuple(content_strategies)
    out: dict[str, Any] = {"receivers": "uniform:percent=30", "payload_bytes": payload_bytes,
                           "notifications": notifications, "topologies": {},
                           "content_workloads": dict(workloads) if content_strategies else {}}
    for topology in topologies:
        topo, _, cases = static_workload(notifications, topology)
        pubs, sets = [p for p, _ in cases], [r for _, r in cases]
        bound = lower_bound(topo, cases)
        res: dict[str, Any] = {}
        for name in strategies:
            strategy = make_strategy(name)
            fast = strategy.fast_path(topo, DelayModel())
            if fast is None:
                res[name] = {"skipped": "no fast path on this topology"}
                continue
            try:
                kw = _bound_states(topo, strategy, fast, cases)
            except ValueError as exc:  # e.g. the datacenter strategies off their fabric
                res[name] = {"skipped": f"no state: {exc}"}
                continue

            engine, declined = fast_engine(fast, pubs, sets, payload_bytes, kw)
            if declined:
                res[name] = {"skipped": f"the fast path declines {declined} notifications"}
                continue
            walk = _walk_alone(fast, pubs, sets, payload_bytes, kw)
            res[name] = paired_bound(bound, engine, reps, fast.impl, walk)
            tick()
        if content_strategies:
            from experiments.bench.content_bound import bound_content

            res.update(bound_content(topology, reps, notifications, payload_bytes,
                                     content_strategies, workloads, tick))
        out["topologies"][topology] = res
    return out


def format_bound(bd: dict[str, Any]) -> list[str]:
    """The bound item's lines of the suite's summary."""
    lines: list[str] = []
    lines.append(f"engine vs lower bound  {bd['receivers']}, {bd['payload_bytes']} B, "
                 f"{bd['notifications']} notifications; CPU us per notification, the "
                 "bound a cached networkx BFS predecessor map + union of paths")
    for kind, spec in bd.get("content_workloads", {}).items():
        lines.append(f"  content filters ({kind}): receivers = hosts whose subscriptions "
                     f"match the event, {spec}")
    for topology, res in bd["topologies"].items():
        lines.append(f"  {topology}")
        for name, r in res.items():
            if "skipped" in r:
                lines.append(f"    {name:<16} skipped: {r['skipped']}")
                continue
            walk = (f"  (walk alone {r['walk_us']:.1f} us = {r['walk_ratio']:.2f}x)"
                    if "walk_us" in r else "")
            share = (f"  ({r['receivers_pct']:.1f} % receivers)" if "receivers_pct" in r
                     else "")
            lines.append(f"    {name:<16} engine ({r['impl']}) {r['engine_us']:>7.1f} us  "
                         f"bound {r['bound_us']:>6.1f} us  = {r['ratio']:.2f}x"
                         + share + mark(r["target"]) + walk)
    return lines
