"""What a timed run reports, as one comparable value (for reference-equality tests)."""

from __future__ import annotations

import dataclasses

from sim.engines.timed.engine import TimedResult


def fields(obj: object) -> dict[str, object]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}  # type: ignore[arg-type]


def summary(r: TimedResult) -> dict[str, object]:
    """Everything a run reports, for equality."""
    rec = r.recorder
    return {
        "t_end": r.t_end, "events": r.events, "queues": r.queues, "trace": r.trace,
        "notes": {nid: fields(n) for nid, n in rec.notes.items()},
        "links": rec.links, "drops": rec.drops, "hops": rec.hops,
        "recirc": rec.recirc_executed, "dataplane_drops": rec.dataplane_drops,
        "switches": {s: fields(c) for s, c in rec.switches.items()},
    }
