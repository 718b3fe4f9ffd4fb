"""What a controller knows about the clients when it installs virtual trees.

Workload models that know their clients (the clustered distribution of
:mod:`sim.workloads.clustered`) hand a :class:`ControllerView` to the
strategies through ``Knowledge.population.controller_view()``.

References
----------
Seed 000 §6.4 (workload-aware virtual trees), §6.5.2 (client clusters).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ControllerView:
    """What a controller knows about the clients when it installs virtual trees.

    Attributes
    ----------
    publishers : tuple of str
        Publishing hosts.
    subscriptions : mapping
        Publisher host -> ``(subscriber host, notification frequency in
        [0, 1])`` pairs.
    clusters : tuple of tuple of str
        Dense switch sets of the client distribution (empty if unknown).
    """

    publishers: tuple[str, ...]
    subscriptions: Mapping[str, tuple[tuple[str, float], ...]]
    clusters: tuple[tuple[str, ...], ...] = ()

    def controller_view(self) -> ControllerView:
        return self
