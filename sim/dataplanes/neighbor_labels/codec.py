"""Label ids of the ``neighbor_labels`` family (*hops* and *destinations*).

The stack layout and widths are those of :class:`~sim.dataplanes.virtual_tree.codec.
LabelFormat` (16-bit ``Size``, 16-bit labels = 2-bit type + 14-bit id). The
family uses two type codes:

- ``01`` NODE: the id of a node of the delivery tree, switch **or** host
  (*hops*). Switch ``s`` has id ``switch_id(s)`` (0..N-1); host ``h`` has id
  ``N + host_id(h)``. 256 switches and 256 hosts need 512 ids, so 8-bit ids
  would not do (digest §7.11); 14 bits give 16,384.
- ``10`` DEST: the id of a subscriber host, ``host_id(h)`` (*destinations*).

References
----------
Seed 000 §4.2.1 (hops: "the IDs of all participating nodes"), §4.2.2
(destinations: "subscriber IDs"); digest ch. 1-4 §3.6, §3.7, §7.11.
"""

from __future__ import annotations

from sim.dataplanes.virtual_tree.codec import LabelFormat
from topologies.model import Topology

KIND_NODE = 0b01
KIND_DEST = 0b10


def node_id(topology: Topology, node: str) -> int:
    """Numeric id of a switch or host in NODE labels (switches first, then hosts)."""
    if topology.is_host(node):
        return len(topology.switches) + topology.host_id(node)
    return topology.switch_id(node)


def node_label(fmt: LabelFormat, topology: Topology, node: str) -> int:
    """The NODE label of ``node`` (raises FieldRangeError if its id is too wide)."""
    return fmt.label(KIND_NODE, node_id(topology, node), f"node id of {node}")


def dest_label(fmt: LabelFormat, topology: Topology, host: str) -> int:
    """The DEST label of subscriber ``host``."""
    return fmt.label(KIND_DEST, topology.host_id(host), f"destination id of {host}")
