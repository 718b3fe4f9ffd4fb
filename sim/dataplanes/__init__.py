"""Data-plane reference models, one per P4 program family (importing registers them)."""

from sim.dataplanes import l2  # noqa: F401
from sim.dataplanes import neighbor_labels, virtual_tree  # noqa: F401
