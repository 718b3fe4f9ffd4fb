"""Compare what BMv2 did with what the reference model predicted (issue 7).

Pure: no BMv2, no sockets. A *switch visit* is one switch handling one
notification: in hop mode one arriving packet, in network mode everything
the switch did for the notification. It matches when the frames it emitted
on every port (exact bytes, as multisets) and its pipeline passes (the
``pass_counter`` delta against ``PipelineResult.passes``) equal the model's.
In network mode each notification's delivered hosts (with copy counts) are
compared too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Frames per port: port -> multiset of exact frame bytes.
PortFrames = Mapping[int, Counter[bytes]]


def port_frames(frames: Iterable[tuple[int, bytes]]) -> dict[int, Counter[bytes]]:
    """Group ``(port, frame bytes)`` pairs into per-port multisets."""
    out: dict[int, Counter[bytes]] = {}
    for port, data in frames:
        out.setdefault(port, Counter())[data] += 1
    return out


def _hex(frames: Counter[bytes]) -> list[str]:
    return sorted(f.hex() for f in frames.elements())


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def first_difference(want: Counter[bytes], got: Counter[bytes]) -> str:
    """Where two frame multisets (one port) first differ, as one line.

    The first model frame (in byte order) without an equal BMv2 frame is
    paired with the unmatched BMv2 frame sharing its longest prefix, and the
    first byte where they differ is named; "" when the multisets are equal.
    """
    missing, extra = sorted((want - got).elements()), sorted((got - want).elements())
    if not missing and not extra:
        return ""
    if not missing:
        return f"bmv2 sent an unexpected frame ({len(extra[0])} bytes) {extra[0].hex()}"
    frame = missing[0]
    if not extra:
        return f"model frame ({len(frame)} bytes) not sent by bmv2"
    other = max(extra, key=lambda e: _common_prefix(frame, e))
    at = _common_prefix(frame, other)
    if at == min(len(frame), len(other)):
        return (f"first difference at byte {at}: model frame has {len(frame)} bytes, "
                f"bmv2 frame {len(other)}")
    return (f"first difference at byte {at}: model 0x{frame[at]:02x}, bmv2 0x{other[at]:02x} "
            f"(frames of {len(frame)} and {len(other)} bytes)")


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One disagreement. ``what`` is "frames", "passes" or "delivered";
    ``port`` is None for passes and deliveries."""

    notification: int
    switch: str | None
    port: int | None
    what: str
    expected: Any
    actual: Any
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"notification": self.notification, "switch": self.switch, "port": self.port,
                "what": self.what, "expected": self.expected, "actual": self.actual,
                "detail": self.detail}

    def describe(self) -> str:
        where = f"notification {self.notification}"
        if self.switch is not None:
            where += f", switch {self.switch}"
        if self.port is not None:
            where += f", port {self.port}"
        text = f"{where}: {self.what} differ\n    model: {self.expected}\n    bmv2 : {self.actual}"
        return text + (f"\n    ({self.detail})" if self.detail else "")


def compare_switch(notification: int, switch: str, expected: PortFrames, actual: PortFrames,
                   expected_passes: int, actual_passes: int, detail: str = ""
                   ) -> list[Mismatch]:
    """Mismatches of one switch visit (empty when it matches)."""
    out = []
    for port in sorted(set(expected) | set(actual)):
        want, got = Counter(expected.get(port, ())), Counter(actual.get(port, ()))
        if +want != +got:
            extra, missing = got - want, want - got
            note = (f"bmv2 sent {sum(extra.values())} unexpected, {sum(missing.values())} "
                    f"missing; {first_difference(want, got)}")
            out.append(Mismatch(notification, switch, port, "frames", _hex(want), _hex(got),
                                "; ".join(x for x in (detail, note) if x)))
    if expected_passes != actual_passes:
        out.append(Mismatch(notification, switch, None, "passes", expected_passes,
                            actual_passes, detail))
    return out


def compare_delivered(notification: int, expected: Mapping[str, int],
                      actual: Mapping[str, int]) -> list[Mismatch]:
    """A mismatch when the hosts reached (with copy counts) differ."""
    want = {h: c for h, c in expected.items() if c}
    got = {h: c for h, c in actual.items() if c}
    if want == got:
        return []
    return [Mismatch(notification, None, None, "delivered", dict(sorted(want.items())),
                     dict(sorted(got.items())))]


@dataclass
class Report:
    """Totals and every mismatch of a validation run.

    ``match_rate`` = matching checks / checks, where the checks are the switch
    visits plus (network mode) one delivery check per notification; 1.0 when
    everything agrees.
    """

    mode: str
    topology: str
    strategy: str
    program: str
    notifications: int = 0
    switch_visits: int = 0
    visits_matched: int = 0
    delivery_checks: int = 0
    deliveries_matched: int = 0
    frames: int = 0
    passes: int = 0
    seconds: float = 0.0
    #: Checks repeated with a long quiescence window after a first disagreement.
    retries: int = 0
    #: What differed on the first attempt of the retried checks (kind -> count):
    #: "missing frames", "unexpected frames", "passes", "delivered".
    retry_reasons: Counter[str] = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)

    def retried(self, first: list[Mismatch]) -> None:
        """Count a check replayed after its first attempt disagreed with ``first``."""
        self.retries += 1
        for m in first:
            if m.what == "frames":
                want, got = Counter(m.expected), Counter(m.actual)
                if want - got:
                    self.retry_reasons["missing frames"] += 1
                if got - want:
                    self.retry_reasons["unexpected frames"] += 1
            else:
                self.retry_reasons[m.what] += 1

    def add_visit(self, mismatches: list[Mismatch]) -> None:
        self.switch_visits += 1
        self.visits_matched += not mismatches
        self.mismatches += mismatches

    def add_delivery(self, mismatches: list[Mismatch]) -> None:
        self.delivery_checks += 1
        self.deliveries_matched += not mismatches
        self.mismatches += mismatches

    @property
    def match_rate(self) -> float:
        checks = self.switch_visits + self.delivery_checks
        return (self.visits_matched + self.deliveries_matched) / checks if checks else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "topology": self.topology, "strategy": self.strategy,
            "program": self.program, "notifications": self.notifications,
            "switch_visits": self.switch_visits, "visits_matched": self.visits_matched,
            "delivery_checks": self.delivery_checks,
            "deliveries_matched": self.deliveries_matched,
            "frames": self.frames, "passes": self.passes, "retries": self.retries,
            "retry_reasons": dict(sorted(self.retry_reasons.items())),
            "match_rate": self.match_rate, "seconds": round(self.seconds, 3),
            "mismatches": [m.to_json() for m in self.mismatches],
        }

    def format_text(self) -> str:
        lines = [
            f"{self.strategy} on {self.topology}, {self.mode} mode ({self.program}): "
            f"{self.notifications} notifications, {self.switch_visits} switch visits, "
            f"{self.frames} frames, {self.passes} passes, {self.seconds:.1f} s "
            f"({self.retries} checks retried)",
            f"  switch visits matching: {self.visits_matched}/{self.switch_visits}",
        ]
        if self.delivery_checks:
            lines.append(f"  deliveries matching: {self.deliveries_matched}/"
                         f"{self.delivery_checks}")
        lines.append(f"  match rate {self.match_rate:.4f}, {len(self.mismatches)} mismatches")
        lines += ["  " + m.describe().replace("\n", "\n  ") for m in self.mismatches]
        return "\n".join(lines)
