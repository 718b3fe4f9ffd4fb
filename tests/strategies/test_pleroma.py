"""pleroma-dz end to end: dz flows on the tree, flow limits, deployment, churn, the data plane."""

from __future__ import annotations

import numpy as np
import pytest

from sim.dataplanes.control_state import Exact, Lpm, StateBuilder, TableEntry
from sim.dataplanes.event_header import ETHERTYPE_IPV4, ip_udp_pubsub
from sim.dataplanes.packet import Notification, Packet, payload_for
from sim.dataplanes.prefix_filter.reference import (
    FORWARD,
    KEY_PORT,
    KEY_V4,
    MULTICAST,
    TABLE_V4,
    PrefixFilterDataPlane,
)
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.workloads.content import ContentPopulation
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.prefix_filter.dz import dz_to_ipv4
from topologies.specs import load_topology

TOPO = "regulartree:depth=3,fanout=3,hosts=2"


def _setup(spec: str, topo: str = TOPO):
    topology = load_topology(topo)
    pop = receiver_model(spec).population(topology, child_rng(3, "population"))
    assert isinstance(pop, ContentPopulation)
    return topology, pop


def _run(strategy, topology, pop, runs: int, churn: bool = False):
    state = None
    out = []
    for run in range(runs):
        view = pop.at(run)
        k = Knowledge(population=view, seed=1)
        state = strategy.install(topology, k) if state is None else (
            strategy.update(topology, state, k) if churn else state)
        rng = child_rng(9, "n", run)
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        event, receivers = view.draw(pub, run, rng)
        note = Notification(run, pub, event=event)
        d = run_notification(topology, strategy, state, note, receivers, payload_for(note, 20))
        out.append((d, strategy.extra_metrics(topology, state, note, receivers, d), receivers))
    return state, out


def test_prefix_filter_dataplane_uses_longest_prefix_and_ingress_port() -> None:
    b = StateBuilder()
    for dz, action, param in (("0", FORWARD, ("port", 2)), ("01", MULTICAST, ("group", 1))):
        addr, plen = dz_to_ipv4(dz)
        match = ((KEY_PORT, Exact(1)), (KEY_V4, Lpm(addr, plen, 32)))
        b.add_entry("s1", TableEntry(TABLE_V4, match, action, (param,)))
    b.add_group("s1", 1, (1, 2, 3))
    cfg = b.build(["s1"]).config("s1")
    dp = PrefixFilterDataPlane()

    def send(dz: str, in_port: int) -> tuple[int, ...]:
        header = ip_udp_pubsub(4, 1, dz_to_ipv4(dz)[0], b"\0\0", 0)
        res = dp.process("s1", cfg, Packet(0, 0, ETHERTYPE_IPV4, header), in_port)
        return tuple(e.port for e in res.emitted)

    assert send("0011", 1) == (2,)
    assert send("0110", 1) == (2, 3)  # the group minus the ingress port
    assert send("1000", 1) == ()       # miss: drop
    assert send("0110", 2) == ()       # flows match the ingress port too


def test_unlimited_pleroma_has_no_false_negatives_and_no_network_false_positives() -> None:
    topology, pop = _setup("content:subs=60,publishers=2,dims=2,bits=10,width=0.2")
    strategy = make_strategy("pleroma-dz", {"max_dz": 6})
    _, out = _run(strategy, topology, pop, 60)
    assert all(d.false_negatives == 0 for d, _, _ in out)
    assert all(m.network_false_positives == 0 for _, m, _ in out)
    assert any(m.link_false_positives > 0 for _, m, _ in out)  # dz over-approximation


@pytest.mark.parametrize("params", [
    {"flow_limit": 12, "local": "baseline"},
    {"flow_limit": 12, "local": "min-space"},
    {"flow_limit": 12, "global_cost": "traffic", "window": 200},
    {"flow_limit": 12, "global_cost": "history", "window": 200, "sampling": 0.5},
    {"flow_limit": 12, "encoding": "ipv6", "dz_bits": 30},
])
def test_flow_limits_hold_without_false_negatives(params) -> None:
    topology, pop = _setup("content:subs=80,publishers=2,dims=2,bits=10,width=0.2,dist=mixed")
    strategy = make_strategy("pleroma-dz", {"max_dz": 6, **params})
    state, out = _run(strategy, topology, pop, 40)
    model = strategy.model_of(state)
    limit = params["flow_limit"] - 1  # reserved slot
    for per in model.physical.values():
        ingress_tables = sum(1 for t in per.values() if len(t))
        assert sum(len(t) for t in per.values()) <= max(limit, ingress_tables)
    assert all(d.false_negatives == 0 for d, _, _ in out)
    m = out[0][1]
    assert m.merge_ratio > 0 and m.flows_max <= 11 and m.flow_limit == 12
    assert m.flows_peak <= params["flow_limit"]  # never above limit (= effective + 1)


def test_global_history_beats_local_baseline_on_network_false_positives() -> None:
    topology, pop = _setup("content:subs=120,publishers=2,dims=2,bits=10,width=0.15,dist=mixed")
    totals = {}
    for name, params in {"baseline": {"local": "baseline"},
                         "history": {"global_cost": "history", "window": 500}}.items():
        strategy = make_strategy("pleroma-dz", {"max_dz": 6, "flow_limit": 10, **params})
        _, out = _run(strategy, topology, pop, 80)
        totals[name] = sum(m.network_false_positives for _, m, _ in out)
    assert totals["history"] < totals["baseline"]


def test_subscription_churn_keeps_zero_false_negatives_and_counts_writes() -> None:
    topology, pop = _setup("content:subs=40,publishers=2,dims=2,bits=10,width=0.2,churn=2")
    for params in ({}, {"flow_limit": 10}):
        strategy = make_strategy("pleroma-dz", {"max_dz": 6, **params})
        state, out = _run(strategy, topology, pop, 25, churn=True)
        assert all(d.false_negatives == 0 for d, _, _ in out)
        if not params:  # unlimited: unsubscribing leaves exactly the unlimited flow set
            model = strategy.model_of(state)
            unl = model.unlimited()
            for sw, per in model.physical.items():
                for port, table in per.items():
                    assert table.flows == unl[sw][port].flows
            assert all(m.network_false_positives == 0 for _, m, _ in out)


def test_encoding_puts_the_event_dz_in_the_destination_address() -> None:
    topology, pop = _setup("content:subs=5,dims=2,bits=4")
    strategy = make_strategy("pleroma-dz", {"dz_bits": 8})
    state = strategy.install(topology, Knowledge(population=pop.at(0)))
    note = Notification(0, pop.publishers[0], event=(0b1010, 0b0110))
    pkt, = strategy.encode(topology, state, note, frozenset(), b"").packets
    dst = int.from_bytes(pkt.header[16:20], "big")
    assert dst == dz_to_ipv4("10011100")[0]  # Morton interleaving of (1010, 0110)
    assert len(pkt.header) == 20 + 8 + 2 * 2  # IPv4 + UDP + two 16-bit values


def test_local_enforcer_time_is_recorded() -> None:
    topology, pop = _setup("content:subs=60,publishers=2,dims=2,bits=10,width=0.2")
    strategy = make_strategy("pleroma-dz", {"max_dz": 6, "flow_limit": 8})
    strategy.install(topology, Knowledge(population=pop.at(0)))
    assert strategy.stats.calls > 0 and strategy.stats.ms_per_call > 0
    assert np.isfinite(strategy.stats.ms_per_call)


def test_self_evaluation_triggers_a_global_run_above_the_threshold() -> None:
    topology, pop = _setup("content:subs=80,publishers=2,dims=2,bits=10,width=0.2,dist=mixed")
    runs = {}
    for threshold in (1.0, 1e-6):
        strategy = make_strategy("pleroma-dz", {"max_dz": 6, "flow_limit": 8,
                                                "global_cost": "history", "global_every": 10**6,
                                                "self_eval": threshold, "window": 100})
        state = strategy.install(topology, Knowledge(population=pop.at(0)))
        runs[threshold] = strategy.model_of(state).global_runs
    assert runs == {1.0: 0, 1e-6: 1}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_updates_never_lose_a_port_the_unlimited_flows_need(seed: int) -> None:
    from strategies.prefix_filter.flow_limits import PrefixTable, cell_representatives

    topology = load_topology(TOPO)
    pop = receiver_model("content:subs=30,publishers=3,dims=2,bits=10,width=0.3,churn=3"
                         ).population(topology, child_rng(seed, "population"))
    for params in ({"flow_limit": 6}, {"flow_limit": 6, "algorithm": "history", "window": 50}):
        strategy = make_strategy("pleroma-dz", {"max_dz": 6, **params})
        state = strategy.install(topology, Knowledge(population=pop.at(0)))
        for run in range(1, 12):
            state = strategy.update(topology, state, Knowledge(population=pop.at(run)))
            model = strategy.model_of(state)
            unl = model.unlimited()
            for sw, per in unl.items():
                for port, ref in per.items():
                    phys = model.physical.get(sw, {}).get(port) or PrefixTable()
                    for r in cell_representatives(sorted(set(ref.flows) | set(phys.flows))):
                        assert phys.lpm(r) >= ref.lpm(r), (run, sw, port)


@pytest.mark.parametrize("algorithm", ["min-space", "history"])
def test_churn_never_deploys_above_the_limit(algorithm: str) -> None:
    """Unsubscribing restores unlimited flows; the switch must stay within its limit
    (effective limit deployed, limit = effective + 1 at the transient peak, seed 001 §5.5)."""
    topology = load_topology("fattree:k=4")
    pop = receiver_model("content:subs=60,publishers=4,subscribers=12,dims=2,bits=12,"
                         "width=0.2,dist=zipf,churn=1").population(topology,
                                                                   child_rng(1, "population"))
    strategy = make_strategy("pleroma-dz", {"max_dz": 8, "window": 500, "flow_limit": 40,
                                            "algorithm": algorithm})
    _, out = _run(strategy, topology, pop, 40, churn=True)
    assert max(m.flows_max for _, m, _ in out) <= 39
    assert max(m.flows_peak for _, m, _ in out) <= 40
    assert max(m.merge_ratio for _, m, _ in out) > 0  # the limit binds
    assert all(d.false_negatives == 0 for d, _, _ in out)
