"""The interface of a fast path: a family's static walk computed in closed form.

The pass-by-pass reference (:func:`sim.engines.static.run_notification`
running a family's data-plane model) is the definition of what a
notification does. A data-plane family may also offer a :class:`FastPath`
that computes the same counts without walking packets (closed form,
vectorized, compiled) for a batch of notifications at once. A strategy
hands one out through its hook :meth:`strategies.base.Strategy.fast_path`,
configured with its own parameters; the static engine
(:func:`sim.engines.static.choose_static_path`) only calls that hook and
never names a strategy or a family.

Contract of a fast path, checked for every strategy whose hook returns one
by ``tests/sim/test_fast_paths.py`` (random topologies, receiver sets,
parameters, delay constants):

- :meth:`FastPath.delivery` equals the reference's
  :class:`~sim.dataplanes.delivery.Delivery` exactly (deliveries, first
  arrival times bit for bit, frames and bytes per link, per-switch counts,
  drops, encoding), and :meth:`FastPath.metrics` equals
  :func:`~sim.dataplanes.delivery.row_metrics` of it;
- a notification it does not cover exactly is *declined* (``None``): the
  engine runs the reference for it, which also raises the reference's errors;
- the control state is the strategy's own ``install``.

A fast path whose counts depend on the installed state (e.g. the virtual-tree
labels, whose trees the control plane chose) sets ``needs_states = True``;
callers then pass ``states=`` (one :class:`ControlState` per notification)
to :meth:`FastPath.metrics`, which declines every notification without them.

A fast path that evaluates each notification's event (the content filters,
:mod:`sim.dataplanes.content_fast_path`) sets ``needs_notifications = True``;
callers then also pass ``notifications=`` (the
:class:`~sim.dataplanes.packet.Notification` of each), and it declines every
notification without them. Such a fast path may compute the strategy's own
extra metrics too: a row's ``metrics["extra"]`` is then its
:class:`~strategies.base.ExtraMetrics` record.

A fast path with several interchangeable implementations (e.g. numpy and a
compiled kernel) lists them in ``implementations`` and builds the variant
``using(impl)``; the property test checks each.

A fast path may also take its notifications as host indices, the form a
batched workload draws them in
(:meth:`sim.workloads.receivers.Population.draw_runs`): the optional
``metric_columns(publishers, offsets, receivers, payload_bytes)`` (see
:class:`ColumnFastPath`) returns a :class:`MetricColumns`, one array per
metric, equal to :meth:`FastPath.metrics` of the same notifications by name
(checked by ``tests/sim/test_fast_paths.py``). The cell pipeline uses it
when a fast path has it, and builds the rows' columns from its arrays.

References
----------
shared/DESIGN.md "Data planes" (a fast path must agree with the pass-by-pass
model on randomized cases; the reference stays the definition) and "Layout
and layers" (fast paths plug in through one hook a family implements); seed
000 §3.5.4 (the delay model both apply); digest ch. 1-4 §7.16.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import Delivery
from sim.dataplanes.packet import Encoding, Notification
from topologies.model import Topology

#: A publisher encoder, ``strategy.encode(topology, state, notification, receivers,
#: payload)``: fast paths put the strategy's own encoding into their deliveries.
Encoder: TypeAlias = Callable[[Topology, ControlState, Notification, frozenset[str], bytes],
                              Encoding]


@runtime_checkable
class FastPath(Protocol):
    """A closed-form static engine for one topology, strategy and delay model.

    Built by :meth:`strategies.base.Strategy.fast_path`; see the module
    docstring for the contract.
    """

    @property
    def impl(self) -> str:
        """Which implementation computes the counts (reports and benchmarks name it)."""
        ...

    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int) -> list[dict[str, Any] | None]:
        """Row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS`, in that order) of
        each notification ``(publishers[i], receiver_sets[i])`` with a payload of
        ``payload_bytes``; ``None`` where the reference must run."""
        ...

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The full :class:`~sim.dataplanes.delivery.Delivery` of one notification,
        equal to the reference's; ``None`` where the reference must run."""
        ...


@dataclass(frozen=True, slots=True)
class MetricColumns:
    """Row metrics of a batch of notifications, one array per metric.

    Attributes
    ----------
    taken : ndarray of bool
        False where the fast path declines the notification (the reference
        must run; the metric arrays hold 0 there).
    columns : dict of str to ndarray
        :data:`~sim.dataplanes.delivery.METRIC_KEYS` (int64, ``delay_worst_ms``
        float64), and optionally the header label counts
        (``strategies.base.HEADER_LABEL_FIELDS``).
    """

    taken: np.ndarray
    columns: dict[str, np.ndarray]

    def rows(self) -> list[dict[str, Any] | None]:
        """Per notification: its metrics as Python numbers, None where declined
        (the form of :meth:`FastPath.metrics`)."""
        names = list(self.columns)
        values = zip(*(self.columns[k].tolist() for k in names), strict=True)
        return [dict(zip(names, v, strict=True)) if t else None
                for t, v in zip(self.taken.tolist(), values, strict=True)]


@runtime_checkable
class ColumnFastPath(FastPath, Protocol):
    """A :class:`FastPath` that also takes notifications as host indices."""

    def metric_columns(self, publishers: np.ndarray, offsets: np.ndarray,
                       receivers: np.ndarray, payload_bytes: int) -> MetricColumns:
        """The metrics of notification ``i``, published by host ``publishers[i]`` to the
        distinct hosts ``receivers[offsets[i]:offsets[i + 1]]`` (indices into
        ``topology.hosts``), as :meth:`FastPath.metrics` gives them."""
        ...


class KernelChoice:
    """The ``impl`` and ``implementations`` of a fast path whose kernels run compiled
    ("jit", numba) or interpreted; its constructor calls :meth:`choose_kernels`."""

    _impl: str
    _available: tuple[str, ...]

    def choose_kernels(self, impl: str, impls: Sequence[str], available: Sequence[str]) -> None:
        """Run implementation ``impl`` of ``impls`` (:func:`choose_impl`); ``available``:
        the implementations this machine has."""
        self._impl = choose_impl(impl, impls, available)
        self._available = tuple(available)

    @property
    def impl(self) -> str:
        """The implementation that runs: "jit" (numba) or "python"."""
        return self._impl

    @property
    def implementations(self) -> tuple[str, ...]:
        """The implementations available here (``using`` builds each)."""
        return self._available


def choose_impl(impl: str, impls: Sequence[str], available: Sequence[str]) -> str:
    """The kernel implementation a fast path runs: ``impl`` itself, or the first of
    ``available`` for ``"auto"``.

    Raises
    ------
    ValueError
        If ``impl`` is none of ``"auto"`` and ``impls``, or is ``"jit"`` where numba
        is missing (``available`` lacks it).
    """
    if impl not in ("auto", *impls):
        raise ValueError(f"impl must be auto, {' or '.join(impls)}; got {impl!r}")
    if impl == "jit" and "jit" not in available:
        raise ValueError("impl='jit' needs numba (pip install numba; STACKCAST_NO_JIT unset)")
    return available[0] if impl == "auto" else impl
