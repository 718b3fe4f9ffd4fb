"""Imports every built-in strategy module so that each registers itself."""

from strategies import (  # noqa: F401
    alm,
    broadcast,
    destinations,
    hops,
    hybrid,
    mixed,
    multicast,
    switch_bitmask,
    switch_mcgroup,
    switch_port,
    tree,
    unicast,
)
