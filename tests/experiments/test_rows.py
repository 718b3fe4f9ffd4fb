"""One cell pipeline: the population protocol's defaults, the one notification
iterator and the one row builder (static and timed rows)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from experiments.cells.pipeline import run_cell
from experiments.cells.rows import ENGINE_METRICS, IDENTITY_COLUMNS, notification_row
from experiments.cells.schema import EXTRA_COLUMNS, ROWS, TIMED_ROWS
from experiments.cells.spec import parse_spec_dict
from experiments.cells.workload import CellWorkload, draw_notifications
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import PopulationBase, receiver_model
from strategies.base import NO_EXTRA_METRICS, ExtraMetrics, Strategy
from topologies.specs import load_topology

TOPO = "jellyfish:switches=16,degree=3,seed=1"


class _Bare(PopulationBase):
    """A population with only the required members."""

    publishers = ("h1", "h2")

    def receivers(self, publisher, rng):
        return frozenset({"h3"} if rng.random() < 0.5 else {"h4"})


def test_a_population_without_optional_features_gets_the_do_nothing_defaults():
    pop = _Bare()
    assert pop.at(7) is pop and pop.controller_view() is pop
    assert pop.stable("h1", 3) is None and pop.version is None and not pop.draws_events
    event, receivers = pop.draw("h1", 0, np.random.default_rng(5))
    assert event is None and receivers == pop.receivers("h1", np.random.default_rng(5))


def test_the_iterator_draws_publisher_then_receivers_from_the_run_generator():
    pop = _Bare()
    drawn = list(draw_notifications(CellWorkload(pop, 11), 8))
    assert [d.run for d in drawn] == list(range(8))
    for d in drawn:
        rng = child_rng(11, "notification", d.run)
        assert d.publisher == pop.publishers[int(rng.integers(2))]
        assert d.receivers == pop.receivers(d.publisher, rng)
        assert d.view is pop and d.stable is None and d.notification.event is None


@pytest.mark.parametrize("spec", ["uniform:percent=30", "frequency:subscribers=30",
                                  "replacement:percent=30,step=10", "clustered:churn=20",
                                  "content:subs=20,churn=1"])
def test_every_receiver_model_implements_the_population_protocol(spec):
    topology = load_topology(TOPO)
    pop = receiver_model(spec).population(topology, np.random.default_rng(3))
    assert isinstance(pop, PopulationBase)
    drawn = list(draw_notifications(CellWorkload(pop, 3), 3))
    assert all(d.publisher in pop.publishers for d in drawn)
    assert all(isinstance(d.view, PopulationBase) for d in drawn)
    if spec.startswith("content"):  # events decide the receivers; churn changes the view
        assert pop.draws_events and all(d.notification.event is not None for d in drawn)
        assert [d.view.version for d in drawn] == [0, 1, 2]
    if spec.startswith("replacement"):  # the run, not the call count, fixes the receivers
        assert all(d.stable is not None and d.stable <= d.receivers for d in drawn)
        assert pop.draw(drawn[2].publisher, 2, np.random.default_rng())[1] == drawn[2].receivers
    if spec.startswith("clustered"):
        assert pop.controller_view() is not pop


def test_extra_columns_are_the_extra_metrics_record_fields():
    names = [f.name for f in dataclasses.fields(ExtraMetrics)]
    assert list(EXTRA_COLUMNS) == names == ROWS.names[-len(names):]
    assert ROWS.field("stages_max").type == pa.int32()
    assert ROWS.field("lookup_latency_us").type == pa.float64()
    assert EXTRA_COLUMNS["link_false_positives"] == 0  # None (not measured) -> 0
    assert Strategy().extra_metrics(None, None, None, frozenset(), None) is NO_EXTRA_METRICS


def test_the_row_builder_gives_the_rows_columns_in_order():
    identity = {k: 1 if k in ("payload_bytes", "seed") else f"id-{k}" for k in IDENTITY_COLUMNS}
    metrics = {k: i for i, k in enumerate(ENGINE_METRICS)}
    row = notification_row(identity, run=4, publisher="h2", receivers=3, metrics=metrics,
                           state_entries=10, multicast_groups=2, control_writes=5,
                           extra=ExtraMetrics(tcam_bits=96, merge_ratio=0.5))
    assert list(row) == ROWS.names
    assert row["run"] == 4 and row["state_entries"] == 10 and row["control_writes"] == 5
    assert row["delay_worst_ms"] == metrics["delay_worst_ms"]
    assert (row["tcam_bits"], row["merge_ratio"], row["link_false_positives"]) == (96, 0.5, 0)
    pa.Table.from_pylist([row], schema=ROWS)  # every value fits its column


def test_static_and_timed_rows_share_identity_and_metric_columns():
    grid = {"topology": [TOPO], "strategy": ["unicast"], "receivers": ["uniform:percent=30"]}
    static = parse_spec_dict({"experiment": {"name": "t", "notifications": 4, "seeds": [1]},
                              "grid": grid}).cells()[0]
    timed = parse_spec_dict({"experiment": {"name": "t", "engine": "timed", "notifications": 4,
                                            "seeds": [1]},
                             "grid": grid,
                             "timed": {"rate_hz": 10.0, "receivers": "per-notification",
                                       "arrival": "periodic"}}).cells()[0]
    s_rows, t_rows = run_cell(static).to_pylist(), run_cell(timed).to_pylist()
    assert TIMED_ROWS.names[:len(ROWS)] == ROWS.names
    same = [c for c in ROWS.names if c not in ("cell_id", "seed", "delay_worst_ms")]
    assert len(s_rows) == len(t_rows) == 4
    for s, t in zip(s_rows, t_rows, strict=True):  # zero load: the engines agree
        assert {c: t[c] for c in same if c != "link_false_positives"} == \
            {c: s[c] for c in same if c != "link_false_positives"}
        assert t["link_false_positives"] == 0  # timed rows: only what the strategy measures
