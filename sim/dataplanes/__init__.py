"""Data-plane reference models, one per P4 program family (importing registers them)."""

from sim.dataplanes import l2  # noqa: F401
