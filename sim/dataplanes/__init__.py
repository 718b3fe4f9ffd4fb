"""Data-plane reference models, one per P4 program family (importing registers them)."""

from sim.dataplanes import (  # noqa: F401
    alm,
    camus,
    kundel,
    l2,
    neighbor_labels,
    prefix_filter,
    range_filter,
    source_routing,
    virtual_tree,
)
