"""``stackcast deliver --workload``: a few notifications of one ad-hoc cell, in full.

The notifications, their publishers, receivers and installed states come from
the one cell pipeline (:func:`experiments.cells.pipeline.cell_notifications`
over :func:`experiments.cells.workload.draw_notifications`), so
``stackcast deliver --workload W --seed S`` sends the first notifications of
the ``stackcast run`` cell with the same topology, receiver model ``W``, seed
``S`` and strategy point, and its figures are that cell's row figures. Each
notification runs on the pass-by-pass reference engine
(:func:`sim.engines.static.run_notification`): the per-notification document
(:meth:`sim.dataplanes.delivery.Delivery.to_json`) needs its links and
switches, which a fast path does not keep; the property test of the fast
paths (``tests/sim/test_fast_paths.py``) holds the two engines' figures equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from experiments.cells.pipeline import CellNotification, cell_notifications, cell_setup
from experiments.cells.spec import Cell
from experiments.cells.workload import cell_workload
from sim.dataplanes.caches import Caches
from sim.dataplanes.delivery import Delivery, row_metrics
from sim.engines.static import run_notification
from topologies.model import Topology
from topologies.registry import SpecError

#: The figures of :meth:`WorkloadDelivery.mean`, in order (``receivers`` and
#: ``state_entries`` beside the row metrics of the same names).
MEAN_KEYS = ("receivers", "header_entries", "header_bytes", "delivered", "false_positives",
             "false_negatives", "duplicates", "frames", "bytes", "state_entries",
             "delay_worst_ms")


@dataclass(frozen=True, slots=True)
class DeliveredNotification:
    """One notification of the cell and what the reference engine made of it."""

    item: CellNotification
    delivery: Delivery

    def figures(self) -> dict[str, float]:
        """The :data:`MEAN_KEYS` figures of this notification."""
        metrics = row_metrics(self.delivery, link_waste=False)
        metrics["receivers"] = len(self.item.receivers)
        metrics["state_entries"] = self.item.state.entries
        return {k: metrics[k] for k in MEAN_KEYS}


@dataclass(frozen=True, slots=True)
class WorkloadDelivery:
    """The notifications of one ad-hoc cell, delivered.

    Attributes
    ----------
    cell : Cell
        The cell (its ``seed`` is ``--seed``, ``notifications`` is ``--notifications``).
    topology : Topology
        The cell's topology, as built once for all notifications.
    notifications : tuple of DeliveredNotification
        In draw order.
    """

    cell: Cell
    topology: Topology
    notifications: tuple[DeliveredNotification, ...]

    def mean(self) -> dict[str, float]:
        """The mean of every :data:`MEAN_KEYS` figure over the notifications."""
        n = len(self.notifications)
        figures = [d.figures() for d in self.notifications]
        return {k: sum(f[k] for f in figures) / n for k in MEAN_KEYS}

    def to_json(self) -> dict[str, Any]:
        """The ``stackcast deliver --workload --json`` document: the cell's
        names, one :meth:`Delivery.to_json <sim.dataplanes.delivery.Delivery.to_json>`
        document per notification and the ``mean`` figures."""
        return {
            "strategy": self.cell.strategy,
            "topology": self.topology.name,
            "workload": self.cell.receivers,
            "seed": self.cell.seed,
            "notifications": [d.delivery.to_json(self.topology, self.cell.strategy,
                                                 d.item.state)
                              for d in self.notifications],
            "mean": {"notifications": len(self.notifications), **self.mean()},
        }

    def lines(self) -> list[str]:
        """The text report: a title, one line per notification and the mean line."""
        c = self.cell
        out = [f"{c.strategy} on {self.topology.name}, workload {c.receivers} (seed {c.seed}): "
               f"{len(self.notifications)} notification(s)"]
        for d in self.notifications:
            out.append(_line(f"#{d.item.run} {d.item.notification.publisher}", d.figures(), "d"))
        out.append(_line("mean", self.mean(), ".1f"))
        return out


def _line(label: str, f: dict[str, float], fmt: str) -> str:
    def n(key: str) -> str:
        return format(f[key] if fmt == ".1f" else int(f[key]), fmt)

    return (f"  {label} -> {n('receivers')} receivers: header {n('header_entries')} entries, "
            f"{n('header_bytes')} B; delivered {n('delivered')}, FP {n('false_positives')}, "
            f"FN {n('false_negatives')}, duplicates {n('duplicates')}; {n('frames')} frames, "
            f"{n('bytes')} B on links; state {n('state_entries')} entries; worst delay "
            f"{f['delay_worst_ms']:.3f} ms")


def deliver_workload(cell: Cell, publisher: str | None = None,
                     caches: Caches | None = None) -> WorkloadDelivery:
    """Deliver the notifications of ``cell`` one by one, in full.

    Parameters
    ----------
    cell : Cell
        An ad-hoc static cell (topology, strategy point, receiver model,
        payload, seed, number of notifications).
    publisher : str, optional
        Send only from this publisher of the workload (default: the drawn ones).
    caches : Caches, optional
        As in :func:`experiments.cells.pipeline.cell_rows` (default: a fresh one).

    Raises
    ------
    SpecError
        If the strategy cannot run on the topology or workload
        (:meth:`strategies.base.Strategy.check_applicable`, asked before any
        install), or ``publisher`` is not one of the workload's publishers.
    """
    topology, strategy, delays = cell_setup(cell)
    caches = caches if caches is not None else Caches()
    strategy.use_caches(caches)
    workload = cell_workload(cell, topology, caches)
    population = workload.population
    if publisher is not None and publisher not in population.publishers:
        pubs = population.publishers
        shown = ", ".join(pubs[:8]) + (f", ... ({len(pubs)} in all)" if len(pubs) > 8 else "")
        raise SpecError(f"{publisher!r} is not a publisher of workload {cell.receivers!r} "
                        f"on {topology.name!r} (publishers: {shown})")
    strategy.check_applicable(topology, population.at(0))
    delivered = []
    for item in cell_notifications(cell, topology, strategy, caches, workload=workload,
                                   publisher=publisher):
        d = run_notification(topology, strategy, item.state, item.notification, item.receivers,
                             item.payload, delays)
        delivered.append(DeliveredNotification(item, d))
    return WorkloadDelivery(cell, topology, tuple(delivered))
