"""The result table: one row per notification, declared once.

The Spark runner derives its ``StructType`` from :data:`ROWS` (see
``experiments/runners/spark.py``), so both engines write the same columns.
"""

from __future__ import annotations

import dataclasses
import typing

import pyarrow as pa

from strategies.base import ExtraMetrics

#: Arrow types of the :class:`~strategies.base.ExtraMetrics` fields narrower
#: than their Python type's default (int -> int64, float -> float64).
_NARROW = {"stages_max": pa.int32()}


def _extra_fields() -> list[pa.Field]:
    """One non-null column per :class:`~strategies.base.ExtraMetrics` field, in order
    (what each means: the record's docstring)."""
    hints = typing.get_type_hints(ExtraMetrics)
    out = []
    for f in dataclasses.fields(ExtraMetrics):
        kinds = set(typing.get_args(hints[f.name]) or (hints[f.name],)) - {type(None)}
        if kinds not in ({int}, {float}):
            raise TypeError(f"ExtraMetrics.{f.name}: columns are int or float, got {kinds}")
        wide = pa.float64() if kinds == {float} else pa.int64()
        out.append(pa.field(f.name, _NARROW.get(f.name, wide), nullable=False))
    return out


_EXTRA_FIELDS = _extra_fields()

ROWS = pa.schema([
    pa.field("experiment", pa.string(), nullable=False),
    pa.field("cell_id", pa.string(), nullable=False),
    pa.field("strategy", pa.string(), nullable=False),
    pa.field("params", pa.string(), nullable=False),          # canonical JSON
    pa.field("topology", pa.string(), nullable=False),
    pa.field("receivers_model", pa.string(), nullable=False),
    pa.field("payload_bytes", pa.int32(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("run", pa.int32(), nullable=False),
    pa.field("publisher", pa.string(), nullable=False),
    pa.field("receivers", pa.int32(), nullable=False),
    pa.field("delivered", pa.int32(), nullable=False),
    pa.field("false_positives", pa.int32(), nullable=False),
    pa.field("false_negatives", pa.int32(), nullable=False),
    pa.field("duplicates", pa.int32(), nullable=False),
    pa.field("header_entries", pa.int32(), nullable=False),
    pa.field("header_bytes", pa.int32(), nullable=False),
    pa.field("packets_sent", pa.int32(), nullable=False),
    pa.field("frames", pa.int64(), nullable=False),
    pa.field("bytes", pa.int64(), nullable=False),
    pa.field("passes", pa.int64(), nullable=False),
    pa.field("recirculations", pa.int64(), nullable=False),
    pa.field("lookups", pa.int64(), nullable=False),
    pa.field("circulations_simplified", pa.int64(), nullable=False),
    pa.field("max_switch_passes", pa.int32(), nullable=False),
    pa.field("state_entries", pa.int64(), nullable=False),
    pa.field("multicast_groups", pa.int64(), nullable=False),
    # P4Runtime writes (sim.dataplanes.control_state.diff) from the previous notification's state in
    # this cell to this one's; 0 for the first notification and for reused state.
    pa.field("control_writes", pa.int64(), nullable=False),
    pa.field("delay_worst_ms", pa.float64(), nullable=False),
    *_EXTRA_FIELDS,
])

#: Strategy-defined columns (the fields of :class:`strategies.base.ExtraMetrics`)
#: and the value of a strategy that does not report them.
EXTRA_COLUMNS: dict[str, int | float] = {
    name: 0 if value is None else value
    for name, value in dataclasses.asdict(ExtraMetrics()).items()}

# Columns that identify a parameter point (everything but seed and run).
POINT_COLUMNS = ["experiment", "strategy", "params", "topology", "receivers_model",
                 "payload_bytes"]
# Numeric columns worth aggregating.
METRIC_COLUMNS = [f.name for f in ROWS if f.name not in POINT_COLUMNS
                  and f.name not in ("cell_id", "seed", "run", "publisher")]

# The timed engine's rows (``[experiment] engine = "timed"``): every ROWS column,
# in the same order and with the same meaning per notification (run = the
# notification id; receivers and the false positives/negatives count against
# the true subscribers when it was published; delay_worst_ms = latency_last_ms,
# the timed worst-case delay), then timed columns. The "cell_" columns are
# the same on every row of a cell (run-level metrics).
TIMED_ROWS = pa.schema([
    *ROWS,
    pa.field("timed", pa.string(), nullable=False),             # canonical JSON of [timed]
    pa.field("publish_s", pa.float64(), nullable=False),
    pa.field("latency_first_ms", pa.float64(), nullable=False),  # NaN: nobody reached
    pa.field("latency_last_ms", pa.float64(), nullable=False),
    pa.field("analytic_delay_ms", pa.float64(), nullable=False),  # static engine, [delays]
    pa.field("dropped_frames", pa.int64(), nullable=False),
    pa.field("exposed", pa.bool_(), nullable=False),             # in flight during an update
    pa.field("stale_false_negatives", pa.int32(), nullable=False),
    pa.field("stale_false_positives", pa.int32(), nullable=False),
    pa.field("misdeliveries", pa.int32(), nullable=False),
    pa.field("cell_sim_time_s", pa.float64(), nullable=False),
    pa.field("cell_notifications", pa.int64(), nullable=False),
    pa.field("cell_offered_load_hz", pa.float64(), nullable=False),
    pa.field("cell_deliveries_per_s", pa.float64(), nullable=False),
    pa.field("cell_delivery_ratio", pa.float64(), nullable=False),
    pa.field("cell_latency_p50_ms", pa.float64(), nullable=False),
    pa.field("cell_latency_p90_ms", pa.float64(), nullable=False),
    pa.field("cell_latency_p99_ms", pa.float64(), nullable=False),
    pa.field("cell_drops_egress", pa.int64(), nullable=False),
    pa.field("cell_drops_pipeline", pa.int64(), nullable=False),
    pa.field("cell_drops_recirc", pa.int64(), nullable=False),
    pa.field("cell_drop_sites", pa.string(), nullable=False),     # JSON: "node:where:detail" -> n
    pa.field("cell_egress_queue_mean", pa.float64(), nullable=False),      # time-weighted, frames
    pa.field("cell_egress_queue_max_mean", pa.float64(), nullable=False),  # busiest port
    pa.field("cell_egress_queue_peak", pa.float64(), nullable=False),
    pa.field("cell_pipeline_queue_mean", pa.float64(), nullable=False),
    pa.field("cell_pipeline_queue_peak", pa.float64(), nullable=False),
    pa.field("cell_recirculations_per_s", pa.float64(), nullable=False),
    pa.field("cell_recirc_port_queue_peak", pa.float64(), nullable=False),
    pa.field("cell_changes", pa.int64(), nullable=False),
    pa.field("cell_rejected_changes", pa.int64(), nullable=False),
    pa.field("cell_control_writes", pa.int64(), nullable=False),
    pa.field("cell_writes_per_change", pa.float64(), nullable=False),
    pa.field("cell_convergence_mean_ms", pa.float64(), nullable=False),
    pa.field("cell_convergence_max_ms", pa.float64(), nullable=False),
    pa.field("cell_exposed", pa.int64(), nullable=False),
    pa.field("cell_misdeliveries", pa.int64(), nullable=False),
    pa.field("cell_stale_false_negatives", pa.int64(), nullable=False),
    pa.field("cell_overflow_updates", pa.int64(), nullable=False),
    pa.field("cell_occupancy", pa.string(), nullable=False),      # JSON: kind -> mean/peak
    pa.field("cell_events", pa.int64(), nullable=False),
])


_ID_COLUMNS = ("cell_id", "seed", "run", "publisher")


def point_columns(schema: pa.Schema) -> list[str]:
    """Columns that identify a parameter point in ``schema`` (timed settings included)."""
    return POINT_COLUMNS + (["timed"] if "timed" in schema.names else [])


def metric_columns(schema: pa.Schema) -> list[str]:
    """Numeric columns of ``schema`` worth aggregating (ids and point columns left out)."""
    skip = set(point_columns(schema)) | set(_ID_COLUMNS)
    return [f.name for f in schema if f.name not in skip
            and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
                 or pa.types.is_boolean(f.type))]
