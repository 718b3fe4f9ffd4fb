"""Camus's tables and events for the content fast path (``content_fast_path``).

Per switch: the ingress ports ``port_role`` marks (a frame from them came
down and never goes up again), the up port of each ECMP bucket
(``up_ecmp``), and either the one big table (``query_flat``: one segment of
range rules over the header fields) or the BDD (for each field in the
switch's pipeline order and each state: the exact entries, the range
entries in the lookup's order and the miss entry's next state; then the
action of each state). An action is its multicast group's ports (or one
port) and the ``up`` flag. An event's key is its values in header order;
its ECMP bucket comes from the CRC32 of the header the publisher writes.

References
----------
Seed 003 §4 (logical up port), §5.1-5.2 (generated tables); see
:mod:`sim.dataplanes.camus.reference`.
"""

from __future__ import annotations

import zlib
from collections.abc import Hashable
from typing import Any

import numpy as np

from sim.dataplanes.camus.reference import (
    ACTIONS,
    FLAT,
    PORT_ROLE,
    SET_PORT,
    UP_ECMP,
    field_table,
)
from sim.dataplanes.content_fast_path import ContentState
from sim.dataplanes.content_program import (
    Action,
    SwitchPiece,
    Unsupported,
    column_bounds,
    column_kinds,
    compile_rules,
    group_ports,
    precedence_order,
)
from sim.dataplanes.control_state import Exact, Range, SwitchConfig, TableEntry
from sim.dataplanes.range_filter.fast_path import check_width

_BIG_ENDIAN = {1: ">u1", 2: ">u2", 4: ">u4", 8: ">u8"}


def _crc_table() -> np.ndarray:
    """The byte table of the reflected CRC-32 (polynomial 0xEDB88320, zlib's)."""
    crc = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        crc = np.where(crc & 1, (crc >> 1) ^ np.uint32(0xEDB88320), crc >> 1).astype(np.uint32)
    return crc


_CRC_TABLE = _crc_table()


def crc32_rows(data: np.ndarray) -> np.ndarray:
    """``zlib.crc32`` of each row of ``data`` (rows x bytes, uint8), as int64: the table
    algorithm one byte column at a time over all rows (no Python step per row)."""
    crc = np.full(len(data), 0xFFFFFFFF, np.uint32)
    for j in range(data.shape[1]):
        crc = _CRC_TABLE[(crc ^ data[:, j]) & 0xFF] ^ (crc >> 8)
    return (crc ^ np.uint32(0xFFFFFFFF)).astype(np.int64)


def camus_action(config: SwitchConfig, leaf: TableEntry) -> Action:
    """What the reference does with a hit of ``query_actions`` / ``query_flat``."""
    try:
        if leaf.action == SET_PORT:
            return (leaf.param("port"),), False, False
        gid = leaf.param("mgid")
        ports, missing = group_ports(config, gid) if gid else ((), False)
        return ports, bool(leaf.param("up")) and not missing, missing
    except KeyError:
        return (), False, True


def _next(entry: TableEntry) -> int:
    for name, value in entry.params:
        if name == "state":
            return value
    raise Unsupported("a field-table entry without a next state")


def _table(config: SwitchConfig, table: str, second: set[type] | None) -> np.ndarray:
    """One field table's rows ``(state[, lo, hi], next)`` (one bound for exact tables),
    sorted by state (exact rows then by value), stably from the lookup order: the first
    key field is the exact state, the second (if any) of a kind in ``second``."""
    entries = config.tables.get(table, ())
    width = 2 if second is None else (3 if second == {Exact} else 4)
    if not entries:
        return np.zeros((0, width), np.int64)
    kinds = column_kinds(entries)
    if kinds[0] != {Exact} or len(kinds) != (1 if second is None else 2) or (
            second is not None and not kinds[1] <= second):
        raise Unsupported(f"{table}: not (exact state[, value]) keys")
    ordered = precedence_order(entries, kinds)
    cols = [[e.match[0][1].value for e in ordered]]  # type: ignore[union-attr]
    if width == 3:
        cols.append([e.match[1][1].value for e in ordered])  # type: ignore[union-attr]
    elif width == 4:
        bounds = column_bounds([e.match[1][1] for e in ordered], kinds[1])
        cols.extend((bounds[:, 0].tolist(), bounds[:, 1].tolist()))
    cols.append([_next(e) for e in ordered])
    try:
        rows = np.array(cols, np.int64).T
    except OverflowError:
        raise Unsupported(f"{table}: values beyond int64") from None
    if (rows[:, 0] < 0).any() or (rows[:, -1] < 0).any():
        raise Unsupported("a negative BDD state")
    keys = (rows[:, 1], rows[:, 0]) if width == 3 else (rows[:, 0],)
    return np.ascontiguousarray(rows[np.lexsort(keys)])  # stable: ties keep lookup order


def _bdd(piece: SwitchPiece, config: SwitchConfig, names: tuple[str, ...]) -> None:
    """The field tables and the action table of one switch (module docstring)."""
    top = 0
    for name in names:
        rows = (_table(config, field_table(name, "exact"), {Exact}),
                _table(config, field_table(name, "range"), {Range, Exact}),
                _table(config, field_table(name, "miss"), None))
        for arr in rows:
            if len(arr):
                top = max(top, int(arr[:, 0].max()), int(arr[:, -1].max()))
        piece.tables.append(rows)
    leaves = config.tables.get(ACTIONS, ())
    if leaves and column_kinds(leaves) != [{Exact}]:
        raise Unsupported("query_actions: not exact state keys")
    states = [e.match[0][1].value for e in leaves]  # type: ignore[union-attr]
    if any(st < 0 for st in states):
        raise Unsupported("a negative BDD state")
    piece.states = max([top, *states]) + 1
    leaf = np.full(piece.states, -1, np.int64)
    actions: dict[tuple[str, tuple[tuple[str, int], ...]], int] = {}
    for st, e in zip(states, leaves, strict=True):
        if leaf[st] >= 0:
            continue  # an all-exact table: the first one wins
        key = (e.action, e.params)
        if key not in actions:
            actions[key] = len(piece.actions)
            piece.actions.append(camus_action(config, e))
        leaf[st] = actions[key]
    piece.leaf = leaf


class CamusFamily:
    """:class:`~sim.dataplanes.content_fast_path.ContentFamily` of Camus's pipeline."""

    def n_fields(self, info: ContentState) -> int:
        return len(info.model.header_fields)

    def switch_key(self, switch: str, info: ContentState) -> Hashable:
        model = info.model
        return (model.header_fields, model.switch_fields.get(switch, model.fields))

    def switch_piece(self, switch: str, config: SwitchConfig, info: ContentState
                     ) -> SwitchPiece:
        model = info.model
        header = model.header_fields
        piece = SwitchPiece(kind=1 if FLAT in config.tables else 2)
        came_down = set()
        for e in config.tables.get(PORT_ROLE, ()):
            if len(e.match) != 1 or not isinstance(e.match[0][1], Exact):
                raise Unsupported("a port_role entry that is not one exact port")
            came_down.add(e.match[0][1].value)
        piece.came_down = frozenset(came_down)
        ecmp = []
        for bucket in range(len(config.tables.get(UP_ECMP, ()))):
            hit = config.lookup(UP_ECMP, bucket)
            try:
                ecmp.append(-1 if hit is None else hit.param("port"))
            except KeyError:
                raise Unsupported("an up_ecmp entry without a port") from None
        piece.ecmp = tuple(ecmp)
        if piece.kind == 1:
            compile_rules(piece, config.tables[FLAT], len(header),
                          lambda e: camus_action(config, e))
            return piece
        names = model.switch_fields.get(switch, model.fields)
        try:
            piece.fields = tuple(header.index(n) for n in names)
        except ValueError:
            raise Unsupported("a pipeline field the header does not carry") from None
        _bdd(piece, config, names)
        return piece

    def keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        return check_width(values, self.n_fields(info))

    def hashes(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        """CRC32 of each event's header (``layout.pack``: big-endian values)."""
        layout = info.model.layout
        kind = _BIG_ENDIAN.get(layout.value_bytes)
        if kind is None or (layout.value_bits < 63 and (values >> layout.value_bits).any()):
            raise Unsupported("values the header cannot carry")
        raw = np.ascontiguousarray(values.astype(kind))
        size = layout.size
        if raw.nbytes != size * len(values):  # a header of more than its values: by zlib
            data = raw.tobytes()
            return np.array([zlib.crc32(data[i * size:(i + 1) * size])
                             for i in range(len(values))], np.int64)
        return crc32_rows(raw.view(np.uint8).reshape(len(values), size))

    def net_piece(self, flows: Any, info: ContentState) -> SwitchPiece:
        raise Unsupported("Camus has no reference flows")

    def net_keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        raise Unsupported("Camus has no reference flows")

    def net_to_keys(self, info: ContentState, lo: np.ndarray, hi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raise Unsupported("Camus has no reference flows")
