"""Camus BDD content filters (seed 003)."""
