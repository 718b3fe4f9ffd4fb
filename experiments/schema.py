"""The result table: one row per notification, declared once.

The Spark runner derives its ``StructType`` from :data:`ROWS` (see
``experiments/spark_runner.py``), so both engines write the same columns.
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
    # P4Runtime writes (sim.control.diff) from the previous notification's state in
    # this cell to this one's; 0 for the first notification and for reused state.
    pa.field("control_writes", pa.int64(), nullable=False),
    pa.field("delay_worst_ms", pa.float64(), nullable=False),
])

# Columns that identify a parameter point (everything but seed and run).
POINT_COLUMNS = ["experiment", "strategy", "params", "topology", "receivers_model",
                 "payload_bytes"]
# Numeric columns worth aggregating.
METRIC_COLUMNS = [f.name for f in ROWS if f.name not in POINT_COLUMNS
                  and f.name not in ("cell_id", "seed", "run", "publisher")]
