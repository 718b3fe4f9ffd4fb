"""Control-plane state: the single artifact the simulator and BMv2 both run.

A :class:`ControlState` maps each switch to a :class:`SwitchConfig` holding
P4Runtime-shaped table entries, multicast groups and clone sessions. Data-plane
models look entries up with :meth:`SwitchConfig.lookup`; the HIL adapter writes
the same entries through P4Runtime; :func:`diff` yields the INSERT / MODIFY /
DELETE writes between two states; :func:`to_runtime_json` exports one switch in
the shape of p4lang/tutorials' ``sN-runtime.json``.

Table and action names are the fully qualified P4 names (``MyIngress.t``).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal

# -- match values ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Exact:
    value: int

    def matches(self, key: int) -> bool:
        return key == self.value


@dataclass(frozen=True, slots=True)
class Ternary:
    value: int
    mask: int

    def matches(self, key: int) -> bool:
        return key & self.mask == self.value & self.mask


@dataclass(frozen=True, slots=True)
class Lpm:
    value: int
    prefix_len: int
    width: int

    def matches(self, key: int) -> bool:
        shift = self.width - self.prefix_len
        return key >> shift == self.value >> shift


@dataclass(frozen=True, slots=True)
class Range:
    low: int
    high: int

    def matches(self, key: int) -> bool:
        return self.low <= key <= self.high


Match = Exact | Ternary | Lpm | Range


@dataclass(frozen=True, slots=True)
class TableEntry:
    """One table entry: match fields in key order, action, action parameters.

    ``priority`` orders ternary/range entries (higher wins, as in P4Runtime);
    LPM entries are ordered by prefix length.
    """

    table: str
    match: tuple[tuple[str, Match], ...]
    action: str
    params: tuple[tuple[str, int], ...] = ()
    priority: int = 0

    @property
    def key(self) -> tuple[str, tuple[tuple[str, Match], ...], int]:
        """What identifies the entry in P4Runtime (table, match, priority)."""
        return (self.table, self.match, self.priority)

    def param(self, name: str) -> int:
        for k, v in self.params:
            if k == name:
                return v
        raise KeyError(f"{self.table}/{self.action} has no parameter {name!r}")


@dataclass(frozen=True, slots=True)
class MulticastGroup:
    """A PRE multicast group: replicas as (egress port, instance id)."""

    group_id: int
    replicas: tuple[tuple[int, int], ...]

    @property
    def ports(self) -> tuple[int, ...]:
        return tuple(p for p, _ in self.replicas)


@dataclass(frozen=True, slots=True)
class CloneSession:
    session_id: int
    port: int


@dataclass(frozen=True)
class SwitchConfig:
    """Everything installed on one switch."""

    tables: Mapping[str, tuple[TableEntry, ...]] = field(default_factory=dict)
    multicast_groups: Mapping[int, MulticastGroup] = field(default_factory=dict)
    clone_sessions: Mapping[int, CloneSession] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("tables", "multicast_groups", "clone_sessions"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):  # already read-only: share, don't copy
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    @cached_property
    def _index(self) -> dict[str, _TableIndex]:
        # configs a StateBuilder built on the same base config share one memo: table ->
        # (its entries, their index), reused while a table is the same tuple
        shared: dict[str, tuple[tuple[TableEntry, ...], _TableIndex]] | None = \
            self.__dict__.get("_shared_indexes")
        if shared is None:
            return {table: _table_index(entries) for table, entries in self.tables.items()}
        out = {}
        for table, entries in self.tables.items():
            hit = shared.get(table)
            if hit is None or hit[0] is not entries:
                hit = shared[table] = (entries, _table_index(entries))
            out[table] = hit[1]
        return out

    @cached_property
    def _hits(self) -> dict[tuple[str, tuple[int, ...]], TableEntry | None]:
        return {}  # (table, key) -> what lookup returned (the config never changes)

    def lookup(self, table: str, *key: int) -> TableEntry | None:
        """Apply ``table`` to ``key`` (one value per match field): the hit or None."""
        hits = self._hits
        hit = hits.get((table, key), _MISS)
        if hit is _MISS:
            if len(hits) >= _HITS_LIMIT:
                hits.clear()
            hit = hits[(table, key)] = self._lookup(table, key)
        return hit  # type: ignore[return-value]

    def _lookup(self, table: str, key: tuple[int, ...]) -> TableEntry | None:
        idx = self._index.get(table)
        if idx is None:
            return None
        exact, buckets = idx
        for entry in buckets.get(tuple(key[i] for i in exact), ()):
            if len(exact) == len(key) or all(
                    m.matches(k) for (_, m), k in zip(entry.match, key, strict=True)):
                return entry
        return None

    def entry_count(self, table: str | None = None) -> int:
        if table is not None:
            return len(self.tables.get(table, ()))
        return self._entries

    @cached_property
    def _entries(self) -> int:
        return sum(len(v) for v in self.tables.values())


_MISS = object()
_HITS_LIMIT = 4096  # lookups remembered per config (then forgotten at once)

#: per table: the key positions that are exact in every entry, and a dict from
#: those values to the candidate entries in precedence order
_TableIndex = tuple[tuple[int, ...], dict[tuple[int, ...], list["TableEntry"]]]
#: indexes of large tables by the identity of their entries (strategies share one
#: tuple of identical rules among all switches, e.g. ``read_entry``); small
#: per-switch tables are cheaper to index again than to keep
_SHARED_INDEX: dict[int, tuple[tuple[TableEntry, ...], _TableIndex]] = {}
_SHARED_MIN_ENTRIES = 32
_SHARED_LIMIT = 64


def _table_index(entries: tuple[TableEntry, ...]) -> _TableIndex:
    """The lookup index of one table (shared among configs holding the same tuple)."""
    if len(entries) < _SHARED_MIN_ENTRIES:
        return _build_index(entries)
    hit = _SHARED_INDEX.get(id(entries))
    if hit is None or hit[0] is not entries:
        if len(_SHARED_INDEX) >= _SHARED_LIMIT:
            _SHARED_INDEX.clear()
        hit = _SHARED_INDEX[id(entries)] = (entries, _build_index(entries))
    return hit[1]


def _build_index(entries: tuple[TableEntry, ...]) -> _TableIndex:
    width = len(entries[0].match) if entries else 0
    exact = tuple(i for i in range(width)
                  if all(isinstance(e.match[i][1], Exact) for e in entries))
    buckets: dict[tuple[int, ...], list[TableEntry]] = {}
    # all-exact tables have one entry per key: no precedence order needed
    ordered = entries if len(exact) == width else sorted(entries, key=_precedence)
    for e in ordered:
        buckets.setdefault(tuple(e.match[i][1].value for i in exact), []).append(e)  # type: ignore[union-attr]
    return exact, buckets


def _precedence(entry: TableEntry) -> tuple[int, int]:
    lpm = sum(m.prefix_len for _, m in entry.match if isinstance(m, Lpm))
    return (-entry.priority, -lpm)


@dataclass(frozen=True)
class ControlState:
    """Per-switch configuration plus what the publishers were told.

    ``publisher_info`` is what the control plane told the encoders (for
    example the id of the stored tree for a receiver set). It must hold plain
    values only.
    """

    switches: Mapping[str, SwitchConfig]
    publisher_info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "switches", MappingProxyType(dict(self.switches)))
        object.__setattr__(self, "publisher_info", MappingProxyType(dict(self.publisher_info)))

    def config(self, switch: str) -> SwitchConfig:
        return self.switches.get(switch, EMPTY_SWITCH)

    @property
    def entries(self) -> int:
        """Table entries on all switches."""
        return self._totals()[0]

    @property
    def multicast_groups(self) -> int:
        """Multicast groups on all switches."""
        return self._totals()[1]

    def _totals(self) -> tuple[int, int]:
        """(entries, multicast groups), counted once; a state a :class:`StateBuilder`
        derived from a base counts only the switches it changed (:func:`derived_from`)."""
        got: tuple[int, int] | None = self.__dict__.get("_total_counts")
        if got is None:
            derived = derived_from(self)
            if derived is None:
                got = (sum(c._entries for c in self.switches.values()),
                       sum(len(c.multicast_groups) for c in self.switches.values()))
            else:
                base, touched = derived
                entries, groups = base._totals() if base is not None else (0, 0)
                for sw in touched:
                    a = base.config(sw) if base is not None else EMPTY_SWITCH
                    b = self.switches[sw]
                    entries += b._entries - a._entries
                    groups += len(b.multicast_groups) - len(a.multicast_groups)
                got = (entries, groups)
            object.__setattr__(self, "_total_counts", got)
        return got

    def per_switch(self) -> dict[str, dict[str, int]]:
        """Entries per switch per table (tables with no entries left out)."""
        return {
            s: {t: len(es) for t, es in sorted(c.tables.items()) if es}
            for s, c in sorted(self.switches.items())
        }


EMPTY_SWITCH = SwitchConfig()


def derived_from(state: ControlState) -> tuple[ControlState | None, frozenset[str]] | None:
    """``(base, touched)`` when ``state`` is ``base`` (None: every switch empty) with
    only the switches ``touched`` given new configurations, the others holding
    ``base``'s very objects (what :meth:`StateBuilder.build` records); else None."""
    return state.__dict__.get("_derived")  # type: ignore[no-any-return]


class StateBuilder:
    """Mutable helper that strategies use to assemble a :class:`ControlState`.

    ``base``: a state to build on (the receiver-independent rules a strategy
    installs on every switch, :meth:`strategies.base.Strategy.base_state`).
    The result equals adding ``base``'s entries, groups and sessions first and
    then what is added here; switches and tables nothing is added to keep
    ``base``'s objects (structure sharing: :func:`count_writes` and the
    lookup memos skip them).
    """

    def __init__(self, base: ControlState | None = None) -> None:
        self._base = base
        #: per switch, per table: entries added here (a list), or ``base``'s tuple
        self._tables: dict[str, dict[str, list[TableEntry] | tuple[TableEntry, ...]]] = {}
        self._groups: dict[str, dict[int, MulticastGroup]] = {}
        self._sessions: dict[str, dict[int, CloneSession]] = {}
        self._seen: set[tuple[str, Any]] = set()
        self._seen_tables: set[tuple[str, str]] = set()  # (switch, table) with base keys in _seen

    def _table(self, switch: str, table: str) -> list[TableEntry]:
        tables = self._tables.get(switch)
        if tables is None:
            base = self._base.switches.get(switch) if self._base is not None else None
            tables = self._tables[switch] = dict(base.tables) if base is not None else {}
        entries = tables.get(table)
        if type(entries) is list:
            return entries
        if entries is None:
            out: list[TableEntry] = []
        else:  # base's tuple: copy it, and know its keys from now on
            out = list(entries)
            self._seen.update((switch, e.key) for e in entries)
        tables[table] = out
        return out

    def _switch_map(self, own: dict[str, dict[int, Any]], switch: str, attr: str
                    ) -> dict[int, Any]:
        got = own.get(switch)
        if got is None:
            base = self._base.switches.get(switch) if self._base is not None else None
            got = own[switch] = dict(getattr(base, attr)) if base is not None else {}
        return got

    def add_entry(self, switch: str, entry: TableEntry) -> None:
        """Add ``entry`` on ``switch``; an identical entry twice is an error."""
        entries = self._table(switch, entry.table)
        key = (switch, entry.key)
        if key in self._seen:
            raise ValueError(f"duplicate entry on {switch}: {entry}")
        self._seen.add(key)
        entries.append(entry)

    def add_entries(self, entries: Iterable[tuple[str, TableEntry]]) -> None:
        """:meth:`add_entry` of each ``(switch, entry)`` in turn (one call for many)."""
        seen, table_of = self._seen, self._table
        for switch, entry in entries:
            added = table_of(switch, entry.table)
            key = (switch, (entry.table, entry.match, entry.priority))
            if key in seen:
                raise ValueError(f"duplicate entry on {switch}: {entry}")
            seen.add(key)
            added.append(entry)

    def add_group(self, switch: str, group_id: int, ports: Iterable[int]) -> None:
        groups = self._switch_map(self._groups, switch, "multicast_groups")
        if group_id in groups:
            raise ValueError(f"multicast group {group_id} defined twice on {switch}")
        groups[group_id] = MulticastGroup(group_id, tuple((p, 1) for p in ports))

    def has_group(self, switch: str, group_id: int) -> bool:
        groups = self._groups.get(switch)
        if groups is None and self._base is not None:
            return group_id in self._base.config(switch).multicast_groups
        return groups is not None and group_id in groups

    def add_clone_session(self, switch: str, session_id: int, port: int) -> None:
        self._switch_map(self._sessions, switch, "clone_sessions")[session_id] = \
            CloneSession(session_id, port)

    def build(self, switches: Iterable[str], publisher_info: Mapping[str, Any] | None = None
              ) -> ControlState:
        """The state of ``switches`` (in this order): what was added on each, on top
        of ``base``'s configuration; a switch nothing was added on keeps ``base``'s
        configuration object, or the one empty configuration (so :func:`count_writes`
        skips it without comparing)."""
        base = self._base.switches if self._base is not None else {}
        switches = tuple(switches)
        added = self._tables.keys() | self._groups.keys() | self._sessions.keys()
        if self._base is None or switches == tuple(base):
            # every switch not added on holds base's object (or the empty one): copy them
            # in one go and make only the switches added on (the same dict, same order)
            configs = dict(base) if self._base is not None else \
                dict.fromkeys(switches, EMPTY_SWITCH)
            touched = frozenset(s for s in added if s in configs)
            for s in touched:
                configs[s] = self._config(s, base.get(s))
            state = ControlState(switches=configs, publisher_info=publisher_info or {})
            object.__setattr__(state, "_derived", (self._base, touched))
            return state
        configs = {}
        for s in switches:
            kept = base.get(s)
            configs[s] = self._config(s, kept) if s in added else (
                kept if kept is not None else EMPTY_SWITCH)
        return ControlState(switches=configs, publisher_info=publisher_info or {})

    def _config(self, s: str, kept: SwitchConfig | None) -> SwitchConfig:
        """Switch ``s``'s new configuration: ``kept`` (base's) with what was added."""
        tables, groups, sessions = self._tables.get(s), self._groups.get(s), self._sessions.get(s)
        config = SwitchConfig(
            tables={t: es if type(es) is tuple else tuple(es) for t, es in tables.items()}
            if tables is not None else (kept.tables if kept is not None else {}),
            multicast_groups=groups if groups is not None else (
                kept.multicast_groups if kept is not None else {}),
            clone_sessions=sessions if sessions is not None else (
                kept.clone_sessions if kept is not None else {}),
        )
        if kept is not None:  # share the lookup indexes of base's tables (same tuples)
            object.__setattr__(config, "_shared_indexes",
                               kept.__dict__.setdefault("_shared_indexes", {}))
        return config


# -- writes ---------------------------------------------------------------

WriteType = Literal["INSERT", "MODIFY", "DELETE"]


@dataclass(frozen=True, slots=True)
class Write:
    """One P4Runtime-shaped write on one switch."""

    type: WriteType
    switch: str
    entity: TableEntry | MulticastGroup | CloneSession


def diff(old: ControlState, new: ControlState) -> list[Write]:
    """The writes that turn ``old`` into ``new``.

    Order: per switch (sorted), inserts and modifies first, deletes last, which
    is the make-before-break order the strategies' update protocols need
    (seed 000 §5.2: install new, inform publishers, delete old).
    """
    adds: list[Write] = []
    dels: list[Write] = []
    for sw in sorted(set(old.switches) | set(new.switches)):
        a, b = old.config(sw), new.config(sw)
        if a is b:  # a switch whose configuration object was reused did not change
            continue
        old_e = {e.key: e for es in a.tables.values() for e in es}
        new_e = {e.key: e for es in b.tables.values() for e in es}
        for k, e in new_e.items():
            if k not in old_e:
                adds.append(Write("INSERT", sw, e))
            elif old_e[k] != e:
                adds.append(Write("MODIFY", sw, e))
        dels.extend(Write("DELETE", sw, e) for k, e in old_e.items() if k not in new_e)
        for attr in ("multicast_groups", "clone_sessions"):
            og, ng = getattr(a, attr), getattr(b, attr)
            for gid, g in ng.items():
                if gid not in og:
                    adds.append(Write("INSERT", sw, g))
                elif og[gid] != g:
                    adds.append(Write("MODIFY", sw, g))
            dels.extend(Write("DELETE", sw, g) for gid, g in og.items() if gid not in ng)
    return adds + dels


def count_writes(old: ControlState, new: ControlState) -> int:
    """``len(diff(old, new))``, without building the writes.

    Incremental in what two states share: a switch configuration, a table's
    entry tuple or a group/session mapping that is the same object in both
    (a :class:`StateBuilder` with a ``base`` keeps them) needs no writes and
    is not compared. Entry keys name their table, so comparing table by
    table counts exactly what :func:`diff`'s per-switch comparison does. A
    configuration its writer marked with :func:`mark_writes` against the old
    one is not compared either. Two states a :class:`StateBuilder` derived from
    the same base (:func:`derived_from`) are compared on the switches either
    one touched only.
    """
    count = 0
    olds, news = old.switches, new.switches
    was, now = derived_from(old), derived_from(new)
    if was is not None and now is not None and was[0] is now[0] and olds.keys() == news.keys():
        # two states derived from one base: the switches neither touched hold base's objects
        for sw in was[1] | now[1]:
            a, b = olds[sw], news[sw]
            if a is not b:
                count += _switch_writes(a, b)
        return count
    for sw, b in news.items():
        a = olds.get(sw, EMPTY_SWITCH)
        if a is not b:
            count += _switch_writes(a, b)
    for sw, a in olds.items():
        if sw not in news and a is not EMPTY_SWITCH:
            count += _config_writes(a, EMPTY_SWITCH)
    return count


def _switch_writes(a: SwitchConfig, b: SwitchConfig) -> int:
    """The writes from ``a`` to ``b`` (distinct objects): the count its writer marked
    (:func:`mark_writes`), else :func:`_config_writes`."""
    known = b.__dict__.get("_writes_from")
    return known[1] if known is not None and known[0]() is a else _config_writes(a, b)


def mark_writes(config: SwitchConfig, previous: SwitchConfig, writes: int) -> None:
    """Record that ``config`` is ``writes`` writes away from ``previous``.

    For writers that update a switch incrementally and know what they
    changed (:class:`strategies.range_filter.container_table.ContainerTable`):
    :func:`count_writes` then takes ``writes`` instead of comparing the two
    configurations, when ``previous`` is the very object it compares against
    (held weakly, so no chain of old configurations stays alive). ``writes``
    must equal what comparing them gives (property-tested by the writers).
    """
    if config is EMPTY_SWITCH:
        raise ValueError("the shared empty configuration cannot carry writes")
    object.__setattr__(config, "_writes_from", (weakref.ref(previous), writes))


def _config_writes(a: SwitchConfig, b: SwitchConfig) -> int:
    """The writes that turn switch configuration ``a`` into ``b`` (:func:`count_writes`)."""
    count = 0
    ta, tb = a.tables, b.tables
    for table in ta.keys() | tb.keys():
        ea, eb = ta.get(table, ()), tb.get(table, ())
        if ea is eb:
            continue
        old_e = {e.key: e for e in ea}
        new_e = {e.key: e for e in eb}
        for k, e in new_e.items():
            o = old_e.get(k, _MISS)
            if o is _MISS or o != e:
                count += 1
        count += sum(1 for k in old_e if k not in new_e)
    for og, ng in ((a.multicast_groups, b.multicast_groups),
                   (a.clone_sessions, b.clone_sessions)):
        if og is ng:
            continue
        for gid, g in ng.items():
            o = og.get(gid, _MISS)
            if o is _MISS or o != g:
                count += 1
        count += sum(1 for gid in og if gid not in ng)
    return count


# -- export ---------------------------------------------------------------


def _match_json(m: Match) -> Any:
    if isinstance(m, Exact):
        return m.value
    if isinstance(m, Ternary):
        return [m.value, m.mask]
    if isinstance(m, Lpm):
        return [m.value, m.prefix_len]
    return [m.low, m.high]


def to_runtime_json(config: SwitchConfig, p4info: str = "", bmv2_json: str = "") -> dict[str, Any]:
    """One switch's state in the p4lang/tutorials ``sN-runtime.json`` shape."""
    entries = []
    for table in sorted(config.tables):
        for e in config.tables[table]:
            item: dict[str, Any] = {
                "table": e.table,
                "match": {f: _match_json(m) for f, m in e.match},
                "action_name": e.action,
                "action_params": dict(e.params),
            }
            if any(not isinstance(m, Exact) for _, m in e.match):
                item["priority"] = e.priority
            entries.append(item)
    return {
        "target": "bmv2",
        "p4info": p4info,
        "bmv2_json": bmv2_json,
        "table_entries": entries,
        "multicast_group_entries": [
            {"multicast_group_id": g.group_id,
             "replicas": [{"egress_port": p, "instance": i} for p, i in g.replicas]}
            for _, g in sorted(config.multicast_groups.items())
        ],
        "clone_session_entries": [
            {"clone_session_id": s.session_id, "replicas": [{"egress_port": s.port, "instance": 1}]}
            for _, s in sorted(config.clone_sessions.items())
        ],
    }
