"""One implementation of the per-notification counts for the static and the timed engine.

:class:`sim.dataplanes.delivery.DeliveryCounts` counts false positives,
false negatives, duplicates and switch totals for both the static engine's
:class:`Delivery` and the timed engine's :class:`NoteRecord` (seed 000 §3.5
metrics; the zero-load agreement of the two engines is
``tests/sim/test_timed_engine.py``).
"""

from __future__ import annotations

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import Delivery, SwitchCount, SwitchTotal, row_metrics
from sim.dataplanes.packet import Encoding, Notification
from sim.dataplanes.pipeline import PipelineResult
from sim.engines.timed.engine import NoteRecord, Recorder

RECEIVERS = frozenset({"h1", "h2", "h3"})
DELIVERED = {"h1": 1, "h2": 3, "h9": 2}  # h3 missed, h9 not a receiver, 2 + 1 duplicates
RUNS = {"s1": [PipelineResult(passes=3, recirculations=2, lookups=5, emitted=(),
                              circulations_simplified=1)] * 2,
        "s2": [PipelineResult(passes=1, recirculations=0, lookups=2, emitted=())]}


def counted(target: dict[str, SwitchCount]) -> dict[str, SwitchCount]:
    for sw, results in RUNS.items():
        for result in results:
            target.setdefault(sw, SwitchCount()).add(result)
    return target


def test_switch_count_adds_every_field_of_a_pipeline_run():
    c = SwitchCount()
    for result in RUNS["s1"]:
        c.add(result)
    assert c == SwitchCount(passes=6, recirculations=4, lookups=10, circulations_simplified=2)


def test_static_and_timed_records_count_the_same():
    d = Delivery(publisher="h0", receivers=RECEIVERS, encoding=Encoding(()),
                 delivered=dict(DELIVERED), switches=counted({}))
    note = NoteRecord(nid=0, notification=Notification(0, "h0"), receivers=RECEIVERS,
                      encoded_for=RECEIVERS, view_state=ControlState(switches={}),
                      delivered=dict(DELIVERED))
    recorder = Recorder()
    recorder.publish(0.0, note)
    for sw, results in RUNS.items():  # the timed engine aggregates as the runs stream in
        for result in results:
            recorder.processed(sw, result, note.nid)
    expected = {"false_positives": 1, "false_negatives": 1, "duplicates": 3, "passes": 7,
                "recirculations": 4, "lookups": 12, "circulations_simplified": 2,
                "max_switch_passes": 6}
    for record in (d, note):
        assert {k: getattr(record, k) for k in expected} == expected
    assert note.switch_passes == {"s1": 6, "s2": 1}
    assert {k: row_metrics(d, link_waste=False)[k] for k in expected} == expected


def test_switch_totals_are_read_only_class_attributes():
    assert isinstance(Delivery.passes, SwitchTotal)
    d = Delivery(publisher="h0", receivers=RECEIVERS, encoding=Encoding(()))
    assert (d.passes, d.max_switch_passes) == (0, 0)
