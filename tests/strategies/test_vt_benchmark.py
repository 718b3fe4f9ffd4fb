"""Encoder throughput on zoo:Dfn with 40 rules per switch (run: pytest -m benchmark -s).

Target of a later issue: >= 2,000 encodes/s under vt-freq-relation and
vt-clusters. Measured in CPU time (process_time), so machine load matters less.
"""

from __future__ import annotations

import time

import pytest

from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from topologies.specs import load_topology


@pytest.mark.benchmark
@pytest.mark.parametrize("params", [{}, {"patience": 5}], ids=["exact", "patience5"])
@pytest.mark.parametrize("name", ["vt-freq-relation", "vt-clusters"])
def test_encodes_per_second_on_dfn(name, params):
    topo = load_topology("zoo:Dfn")
    pop = receiver_model("clustered:scenario=nearby").population(topo, child_rng(1, "population"))
    rng = child_rng(1, "notes")
    notes = []
    while len(notes) < 300:
        pub = pop.publishers[int(rng.integers(len(pop.publishers)))]
        recv = pop.receivers(pub, rng)
        if recv:
            notes.append((pub, recv))
    strategy = make_strategy(name, {"max_rules": 40, **params})
    state = strategy.install(topo, Knowledge(population=pop, seed=1))
    strategy.labels(topo, state, *notes[0])  # compile the trees once
    start = time.process_time()
    entries = sum(len(strategy.labels(topo, state, p, r)) for p, r in notes)
    rate = len(notes) / (time.process_time() - start)
    print(f"\n{name} {params}: {rate:.0f} encodes/s (CPU), {entries / len(notes):.2f} entries")
    assert rate > 50
