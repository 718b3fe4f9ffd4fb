"""Imports every built-in data-plane family so that each registers its reference model."""

from sim.dataplanes.alm import reference as _alm  # noqa: F401
from sim.dataplanes.bier import reference as _bier  # noqa: F401
from sim.dataplanes.camus import reference as _camus  # noqa: F401
from sim.dataplanes.elmo import reference as _elmo  # noqa: F401
from sim.dataplanes.kundel import reference as _kundel  # noqa: F401
from sim.dataplanes.l2 import reference as _l2  # noqa: F401
from sim.dataplanes.neighbor_labels import reference as _neighbor_labels  # noqa: F401
from sim.dataplanes.prefix_filter import reference as _prefix_filter  # noqa: F401
from sim.dataplanes.range_filter import reference as _range_filter  # noqa: F401
from sim.dataplanes.source_routing import reference as _source_routing  # noqa: F401
from sim.dataplanes.virtual_tree import reference as _virtual_tree  # noqa: F401
