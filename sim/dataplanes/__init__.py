"""Data-plane reference models, one per P4 program family (importing registers them)."""

from sim.dataplanes import (  # noqa: F401
    alm,
    l2,
    neighbor_labels,
    source_routing,
    virtual_tree,
)
