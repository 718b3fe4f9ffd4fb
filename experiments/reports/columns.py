"""What the report's columns are: label, unit, scope and scale, declared once.

The tables and plots of ``stackcast report`` (:mod:`experiments.reports.report`,
:mod:`experiments.reports.plots`) and the content section
(:mod:`experiments.reports.content`) take their axis labels, table headers,
number format and log-scale decision from here.

Scopes: ``notification`` (one notification's value; averaged "per
notification", or "per step" when the notifications are the steps of a
sweep), ``state`` (the state installed when the notification was sent),
``cell`` (one value per cell, repeated on its rows), ``sum`` (a running
sum over the steps) and ``rate`` (a ratio of sums).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Scope = Literal["notification", "state", "cell", "sum", "rate"]


@dataclass(frozen=True, slots=True)
class Column:
    """One metric's presentation.

    Parameters
    ----------
    label : str
        Words, lower case (``"header bytes"``).
    unit : str
        Unit for the axis and the table header; ``""`` for ratios.
    scope : Scope
        What one value covers (module docstring).
    log : bool or None
        ``False``: never a log axis (ratios in [0, 1]); ``None``: decide from
        the data (:func:`y_scale`).
    """

    label: str
    unit: str
    scope: Scope = "notification"
    log: bool | None = None


def _c(label: str, unit: str, scope: Scope = "notification", log: bool | None = None
       ) -> Column:
    return Column(label, unit, scope, log)


COLUMNS: dict[str, Column] = {
    # engine rows (experiments.cells.schema.ROWS)
    "receivers": _c("receivers", "hosts"),
    "delivered": _c("deliveries", "hosts"),
    "false_positives": _c("false-positive deliveries", "hosts"),
    "false_negatives": _c("missed receivers", "hosts"),
    "duplicates": _c("duplicate deliveries", "copies"),
    "header_entries": _c("header entries", "entries"),
    "header_bytes": _c("header bytes", "B"),
    "header_tree_labels": _c("tree labels in the header", "labels"),
    "header_stop_labels": _c("stop labels in the header", "labels"),
    "header_hop_labels": _c("hop labels in the header", "labels"),
    "packets_sent": _c("packets sent", "count"),
    "frames": _c("frames on links", "count"),
    "bytes": _c("bytes on links", "B"),
    "passes": _c("pipeline passes", "count"),
    "recirculations": _c("recirculations", "count"),
    "lookups": _c("table lookups", "count"),
    "circulations_simplified": _c("circulations (simplified)", "count"),
    "max_switch_passes": _c("passes on the busiest switch", "count"),
    "state_entries": _c("state entries, all switches", "entries", "state"),
    "multicast_groups": _c("multicast groups, all switches", "groups", "state"),
    "control_writes": _c("P4Runtime writes", "writes"),
    "control_writes_cum": _c("P4Runtime writes, running sum", "writes", "sum"),
    "delay_worst_ms": _c("worst-case delay", "ms"),
    # strategies.base.ExtraMetrics
    "link_false_positives": _c("frames on unneeded links", "count"),
    "network_false_positives": _c("network false-positive frames", "count"),
    "merge_ratio": _c("merge ratio", "", "state", log=False),
    "merge_ratio_limited": _c("merge ratio, limited switches", "", "state", log=False),
    "flows_max": _c("filter entries, busiest switch", "entries", "state"),
    "flow_limit": _c("flow limit per switch", "entries", "state"),
    "flows_peak": _c("peak filter entries while deploying", "entries", "state"),
    "tcam_entries": _c("TCAM entries", "entries", "state"),
    "tcam_bits": _c("TCAM key bits", "bit", "state"),
    "sram_entries": _c("SRAM entries", "entries", "state"),
    "stages_max": _c("tables in sequence, deepest switch", "tables", "state"),
    "controller_wall_ms": _c("controller wall time", "ms"),
    "lookup_latency_us": _c("lookup latency, worst receiver", "µs"),
    "switches_over_capacity": _c("switches over capacity", "switches", "state"),
    # timed engine (experiments.cells.schema.TIMED_ROWS)
    "latency_last_ms": _c("latency to the last receiver", "ms"),
    "latency_first_ms": _c("latency to the first receiver", "ms"),
    "dropped_frames": _c("dropped frames", "count"),
    "stale_false_negatives": _c("receivers missed by stale state", "hosts"),
    "cell_deliveries_per_s": _c("deliveries per second", "1/s", "cell"),
    "cell_delivery_ratio": _c("delivery ratio", "", "cell", log=False),
    "cell_writes_per_change": _c("P4Runtime writes per subscription change", "writes", "cell"),
    "cell_convergence_mean_ms": _c("mean convergence time", "ms", "cell"),
    # content records (experiments.reports.content)
    "n": _c("notifications", "count", "cell"),
    "bytes_per_note": _c("bytes on links", "B"),
    "link_fp_rate": _c("link FP rate", "", "rate", log=False),
    "network_fp_rate": _c("network FP rate", "", "rate", log=False),
    "subscriber_fp_rate": _c("subscriber FP rate", "", "rate", log=False),
    "writes_per_change": _c("P4Runtime writes per subscription change", "writes", "rate"),
    "controller_ms_per_note": _c("controller wall time", "ms"),
}


#: Receiver-model parameters used as the x axis: (label, unit).
RECEIVER_AXES: dict[str, tuple[str, str]] = {
    "percent": ("receivers", "% of hosts"),
    "subscribers": ("subscribers", "% of hosts"),
}


def receiver_axis_label(kind: str, param: str) -> str:
    """x label for a receiver-model parameter: ``"receivers (% of hosts)"``, or
    ``"<model>: <parameter>"`` for an undeclared one."""
    if param in RECEIVER_AXES:
        label, unit = RECEIVER_AXES[param]
        return f"{label} ({unit}), {kind}"
    return f"{kind}: {param}"


def column(name: str) -> Column:
    """The declared column, or a fallback from the name (``a_b`` -> ``"a b"``, no unit)."""
    return COLUMNS.get(name) or Column(name.replace("_", " "), "")


def header(name: str) -> str:
    """Table header: ``"header bytes (B)"``."""
    c = column(name)
    return f"{c.label} ({c.unit})" if c.unit else c.label


def axis_label(name: str, per: str = "notification") -> str:
    """Axis label with the unit and what one value covers.

    ``axis_label("header_bytes")`` is ``"header bytes per notification (B)"``;
    ``per="step"`` when the notifications are the steps of a sweep.
    """
    c = column(name)
    text = c.label
    if c.scope == "notification":
        text += f" per {per}"
    elif c.scope == "cell":
        text += " per cell"
    return f"{text} ({c.unit})" if c.unit else text


def fmt(value: float | int | None) -> str:
    """The one number format of the reports.

    Three significant digits, but never fewer digits than the integer part
    has; thousands separators; no exponent; trailing zeros dropped:
    ``36271.4 -> "36,271"``, ``0.5734 -> "0.573"``, ``0.6 -> "0.6"``,
    ``1.234e-05 -> "0.0000123"``.
    """
    if value is None:
        return "-"
    v = float(value)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(v))))
    text = f"{v:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def y_scale(values: list[float], name: str | None = None
            ) -> tuple[Literal["linear", "log", "symlog"], float | None]:
    """Axis scale for ``values``: log when the positive values span >= 2 decades.

    Returns the scale and, for ``symlog`` (zeros next to the decades, so
    they stay visible at 0), its linear threshold (the smallest positive
    value). Negative values or a ``log=False`` column keep the axis linear.
    """
    if name is not None and column(name).log is False:
        return "linear", None
    finite = [v for v in values if math.isfinite(v)]
    positive = [v for v in finite if v > 0]
    if not positive or any(v < 0 for v in finite) or max(positive) < 100 * min(positive):
        return "linear", None
    if len(positive) == len(finite):
        return "log", None
    return "symlog", min(positive)
