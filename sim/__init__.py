"""Simulation: the data-plane layer (``sim.dataplanes``) below the strategies, the
engines and workload models (``sim.engines``, ``sim.workloads``) above them.

See docs/ARCHITECTURE.md for the layer stack."""
