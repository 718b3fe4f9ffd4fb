"""The fast cycle-basis enumeration against Horton's reference
(strategies/virtual_tree/cycle_basis.py).

``vt-cycles`` installs from :func:`cycle_basis_fast`; it must give the very basis
(same cycles, same order) as :func:`minimum_cycle_basis` on random topologies,
with the compiled kernel and with its Python loop.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.random_topologies import topologies

import strategies.virtual_tree.cycle_basis as cb
from topologies.specs import load_topology


@pytest.mark.parametrize("compiled", [True, False])
@settings(max_examples=150, deadline=None)
@given(topo=topologies(2, 24))
def test_fast_basis_equals_the_reference(compiled, topo):
    kernel = cb.horton_kernel
    if not compiled:
        cb.horton_kernel = None
    try:
        assert cb.cycle_basis_fast(topo) == cb.minimum_cycle_basis(topo)
    finally:
        cb.horton_kernel = kernel


def test_fast_basis_on_zoo_networks():
    for name in ("zoo:Dfn", "zoo:VtlWavenet2008", "zoo:Cesnet200706"):
        topo = load_topology(name)
        basis = cb.cycle_basis_fast(topo)
        assert basis == cb.minimum_cycle_basis(topo)
        assert len(basis) == topo.switch_graph.number_of_edges() - len(topo.switches) + 1


@settings(max_examples=60, deadline=None)
@given(topo=topologies(2, 24), budget=st.sampled_from([1, 200, 2000]))
def test_a_small_budget_takes_the_lengths_in_parts_and_gives_the_same_basis(topo, budget):
    """With room for a few rows only, the candidates are enumerated again for each part of
    their lengths; the greedy sees them in the same order, so the basis is the same."""
    assert cb.cycle_basis_fast(topo, budget_bytes=budget) == cb.minimum_cycle_basis(topo)


def test_the_row_width_covers_every_candidate():
    topo = load_topology("jellyfish:switches=60,degree=4,seed=3")
    g = cb.encoder_graph(topo)
    width = cb._row_width(g.indptr, g.nbr)
    assert width < 2 * len(g.names) + 2  # narrower than the old 2 n + 2 columns
    basis = cb.cycle_basis_fast(topo)
    assert max(len(c) for c in basis) + 1 <= width
