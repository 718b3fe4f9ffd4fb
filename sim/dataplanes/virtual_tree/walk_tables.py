"""Flat tables of the virtual-tree walk kernel: the topology's links and the installed states.

:class:`WalkTopology` numbers the nodes (switches, then hosts) and lays the
ports out as arrays: per node the neighbour behind each port, its port, the
link delay and the directed node pair (the static engine counts frames per
``(node, neighbour)``) with its two ends.

:class:`WalkTables` turns the installed tables of :class:`ControlState` s into
the arrays :func:`sim.dataplanes.virtual_tree.walk_kernel.walk_kernel` reads,
for one :class:`LabelFormat`: a state is a *row* of pieces, one per switch;
a piece is one :class:`SwitchConfig`'s ``check_hop`` / ``check_tree``
answers (label -> port, the ``extract_port`` answers of a port mask, or a
multicast group's ports), its ``check_stop`` entries and clone sessions.
Everything is read from the installed entries as the Python walk reads them
(:class:`sim.dataplanes.virtual_tree.fast_path._SwitchIndex`): the first
entry of a key answers, ``extract_port`` is asked of the installed table,
and an answer the Python walk declines on (a port outside the bitmask, a
missing group or ``extract_port`` entry) is marked so the kernel declines
when it uses it; a switch whose ``check_*`` entries are not all exact is
marked so a visit declines.

Work is shared by object identity, so a state built on another one (a
:class:`~sim.dataplanes.control_state.StateBuilder` with a ``base`` keeps the
switch configurations, entry tuples and session maps it did not touch) costs
only what changed: rows are kept per state (a state derived from a base,
:func:`~sim.dataplanes.control_state.derived_from`, copies the base's row and
looks up the switches it touched only), pieces per switch configuration,
their parts per entry tuple (and ``extract_port`` tuple, group map) or session
map, ``extract_port`` answers per ``extract_port`` tuple. The objects are held
while their arrays are, so an identity cannot be reused; everything is
forgotten at once (:meth:`WalkTables.clear`) when the arrays grow past
:data:`WalkTables.LIMIT`. One :class:`WalkTables` per label format lives in
``caches.vt_tables`` (:class:`sim.dataplanes.caches.Caches`).

References
----------
Seed 000 §5.2.6 (Listings 5.1-5.5: the tables); digest ch. 5-7 §1.2-1.5.4.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from sim.dataplanes.control_state import (
    EMPTY_SWITCH,
    ControlState,
    Exact,
    SwitchConfig,
    Ternary,
    derived_from,
)
from sim.dataplanes.virtual_tree.codec import FieldRangeError, LabelFormat
from sim.dataplanes.virtual_tree.reference import (
    CHECK_HOP,
    CHECK_STOP,
    CHECK_TREE,
    EXTRACT_PORT,
    SET_TREE_GROUP,
)
from sim.dataplanes.virtual_tree.walk_layout import ACT_GROUP, ACT_HOP, ACT_PORTS
from topologies.model import Topology

#: Keys and ports the kernel holds (int64); a key outside never matches a decoded label.
_KEY_LIMIT = 1 << 62


class Pool:
    """A growable int64 array; appends are buffered, :meth:`view` is the filled part."""

    __slots__ = ("data", "n", "_pending", "_list")

    def __init__(self) -> None:
        self.data = np.zeros(64, dtype=np.int64)
        self.n = 0
        self._pending: list[int] = []
        self._list: list[int] = []

    def extend(self, values: Sequence[int]) -> int:
        """Append ``values``; returns the index of the first."""
        start = self.n
        self._pending.extend(values)
        self.n += len(values)
        return start

    def view(self) -> np.ndarray:
        pending = self._pending
        if pending:
            start = self.n - len(pending)
            if self.n > len(self.data):
                grown = np.zeros(max(2 * len(self.data), self.n), dtype=np.int64)
                grown[:start] = self.data[:start]
                self.data = grown
            self.data[start:self.n] = pending
            pending.clear()
        return self.data[:self.n]

    def as_list(self) -> list[int]:
        """The filled part as a Python list (kept, extended as the pool grows)."""
        if len(self._list) < self.n:
            self._list.extend(self.view()[len(self._list):].tolist())
        return self._list


class WalkTopology:
    """The links of one topology as the kernel's arrays (see the module docstring).

    Attributes
    ----------
    index : dict
        Node name -> node number (switches first, in topology order, then hosts).
    n_switches, n_pairs : int
        Switches, directed node pairs with a link.
    limit : int
        Frames on one directed pair beyond which the walk is a forwarding loop
        (the static engine's limit).
    tp : numpy.ndarray
        Per node its first link and port count, per link (node, port) the
        neighbour, its port and the pair, per pair its two ends; ``offsets``
        says where each region starts (in that order).
    td : numpy.ndarray
        Per link its delay (s).
    """

    def __init__(self, topology: Topology) -> None:
        nodes = (*topology.switches, *topology.hosts)
        self.index = {n: i for i, n in enumerate(nodes)}
        self.n_switches = len(topology.switches)
        self.limit = 64 * len(topology.links) * (len(topology.hosts) + 1)
        port_base: list[int] = []
        port_n: list[int] = []
        link: list[tuple[int, int, int]] = []
        delay: list[float] = []
        pairs: dict[tuple[int, int], int] = {}
        for u, name in enumerate(nodes):
            ports = topology.ports(name)
            top = max(ports, default=0)
            port_base.append(len(link))
            port_n.append(top)
            for p in range(1, top + 1):
                info = ports.get(p)
                if info is None:
                    link.append((-1, -1, -1))
                    delay.append(0.0)
                    continue
                v = self.index[info.neighbor]
                link.append((v, info.neighbor_port, pairs.setdefault((u, v), len(pairs))))
                delay.append(info.link.delay_s)
        self.n_pairs = len(pairs)
        lk = np.array(link, dtype=np.int64).reshape(-1, 3)
        ends = np.array(list(pairs), dtype=np.int64).reshape(-1, 2)
        regions = (port_base, port_n, lk[:, 0], lk[:, 1], lk[:, 2], ends[:, 0], ends[:, 1])
        self.offsets = tuple(np.cumsum([0, *(len(r) for r in regions[:-1])]).tolist())
        self.tp = np.concatenate([np.asarray(r, dtype=np.int64) for r in regions])
        self.td = np.array(delay, dtype=np.float64)
        self._lists: tuple[list[Any], list[Any]] | None = None

    def lists(self) -> tuple[list[Any], list[Any]]:
        """``tp`` and ``td`` as Python lists (the interpreted kernel's input)."""
        if self._lists is None:
            self._lists = (self.tp.tolist(), self.td.tolist())
        return self._lists


class _Decline(Exception):
    """An answer the Python walk declines on (the kernel declines where it is used)."""


class WalkTables:
    """The installed tables of states under one :class:`LabelFormat` (module docstring).

    Parameters
    ----------
    fmt : LabelFormat
    """

    #: Array entries kept before everything is forgotten at once.
    LIMIT = 1 << 22

    def __init__(self, fmt: LabelFormat) -> None:
        self.fmt = fmt
        self.clear()

    def clear(self) -> None:
        """Forget every state, piece and part (the array starts empty)."""
        #: ``tb``: answer blocks, stop blocks, session blocks, pieces and state rows
        #: (:mod:`~sim.dataplanes.virtual_tree.walk_kernel` says how they are laid out)
        self.pool = Pool()
        #: the most ports one answer sends to (sizes the kernel's clone scratch)
        self.max_outs = 0
        self._rows: dict[tuple[int, int], tuple[ControlState, Topology, int]] = {}
        #: base states' rows as lists (the rows of states derived from them start there)
        self._row_lists: dict[tuple[int, int], tuple[ControlState, Topology, list[int]]] = {}
        self._switch_at: dict[int, tuple[Topology, dict[str, int]]] = {}
        self._pieces: dict[int, tuple[SwitchConfig, int]] = {}
        self._parts: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}
        self._extract: dict[int, tuple[Any, Callable[[int], tuple[int, ...] | None]]] = {}

    def size(self) -> int:
        return self.pool.n

    def array(self, as_list: bool = False) -> Any:
        """``tb``: everything laid out so far (a Python list for the interpreted kernel)."""
        return self.pool.as_list() if as_list else self.pool.view()

    # -- rows and pieces ----------------------------------------------------------
    def row(self, state: ControlState, topology: Topology) -> int:
        """Offset of ``state``'s row (the piece of each switch, in topology order)."""
        got = self._rows.get((id(state), id(topology)))
        if got is not None and got[0] is state and got[1] is topology:
            return got[2]
        base, touched = derived_from(state) or (None, frozenset())
        if base is not None:
            # the base's row with the touched switches' pieces: the others hold its objects
            row = self._row_pieces(base, topology).copy()
            at = self._positions(topology)
            switches = state.switches
            for sw in touched:
                i = at.get(sw)
                if i is not None:
                    row[i] = self._piece_of(switches[sw])
        else:
            row = self._row_pieces(state, topology, keep=False)
        offset = self.pool.extend(row)
        self._rows[(id(state), id(topology))] = (state, topology, offset)
        return offset

    def _row_pieces(self, state: ControlState, topology: Topology, keep: bool = True
                    ) -> list[int]:
        """The piece of each switch of ``topology`` in ``state`` (kept per base state)."""
        key = (id(state), id(topology))
        got = self._row_lists.get(key)
        if got is not None and got[0] is state and got[1] is topology:
            return got[2]
        switches = state.switches
        piece_of = self._piece_of
        row = [piece_of(switches.get(sw, EMPTY_SWITCH)) for sw in topology.switches]
        if keep:
            self._row_lists[key] = (state, topology, row)
        return row

    def _piece_of(self, config: SwitchConfig) -> int:
        hit = self._pieces.get(id(config))
        return hit[1] if hit is not None and hit[0] is config else self.piece(config)

    def _positions(self, topology: Topology) -> dict[str, int]:
        """Switch -> its position in ``topology.switches`` (a row's order)."""
        got = self._switch_at.get(id(topology))
        if got is None or got[0] is not topology:
            got = self._switch_at[id(topology)] = (
                topology, {sw: i for i, sw in enumerate(topology.switches)})
        return got[1]

    def piece(self, config: SwitchConfig) -> int:
        """Where the piece of ``config`` starts in ``tb`` (built on first use)."""
        hit = self._pieces.get(id(config))
        if hit is not None and hit[0] is config:
            return hit[1]
        tables = config.tables
        ext = tables.get(EXTRACT_PORT)
        seq = self._extract_answers(config, ext)
        hop_t, tree_t = tables.get(CHECK_HOP, ()), tables.get(CHECK_TREE, ())
        stop_t = tables.get(CHECK_STOP, ())
        groups, sessions = config.multicast_groups, config.clone_sessions
        hop = self._part((0, id(hop_t), id(ext)), (hop_t, ext),
                         lambda: self._actions(hop_t, lambda e: self._hop(e, seq)))
        tree = self._part((1, id(tree_t), id(ext), id(groups)), (tree_t, ext, groups),
                          lambda: self._tree_actions(tree_t, seq, groups))
        stop = self._part((2, id(stop_t)), (stop_t,), lambda: self._stops(stop_t))
        sess = self._part((3, id(sessions)), (sessions,), lambda: self._sessions(sessions))
        bad = int(hop[2] or tree[2] or stop[2])
        n = self.pool.extend([hop[0], hop[1], tree[0], tree[1], stop[0], stop[1], sess, bad])
        self._pieces[id(config)] = (config, n)
        return n

    def _part(self, key: tuple[int, ...], objects: tuple[Any, ...], make: Callable[[], Any]
              ) -> Any:
        """A piece's part, shared by identity of the ``objects`` it is read from."""
        hit = self._parts.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], objects, strict=True)):
            return hit[1]
        value = make()
        self._parts[key] = (objects, value)
        return value

    def _extract_answers(self, config: SwitchConfig, table: Any
                         ) -> Callable[[int], tuple[int, ...] | None]:
        """``mask -> ports`` that ``extract_port`` answers pass after pass until the mask
        is empty (None: the Python walk declines), memoised per ``extract_port`` tuple."""
        hit = self._extract.get(id(table))
        if hit is not None and hit[0] is table:
            return hit[1]
        memo: dict[int, tuple[int, ...] | None] = {}
        port_bit = self.fmt.port_bit
        lowest = _lowest_bit_ports(table)

        def answers(mask: int) -> tuple[int, ...] | None:
            if mask in memo:
                return memo[mask]
            out: list[int] | None = []
            rem = mask
            while rem and out is not None:
                if lowest is not None:  # the entry of the lowest 1-bit answers, if any
                    port = lowest.get(rem & -rem)
                else:
                    entry = config.lookup(EXTRACT_PORT, rem)
                    port = None if entry is None else entry.param("port")
                try:
                    bit = None if port is None else port_bit(port)
                except FieldRangeError:
                    bit = None
                if bit is None or not rem & bit:
                    out = None  # no answer, a port outside the bitmask, or a mask that stays
                else:
                    rem &= ~bit
                    out.append(port)  # type: ignore[arg-type]
            memo[mask] = got = None if out is None else tuple(out)
            return got

        self._extract[id(table)] = (table, answers)
        return answers

    # -- parts ------------------------------------------------------------------------
    def _actions(self, entries: Iterable[Any], resolve: Callable[[Any], tuple[int, list[int]]]
                 ) -> tuple[int, int, bool]:
        """The answer block of a ``check_hop`` / ``check_tree`` tuple (keys ascending, the
        first entry of a key answers): where it starts, its keys, and whether the table
        is not all exact."""
        first = _exact_keys(entries, 1)
        if first is None:
            return 0, 0, True
        keys, kinds, bads, outs = [], [], [], []
        ends = [0]
        for (key,), entry in sorted(first.items()):
            if not 0 <= key < _KEY_LIMIT:
                continue
            try:
                kind, ports = resolve(entry)
                bad = 0
            except (_Decline, FieldRangeError, KeyError):
                kind, ports, bad = ACT_HOP, [], 1
            keys.append(key)
            kinds.append(kind)
            bads.append(bad)
            outs.extend(ports)
            ends.append(len(outs))
            self.max_outs = max(self.max_outs, len(ports))
        n = len(keys)
        at = self.pool.n
        first_out = at + 5 * n
        self.pool.extend([*keys, *kinds, *(first_out + e for e in ends[:-1]),
                          *(first_out + e for e in ends[1:]), *bads, *outs])
        return at, n, False

    def _tree_actions(self, entries: Iterable[Any],
                      seq: Callable[[int], tuple[int, ...] | None], groups: Any
                      ) -> tuple[int, int, bool]:
        """``_actions(entries, lambda e: _tree(e, seq, groups))`` (the definition), in one
        loop: the answer block of a ``check_tree`` tuple, whose entries (one per VT on
        the switch, a new tuple for every install) are the bulk of a new state's
        pieces. ``tests/sim/test_walk_tables_tree.py`` compares the two."""
        first: dict[int, Any] = {}
        for entry in entries:
            match = entry.match
            if len(match) != 1 or type(match[0][1]) is not Exact:
                return 0, 0, True
            key = match[0][1].value
            if key not in first:
                first[key] = entry
        keys: list[int] = []
        kinds: list[int] = []
        bads: list[int] = []
        outs: list[int] = []
        ends = [0]
        for key in sorted(first):
            if not 0 <= key < _KEY_LIMIT:
                continue
            entry = first[key]
            bad = 0
            ports: Sequence[int]
            try:
                if entry.action == SET_TREE_GROUP:
                    kind, ports = self._tree(entry, seq, groups)
                else:
                    mask = entry.param("ports")
                    got = seq(mask) if mask else ()
                    if got is None:
                        raise _Decline
                    kind, ports = ACT_PORTS, got
            except (_Decline, FieldRangeError, KeyError):
                kind, ports, bad = ACT_HOP, (), 1
            keys.append(key)
            kinds.append(kind)
            bads.append(bad)
            outs.extend(ports)
            ends.append(len(outs))
            if len(ports) > self.max_outs:
                self.max_outs = len(ports)
        n = len(keys)
        at = self.pool.n
        first_out = at + 5 * n
        self.pool.extend([*keys, *kinds, *(first_out + e for e in ends[:-1]),
                          *(first_out + e for e in ends[1:]), *bads, *outs])
        return at, n, False

    def _hop(self, entry: Any, seq: Callable[[int], tuple[int, ...] | None]
             ) -> tuple[int, list[int]]:
        """A hop label: the port ``extract_port`` answers for its port's bit (exactly one)."""
        ports = seq(self.fmt.port_bit(entry.param("port")))
        if ports is None or len(ports) != 1:
            raise _Decline
        return ACT_HOP, list(ports)

    def _tree(self, entry: Any, seq: Callable[[int], tuple[int, ...] | None], groups: Any
              ) -> tuple[int, list[int]]:
        """A tree label: its multicast group's ports, or its mask's ``extract_port`` answers."""
        if entry.action == SET_TREE_GROUP:
            group = groups.get(entry.param("group"))
            if group is None:
                raise _Decline
            for p in group.ports:
                self.fmt.port_bit(p)
            return ACT_GROUP, list(group.ports)
        mask = entry.param("ports")
        ports = seq(mask) if mask else ()
        if ports is None:
            raise _Decline
        return ACT_PORTS, list(ports)

    def _stops(self, entries: Iterable[Any]) -> tuple[int, int, bool]:
        """The stop block of a ``check_stop`` tuple (clone ports ascending, then labels):
        where it starts, its entries, and whether the table is not all exact."""
        first = _exact_keys(entries, 2)
        if first is None:
            return 0, 0, True
        pairs = sorted({(port, label) for label, port in first
                        if 0 <= label < _KEY_LIMIT and -_KEY_LIMIT < port < _KEY_LIMIT})
        at = self.pool.extend([p for p, _ in pairs])
        self.pool.extend([lab for _, lab in pairs])
        return at, len(pairs), False

    def _sessions(self, sessions: Any) -> int:
        """Where a session block starts: the egress port of clone session ``0 ..
        bitmask_bits`` (-1: none, or no port a link can have)."""
        block = [-1] * (self.fmt.bitmask_bits + 1)
        for sid, session in sessions.items():
            if 0 <= sid < len(block) and 0 < session.port < _KEY_LIMIT:
                block[sid] = session.port
        return self.pool.extend(block)


def _lowest_bit_ports(table: Any) -> dict[int, int] | None:
    """``bit -> port`` when every entry of an ``extract_port`` tuple is the usual one of its
    port ``p`` (ternary value ``bit = 1 << (p - 1)``, mask ``(bit << 1) - 1``; one per
    port): then a lookup of ``rem`` hits at most the entry of its lowest 1-bit, whatever
    the priorities. None otherwise (the table is asked itself)."""
    out: dict[int, int] = {}
    for entry in table or ():
        if len(entry.match) != 1 or type(entry.match[0][1]) is not Ternary:
            return None
        port = next((v for k, v in entry.params if k == "port"), None)  # as entry.param
        m = entry.match[0][1]
        if not isinstance(port, int) or port < 1 or m.value != 1 << (port - 1) \
                or m.mask != (m.value << 1) - 1 or m.value in out:
            return None
        out[m.value] = port
    return out


def _exact_keys(entries: Iterable[Any], width: int) -> dict[tuple[int, ...], Any] | None:
    """Key -> first entry if every entry matches exactly on ``width`` fields, else None
    (what :func:`sim.dataplanes.virtual_tree.fast_path._exact` reads)."""
    out: dict[tuple[int, ...], Any] = {}
    for entry in entries:
        if len(entry.match) != width or not all(type(m) is Exact for _, m in entry.match):
            return None
        out.setdefault(tuple(m.value for _, m in entry.match), entry)
    return out
