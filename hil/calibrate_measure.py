"""Measuring switch visits on BMv2 for ``stackcast hil calibrate`` (issue 16).

Two BMv2 processes per strategy, both in hop mode (:class:`hil.hop.HopSwitch`):

* the *profiling* switch logs at level ``trace``; every visit runs on it
  once, with a quiescence window: its frames are compared byte for byte
  with the model's (per port, as multisets) and its pass counter with the
  model's passes, and its log lines give what BMv2 did
  (:func:`hil.bmv2_work.count_work`). Logging costs more than the work it
  logs, so this switch is never timed.
* the *timing* switch logs nothing and runs under ``SCHED_FIFO``
  (:class:`hil.bmv2.Bmv2Switch` ``realtime``). :class:`VisitTimer` sends a
  visit's frame and waits for as many frames as the model emits; the
  latency is the time from the frame's arrival at the switch's ingress
  interface to the last copy's arrival at its capture interface, both
  kernel timestamps (:mod:`hil.capture`), so the Python process's own
  scheduling does not count. Every timed send's frames are compared byte
  for byte again; a frame arriving after a visit's expected ones is charged
  to that visit.

A disagreement is never timed or fitted: it is returned with the first
differing byte (:func:`hil.compare.first_difference`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hil.bmv2_work import ProgramShape, Work, count_work
from hil.capture import Frame
from hil.compare import PortFrames, compare_switch, first_difference, port_frames
from hil.hop import Visit


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A visit whose frames or passes on BMv2 differ from the model's."""

    strategy: str
    notification: int
    switch: str
    #: "profile" (the checked run) or "timing" (a timed send)
    during: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "notification": self.notification,
                "switch": self.switch, "during": self.during, "detail": self.detail}


def describe_frames(expected: PortFrames, actual: PortFrames) -> str:
    """The ports whose frames differ and, for the first, the first differing byte."""
    ports = [p for p in sorted(set(expected) | set(actual))
             if +Counter(expected.get(p, ())) != +Counter(actual.get(p, ()))]
    if not ports:
        return ""
    p = ports[0]
    none: Counter[bytes] = Counter()
    return (f"port {p}: {first_difference(expected.get(p, none), actual.get(p, none))}"
            + (f" (ports differing: {ports})" if len(ports) > 1 else ""))


def _visit_detail(v: Visit) -> str:
    return f"in_port {v.in_port}, frame {v.frame.hex()}"


# -- profiling ------------------------------------------------------------------------


def read_log(path: Any, offset: int, settle_s: float = 0.01, max_s: float = 5.0) -> list[str]:
    """The lines appended to BMv2's log after ``offset``, once it stopped growing."""
    deadline = time.monotonic() + max_s
    size = -1
    while True:
        now = path.stat().st_size if path.exists() else 0
        if now == size or time.monotonic() > deadline:
            break
        size = now
        time.sleep(settle_s)
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace").splitlines()


def profile_visit(hop: Any, v: Visit, shape: ProgramShape, strategy: str
                  ) -> tuple[Work | None, Disagreement | None]:
    """Run ``v`` once on the trace-logging switch ``hop``: its work, or why it disagrees.

    A first disagreement is replayed once with the switch's long window (a
    late frame of a loaded machine is not a model error, as in ``hil validate``).
    """
    expected = port_frames(v.emits)
    entries = {t: len(e) for t, e in v.config.tables.items()}
    found: list = []
    for quiet in (None, hop.retry_quiet_s):
        if quiet is not None:
            time.sleep(quiet)
        log = hop.bmv2.log_path
        offset = log.stat().st_size if log.exists() else 0
        frames, passes = hop.run(v.in_port, v.frame, quiet)
        found = compare_switch(v.notification, v.switch, expected, frames, v.passes, passes,
                               _visit_detail(v))
        if not found:
            work = count_work(read_log(log, offset), shape, entries)
            if work.ingress != v.passes or work.transmitted != len(v.emits):
                raise RuntimeError(
                    f"BMv2's log of {strategy} notification {v.notification} at {v.switch} "
                    f"shows {work.ingress} ingress passes and {work.transmitted} frames sent, "
                    f"the switch {passes} passes and {len(v.emits)} frames: the log does not "
                    "belong to this visit")
            return work, None
    detail = "; ".join(f"{m.what} differ" + (f" at port {m.port}" if m.port is not None else "")
                       + f": {m.detail}" if m.what == "frames" else
                       f"passes differ: model {m.expected}, bmv2 {m.actual}" for m in found)
    return None, Disagreement(strategy, v.notification, v.switch, "profile", detail)


# -- timing ---------------------------------------------------------------------------


class FrameSource(Protocol):
    """What :class:`VisitTimer` needs of a capture (:class:`hil.capture.Capture`)."""

    def send(self, key: int, frame: bytes) -> None: ...

    def pending(self) -> list[Frame[int]]: ...

    def collect_count(self, count: int, max_s: float) -> list[Frame[int]]: ...


@dataclass
class VisitTimer:
    """Times visits on one switch: frames sent into and read back from ``capture``
    (the hosts' ends of its veths), arrivals seen on ``tap`` (the switch's ends).

    ``late`` collects, per visit key, the frames that arrived after a visit
    was complete (they show up when the next visit starts).
    """

    capture: FrameSource
    tap: FrameSource
    max_s: float = 10.0
    late: dict[Any, int] = field(default_factory=dict)
    _last: Any = None

    def _charge_late(self) -> None:
        stale = [f for f in self.capture.pending() if not f.outgoing]
        self.tap.pending()
        if stale and self._last is not None:
            self.late[self._last] = self.late.get(self._last, 0) + len(stale)

    def finish(self, quiet_s: float) -> None:
        """After the last send of a group: wait ``quiet_s`` and charge late frames."""
        time.sleep(quiet_s)
        self._charge_late()
        self._last = None

    def time(self, key: Any, v: Visit, expected: PortFrames) -> tuple[float | None, str]:
        """Send ``v``'s frame once: (latency in seconds, "") or (None, why it disagrees)."""
        self._charge_late()
        self._last = key
        self.capture.send(v.in_port, v.frame)
        got = [f for f in self.capture.collect_count(len(v.emits), self.max_s)
               if not f.outgoing]
        frames = port_frames((f.key, f.data) for f in got)
        if frames != expected:
            return None, describe_frames(expected, frames)
        arrivals = [f.stamp_s for f in self.tap.pending()
                    if not f.outgoing and f.key == v.in_port and f.data == v.frame]
        if len(arrivals) != 1:
            return None, (f"the sent frame was seen {len(arrivals)} times arriving on port "
                          f"{v.in_port}")
        return max(f.stamp_s for f in got) - arrivals[0], ""


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (linear interpolation, as numpy's default)."""
    if not values:
        raise ValueError("quantile of no values")
    if not 0 <= q <= 1:
        raise ValueError(f"q must be in [0, 1], got {q}")
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def time_round(timer: VisitTimer, groups: Sequence[tuple[Any, Sequence[tuple[Any, Visit]]]],
               load: Callable[[Any], None], reps: int, latencies: dict[Any, list[float]],
               failed: dict[Any, str], quiet_s: float = 0.02,
               tick: Callable[[int], None] = lambda n: None) -> None:
    """One round on one switch: for each (configuration, visits) group, install it
    (``load``) and send every visit ``reps`` times, visits interleaved.

    Latencies go to ``latencies[key]``; a visit that disagrees once goes to
    ``failed[key]`` and is not sent again; frames arriving after a visit was
    complete are counted in ``timer.late`` (checked ``quiet_s`` after each group).
    """
    for config, members in groups:
        load(config)
        expected = {key: port_frames(v.emits) for key, v in members}
        for _ in range(reps):
            for key, v in members:
                if key in failed:
                    continue
                latency, why = timer.time(key, v, expected[key])
                if latency is None:
                    failed[key] = why
                else:
                    latencies.setdefault(key, []).append(latency)
            tick(len(members))
        timer.finish(quiet_s)
