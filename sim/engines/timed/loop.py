"""The SimPy environment of the timed engine: SimPy's own, with a tighter run loop.

:meth:`TimedEnvironment.run` is :meth:`simpy.Environment.run` with
:meth:`~simpy.Environment.step` inlined in its loop: the same events, popped in the
same order (SimPy's key: time, priority, event id) and run with the same
callbacks, the same stop at ``until`` and the same errors (an empty schedule
before ``until``, a failed event nobody defused). A loaded timed run pops
millions of events, most of them one pipeline pass each; a Python call per
event less is about a tenth of the engine's time (``stackcast bench timed``).
``step`` itself is unchanged, for callers that step by hand.

References
----------
SimPy 4.1 ``Environment.run`` / ``Environment.step``; shared/DESIGN.md "Engines".
"""

from __future__ import annotations

from heapq import heappop
from typing import Any

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import URGENT, Event, EventPriority


class TimedEnvironment(simpy.Environment):
    """:class:`simpy.Environment` whose :meth:`run` does not call :meth:`step` per event."""

    def run(self, until: Any = None) -> Any:
        """As :meth:`simpy.Environment.run` (numbers and events as ``until``)."""
        if until is not None:
            if not isinstance(until, Event):
                at = until if isinstance(until, int) else float(until)
                if at <= self.now:
                    raise ValueError(f"until ({at}) must be greater than the current "
                                     "simulation time")
                until = Event(self)
                until._ok = True
                until._value = None
                self.schedule(until, URGENT, at - self.now)
            elif until.callbacks is None:
                return until.value
            until.callbacks.append(StopSimulation.callback)
        try:
            self._loop()
        except StopSimulation as exc:
            return exc.args[0]
        except EmptySchedule:
            if until is not None:
                assert not until.triggered
                raise RuntimeError(f'No scheduled events left but "until" event was not '
                                   f"triggered: {until}") from None
        return None

    def _loop(self) -> None:
        """:meth:`step` until an exception ends the run (inlined; same effects)."""
        queue = self._queue
        while True:
            try:
                self._now, _, _, event = heappop(queue)
            except IndexError:
                raise EmptySchedule from None
            callbacks, event.callbacks = event.callbacks, None  # type: ignore[assignment]
            try:
                for callback in callbacks:
                    callback(event)
            except StopSimulation:
                event.callbacks = callbacks[callbacks.index(callback) + 1:]
                self.schedule(event, EventPriority(-1))
                raise
            if not event._ok and not hasattr(event, "_defused"):
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc
