"""Range-box content filters (seed 004)."""
