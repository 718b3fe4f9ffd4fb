"""pleroma-dz's first install shared between cells equals each cell's own install loop.

:func:`strategies.prefix_filter.pleroma_arrival.shared_arrival` hands cells of one
workload at other flow limits and algorithms the logical part of the first install
and, at one limit and local enforcer, its physical part (seed 001 §4.2, §5.3, §6).
Here strategies of random limits and algorithms (global passes every few
subscriptions included, which do not share) install one workload on one
:class:`~sim.dataplanes.caches.Caches`, then go through subscription churn
with their updates interleaved (a model that wrote its shared counters or tables in
place would change the others'); each must give, build by build, the states, the
reference (unlimited) flows, the flow metrics, and at the end the logical
counters, physical flows, merged sets, records, random stream and enforcer
counts of the same strategy built alone on the install loop.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.caches import Caches
from sim.dataplanes.control_state import count_writes
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.prefix_filter.pleroma import PleromaDz
from topologies.specs import load_topology

TOPOLOGIES = ["regulartree:depth=2,fanout=3,hosts=2", "regulartree:depth=2,fanout=2,hosts=3",
              "randomtree:switches=8,hosts=20,seed=3"]
PARAMS = st.fixed_dictionaries({
    "flow_limit": st.sampled_from([0, 4, 6, 9]),
    "algorithm": st.sampled_from(["baseline", "min-space", "traffic", "history"]),
    "global_every": st.sampled_from([0, 0, 0, 5]),
    "seed": st.sampled_from([1, 1, 1, 2]),
})


def _tables(tables: dict) -> dict:
    """Flow tables as plain values, the order of ports, flows and keys included."""
    return {sw: [(port, list(t.flows.items()), list(t.keys)) for port, t in per.items()]
            for sw, per in tables.items()}


def _runs(topology_spec: str, receivers: str, seed: int, params: list[dict], runs: int,
          shared: bool) -> list:
    """Per strategy: what each of its builds gave, then its model at the end. Shared: one
    Caches for all and the updates interleaved; else each alone, sharing off."""
    topology = load_topology(topology_spec)
    pop = receiver_model(receivers).population(topology, child_rng(seed, "population"))
    caches = Caches()
    strategies = []
    for p in params:
        s = make_strategy("pleroma-dz", {"max_dz": 5, "window": 30, **p})
        assert isinstance(s, PleromaDz)
        if shared:
            s.use_caches(caches)
        else:
            s.share_arrivals = False
        strategies.append(s)
    seen: list[list] = [[] for _ in strategies]
    states: list = [None] * len(strategies)
    for run in range(runs):
        k = Knowledge(population=pop.at(run), seed=1)
        for i in range(len(strategies)):  # the strategies' builds interleaved
            s, before = strategies[i], states[i]
            state = s.install(topology, k) if before is None else s.update(topology, before, k)
            record = s.record_of(state)
            seen[i].append((state, _tables(record.content.reference), record.extra,
                            record.peak, None if before is None else count_writes(before,
                                                                                   state)))
            states[i] = state
    out = []
    for s, state, builds in zip(strategies, states, seen, strict=True):
        model = s.model_of(state)
        out.append([builds, model.logical, _tables(model.physical), model.merged,
                    model.records, model.since_global, s._rng.bit_generator.state,
                    (s.stats.calls, s.stats.merges),
                    [_tables(s.record_of(b[0]).content.reference) for b in builds]])
    return out


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(TOPOLOGIES), st.sampled_from(["uniform", "zipf", "mixed"]),
       st.integers(1, 40), st.lists(PARAMS, min_size=2, max_size=6))
def test_shared_first_installs_equal_each_cell_alone(topology: str, dist: str, seed: int,
                                                     params: list[dict]) -> None:
    receivers = (f"content:subs=30,publishers=3,dims=2,bits=8,width=0.3,dist={dist},"
                 "churn=3")
    shared = _runs(topology, receivers, seed, params, 4, True)
    alone = [_runs(topology, receivers, seed, [p], 4, False)[0] for p in params]
    assert shared == alone


def test_cells_of_one_workload_share_their_arrival() -> None:
    """The 8 cells of flowlimit-pleroma's grid point share one logical arrival and,
    per limit, one physical arrival of min-space, traffic and history."""
    topology = load_topology(TOPOLOGIES[0])
    pop = receiver_model("content:subs=40,publishers=3,dims=2,bits=8,width=0.3,"
                         "dist=uniform").population(topology, child_rng(1, "population"))
    caches = Caches()
    for algorithm in ["baseline", "min-space", "traffic", "history"]:
        for limit in [4, 6]:
            s = make_strategy("pleroma-dz", {"max_dz": 5, "flow_limit": limit,
                                             "algorithm": algorithm})
            s.use_caches(caches)
            s.install(topology, Knowledge(population=pop, seed=1))
    assert (caches.flow_logical.misses, caches.flow_logical.hits) == (1, 7)
    # baseline at 2 limits, then min-space at 2 limits; traffic and history hit those
    assert (caches.flow_physical.misses, caches.flow_physical.hits) == (4, 4)
