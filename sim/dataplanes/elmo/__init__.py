"""Elmo: source-routed multicast with p-rules in the header and s-rules in group tables."""
