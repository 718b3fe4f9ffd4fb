"""Multicast groups as a workload hands them to group-based strategies.

Elmo (Shahbaz et al., "Elmo: Source Routed Multicast for Public Clouds",
SIGCOMM 2019, §5) and BIER (RFC 8279 §4) install state per multicast group,
not per notification. A workload that forms such groups (the ``tenants``
receiver model, :mod:`sim.workloads.tenants`) offers them through
:class:`GroupSource`; the strategies read ``Knowledge.population`` and, when it
is not a ``GroupSource``, fall back to one group per receiver set.

This module sits in the data-plane layer (below workloads and strategies) so
that both can import it; it holds no logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Group:
    """One multicast group.

    Parameters
    ----------
    gid : int
        Group id, 0-based and dense within its source.
    tenant : int
        Tenant that owns the group (0-based).
    hosts : tuple of str
        The distinct hosts of the group's member VMs, sorted by
        :func:`topologies.model.node_sort_key`.

    References
    ----------
    Elmo §5 (a group is a subset of one tenant's VMs; its hosts are where
    those VMs are placed).
    """

    gid: int
    tenant: int
    hosts: tuple[str, ...]


@runtime_checkable
class GroupSource(Protocol):
    """A population that forms multicast groups (implemented by ``tenants``).

    Test with ``isinstance(population, GroupSource)`` (runtime checkable);
    strategies fall back to one group per receiver set otherwise.
    """

    def groups(self) -> Sequence[Group]:
        """All groups of the current membership version, indexed by gid."""
        ...

    @property
    def version(self) -> int | None:
        """Membership version; changes whenever a join/leave changes a group.

        An attribute, not a method: it is the ``version`` of
        :class:`sim.workloads.receivers.Population` (read ``pop.version``,
        never ``pop.version()``), so one object can be both.
        """
        ...
