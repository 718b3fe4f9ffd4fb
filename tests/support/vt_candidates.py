"""Random virtual-tree candidates for Hypothesis tests of the virtual-tree strategies."""

from __future__ import annotations

import networkx as nx
from hypothesis import strategies as st

from strategies.virtual_tree.installation import Candidate, host_links, steiner_links, switch_edges


@st.composite
def candidate_sets(draw, topo):
    """Steiner trees over random switch subsets, optionally with host links, and rings."""
    cands = []
    switches = list(topo.switches)
    for i in range(draw(st.integers(0, 6))):
        subset = draw(st.sets(st.sampled_from(switches), min_size=1, max_size=len(switches)))
        edges = set(steiner_links(topo, subset))
        if draw(st.booleans()):
            edges |= host_links(topo, draw(st.sets(st.sampled_from(sorted(subset)))))
        if edges:
            cands.append(Candidate(frozenset(edges), f"c{i}"))
    for j, cyc in enumerate(nx.cycle_basis(topo.switch_graph)):
        if draw(st.booleans()):
            ring = list(zip(cyc, cyc[1:] + cyc[:1], strict=True))
            cands.append(Candidate(switch_edges(topo, ring), f"ring{j}"))
    return cands
