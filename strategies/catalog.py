"""Imports every built-in strategy module so that each registers itself."""

from strategies import broadcast, multicast, unicast  # noqa: F401
