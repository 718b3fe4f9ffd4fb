"""Kundel et al.'s in-network content filters (seed 002)."""
