"""Camus-style BDD content filters compiled into match-action tables (seed 003)."""
