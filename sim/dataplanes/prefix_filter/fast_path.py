"""The prefix filter's tables and events for the content fast path (``content_fast_path``).

A switch's ``dz_forward`` (or ``dz_forward_v6``) table becomes one segment
of rules per ingress port (the exact ``ingress_port`` key), each rule the
range of destination addresses its prefix covers, in the lookup's order
(longest prefix first). An event's key is the destination address the
publisher writes (:class:`DzKey`: the dz of length ``L`` under
225.128.0.0/9, or the top 63 bits of ff0e::/16 + dz, which is exact for
prefixes of at most 63 bits; longer ones are not supported and their
states run on the reference).

PLEROMA's reference flows (the unlimited flows, for seed 001's network
false positives) compile the same way, keyed by the dz itself.

References
----------
Seed 001 §2.2 (dz in the IP destination), §2.3 (flows), §6.2 (network false
positives); see :mod:`sim.dataplanes.prefix_filter.reference`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.dataplanes.caches import Identity, Store
from sim.dataplanes.content_fast_path import ContentState
from sim.dataplanes.content_program import (
    SwitchPiece,
    Unsupported,
    compile_rules,
    port_or_group,
    range_piece,
)
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.prefix_filter.reference import FORWARD, MULTICAST, TABLE_V4, TABLE_V6

#: dz bits in the key and the key's fixed top bits: IPv4 (225.128.0.0/9: 23 dz bits below
#: the 9-bit prefix) and IPv6 (ff0e::/16, the address shifted right by 65 bits: 47 dz bits).
_KEY = {4: (23, 0xE180_0000, 0), 6: (47, 0xFF0E << 47, 65)}


@dataclass(frozen=True)
class DzKey:
    """How an event becomes its dz (seed 001 §2.2) and destination address.

    Attributes
    ----------
    family : {4, 6}
        IP version of the destination.
    length : int
        dz bits ``L``.
    plan : tuple of (int, int)
        Per dz bit ``j``: (attribute, right shift); bit ``j`` is
        ``(value >> shift) & 1`` (0 = lower half, most significant first).
    dims : int
        Attributes of an event (the pubsub header's values).
    """

    family: int
    length: int
    plan: tuple[tuple[int, int], ...]
    dims: int

    def bits(self, values: np.ndarray, count: int, width: int) -> np.ndarray:
        """The first ``count`` dz bits of each event as the top of a ``width``-bit integer."""
        plan = np.array(self.plan[:count], np.int64).reshape(-1, 2)
        place = width - 1 - np.arange(len(plan), dtype=np.int64)
        picked = ((values[:, plan[:, 0]] >> plan[:, 1]) & 1) << place
        return np.bitwise_or.reduce(picked, axis=1, dtype=np.int64)  # type: ignore[no-any-return]

    def addresses(self, values: np.ndarray) -> np.ndarray:
        """The destination of each event (IPv6: its top 63 bits)."""
        width, prefix, _ = _KEY[self.family]
        return prefix | self.bits(values, min(self.length, width), width)

    def dz_values(self, values: np.ndarray) -> np.ndarray:
        """The dz of each event as an ``L``-bit integer."""
        if self.length > 62:
            raise Unsupported(f"a dz of {self.length} bits does not fit int64")
        return self.bits(values, self.length, self.length)


def _reference_rows(table: Any, length: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """One port's unlimited flows as ``(lo, hi, ports)`` dz ranges, longest first
    (``PrefixTable.lpm``), ports sorted (``emulate_links``)."""
    rows = []
    for dz in sorted(table.flows, key=len, reverse=True):
        if len(dz) > length:
            continue  # longer than any event's dz: never the longest match
        if length > 62:
            raise Unsupported(f"a dz of {length} bits does not fit int64")
        open_bits = length - len(dz)
        lo = (int(dz, 2) << open_bits) if dz else 0
        rows.append((lo, lo + (1 << open_bits) - 1, tuple(sorted(table.flows[dz]))))
    return rows


def net_piece_reference(flows: Mapping[int, Any], info: ContentState) -> SwitchPiece:
    """One switch's unlimited flows (ingress port -> ``PrefixTable``: dz -> ports) as
    dz ranges, longest first, one segment per port (the definition of
    :meth:`PrefixFamily.net_piece`)."""
    length = info.event_key.length
    return range_piece({port: _reference_rows(table, length) for port, table in flows.items()})


#: one port's compiled rows: lo, hi, the port sets used (in order of first use) and each
#: row's index into them
_PortRows = tuple[np.ndarray, np.ndarray, list[tuple[int, ...]], np.ndarray]


def _port_rows(table: Any, length: int) -> _PortRows:
    rows = _reference_rows(table, length)
    used: dict[tuple[int, ...], int] = {}
    local = [used.setdefault(ports, len(used)) for _, _, ports in rows]
    i64 = np.int64
    return (np.array([r[0] for r in rows], i64), np.array([r[1] for r in rows], i64),
            list(used), np.array(local, i64))


class PrefixFamily:
    """:class:`~sim.dataplanes.content_fast_path.ContentFamily` of the prefix filter."""

    def __init__(self) -> None:
        #: (flow table, dz length) -> its compiled rows (:meth:`net_piece`)
        self._port_rows: Store[tuple[Identity, int], _PortRows] = Store(
            "prefix reference ports", 4096)

    def n_fields(self, info: ContentState) -> int:
        return 1

    def switch_key(self, switch: str, info: ContentState) -> Hashable:
        return info.event_key.family

    def switch_piece(self, switch: str, config: SwitchConfig, info: ContentState
                     ) -> SwitchPiece:
        family = info.event_key.family
        entries = config.tables.get(TABLE_V4 if family == 4 else TABLE_V6, ())
        piece = SwitchPiece()
        if entries:
            compile_rules(piece, entries, 1,
                          lambda e: port_or_group(config, e, MULTICAST, FORWARD),
                          by_port=True, shifts=(_KEY[family][2],))
        return piece

    def keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        _check(values, info)
        return info.event_key.addresses(values).reshape(-1, 1)

    def hashes(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        return np.zeros(len(values), np.int64)

    def net_piece(self, flows: Mapping[int, Any], info: ContentState) -> SwitchPiece:
        """:func:`net_piece_reference`, each ingress port's rows compiled once per flow
        table (a switch whose unlimited flows changed on one port, seed 001 §6.2, compiles
        that port only): the ports' rows concatenated, their actions renumbered in
        order of first use as :func:`~sim.dataplanes.content_program.range_piece` does."""
        length = info.event_key.length
        piece = SwitchPiece(n_fields=1)
        actions: dict[tuple[int, ...], int] = {}
        los, his, acts = [], [], []
        start = 0
        for port, table in flows.items():
            key = (Identity(table), length)
            rows = self._port_rows.get(key)
            if rows is None:
                rows = self._port_rows.put(key, _port_rows(table, length))
            lo, hi, used, local = rows
            renumber = []
            for ports in used:
                a = actions.get(ports)
                if a is None:
                    a = actions[ports] = len(piece.actions)
                    piece.actions.append((ports, False, False))
                renumber.append(a)
            los.append(lo)
            his.append(hi)
            acts.append(np.asarray(renumber, np.int64)[local])
            piece.port_segment[port] = len(piece.segments)
            piece.segments.append((start, start + len(lo)))
            start += len(lo)
        i64 = np.int64
        piece.lo = (np.concatenate(los) if los else np.zeros(0, i64)).reshape(-1, 1)
        piece.hi = (np.concatenate(his) if his else np.zeros(0, i64)).reshape(-1, 1)
        piece.mask = np.zeros((start, 1), i64)
        piece.value = np.zeros((start, 1), i64)
        piece.rule_action = np.concatenate(acts).tolist() if acts else []
        return piece

    def net_keys(self, info: ContentState, values: np.ndarray) -> np.ndarray:
        return info.event_key.dz_values(values).reshape(-1, 1)

    def net_to_keys(self, info: ContentState, lo: np.ndarray, hi: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """dz bounds as address bounds. With ``L`` dz bits of a ``w``-bit field (``L <= w``),
        an event's key is ``P | dz << (w - L)`` (:meth:`DzKey.addresses`), so for
        ``0 <= lo <= hi < 2**L``: ``lo <= dz <= hi`` iff ``P | lo << (w - L) <= key <=
        P | hi << (w - L) | (2**(w - L) - 1)``. -1 elsewhere (``L > w``: the key keeps
        only the dz's first ``w`` bits)."""
        key = info.event_key
        width, prefix, _ = _KEY[key.family]
        none = np.full(len(lo), -1, np.int64)
        if key.length > width:
            return none, none.copy()
        shift = width - key.length
        valid = (lo >= 0) & (lo <= hi) & (hi < (1 << key.length))
        key_lo = np.where(valid, prefix | (lo << shift), -1)
        key_hi = np.where(valid, prefix | (hi << shift) | ((1 << shift) - 1), -1)
        return key_lo, key_hi


def _check(values: np.ndarray, info: ContentState) -> None:
    if values.ndim != 2 or values.shape[1] != info.event_key.dims:
        raise Unsupported("events of another width than the header's")
