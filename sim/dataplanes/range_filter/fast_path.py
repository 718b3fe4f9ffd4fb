"""The range filter's table and events for the content fast path (``content_fast_path``).

A switch's ``publish_subscribe`` table becomes one segment of rules (one
range per pubsub value, highest priority first, the lookup's order); an
event's key is its values, as the publisher packs them.

References
----------
Seed 004 §4.2 (table ``publish_subscribe``, actions, multicast groups); see
:mod:`sim.dataplanes.range_filter.reference`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from sim.dataplanes.content_fast_path import ContentState
from sim.dataplanes.content_program import SwitchPiece, Unsupported, compile_rules, port_or_group
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.range_filter.reference import FORWARD, MULTICAST, TABLE


def table_piece(config: SwitchConfig, table: str, n_fields: int, group: str,
                forward: str | None) -> SwitchPiece:
    """One table of one-parameter actions (:func:`~sim.dataplanes.content_program.port_or_group`),
    one segment for all ports."""
    piece = SwitchPiece()
    entries = config.tables.get(table, ())
    if entries:
        compile_rules(piece, entries, n_fields,
                      lambda e: port_or_group(config, e, group, forward))
    return piece


def check_width(values: np.ndarray, dims: int) -> np.ndarray:
    """``values`` as the kernel's keys when every event has ``dims`` attributes."""
    if values.ndim != 2 or values.shape[1] != dims:
        raise Unsupported("events of another width than the header's")
    return np.ascontiguousarray(values, np.int64)


class RangeFamily:
    """:class:`~sim.dataplanes.content_fast_path.ContentFamily` of the range filter."""

    def n_fields(self, info: ContentState) -> int:
        return int(info.model.layout.dims)

    def switch_key(self, switch: str, info: ContentState) -> Hashable:
        return info.model.layout

    def switch_piece(self, switch: str, config: SwitchConfig, info: ContentState
                     ) -> SwitchPiece:
        return table_piece(config, TABLE, self.n_fields(info), MULTICAST, FORWARD)

    def keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        return check_width(values, self.n_fields(info))

    def hashes(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        return np.zeros(len(values), np.int64)

    def net_piece(self, flows: Any, info: ContentState) -> SwitchPiece:
        raise Unsupported("the range filter has no reference flows")

    def net_keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        raise Unsupported("the range filter has no reference flows")

    def net_to_keys(self, info: ContentState, lo: np.ndarray, hi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raise Unsupported("the range filter has no reference flows")
