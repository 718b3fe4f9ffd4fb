"""Imports every built-in strategy module so that each registers itself."""

from strategies import (  # noqa: F401
    alm,
    broadcast,
    camus,
    destinations,
    hops,
    hybrid,
    kundel,
    mixed,
    multicast,
    pleroma,
    range_boxes,
    source_routed,
    switch_bitmask,
    switch_mcgroup,
    switch_port,
    tree,
    unicast,
    vt_arbitrary,
    vt_datacenter,
    vt_workload,
)
