"""Source-routing label-stack strategies (seed 000 ch. 3)."""
