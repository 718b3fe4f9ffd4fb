"""Runners: where cells run (in-process or on Spark)."""
