"""Hypothesis strategies for random connected topologies and receiver sets."""

from __future__ import annotations

import networkx as nx
from hypothesis import strategies as st

from topologies.model import Topology, build_topology


def random_topology(n: int, extra: int, seed: int, hosts: int = 1) -> Topology:
    """A connected random graph: a random tree plus ``extra`` random chords."""
    g = nx.random_labeled_tree(n, seed=seed) if n > 1 else nx.empty_graph(1)
    rng = nx.utils.create_py_random_state(seed)
    nodes = list(g.nodes)
    for _ in range(extra):
        u, v = rng.sample(nodes, 2) if n > 1 else (0, 0)
        if u != v:
            g.add_edge(u, v)
    return build_topology(f"random:n={n},extra={extra},seed={seed}", g.edges, sorted(g.nodes),
                          hosts)


@st.composite
def topologies(draw: st.DrawFn, min_switches: int = 2, max_switches: int = 20) -> Topology:
    n = draw(st.integers(min_switches, max_switches))
    extra = draw(st.integers(0, n))
    seed = draw(st.integers(0, 2**16))
    return random_topology(n, extra, seed)


@st.composite
def scenarios(draw: st.DrawFn, min_switches: int = 2, max_switches: int = 20
              ) -> tuple[Topology, str, frozenset[str]]:
    """(topology, publisher, receivers) with the publisher not among the receivers."""
    topo = draw(topologies(min_switches, max_switches))
    publisher = draw(st.sampled_from(topo.hosts))
    others = [h for h in topo.hosts if h != publisher]
    receivers = draw(st.sets(st.sampled_from(others), max_size=len(others)))
    return topo, publisher, frozenset(receivers)
