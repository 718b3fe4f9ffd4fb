"""Workload and receiver models: who publishes and who receives each notification."""
