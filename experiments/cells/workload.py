"""A cell's workload: its population and the one iterator over its notifications.

:func:`draw_notifications` is the only place that draws a cell's
notifications. The static rows (:func:`experiments.cells.pipeline.cell_notifications`,
reference engine and fast-path batch alike), the timed engine's
per-notification mode (:mod:`experiments.cells.timed`), the
hardware-in-the-loop checks and ``stackcast deliver --workload``
(:mod:`experiments.cells.deliver`) therefore see the same publishers, events
and receivers.

Draws: notification ``run`` takes ``child_rng(workload_seed,
"notification", run)``; the publisher comes first (uniform over the
population's publishers), then :meth:`Population.draw
<sim.workloads.receivers.Population.draw>` of the population as it stands
before the run (:meth:`~sim.workloads.receivers.Population.at`).
A population that batches these draws
(:meth:`~sim.workloads.receivers.Population.draw_runs`, the uniform model)
gives them for every run at once, as host indices (:func:`draw_runs`); the
draws are the same numbers (``tests/experiments/test_cell_columns.py``).
:func:`shared_workload` and :func:`shared_draws` keep a cell's workload and a small
cell's drawn notifications for the other cells of the same workload
(``tests/experiments/test_shared_cells.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from experiments.cells.spec import Cell
from sim.dataplanes.caches import Caches, Identity
from sim.dataplanes.packet import Notification
from sim.dataplanes.seeds import RunStreams, child_rng, child_rngs
from sim.workloads.receivers import DrawnRuns, Population, receiver_model
from topologies.model import Topology


@dataclass(frozen=True, slots=True)
class CellWorkload:
    """The population of one cell and the seed of its workload draws.

    Attributes
    ----------
    population : Population
        Drawn from ``child_rng(seed, "population")``.
    seed : int
        The cell's workload seed (:meth:`Cell.workload_seed_for`); also the
        root of the strategy's installation draws (``Knowledge.seed``).
    """

    population: Population
    seed: int


def cell_workload(cell: Cell, topology: Topology, caches: Caches | None = None) -> CellWorkload:
    """The population of ``cell`` on ``topology`` and its workload seed.

    ``caches``: where populations that share draws across cells keep them
    (the clustered plans of nested churn levels); default: a fresh object.
    """
    model = receiver_model(cell.receivers)
    seed = cell.workload_seed_for(model)
    return CellWorkload(model.population(topology, child_rng(seed, "population"), caches=caches),
                        seed)


@dataclass(frozen=True, slots=True)
class DrawnNotification:
    """One notification of a cell as the workload draws it.

    Attributes
    ----------
    notification : Notification
        Its id is the run number; ``event`` is None unless the population
        draws events.
    receivers : frozenset of str
        The intended receivers.
    view : Population
        The population as it stands before this run (``population.at(run)``;
        the population itself unless its content changes during the cell).
    stable : frozenset of str or None
        The publisher's stable subscribers, when the population knows them.
    """

    notification: Notification
    receivers: frozenset[str]
    view: Population
    stable: frozenset[str] | None

    @property
    def run(self) -> int:
        return self.notification.notification_id

    @property
    def publisher(self) -> str:
        return self.notification.publisher


#: Notifications per :func:`draw_runs` batch of :func:`draw_notifications`.
RUNS_PER_BATCH = 4096


def draw_runs(workload: CellWorkload, count: int, publisher: str | None = None, start: int = 0
              ) -> DrawnRuns | None:
    """Notifications ``start`` .. ``start + count - 1`` of ``workload`` at once, as host
    indices, or None when its population does not batch its draws (then use
    :func:`draw_notifications`).

    The same publishers and receivers as :func:`draw_notifications` (which
    uses this where it can); such a population stays put during the cell, so
    every notification's view is the population and none has stable
    subscribers. ``publisher`` as in :func:`draw_notifications`.
    """
    return workload.population.draw_runs(
        RunStreams(workload.seed, "notification", count, start), publisher)


def draw_notifications(workload: CellWorkload, count: int, publisher: str | None = None
                       ) -> Iterator[DrawnNotification]:
    """The first ``count`` notifications of ``workload``, in order (drawn lazily).

    ``publisher``: every notification comes from this publisher of the
    population instead of a drawn one (``stackcast deliver --publisher``); the
    publisher is still drawn and discarded, so the rest of each run's stream
    is unchanged. Default None: the cells' draws.
    """
    population, seed = workload.population, workload.seed
    start = 0
    batch = draw_runs(workload, min(count, RUNS_PER_BATCH), publisher)
    while batch is not None:  # the population draws its runs in batches
        for i in range(len(batch)):
            note = Notification(notification_id=start + i, publisher=batch.publisher(i))
            yield DrawnNotification(note, batch.receiver_set(i), population, None)
        start += len(batch)
        if start >= count:
            return
        batch = draw_runs(workload, min(count - start, RUNS_PER_BATCH), publisher, start)
    if start:
        raise RuntimeError(f"{type(population).__name__}.draw_runs drew runs below {start} "
                           "but not the next ones")
    publishers = population.publishers
    # child_rng(seed, "notification", run) of every run, seeded in one batch
    for run, rng in enumerate(child_rngs(seed, "notification", count)):
        drawn = publishers[int(rng.integers(len(publishers)))]
        sender = drawn if publisher is None else publisher
        view = population.at(run)
        event, receivers = view.draw(sender, run, rng)
        yield DrawnNotification(Notification(notification_id=run, publisher=sender, event=event),
                                receivers, view, population.stable(sender, run))


#: The most notifications of a cell whose draws :func:`shared_draws` keeps.
SHARED_DRAWS_MAX = 4096


def shared_workload(cell: Cell, topology: Topology, caches: Caches) -> CellWorkload:
    """:func:`cell_workload`, kept in ``caches.cell_draws`` for the cells of the same
    workload.

    A cell's workload is fixed by its topology, its receiver spec and its workload
    seed (:meth:`Cell.workload_seed_for`): cells that differ in strategy or
    parameters only (a ch. 6 family: nine strategies x eight rule budgets on one
    seed) draw the same population, so they share one population object.
    """
    model = receiver_model(cell.receivers)
    seed = cell.workload_seed_for(model)
    return caches.cell_draws.get_or_make(  # type: ignore[no-any-return]
        ("workload", Identity(topology), cell.receivers, seed),
        lambda: cell_workload(cell, topology, caches))


def shared_draws(cell: Cell, workload: CellWorkload, caches: Caches
                 ) -> tuple[DrawnNotification, ...] | None:
    """Every :func:`draw_notifications` of ``workload`` for ``cell`` (at most
    :data:`SHARED_DRAWS_MAX` notifications, else None: draw lazily), kept in
    ``caches.cell_draws`` for the other cells of the same workload
    (:func:`shared_workload`: the same object), which draw the same (immutable)
    notifications."""
    if cell.notifications > SHARED_DRAWS_MAX:
        return None
    return caches.cell_draws.get_or_make(  # type: ignore[no-any-return]
        ("draws", Identity(workload), cell.notifications),
        lambda: tuple(draw_notifications(workload, cell.notifications)))
