"""Plain L2 forwarding and IP-style multicast groups (the classic baselines)."""
