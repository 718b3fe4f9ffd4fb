"""Receiver models and seed derivation."""

from __future__ import annotations

import numpy as np
import pytest
from support.random_topologies import random_topology

from sim.dataplanes.seeds import child_rng, stable_seed
from sim.workloads.receivers import receiver_model
from topologies.registry import SpecError


def test_uniform_draws_the_percentage_of_all_hosts_without_publisher():
    topo = random_topology(255, 100, seed=3)
    pop = receiver_model("uniform:percent=80").population(topo, child_rng(1, "pop"))
    recv = pop.receivers("h1", child_rng(1, "n", 0))
    assert len(recv) == 204  # seed 000 §3.5.4: 80 % of 255
    assert "h1" not in recv
    full = receiver_model("uniform:percent=100").population(topo, child_rng(1, "pop"))
    assert len(full.receivers("h1", child_rng(1, "n", 0))) == 254  # capped at |hosts| - 1


def test_frequency_model_halves_the_subscribers_on_average():
    topo = random_topology(64, 20, seed=5)
    pop = receiver_model("frequency:subscribers=30").population(topo, child_rng(2, "pop"))
    sizes = [len(pop.receivers(p, child_rng(2, "n", i)))
             for i, p in enumerate(topo.hosts * 20)]
    subs = round(0.3 * 64)
    assert all(len(pop.subscribers[p]) == subs for p in topo.hosts)
    # U(1 %, 100 %) interest: on average about half the subscribers receive (seed 000 §5.4)
    assert 0.4 * subs < np.mean(sizes) < 0.6 * subs


def test_same_seed_same_draws_and_names_are_independent():
    a = child_rng(42, "workload", 3).integers(1 << 30, size=5)
    b = child_rng(42, "workload", 3).integers(1 << 30, size=5)
    c = child_rng(42, "strategy", 3).integers(1 << 30, size=5)
    assert (a == b).all() and not (a == c).all()
    assert stable_seed({"b": 1, "a": 2}) == stable_seed({"a": 2, "b": 1})
    assert stable_seed({"a": 1}) != stable_seed({"a": 2})


@pytest.mark.parametrize("spec, msg", [
    ("uniform:percent=120", "percent must be in"),
    ("uniform:pct=10", "unknown parameter 'pct'"),
    ("uniformm:percent=10", "did you mean uniform"),
    ("frequency:subscribers=x", "must be a number"),
])
def test_bad_receiver_specs(spec, msg):
    with pytest.raises(SpecError, match=msg):
        receiver_model(spec)
