"""Stored-tree strategies on neighbour labels: hops, destinations (seed 000 §4.2)."""
