"""The clustered workload's migration plan: :func:`draw_moves` equals its reference
(seed 000 §6.6.2; :func:`sim.workloads.clustered.draw_moves_reference`)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.workloads.clustered as clustered
from sim.dataplanes.seeds import child_rng
from sim.workloads.clustered import draw_moves, draw_moves_reference
from sim.workloads.receivers import receiver_model
from topologies.specs import load_topology


@st.composite
def layouts(draw: st.DrawFn) -> tuple[list[str], np.ndarray, list[str],
                                      list[tuple[int, str, float]], int]:
    """Hosts, weights, publisher hosts and subscriptions, and a seed; few hosts make
    clients that cannot move (every host busy) likely."""
    n = draw(st.integers(1, 24))
    hosts = [f"h{k}" for k in draw(st.permutations(range(n)))]
    weights = draw(st.one_of(
        st.lists(st.sampled_from([1.0, 9.0]), min_size=n, max_size=n),
        st.lists(st.floats(0.01, 100.0), min_size=n, max_size=n)))
    n_pub = draw(st.integers(1, n))
    pub_hosts = draw(st.lists(st.sampled_from(hosts), min_size=n_pub, max_size=n_pub,
                              unique=True))
    subs = draw(st.lists(st.tuples(st.integers(0, n_pub - 1), st.sampled_from(hosts),
                                   st.floats(0.0, 1.0)), max_size=3 * n))
    return hosts, np.array(weights), pub_hosts, subs, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_draw_moves_equals_the_reference(layout):
    hosts, w, pub_hosts, subs, seed = layout
    fast_rng, ref_rng = np.random.default_rng(seed), np.random.default_rng(seed)
    got = draw_moves(hosts, w, pub_hosts, subs, fast_rng)
    want = draw_moves_reference(hosts, w, pub_hosts, subs, ref_rng)
    assert got == want
    assert fast_rng.bit_generator.state == ref_rng.bit_generator.state  # same draws used


def test_a_population_draws_its_plan_with_the_fast_moves(monkeypatch):
    """The plan a churn level reads is :func:`draw_moves`'s, and equals the reference's
    on a Zoo network for every scenario."""
    topo = load_topology("zoo:Dfn")
    for scenario in ("uniform", "nearby", "distant"):
        spec = f"clustered:scenario={scenario},churn=100,subscribers=30"
        fast = receiver_model(spec).population(topo, child_rng(3, "population"))
        fast_moves = fast.moves  # drawn now (a plan is drawn when first read)
        calls: list[int] = []

        def counted(*args, calls=calls):
            calls.append(1)
            return draw_moves_reference(*args)

        monkeypatch.setattr(clustered, "draw_moves", counted)
        ref = receiver_model(spec).population(topo, child_rng(3, "population"))
        assert ref.moves == fast_moves and calls == [1]
        assert len(fast_moves) == fast.migration.clients > 0
        monkeypatch.undo()
