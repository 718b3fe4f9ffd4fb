"""The classic baselines on plain L2: unicast, broadcast, IP multicast."""
