"""Application-layer multicast through brokers (seed 000 §2.3, §3.5.4)."""
