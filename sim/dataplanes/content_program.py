"""Installed content-filter tables as the arrays the content walk reads.

A switch's tables compile to one :class:`SwitchPiece` (per family in
``sim/dataplanes/<family>/fast_path.py``, with the helpers here):

- rules: a table's entries in the order :meth:`SwitchConfig.lookup
  <sim.dataplanes.control_state.SwitchConfig.lookup>` tries them (all-exact
  tables in insertion order, others stably by priority, then LPM prefix
  length: the order of ``control_state._precedence`` and of
  :mod:`sim.dataplanes.table_index`), each field as ``lo <= key <= hi`` and
  ``key & mask == value``; grouped in segments, one per ingress port when the
  table's first field is the exact ingress port (the prefix filter) or one
  for all ports;
- actions: the ports a hit sends to, in the order the data plane emits them
  (a multicast group's replicas in order), Camus's ``up`` flag, and whether
  running it raises in the reference (a group that is not installed, an
  unknown action);
- Camus's port roles, up ports by ECMP bucket and BDD field tables.

:class:`Program` concatenates the pieces of one state's switches into the
kernel's arrays; :class:`TopologyArrays` holds the topology's ports as
slots. Values must fit int64 (:class:`Unsupported` otherwise: the fast path
then declines the state and the reference runs).

References
----------
Seed 001 §2.3 (flows on the ingress port and the dz prefix), seed 002
§III-B, seed 003 §5.2, seed 004 §4.2 (the tables compiled here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from sim.dataplanes.control_state import Exact, Lpm, Match, Range, SwitchConfig, TableEntry, Ternary
from topologies.model import Topology

INT64_MAX = (1 << 63) - 1

#: What an action does: (ports in emission order, Camus's up flag, raises in the reference).
Action = tuple[tuple[int, ...], bool, bool]


class Unsupported(ValueError):
    """Tables the kernel cannot hold exactly (values beyond int64)."""


def _fits(*values: int) -> None:
    for x in values:
        if not 0 <= x <= INT64_MAX:
            raise Unsupported(f"value {x} does not fit int64")


def field_bounds(m: Match, shift: int = 0) -> tuple[int, int, int, int]:
    """(lo, hi, mask, value) of one match field: ``key >> shift`` matches iff
    ``lo <= k <= hi and k & mask == value`` (``shift`` > 0 only for LPM fields
    wider than 63 bits whose prefixes are at most ``width - shift`` bits)."""
    if isinstance(m, Lpm):
        low = m.width - m.prefix_len  # bits the prefix leaves open
        if low < shift:
            raise Unsupported(f"/{m.prefix_len} on {m.width} bits needs more than 63 key bits")
        lo = (m.value >> low) << (low - shift)
        hi = lo + (1 << (low - shift)) - 1
        _fits(lo, hi)
        return lo, hi, 0, 0
    if shift:
        raise Unsupported("only LPM fields are narrowed")
    if isinstance(m, Exact):
        _fits(m.value)
        return m.value, m.value, 0, 0
    if isinstance(m, Range):
        if m.low > m.high or m.high < 0:
            return 1, 0, 0, 0  # matches nothing
        lo, hi = max(m.low, 0), min(m.high, INT64_MAX)
        return lo, hi, 0, 0
    if isinstance(m, Ternary):
        _fits(m.mask)
        value = m.value & m.mask
        return 0, INT64_MAX, m.mask, value
    raise Unsupported(f"match kind {type(m).__name__}")


def column_kinds(entries: Sequence[TableEntry]) -> list[set[type]]:
    """The match kinds found in each key field of ``entries``."""
    width = len(entries[0].match) if entries else 0
    if any(len(e.match) != width for e in entries):
        raise Unsupported("entries of different key widths")
    return [{type(m) for _, m in col} for col in zip(*(e.match for e in entries), strict=True)]


def _priority(entry: TableEntry) -> int:
    return entry.priority


def precedence_order(entries: Sequence[TableEntry], kinds: list[set[type]] | None = None
                     ) -> list[TableEntry]:
    """Entries in the order a lookup tries them (see the module docstring)."""
    kinds = column_kinds(entries) if kinds is None else kinds
    if all(k == {Exact} for k in kinds):
        return list(entries)
    if not any(Lpm in k for k in kinds):  # sorted() with reverse=True stays stable
        return sorted(entries, key=_priority, reverse=True)
    return sorted(entries, key=lambda e: (e.priority, sum(
        m.prefix_len for _, m in e.match if isinstance(m, Lpm))), reverse=True)


def column_bounds(matches: Sequence[Match], kinds: set[type], shift: int = 0) -> np.ndarray:
    """:func:`field_bounds` of every match of one key field, as an (n, 4) array; one
    array operation where the field holds only ranges or only ternaries."""
    try:
        if kinds == {Range} and not shift:
            b = np.array([(m.low, m.high) for m in matches],  # type: ignore[union-attr]
                         np.int64).reshape(-1, 2)
            out = np.zeros((len(b), 4), np.int64)
            empty = (b[:, 0] > b[:, 1]) | (b[:, 1] < 0)
            out[:, 0] = np.where(empty, 1, np.maximum(b[:, 0], 0))
            out[:, 1] = np.where(empty, 0, b[:, 1])
            return out
        if kinds == {Ternary} and not shift:
            b = np.array([(m.mask, m.value) for m in matches],  # type: ignore[union-attr]
                         np.int64).reshape(-1, 2)
            if (b[:, 0] < 0).any():
                raise Unsupported("a negative ternary mask")
            out = np.zeros((len(b), 4), np.int64)
            out[:, 1] = INT64_MAX
            out[:, 2] = b[:, 0]
            out[:, 3] = b[:, 1] & b[:, 0]
            return out
    except OverflowError:
        pass  # values beyond int64: one by one (Unsupported where they matter)
    return np.array([field_bounds(m, shift) for m in matches], np.int64).reshape(-1, 4)


@dataclass(eq=False)
class SwitchPiece:
    """One switch's compiled tables (see the module docstring).

    ``kind``: 0 one table and one lookup, 1 Camus's one big table, 2 Camus's
    BDD. Rules: ``lo``/``hi``/``mask``/``value`` (rules x fields), their
    action (index into ``actions``), in segments ``segments[i] = (start,
    end)``; ``port_segment`` maps an ingress port to its segment, ``-1`` keys
    every other port (absent: a miss). Camus: ``came_down`` ports, ``ecmp``
    (the up port of each bucket, -1 for a missing entry), and the BDD
    (``fields`` = key column of each field in pipeline order; ``states``, one
    more than the largest state; per field the exact ``(state, value, next)``,
    range ``(state, lo, hi, next)`` and miss ``(state, next)`` rows as arrays
    sorted by state, then value, in lookup order otherwise; ``leaf`` = the
    action of each state, -1 for none).
    """

    kind: int = 0
    n_fields: int = 0
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    mask: np.ndarray | None = None
    value: np.ndarray | None = None
    rule_action: list[int] = field(default_factory=list)
    segments: list[tuple[int, int]] = field(default_factory=list)
    port_segment: dict[int, int] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    came_down: frozenset[int] = frozenset()
    ecmp: tuple[int, ...] = ()
    fields: tuple[int, ...] = ()
    states: int = 0
    tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    leaf: np.ndarray | None = None

    @property
    def rules(self) -> int:
        return len(self.rule_action)


def compile_rules(piece: SwitchPiece, entries: Sequence[TableEntry], n_fields: int,
                  action_of: Callable[[TableEntry], Action], *, by_port: bool = False,
                  shifts: Sequence[int] = ()) -> SwitchPiece:
    """Add ``entries`` (one table) to ``piece`` as rules of ``n_fields`` key fields.

    ``by_port``: the first match field is the exact ingress port; the rules of
    each port form one segment and the field leaves the key. Otherwise one
    segment serves every port. ``shifts``: per key field, the right shift of
    :func:`field_bounds`. Raises :class:`Unsupported` for values beyond int64.
    """
    kinds = column_kinds(entries)
    order = precedence_order(entries, kinds)
    skip = 1 if by_port else 0
    if len(kinds) - skip != n_fields:
        raise Unsupported(f"entries of {len(kinds) - skip} fields in a {n_fields}-field key")
    if by_port:
        if kinds[0] != {Exact}:
            raise Unsupported("the ingress port is not exact in every entry")
        groups: dict[int, list[TableEntry]] = {}
        for e in order:
            groups.setdefault(e.match[0][1].value, []).append(e)  # type: ignore[union-attr]
        order = [e for group in groups.values() for e in group]
        sizes = [(port, len(group)) for port, group in groups.items()]
    else:
        sizes = [(-1, len(order))]
    shifts = tuple(shifts) or (0,) * n_fields
    bounds = np.zeros((4, len(order), n_fields), np.int64)
    for f in range(n_fields):
        col = column_bounds([e.match[skip + f][1] for e in order], kinds[skip + f], shifts[f])
        bounds[:, :, f] = col.T
    actions: dict[tuple[str, tuple[tuple[str, int], ...]], int] = {}
    rule_action: list[int] = []
    for e in order:
        key = (e.action, e.params)
        a = actions.get(key)
        if a is None:
            a = actions[key] = len(piece.actions)
            piece.actions.append(action_of(e))
        rule_action.append(a)
    start = piece.rules
    for port, size in sizes:
        piece.port_segment[port] = len(piece.segments)
        piece.segments.append((start, start + size))
        start += size
    piece.n_fields = n_fields
    lo, hi, mask, value = (np.ascontiguousarray(b) for b in bounds)
    if piece.lo is None:
        piece.lo, piece.hi, piece.mask, piece.value = lo, hi, mask, value
    else:
        piece.lo = np.concatenate([piece.lo, lo])
        piece.hi = np.concatenate([piece.hi, hi])
        piece.mask = np.concatenate([piece.mask, mask])
        piece.value = np.concatenate([piece.value, value])
    piece.rule_action.extend(rule_action)
    return piece


def range_piece(groups: dict[int, list[tuple[int, int, tuple[int, ...]]]]) -> SwitchPiece:
    """A piece of one-field rules given as ``ingress port -> [(lo, hi, ports), ...]`` in
    lookup order (port ``-1``: every port)."""
    piece = SwitchPiece(n_fields=1)
    rows = [r for group in groups.values() for r in group]
    bounds = np.zeros((4, len(rows), 1), np.int64)
    actions: dict[tuple[int, ...], int] = {}
    for port, group in groups.items():
        start = piece.rules
        for lo, hi, ports in group:
            bounds[0, piece.rules, 0], bounds[1, piece.rules, 0] = lo, hi
            if ports not in actions:
                actions[ports] = len(piece.actions)
                piece.actions.append((ports, False, False))
            piece.rule_action.append(actions[ports])
        piece.port_segment[port] = len(piece.segments)
        piece.segments.append((start, piece.rules))
    piece.lo, piece.hi, piece.mask, piece.value = bounds
    return piece


def group_ports(config: SwitchConfig, group: int) -> tuple[tuple[int, ...], bool]:
    """(ports of multicast group ``group`` in replica order, whether it is missing)."""
    g = config.multicast_groups.get(group)
    return ((), True) if g is None else (g.ports, False)


def port_or_group(config: SwitchConfig, entry: TableEntry, group: str,
                  forward: str | None = None) -> Action:
    """What a one-parameter action does: action ``group`` replicates to that multicast
    group, ``forward`` (None: every other action) sends to that port, any other action
    (or another number of parameters) raises in the reference."""
    if len(entry.params) != 1:
        return (), False, True
    (_, value), = entry.params
    if entry.action == group:
        ports, missing = group_ports(config, value)
        return ports, False, missing
    if forward is None or entry.action == forward:
        return (value,), False, False
    return (), False, True


@dataclass(frozen=True, eq=False)
class TopologyArrays:
    """The topology's ports as slots (see :func:`~sim.dataplanes.content_walk.walk_kernel`).

    Nodes are numbered switches first, then hosts (topology order); a node's
    slots are its ports in port order.
    """

    topology: Topology
    gid: dict[str, int]
    names: tuple[str, ...]
    slot_start: np.ndarray
    slot_node: np.ndarray
    slot_port: np.ndarray
    slot_nb: np.ndarray
    slot_back: np.ndarray
    slot_delay: np.ndarray
    slot_pair: np.ndarray
    port_slot: np.ndarray

    @property
    def n_switches(self) -> int:
        return len(self.topology.switches)

    @property
    def n_slots(self) -> int:
        return len(self.slot_node)

    def kernel_args(self) -> tuple:  # type: ignore[type-arg]
        return (self.n_switches, self.slot_node, self.slot_port, self.slot_nb, self.slot_back,
                self.slot_delay, self.slot_pair, self.port_slot)


@lru_cache(maxsize=8)
def topology_arrays(topology: Topology) -> TopologyArrays:
    """One slot layout per topology (topologies are immutable and compare by identity)."""
    names = (*topology.switches, *topology.hosts)
    gid = {n: i for i, n in enumerate(names)}
    start = [0]
    node: list[int] = []
    port: list[int] = []
    nb: list[int] = []
    delay: list[float] = []
    pair: list[int] = []
    where: dict[tuple[str, int], int] = {}
    max_port = 0
    for x in names:
        first: dict[str, int] = {}
        for p, info in topology.ports(x).items():
            s = len(node)
            where[(x, p)] = s
            node.append(gid[x])
            port.append(p)
            nb.append(gid[info.neighbor])
            delay.append(info.link.delay_s)
            pair.append(first.setdefault(info.neighbor, s))
            max_port = max(max_port, p)
        start.append(len(node))
    back = [where[(names[nb[s]], topology.ports(names[node[s]])[port[s]].neighbor_port)]
            for s in range(len(node))]
    port_slot = np.full((len(names), max_port + 1), -1, np.int64)
    for (x, p), s in where.items():
        port_slot[gid[x], p] = s
    i64 = np.int64
    return TopologyArrays(
        topology=topology, gid=gid, names=names, slot_start=np.array(start, i64),
        slot_node=np.array(node, i64), slot_port=np.array(port, i64), slot_nb=np.array(nb, i64),
        slot_back=np.array(back, i64), slot_delay=np.array(delay, np.float64),
        slot_pair=np.array(pair, i64), port_slot=port_slot)


def _ragged(lists: Iterable[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(start offsets, flat values) of a list of lists."""
    start = [0]
    flat: list[int] = []
    for xs in lists:
        flat.extend(xs)
        start.append(len(flat))
    return np.array(start, np.int64), np.array(flat, np.int64)


class Program:
    """The kernel's arrays for one state: every switch's :class:`SwitchPiece`, concatenated.

    Parameters
    ----------
    arrays : TopologyArrays
    pieces : sequence of SwitchPiece
        One per switch, in topology order.
    n_fields : int
        Key columns of the rules (every piece's rules have as many).
    """

    def __init__(self, arrays: TopologyArrays, pieces: Sequence[SwitchPiece],
                 n_fields: int) -> None:
        n_sw = arrays.n_switches
        seg = np.full(arrays.n_slots, -1, np.int64)
        kind = np.zeros(n_sw, np.int64)
        seg_start = [0]
        rule_act: list[np.ndarray] = []
        bounds: list[list[np.ndarray]] = [[], [], [], []]
        actions: list[Action] = []
        came_down = np.zeros(arrays.n_slots, np.int64)
        ecmp: list[Sequence[int]] = []
        # BDD: per (switch, field) the three tables' rows, as [begin, end) of global arrays
        nf = np.zeros(n_sw, np.int64)
        nst = np.zeros(n_sw, np.int64)
        leaf_base = np.zeros(n_sw, np.int64)
        fpos: list[Sequence[int]] = []
        tables: list[list[np.ndarray]] = [[], [], []]
        spans: list[list[int]] = [[0], [0], [0]]
        leaf: list[np.ndarray] = []
        n_leaf = 0
        rules = 0
        slot_start, slot_port = arrays.slot_start, arrays.slot_port
        for v, piece in enumerate(pieces):
            kind[v] = piece.kind
            a0 = len(actions)
            actions.extend(piece.actions)
            s0 = len(seg_start) - 1
            seg_start.extend(rules + end for _, end in piece.segments)
            if piece.rules:
                if piece.n_fields != n_fields:
                    raise Unsupported("pieces with different key widths")
                for i, arr in enumerate((piece.lo, piece.hi, piece.mask, piece.value)):
                    bounds[i].append(arr)  # type: ignore[arg-type]
                rule_act.append(np.asarray(piece.rule_action, np.int64) + a0)
                rules += piece.rules
            everywhere = piece.port_segment.get(-1)
            for s in range(slot_start[v], slot_start[v + 1]):
                g = piece.port_segment.get(int(slot_port[s]), everywhere)
                if g is not None:
                    seg[s] = s0 + g
                if int(slot_port[s]) in piece.came_down:
                    came_down[s] = 1
            ecmp.append(piece.ecmp)
            fpos.append(piece.fields)
            nf[v] = len(piece.fields)
            nst[v] = piece.states
            for rows in piece.tables:
                for i, arr in enumerate(rows):
                    tables[i].append(arr)
                    spans[i].append(spans[i][-1] + len(arr))
            leaf_base[v] = n_leaf
            if piece.leaf is not None:
                leaf.append(np.where(piece.leaf < 0, -1, piece.leaf + a0))
                n_leaf += len(piece.leaf)
        i64 = np.int64
        if rules:
            lo, hi, mask, value = (np.concatenate(x) for x in bounds)
            r_act = np.concatenate(rule_act)
        else:
            lo = hi = mask = value = np.zeros((0, max(n_fields, 1)), i64)
            r_act = np.zeros(0, i64)
        act_start, act_port = _ragged(p for p, _, _ in actions)
        act_up = np.array([int(u) for _, u, _ in actions] or [0], i64)
        act_bad = np.array([int(bad) for _, _, bad in actions] or [0], i64)
        ecmp_start, ecmp_port = _ragged(ecmp)
        fstart, fpos_flat = _ragged(fpos)
        cols = []
        for i, width in enumerate((3, 4, 2)):
            arr = (np.concatenate(tables[i]) if tables[i] else np.zeros((0, width), i64))
            cols.append([np.ascontiguousarray(arr[:, c]) for c in range(width)])
        (ex_st, ex_val, ex_next), (rg_st, rg_lo, rg_hi, rg_next), (ms_st, ms_next) = cols
        self.rules = (kind, seg, np.array(seg_start, i64), lo, hi, mask, value, r_act)
        self.actions = (act_start, act_port, act_up, act_bad)
        self.camus = (came_down, ecmp_start, ecmp_port)
        self.bdd = (nf, fstart, fpos_flat, np.array(spans[0], i64), ex_st, ex_val, ex_next,
                    np.array(spans[1], i64), rg_st, rg_lo, rg_hi, rg_next,
                    np.array(spans[2], i64), ms_st, ms_next, nst, leaf_base,
                    np.concatenate(leaf) if leaf else np.full(1, -1, i64))

    def net_args(self, same: np.ndarray) -> tuple:  # type: ignore[type-arg]
        """This program as reference flows for the kernel's ``net`` argument (one key field,
        no Camus parts; the field's bounds as contiguous 1-D arrays, which the kernel
        indexes without a stride); ``same``: :func:`same_decisions` of the installed
        program and this one."""
        kind, seg, seg_start, lo, hi, mask, value, r_act = self.rules
        act_start, act_port, _, _ = self.actions
        lo, hi, mask, value = (np.ascontiguousarray(x[:, 0]) for x in (lo, hi, mask, value))
        return (1, seg, seg_start, lo, hi, mask, value, r_act, act_start, act_port, same)


def no_net(arrays: TopologyArrays) -> tuple:  # type: ignore[type-arg]
    """The kernel's ``net`` argument when there are no reference flows."""
    z = np.zeros(1, np.int64)
    zz = np.zeros(0, np.int64)
    return (0, np.full(arrays.n_slots, -1, np.int64), z, zz, zz, zz, zz, z, z, z,
            np.zeros(arrays.n_slots, np.int64))


def _port_multisets(actions: tuple, ok: np.ndarray, ids: dict[tuple[int, ...], int]  # type: ignore[type-arg]
                    ) -> np.ndarray:
    """Per action its ports as a multiset, numbered in ``ids`` (shared between programs);
    -1 where ``ok`` is 0."""
    act_start, act_port = actions[0], actions[1]
    ports = act_port.tolist()
    bounds = act_start.tolist()
    out = np.full(len(bounds) - 1, -1, np.int64)
    for a in range(len(bounds) - 1):
        if ok[a]:
            out[a] = ids.setdefault(tuple(sorted(ports[bounds[a]:bounds[a + 1]])), len(ids))
    return out


def same_decisions(arrays: TopologyArrays, installed: Program, reference: Program,
                   to_keys: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
                   ) -> np.ndarray:
    """Per slot 1 where the reference flows (``reference``, one field keyed by the kernel's
    ``net_keys``) send every event arriving on that ingress slot to the same ports, as a
    multiset, as the installed rules (``installed``, keyed by ``keys``); 0 where that is
    not shown (host slots included).

    Shown rule by rule: a switch of one table (kind 0) whose one-field segment of the
    slot has as many rules as the reference's, each rule ``i`` matching exactly the
    events reference rule ``i`` matches (``to_keys(lo, hi)``: the reference bounds as
    key bounds such that ``lo <= net_key <= hi`` iff ``lo' <= key <= hi'``, -1 where no
    such bounds exist; no masks) and sending to the same ports (no Camus up port, no
    action that raises); or neither has a segment (both miss). Then the first match is
    rule ``i`` in both or in neither, so the reference walk crosses the links the
    installed walk crosses (:mod:`sim.dataplanes.content_walk`, network false positives).
    """
    n_slots = arrays.n_slots
    same = np.zeros(n_slots, np.int64)
    kind, seg, seg_start, lo, hi, mask, value, r_act = installed.rules
    _, n_seg, n_seg_start, n_lo, n_hi, n_mask, n_value, n_act = reference.rules
    if lo.shape[1] != 1 or n_lo.shape[1] != 1:
        return same
    node = arrays.slot_node
    switch = node < arrays.n_switches
    one_table = np.zeros(n_slots, bool)
    one_table[switch] = kind[node[switch]] == 0
    both_miss = (seg < 0) & (n_seg < 0)
    both = (seg >= 0) & (n_seg >= 0)
    g, gn = np.where(both, seg, -1), np.where(both, n_seg, -1)  # -1: in range, unused
    size = seg_start[g + 1] - seg_start[g]
    alike = both & (size == n_seg_start[gn + 1] - n_seg_start[gn])
    # the rule pairs of the slots whose segments are equally long
    slots = np.flatnonzero(alike)
    counts = size[slots]
    pair_slot = np.repeat(slots, counts)
    within = np.arange(len(pair_slot)) - np.repeat(np.cumsum(counts) - counts, counts)
    mi = seg_start[g[pair_slot]] + within
    ni = n_seg_start[gn[pair_slot]] + within
    key_lo, key_hi = to_keys(n_lo[ni, 0], n_hi[ni, 0])
    ids: dict[tuple[int, ...], int] = {}
    act_ok = (installed.actions[2] == 0) & (installed.actions[3] == 0)
    main_ports = _port_multisets(installed.actions, act_ok, ids)
    ref_ports = _port_multisets(reference.actions, np.ones(len(reference.actions[0]) - 1, bool),
                                ids)
    mp, rp = main_ports[r_act[mi]], ref_ports[n_act[ni]]
    rule_alike = ((lo[mi, 0] == key_lo) & (hi[mi, 0] == key_hi) & (key_lo >= 0)
                  & (mask[mi, 0] == 0) & (value[mi, 0] == 0) & (n_mask[ni, 0] == 0)
                  & (n_value[ni, 0] == 0) & (mp >= 0) & (mp == rp))
    unlike = np.bincount(pair_slot[~rule_alike], minlength=n_slots)
    same[one_table & (both_miss | (alike & (unlike == 0)))] = 1
    return same
