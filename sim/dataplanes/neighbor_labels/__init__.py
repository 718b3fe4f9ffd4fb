"""Neighbour and destination labels of the stored-tree strategies hops and destinations
(seed 000 §4.2)."""
