"""The result table: one row per notification, declared once.

The Spark runner derives its ``StructType`` from :data:`ROWS` (see
``experiments/runners/spark.py``), so both engines write the same columns.
"""

from __future__ import annotations

import pyarrow as pa

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
    # -- strategy metrics (Strategy.extra_metrics; EXTRA_COLUMNS gives the default
    # of a strategy that does not define one). Content filters, seeds 001-004.
    # Frames on links that no receiver of the notification needed (content-exact,
    # by the strategy's own routes; host links included). Strategies that do not
    # define it get sim.dataplanes.link_waste.wasted_link_frames (used links from which no
    # receiver is reachable), so label stacks and virtual trees compare too.
    pa.field("link_false_positives", pa.int64(), nullable=False),
    # Seed 001's network false positives: frames on links the unlimited flow set
    # would not use (merge-induced only; = link_false_positives for exact filters).
    pa.field("network_false_positives", pa.int64(), nullable=False),
    # Mean over switches with flows of (unlimited - deployed) / unlimited, and the
    # same over the switches whose unlimited count exceeds the limit (seed 001 A2/A5.7).
    pa.field("merge_ratio", pa.float64(), nullable=False),
    pa.field("merge_ratio_limited", pa.float64(), nullable=False),
    pa.field("flows_max", pa.int64(), nullable=False),       # filter entries, busiest switch
    pa.field("flow_limit", pa.int64(), nullable=False),      # per-switch limit, 0 = none
    # Peak filter entries on any switch while this row's state was deployed, in the
    # strategy's write order (seed 001 Alg. 7); 0 when the state was reused.
    pa.field("flows_peak", pa.int64(), nullable=False),
    pa.field("tcam_entries", pa.int64(), nullable=False),    # after range-to-prefix expansion
    pa.field("tcam_bits", pa.int64(), nullable=False),       # sum of key bits over TCAM entries
    pa.field("sram_entries", pa.int64(), nullable=False),    # exact-match entries
    pa.field("stages_max", pa.int32(), nullable=False),      # tables in sequence, deepest switch
    # Wall-clock controller time of the install/update behind this row's state (0 when
    # the state was reused). Measured, not simulated: NOT reproducible across runs.
    pa.field("controller_wall_ms", pa.float64(), nullable=False),
    # Worst receiver's sum of per-switch lookup latencies (table_cost latency model).
    pa.field("lookup_latency_us", pa.float64(), nullable=False),
    # Switches above a per-switch capacity by table kind (TCAM / SRAM entries,
    # multicast groups, stages; content strategies' *_capacity parameters, 0 = none).
    pa.field("switches_over_capacity", pa.int64(), nullable=False),
])

#: Strategy-defined columns and the value of a strategy that does not report them.
EXTRA_COLUMNS: dict[str, int | float] = {
    "link_false_positives": 0, "network_false_positives": 0, "merge_ratio": 0.0,
    "merge_ratio_limited": 0.0, "flows_max": 0, "flow_limit": 0, "flows_peak": 0,
    "tcam_entries": 0,
    "tcam_bits": 0, "sram_entries": 0, "stages_max": 0, "controller_wall_ms": 0.0,
    "lookup_latency_us": 0.0, "switches_over_capacity": 0,
}

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
