"""Kundel et al.'s content filters (seed 002)."""
