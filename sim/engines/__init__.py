"""Engines: the static (zero-load) engine, its fast paths, and the timed SimPy engine."""
