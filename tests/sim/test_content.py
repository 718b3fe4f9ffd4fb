"""Content workload: boxes, distributions, the Siena-like generator and the ``content`` model."""

from __future__ import annotations

import numpy as np
import pytest

from sim.dataplanes.content_space import (
    AttributeSpace,
    Box,
    ContentGenerator,
    ContentParams,
    Subscription,
    SubscriptionIndex,
)
from sim.dataplanes.seeds import child_rng
from sim.workloads.content import ContentPopulation
from sim.workloads.receivers import receiver_model
from topologies.registry import SpecError
from topologies.specs import load_topology


def test_box_relations_and_predicates() -> None:
    space = AttributeSpace.regular(2, 8)
    a = Box(((10, 50), (10, 50)))
    b = Box(((30, 70), (30, 70)))
    assert a.intersect(b) == Box(((30, 50), (30, 50)))  # seed 004's overlap example
    assert a.overlaps(b) and not a.covers(b)
    assert Box(((0, 255), (0, 255))).covers(a)
    assert a.intersect(Box(((60, 70), (0, 5)))) is None
    assert Box(((5, 5), (0, 99))).predicates(space) == ((0, "==", 5), (1, "<", 100))
    assert Box(((6, 255), (3, 9))).predicates(space) == ((0, ">", 5), (1, ">", 2), (1, "<", 10))
    assert a.volume == 41 * 41


@pytest.mark.parametrize("dist", ["uniform", "zipf", "mixed", "drift", "siena"])
def test_every_distribution_stays_in_the_domain_and_is_reproducible(dist: str) -> None:
    params = ContentParams(dims=3, bits=10, dist=dist, preds=2, values=20)
    draws = []
    for _ in range(2):
        gen = ContentGenerator(params, np.random.default_rng(7))
        rng = np.random.default_rng(8)
        subs = [gen.subscription_box(rng, host_hotspot=i) for i in range(50)]
        events = [gen.event(rng, gen.space.full, t) for t in range(0, 50_000, 1000)]
        draws.append((subs, events))
    assert draws[0] == draws[1]
    subs, events = draws[0]
    for box in subs:
        assert all(0 <= lo <= hi <= 1023 for lo, hi in box.bounds)
        assert sum((lo, hi) != (0, 1023) for lo, hi in box.bounds) <= 2  # preds = 2
    assert all(0 <= v <= 1023 for e in events for v in e)


def test_zipf_events_concentrate_on_the_top_hotspot() -> None:
    params = ContentParams(dims=2, bits=12, dist="zipf", hotspots=5, zipf=2.0, spread=0.01)
    gen = ContentGenerator(params, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    top = gen.hotspot_centres[0]
    near = sum(np.abs(np.asarray(gen.event(rng, gen.space.full)) - top).max() < 200
               for _ in range(500))
    assert near > 500 * 0.55  # Zipf(2) over 5 ranks puts 68 % on rank 1


def test_drift_moves_hotspots_every_drift_every_events() -> None:
    params = ContentParams(dims=2, bits=12, dist="drift", drift=0.1, drift_every=100)
    gen = ContentGenerator(params, np.random.default_rng(3))
    c0, c1, c1b = gen.centres_at(0), gen.centres_at(150), gen.centres_at(199)
    assert (c0 != c1).any() and (c1 == c1b).all()
    assert np.abs(c1 - c0).max() <= 0.1 * 4096 + 1


def test_siena_operator_mix_and_constant_pool() -> None:
    params = ContentParams(dims=2, bits=16, dist="siena", preds=1, ops=(1, 0, 0, 0), values=10)
    gen = ContentGenerator(params, np.random.default_rng(4))
    rng = np.random.default_rng(5)
    boxes = [gen.subscription_box(rng) for _ in range(100)]
    pool = set(gen.pool.tolist())
    for b in boxes:
        (lo, hi), = [iv for iv in b.bounds if iv != (0, 65535)]
        assert lo == hi and lo in pool  # equality only, constants from the pool


def test_subscription_index_matches_brute_force() -> None:
    rng = np.random.default_rng(6)
    gen = ContentGenerator(ContentParams(dims=3, bits=6), rng)
    subs = [Subscription(i, f"h{i % 5 + 1}", gen.subscription_box(rng)) for i in range(60)]
    index = SubscriptionIndex(subs, 3)
    for _ in range(200):
        e = gen.event(rng, gen.space.full)
        assert index.hosts_matching(e) == {s.host for s in subs if s.box.contains(e)}


def test_content_receiver_model_draws_events_and_matching_receivers() -> None:
    topo = load_topology("fattree:k=4")
    model = receiver_model("content:subs=30,publishers=2,dims=2,bits=8,width=0.3")
    pop = model.population(topo, child_rng(1, "population"))
    assert isinstance(pop, ContentPopulation) and len(pop.publishers) == 2
    view = pop.at(0)
    assert len(view.subscriptions) == 30 and view.version == 0
    rng = np.random.default_rng(1)
    for _ in range(50):
        pub = pop.publishers[0]
        event, receivers = pop.draw(pub, 0, rng)
        assert view.advertisements[pub].contains(event)
        assert receivers == {s.host for s in view.subscriptions
                             if s.box.contains(event)} - {pub}
    assert set(view.subscribers) == set(pop.publishers)
    assert all(0 <= f <= 1 for f in view.frequency.values())


def test_churn_replaces_subscriptions_deterministically_and_versions_change() -> None:
    topo = load_topology("fattree:k=4")
    model = receiver_model("content:subs=20,dims=2,bits=8,churn=3")
    a = model.population(topo, child_rng(2, "population"))
    b = model.population(topo, child_rng(2, "population"))
    v5 = a.at(5)
    assert v5.version == 5 and len(v5.subscriptions) == 20
    assert [s.sub_id for s in v5.subscriptions][-3:] == [32, 33, 34]  # 15 new, ids from 20
    assert b.at(2).subscriptions == a.at(2).subscriptions  # rewinding recomputes
    assert b.at(5).subscriptions == v5.subscriptions
    grow = receiver_model("content:subs=20,dims=2,bits=8,churn=3,churn_mode=add")
    assert len(grow.population(topo, child_rng(2, "population")).at(4).subscriptions) == 32


def test_content_model_validates_its_parameters() -> None:
    with pytest.raises(SpecError, match="preds"):
        receiver_model("content:dims=2,preds=3")
    with pytest.raises(SpecError, match="dist"):
        receiver_model("content:dist=gauss")


def test_cell_runner_feeds_events_versions_and_extra_metrics() -> None:
    from experiments.cells.pipeline import cell_rows
    from experiments.cells.schema import EXTRA_COLUMNS, ROWS
    from experiments.cells.spec import parse_spec_dict

    spec = parse_spec_dict({
        "experiment": {"name": "ct", "notifications": 6, "seeds": [1]},
        "grid": {"topology": ["fattree:k=4"], "strategy": ["range-boxes", "switch-bitmask"],
                 "receivers": ["content:subs=12,publishers=2,dims=2,bits=8,churn=1"]}})
    for cell in spec.cells():
        rows = cell_rows(cell)
        assert [set(r) for r in rows] == [set(ROWS.names)] * 6
        assert all(r["false_negatives"] == 0 for r in rows)
        if cell.strategy == "range-boxes":
            assert rows[0]["flows_max"] > 0 and rows[0]["controller_wall_ms"] > 0
            assert sum(r["control_writes"] for r in rows[1:]) > 0  # churn rewrites tables
        else:
            assert all(r[k] == v for r in rows for k, v in EXTRA_COLUMNS.items())
