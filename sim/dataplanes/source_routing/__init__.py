"""Source-routing label stacks (switch/port, switch/bitmask, multicast group; seed 000 ch. 3)."""
