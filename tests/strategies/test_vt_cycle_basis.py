"""The fast cycle-basis enumeration against Horton's reference
(strategies/virtual_tree/cycle_basis.py).

``vt-cycles`` installs from :func:`cycle_basis_fast`; it must give the very basis
(same cycles, same order) as :func:`minimum_cycle_basis` on random topologies,
with the compiled kernel and with its Python loop.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
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
