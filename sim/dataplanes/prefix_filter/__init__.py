"""Prefix (dz) content filters of PLEROMA (seeds 001-002)."""
