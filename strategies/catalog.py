"""Imports every built-in strategy module so that each registers itself.

This is the one place registry loading names concrete strategy modules
(:func:`strategies.base.load_builtin_strategies` imports it lazily).
"""

from strategies.alm import brokers  # noqa: F401
from strategies.bier import bier  # noqa: F401
from strategies.camus import camus  # noqa: F401
from strategies.elmo import elmo  # noqa: F401
from strategies.kundel import kundel  # noqa: F401
from strategies.l2 import broadcast, multicast, unicast  # noqa: F401
from strategies.neighbor_labels import destinations, hops  # noqa: F401
from strategies.prefix_filter import pleroma  # noqa: F401
from strategies.range_filter import range_boxes  # noqa: F401
from strategies.source_routing import mixed, switch_bitmask, switch_mcgroup, switch_port  # noqa: F401
from strategies.virtual_tree import (  # noqa: F401
    arbitrary,
    datacenter,
    from_workload,
    hybrid,
    source_routed,
    tree,
)
