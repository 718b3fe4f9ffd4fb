"""PLEROMA's dz prefix filters with flow limits (seeds 001-002)."""
