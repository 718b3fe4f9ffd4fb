"""The one builder of result rows: static rows and the static part of timed rows.

A row is built from

- the cell's identity columns (:func:`identity_columns`, once per cell);
- the notification: ``run``, ``publisher``, ``receivers`` (their count);
- the engine's metrics of the notification (:data:`ENGINE_METRICS`: the
  static engine's :func:`sim.dataplanes.delivery.row_metrics`, a fast path's
  batch, or the timed engine's record of it);
- the size of the installed state and the control writes that led to it;
- the strategy's :class:`strategies.base.ExtraMetrics`, one column per field.

:func:`notification_row` returns the :data:`experiments.cells.schema.ROWS`
columns in order; a timed row is that row followed by the timed and
run-level columns (:data:`experiments.cells.schema.TIMED_ROWS`).
:func:`rows_table` builds the same rows as Arrow columns at once, from one
array per column (a fast path's batch, :mod:`experiments.cells.pipeline`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from experiments.cells.schema import EXTRA_COLUMNS, ROWS
from experiments.cells.spec import Cell
from sim.dataplanes.delivery import METRIC_KEYS
from strategies.base import ExtraMetrics

#: Columns that identify the cell (the same on every row of it).
IDENTITY_COLUMNS = ("experiment", "cell_id", "strategy", "params", "topology",
                    "receivers_model", "payload_bytes", "seed")

#: The engine's per-notification metrics, in row order (``link_false_positives``
#: is an :class:`~strategies.base.ExtraMetrics` column).
ENGINE_METRICS = tuple(k for k in METRIC_KEYS if k != "link_false_positives")

_EXTRA_NAMES = tuple(EXTRA_COLUMNS)
_BEFORE_STATE = ENGINE_METRICS[:ENGINE_METRICS.index("delay_worst_ms")]
_extra_values = operator.attrgetter(*_EXTRA_NAMES)
_before_state_values = operator.itemgetter(*_BEFORE_STATE)


def identity_columns(cell: Cell) -> dict[str, Any]:
    """The identity columns of ``cell``'s rows (:data:`IDENTITY_COLUMNS`)."""
    return {"experiment": cell.experiment, "cell_id": cell.cell_id, "strategy": cell.strategy,
            "params": cell.params_json, "topology": cell.topology,
            "receivers_model": cell.receivers, "payload_bytes": cell.payload_bytes,
            "seed": cell.seed}


def extra_columns(extra: ExtraMetrics) -> dict[str, Any]:
    """The :class:`~strategies.base.ExtraMetrics` columns of one row; a field left
    None (not measured) takes its column's default from
    :data:`~experiments.cells.schema.EXTRA_COLUMNS`."""
    out = dict(zip(_EXTRA_NAMES, _extra_values(extra), strict=True))
    if out["link_false_positives"] is None:
        out["link_false_positives"] = EXTRA_COLUMNS["link_false_positives"]
    return out


def extra_value_columns(extras: Sequence[ExtraMetrics]) -> dict[str, list[Any]]:
    """:func:`extra_columns` of many rows as one list per column (the same values)."""
    default = EXTRA_COLUMNS["link_false_positives"]
    out = {name: list(values) for name, values in zip(
        _EXTRA_NAMES, zip(*map(_extra_values, extras), strict=True) if extras
        else ([] for _ in _EXTRA_NAMES), strict=True)}
    out["link_false_positives"] = [default if x is None else x
                                   for x in out["link_false_positives"]]
    return out


def notification_row(identity: Mapping[str, Any], *, run: int, publisher: str,
                     receivers: int, metrics: Mapping[str, Any], state_entries: int,
                     multicast_groups: int, control_writes: int,
                     extra: ExtraMetrics) -> dict[str, Any]:
    """One row with the :data:`~experiments.cells.schema.ROWS` columns, in order.

    Parameters
    ----------
    identity : mapping
        :func:`identity_columns` of the cell.
    run, publisher : int, str
        The notification's number in the cell and its publisher.
    receivers : int
        How many intended receivers it had.
    metrics : mapping
        At least the :data:`ENGINE_METRICS` keys (more are ignored).
    state_entries, multicast_groups : int
        Size of the installed state the notification ran on.
    control_writes : int
        P4Runtime writes behind that state since the previous row.
    extra : ExtraMetrics
        The strategy's metrics of the notification.
    """
    row = dict(identity)
    row["run"] = run
    row["publisher"] = publisher
    row["receivers"] = receivers
    row.update(zip(_BEFORE_STATE, _before_state_values(metrics), strict=True))
    row["state_entries"] = state_entries
    row["multicast_groups"] = multicast_groups
    row["control_writes"] = control_writes
    row["delay_worst_ms"] = metrics["delay_worst_ms"]
    row.update(extra_columns(extra))
    return row



def rows_table(identity: Mapping[str, Any], columns: Mapping[str, Any], count: int
               ) -> pa.Table:
    """``count`` rows with the :data:`~experiments.cells.schema.ROWS` columns, as a table.

    Parameters
    ----------
    identity : mapping
        :func:`identity_columns` of the cell (repeated on every row).
    columns : mapping
        Every other column by name: an array (numpy or Arrow) or a list of
        ``count`` values, or one value for every row. An
        :class:`~strategies.base.ExtraMetrics` column left out takes its
        default (:data:`~experiments.cells.schema.EXTRA_COLUMNS`).

    The values equal those of :func:`notification_row` rows made into a
    table with ``pa.Table.from_pylist(rows, schema=ROWS)`` (integers out of
    a narrow column's range raise as there).
    """
    arrays = []
    for field in ROWS:
        name = field.name
        if name in identity:
            value = identity[name]
        elif name in columns:
            value = columns[name]
        elif name in EXTRA_COLUMNS:
            value = EXTRA_COLUMNS[name]
        else:
            raise KeyError(f"rows_table: no value for column {name!r}")
        if isinstance(value, pa.Array):
            arrays.append(value if value.type == field.type else value.cast(field.type))
        elif isinstance(value, np.ndarray):
            arrays.append(_column(value, field.type))
        elif isinstance(value, list):
            arrays.append(pa.array(value, field.type))
        else:
            arrays.append(_constant(value, field.type, count))
    return pa.Table.from_arrays(arrays, schema=ROWS)


#: numpy dtypes of the numeric Arrow types of :data:`~experiments.cells.schema.ROWS`
_NUMPY = {pa.int32(): np.int32, pa.int64(): np.int64, pa.float64(): np.float64}


def _column(values: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``pa.array(values, kind)``; numeric columns converted by numpy (no per-value work)."""
    dtype = _NUMPY.get(kind)
    if dtype is None or values.dtype.kind not in "iuf" or (
            values.dtype.kind == "f" and dtype is not np.float64):
        return pa.array(values, kind)
    if dtype is np.int32 and values.size and (values.min() < -2**31 or values.max() >= 2**31):
        return pa.array(values, kind)  # raises as from_pylist does
    return pa.array(values.astype(dtype, copy=False))


def _constant(value: Any, kind: pa.DataType, count: int) -> pa.Array:
    """``count`` copies of ``value`` as an Arrow array of type ``kind``."""
    if pa.types.is_string(kind) and isinstance(value, str):
        data = value.encode()
        if count * len(data) < 2**31:  # the offsets of a (32-bit) string array
            offsets = np.arange(count + 1, dtype=np.int32) * np.int32(len(data))
            return pa.Array.from_buffers(kind, count, [None, pa.py_buffer(offsets),
                                                       pa.py_buffer(data * count)])
    dtype = _NUMPY.get(kind)
    if dtype is None or isinstance(value, bool | str):
        return pa.repeat(pa.scalar(value, kind), count)
    return _column(np.full(count, value), kind)


def row_arrays(columns: Mapping[str, Any], count: int) -> dict[str, np.ndarray]:
    """Every non-identity :data:`~experiments.cells.schema.ROWS` column of
    :func:`rows_table`'s ``columns`` as a writable numpy array of ``count`` values
    (defaults filled in), so single rows can be overwritten before the table is built."""
    out = {}
    for field in ROWS:
        name = field.name
        if name in IDENTITY_COLUMNS:
            continue
        value = columns[name] if name in columns else EXTRA_COLUMNS[name]
        if isinstance(value, pa.Array):
            value = value.to_numpy(zero_copy_only=False)
        kind = (object if pa.types.is_string(field.type) else
                np.float64 if pa.types.is_floating(field.type) else np.int64)
        array = np.empty(count, kind)
        array[:] = value
        out[name] = array
    return out
