"""The SimPy environment of the timed engine: SimPy's own, with a tighter run loop.

:meth:`TimedEnvironment.run` is :meth:`simpy.Environment.run` with
:meth:`~simpy.Environment.step` inlined in its loop: the same events, popped in the
same order (SimPy's key: time, priority, event id) and run with the same
callbacks, the same stop at ``until`` and the same errors (an empty schedule
before ``until``, a failed event nobody defused).

The lane. Most events of a loaded run are pipeline pass completions, scheduled
``service`` after the pass that precedes them, and ``service`` is usually one
constant: so they are scheduled in the order they come due. Such an entry goes
to :attr:`TimedEnvironment.lane`, a FIFO kept sorted by SimPy's key, instead of
SimPy's binary heap (:meth:`~sim.engines.timed.switch.Pipeline._schedule`); an entry
that would come due before the lane's last one goes to the heap as before. The next
event is the smaller of the two heads, so the order of events is SimPy's, every
entry still takes its event id from SimPy's counter (the event count is
unchanged), and the heap keeps only the other events (cheaper to pop: SimPy's
heap costs more per event the more it holds). A lane entry carries the pipeline
instead of an event with a list of callbacks, and the loop completes its plain
recirculations itself (the commonest event: one pass spawns the next, no copy).

References
----------
SimPy 4.1 ``Environment.run`` / ``Environment.step``; shared/DESIGN.md "Engines".
"""

from __future__ import annotations

from collections import deque
from heapq import heappop
from typing import Any

import simpy
from simpy.core import EmptySchedule, Infinity, SimTime, StopSimulation
from simpy.events import NORMAL, URGENT, Event, EventPriority

#: A lane entry: SimPy's key (time, NORMAL, event id) and the pipeline
#: (:class:`~sim.engines.timed.switch.Pipeline`) whose head pass completes then.
LaneEntry = tuple[SimTime, EventPriority, int, Any]


class TimedEnvironment(simpy.Environment):
    """:class:`simpy.Environment` with a lane (see the module) and a :meth:`run` that
    does not call :meth:`step` per event."""

    def __init__(self, initial_time: SimTime = 0) -> None:
        super().__init__(initial_time)
        #: entries in SimPy's order, each due no earlier than the one before
        self.lane: deque[LaneEntry] = deque()

    def pending(self) -> int:
        """Events scheduled and not yet processed (heap and lane)."""
        return len(self._queue) + len(self.lane)

    def peek(self) -> SimTime:
        """As :meth:`simpy.Environment.peek` (the lane included)."""
        times = [q[0][0] for q in (self._queue, self.lane) if q]
        return min(times) if times else Infinity

    def step(self) -> None:
        """As :meth:`simpy.Environment.step` (the lane included)."""
        lane, queue = self.lane, self._queue
        if lane and (not queue or lane[0] < queue[0]):
            self._now, _, _, pipe = lane.popleft()
            pipe._pass_done(self._now)
        else:
            super().step()

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
        """:meth:`step` until an exception ends the run (inlined; same effects).

        A lane entry is a pipeline's pass completion: its plain recirculations run
        here (:meth:`Pipeline._pass_done <sim.engines.timed.switch.Pipeline._pass_done>`,
        first branch, with :meth:`~sim.engines.timed.switch.Pipeline._next` when the
        next pass is not a frame's first; the same effects), the rest in the pipeline.
        """
        queue, lane = self._queue, self.lane
        popleft, append = lane.popleft, lane.append
        eid = self._eid
        normal = NORMAL
        while True:
            if lane and (not queue or lane[0] < queue[0]):
                now, _, _, pipe = popleft()
                self._now = now
                jobs = pipe.queue
                pkt, j = jobs.popleft()
                plain = pkt.plains[j]
                if plain >= 0 and len(jobs) < pipe._room:
                    pipe._recirculated[0] += 1
                    jobs.append((pkt, plain))
                    nxt = jobs[0][0]
                    if nxt.plan is not None:
                        at = now + nxt.service
                        if not lane or at >= lane[-1][0]:
                            append((at, normal, next(eid), pipe))
                        else:
                            pipe._schedule(at)
                    else:
                        pipe._next(now)
                else:
                    pipe._completed(now, pkt, j)
                continue
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
