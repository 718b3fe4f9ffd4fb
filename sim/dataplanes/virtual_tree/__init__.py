"""Virtual-tree labels: tree, stop and hop labels (seed 000 §4.3, ch. 5-6)."""
