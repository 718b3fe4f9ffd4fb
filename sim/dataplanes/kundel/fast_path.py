"""Kundel's flat table and events for the content fast path (``content_fast_path``).

A switch's ``MyIngress.event`` table becomes one segment of rules (the
ternary valid-attribute mask, then one range per value slot, highest
priority first); an event's key is what the parser extracts from either
encoding: the mask of the attribute IDs below ``slots`` and their values
(0 in the slots the event does not fill).

References
----------
Seed 002 §III (encodings, Listings 1-2); see :mod:`sim.dataplanes.kundel.reference`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from sim.dataplanes.content_fast_path import ContentState
from sim.dataplanes.content_program import SwitchPiece, Unsupported
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.kundel.reference import FORWARD_GROUP, TABLE
from sim.dataplanes.range_filter.fast_path import table_piece


class KundelFamily:
    """:class:`~sim.dataplanes.content_fast_path.ContentFamily` of Kundel's table."""

    def n_fields(self, info: ContentState) -> int:
        return 1 + int(info.model.slots)

    def switch_key(self, switch: str, info: ContentState) -> Hashable:
        return info.model.slots

    def switch_piece(self, switch: str, config: SwitchConfig, info: ContentState
                     ) -> SwitchPiece:
        # the reference forwards to the port of every action but forward(group)
        return table_piece(config, TABLE, self.n_fields(info), FORWARD_GROUP, None)

    def keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        slots = int(info.model.slots)
        if values.ndim != 2:
            raise Unsupported("events are rows of values")
        parsed = min(values.shape[1], slots)  # IDs 0..d-1; those below slots are parsed
        if parsed > 62:
            raise Unsupported(f"a {parsed}-bit valid mask does not fit int64")
        keys = np.zeros((len(values), 1 + slots), np.int64)
        keys[:, 0] = (1 << parsed) - 1
        keys[:, 1:1 + parsed] = values[:, :parsed]
        return keys

    def hashes(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        return np.zeros(len(values), np.int64)

    def net_piece(self, flows: Any, info: ContentState) -> SwitchPiece:
        raise Unsupported("Kundel's table has no reference flows")

    def net_keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        raise Unsupported("Kundel's table has no reference flows")

    def net_to_keys(self, info: ContentState, lo: np.ndarray, hi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raise Unsupported("Kundel's table has no reference flows")
