"""What the ``neighbor_labels`` strategies share: label format, data plane, no updates.

``hops`` and ``destinations`` both send a stack of 16-bit labels in the
format of :class:`~strategies.virtual_tree.labels.LabelParams` and install
rules that depend on the topology only, so subscription changes need no rule
writes (seed 000 §4.4.2, "eliminating the need for updates").

References
----------
Seed 000 §4.2.1-4.2.2 (hop and destination labels), §4.4.2 (update-free
rules); digest ch. 1-4 §3.6-3.7, §7.11, §7.19.
"""

from __future__ import annotations

from collections.abc import Callable

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.neighbor_labels.reference import NeighborLabelsDataPlane
from sim.dataplanes.packet import Notification
from sim.dataplanes.virtual_tree.codec import LabelFormat
from strategies.base import Encoding, Knowledge, Strategy
from strategies.virtual_tree.labels import LabelParams, check_receivers, encode_stacks, label_format
from topologies.model import Topology

#: A label stack and, for ``on_oversize="split"``, how to cut it into one stack per packet.
Stacks = tuple[list[int], Callable[[], list[list[int]]]]


class NeighborLabelStrategy(Strategy):
    """Base of the ``neighbor_labels`` strategies (subclasses set ``name`` and
    implement ``install`` and :meth:`stacks`)."""

    dataplane = "neighbor_labels"
    Params = LabelParams
    scope = "topology"
    cell_invariant = True

    def model(self) -> NeighborLabelsDataPlane:
        """The ``neighbor_labels`` program compiled with this strategy's label format."""
        return NeighborLabelsDataPlane(label_format(self.params))

    def update(self, topology: Topology, state: ControlState, knowledge: Knowledge
               ) -> ControlState:
        """Update-free: the rules depend on the topology only, never on subscriptions."""
        return state

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        """One packet with the :meth:`stacks` labels, split or refused beyond the MTU."""
        check_receivers(notification.publisher, receivers)
        if not receivers:
            return Encoding(())
        fmt = label_format(self.params)
        labels, split = self.stacks(topology, fmt, notification.publisher, receivers)
        return encode_stacks(topology, self.params, fmt, notification, payload, labels, split)

    def stacks(self, topology: Topology, fmt: LabelFormat, publisher: str,
               receivers: frozenset[str]) -> Stacks:
        """The labels for ``receivers`` (not empty, publisher excluded) and the split."""
        raise NotImplementedError
