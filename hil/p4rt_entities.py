"""P4Info index and ControlState <-> P4Runtime protobuf conversion (issue 7).

:class:`P4InfoIndex` maps the fully qualified P4 names a
:class:`~sim.dataplanes.control_state.ControlState`
uses (``MyIngress.t``, ``hdr.x.f``) to P4Info ids and bit widths. The ``*_proto``
functions turn a state's table entries, multicast groups and clone sessions into
P4Runtime ``Entity`` messages; the ``decode_*`` functions read them back, so a
state written to a switch and read back compares equal to what was written (up
to :func:`normalise_entry`).

Encoding rules (P4Runtime 1.4 §8.3 and §9.1, and what BMv2's PI server
enforces; see /opt/p4/NOTES.md):

- values are *canonical* big-endian bytestrings (leading zero bytes stripped,
  zero is one ``0x00`` byte) and must fit the field's P4Info bit width;
- "don't care" matches are omitted: ternary with mask 0, LPM with prefix 0,
  range covering the whole field; ternary values are sent masked and LPM
  values with the bits beyond the prefix cleared (BMv2 rejects others);
- ``priority`` is set only on tables with a ternary, range or optional field
  and must then be positive; it is left 0 elsewhere;
- multicast groups and clone sessions are ``PacketReplicationEngineEntry``
  entities whose replicas carry ``egress_port`` and ``instance``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from sim.dataplanes.control_state import (
    CloneSession,
    Exact,
    Lpm,
    Match,
    MulticastGroup,
    Range,
    SwitchConfig,
    TableEntry,
    Ternary,
)

MatchType = p4info_pb2.MatchField.MatchType
_PRIORITY_KINDS = {MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL}
_KIND_NAMES = {Exact: "EXACT", Ternary: "TERNARY", Lpm: "LPM", Range: "RANGE"}


@dataclass(frozen=True, slots=True)
class FieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int

    @property
    def kind(self) -> str:
        return MatchType.Name(self.match_type)


@dataclass(frozen=True, slots=True)
class TableInfo:
    id: int
    name: str
    fields: tuple[FieldInfo, ...]
    action_ids: frozenset[int]

    @property
    def needs_priority(self) -> bool:
        """P4Runtime: priority is required exactly when a field is ternary/range/optional."""
        return any(f.match_type in _PRIORITY_KINDS for f in self.fields)


@dataclass(frozen=True, slots=True)
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass(frozen=True, slots=True)
class ActionInfo:
    id: int
    name: str
    params: tuple[ParamInfo, ...]


@dataclass(frozen=True, slots=True)
class CounterInfo:
    id: int
    name: str
    size: int
    unit: str


class P4InfoIndex:
    """Name <-> id lookups over one program's P4Info."""

    def __init__(self, p4info: p4info_pb2.P4Info, source: str = "P4Info") -> None:
        self.p4info = p4info
        self.source = source
        self.actions = {
            a.preamble.name: ActionInfo(a.preamble.id, a.preamble.name, tuple(
                ParamInfo(p.id, p.name, p.bitwidth) for p in a.params))
            for a in p4info.actions
        }
        self.tables = {
            t.preamble.name: TableInfo(
                t.preamble.id, t.preamble.name,
                tuple(FieldInfo(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields),
                frozenset(r.id for r in t.action_refs))
            for t in p4info.tables
        }
        self.counters = {
            c.preamble.name: CounterInfo(c.preamble.id, c.preamble.name, c.size,
                                         p4info_pb2.CounterSpec.Unit.Name(c.spec.unit))
            for c in p4info.counters
        }
        self._tables_by_id = {t.id: t for t in self.tables.values()}
        self._actions_by_id = {a.id: a for a in self.actions.values()}

    @classmethod
    def from_file(cls, path: str | Path) -> P4InfoIndex:
        """Parse a P4Info text-format file (``*.p4info.txtpb``)."""
        return _load(str(path))

    def table(self, name: str) -> TableInfo:
        try:
            return self.tables[name]
        except KeyError:
            raise ValueError(f"table {name!r} is not in {self.source} "
                             f"(tables: {', '.join(sorted(self.tables))})") from None

    def action(self, name: str) -> ActionInfo:
        try:
            return self.actions[name]
        except KeyError:
            raise ValueError(f"action {name!r} is not in {self.source} "
                             f"(actions: {', '.join(sorted(self.actions))})") from None

    def counter(self, name: str) -> CounterInfo:
        try:
            return self.counters[name]
        except KeyError:
            raise ValueError(f"counter {name!r} is not in {self.source} "
                             f"(counters: {', '.join(sorted(self.counters))})") from None

    def table_by_id(self, table_id: int) -> TableInfo:
        try:
            return self._tables_by_id[table_id]
        except KeyError:
            raise ValueError(f"no table with id {table_id} in {self.source}") from None

    def action_by_id(self, action_id: int) -> ActionInfo:
        try:
            return self._actions_by_id[action_id]
        except KeyError:
            raise ValueError(f"no action with id {action_id} in {self.source}") from None


@cache
def _load(path: str) -> P4InfoIndex:
    info = p4info_pb2.P4Info()
    text_format.Merge(Path(path).read_text(), info, allow_unknown_field=True)
    return P4InfoIndex(info, source=Path(path).name)


# -- values ---------------------------------------------------------------


def encode_value(value: int, bitwidth: int, what: str) -> bytes:
    """``value`` as a canonical big-endian bytestring (an error naming ``what`` if too wide)."""
    if not 0 <= value < 1 << bitwidth:
        raise ValueError(f"{what}: value {value} does not fit in {bitwidth} bits "
                         f"(allowed 0..{(1 << bitwidth) - 1})")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _encode(value: int, bitwidth: int, entry: TableEntry, what: str) -> bytes:
    """:func:`encode_value`, describing ``entry`` only when the value does not fit."""
    if 0 <= value < 1 << bitwidth:
        return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
    return encode_value(value, bitwidth, f"{describe(entry)}: {what}")


def decode_value(data: bytes) -> int:
    return int.from_bytes(data, "big")


# -- table entries --------------------------------------------------------


def describe(entity: TableEntry | MulticastGroup | CloneSession) -> str:
    """A one-line description naming the entity (for error messages)."""
    if isinstance(entity, MulticastGroup):
        return f"multicast group {entity.group_id} (ports {list(entity.ports)})"
    if isinstance(entity, CloneSession):
        return f"clone session {entity.session_id} (port {entity.port})"
    match = ", ".join(f"{f}={_match_text(m)}" for f, m in entity.match)
    params = ", ".join(f"{k}={v}" for k, v in entity.params)
    prio = f" priority {entity.priority}" if entity.priority else ""
    return f"table {entity.table} [{match}]{prio} -> {entity.action}({params})"


def _match_text(m: Match) -> str:
    if isinstance(m, Exact):
        return str(m.value)
    if isinstance(m, Ternary):
        return f"{m.value:#x}&&&{m.mask:#x}"
    if isinstance(m, Lpm):
        return f"{m.value:#x}/{m.prefix_len}"
    return f"{m.low}..{m.high}"


def _check_fields(table: TableInfo, entry: TableEntry) -> None:
    names = [f for f, _ in entry.match]
    expected = [f.name for f in table.fields]
    if names != expected:
        raise ValueError(f"{describe(entry)}: match fields {names} differ from the P4Info "
                         f"key {expected}")
    for (name, m), info in zip(entry.match, table.fields, strict=True):
        kind = _KIND_NAMES[type(m)]
        if kind != info.kind:
            raise ValueError(f"{describe(entry)}: field {name} is {kind} here but "
                             f"{info.kind} in the P4Info")


def normalise_entry(index: P4InfoIndex, entry: TableEntry) -> TableEntry:
    """``entry`` as a P4Runtime switch holds it.

    Ternary values are masked, LPM values cut to their prefix, don't-care
    matches reduced to their zero form, parameters in P4Info order, and the
    priority dropped on tables that take none. Reading back a written entry
    gives exactly this.
    """
    table = index.table(entry.table)
    _check_fields(table, entry)
    match: list[tuple[str, Match]] = []
    for (name, m), info in zip(entry.match, table.fields, strict=True):
        full = (1 << info.bitwidth) - 1
        if isinstance(m, Ternary):
            m = Ternary(m.value & m.mask, m.mask) if m.mask else Ternary(0, 0)
        elif isinstance(m, Lpm):
            keep = full ^ ((1 << (info.bitwidth - m.prefix_len)) - 1) if m.prefix_len else 0
            m = Lpm(m.value & keep, m.prefix_len, info.bitwidth)
        match.append((name, m))
    action = index.action(entry.action)
    given = dict(entry.params)
    params = tuple((p.name, given[p.name]) for p in action.params if p.name in given)
    if len(params) != len(given):
        params = entry.params  # unknown parameters: left for table_entry_proto to reject
    priority = entry.priority if table.needs_priority else 0
    return replace(entry, match=tuple(match), params=params, priority=priority)


def table_entry_proto(index: P4InfoIndex, entry: TableEntry) -> p4runtime_pb2.TableEntry:
    """The P4Runtime ``TableEntry`` for ``entry``; a ValueError naming the entry if it cannot be."""
    table = index.table(entry.table)
    _check_fields(table, entry)
    te = p4runtime_pb2.TableEntry(table_id=table.id)
    for (name, m), info in zip(entry.match, table.fields, strict=True):
        what = f"field {name}"
        full = (1 << info.bitwidth) - 1
        fm = p4runtime_pb2.FieldMatch(field_id=info.id)
        if isinstance(m, Exact):
            fm.exact.value = _encode(m.value, info.bitwidth, entry, what)
        elif isinstance(m, Ternary):
            if m.mask == 0:
                continue  # don't care: omitted (BMv2 rejects a 0 mask)
            fm.ternary.mask = _encode(m.mask, info.bitwidth, entry, what + " mask")
            fm.ternary.value = _encode(m.value & m.mask, info.bitwidth, entry, what)
        elif isinstance(m, Lpm):
            if not 0 <= m.prefix_len <= info.bitwidth:
                raise ValueError(f"{describe(entry)}: {what}: prefix length {m.prefix_len} "
                                 f"outside 0..{info.bitwidth}")
            if m.prefix_len == 0:
                continue
            keep = full ^ ((1 << (info.bitwidth - m.prefix_len)) - 1)
            fm.lpm.value = _encode(m.value & keep, info.bitwidth, entry, what)
            fm.lpm.prefix_len = m.prefix_len
        else:
            if m.low > m.high:
                raise ValueError(f"{describe(entry)}: {what}: empty range {m.low}..{m.high}")
            if m.low == 0 and m.high == full:
                continue
            fm.range.low = _encode(m.low, info.bitwidth, entry, what + " low")
            fm.range.high = _encode(m.high, info.bitwidth, entry, what + " high")
        te.match.append(fm)
    if table.needs_priority:
        if entry.priority <= 0:
            raise ValueError(f"{describe(entry)}: table {table.name} has ternary/range fields, "
                             f"so the priority must be > 0 (got {entry.priority})")
        te.priority = entry.priority
    action = index.action(entry.action)
    if action.id not in table.action_ids:
        allowed = sorted(index.action_by_id(a).name for a in table.action_ids)
        raise ValueError(f"{describe(entry)}: action {action.name} is not allowed in table "
                         f"{table.name} (allowed: {', '.join(allowed)})")
    given = dict(entry.params)
    expected = [p.name for p in action.params]
    if sorted(given) != sorted(expected) or len(given) != len(entry.params):
        raise ValueError(f"{describe(entry)}: parameters {[k for k, _ in entry.params]} differ "
                         f"from the P4Info parameters of {action.name} {expected}")
    te.action.action.action_id = action.id
    for p in action.params:
        te.action.action.params.append(p4runtime_pb2.Action.Param(
            param_id=p.id,
            value=_encode(given[p.name], p.bitwidth, entry, f"param {p.name}")))
    return te


def decode_table_entry(index: P4InfoIndex, te: p4runtime_pb2.TableEntry) -> TableEntry:
    """The :class:`TableEntry` a P4Runtime ``TableEntry`` holds (omitted fields: don't care)."""
    table = index.table_by_id(te.table_id)
    given = {fm.field_id: fm for fm in te.match}
    match: list[tuple[str, Match]] = []
    for info in table.fields:
        fm = given.pop(info.id, None)
        full = (1 << info.bitwidth) - 1
        if info.match_type == MatchType.EXACT:
            if fm is None:
                raise ValueError(f"table {table.name}: exact field {info.name} missing")
            m: Match = Exact(decode_value(fm.exact.value))
        elif info.match_type == MatchType.TERNARY:
            m = (Ternary(decode_value(fm.ternary.value), decode_value(fm.ternary.mask))
                 if fm is not None else Ternary(0, 0))
        elif info.match_type == MatchType.LPM:
            m = (Lpm(decode_value(fm.lpm.value), fm.lpm.prefix_len, info.bitwidth)
                 if fm is not None else Lpm(0, 0, info.bitwidth))
        elif info.match_type == MatchType.RANGE:
            m = (Range(decode_value(fm.range.low), decode_value(fm.range.high))
                 if fm is not None else Range(0, full))
        else:
            raise ValueError(f"table {table.name}: field {info.name} has match kind "
                             f"{info.kind}, which ControlState does not model")
        match.append((info.name, m))
    if given:
        raise ValueError(f"table {table.name}: unknown match field ids {sorted(given)}")
    action = index.action_by_id(te.action.action.action_id)
    values = {p.param_id: decode_value(p.value) for p in te.action.action.params}
    params = tuple((p.name, values[p.id]) for p in action.params if p.id in values)
    return TableEntry(table=table.name, match=tuple(match), action=action.name,
                      params=params, priority=te.priority)


# -- replication ------------------------------------------------------------


def multicast_group_proto(group: MulticastGroup) -> p4runtime_pb2.PacketReplicationEngineEntry:
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = group.group_id
    for port, instance in group.replicas:
        pre.multicast_group_entry.replicas.append(
            p4runtime_pb2.Replica(egress_port=port, instance=instance))
    return pre


def clone_session_proto(session: CloneSession) -> p4runtime_pb2.PacketReplicationEngineEntry:
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.clone_session_entry.session_id = session.session_id
    pre.clone_session_entry.replicas.append(
        p4runtime_pb2.Replica(egress_port=session.port, instance=1))
    return pre


def decode_multicast_group(entry: p4runtime_pb2.MulticastGroupEntry) -> MulticastGroup:
    """Replicas sorted (servers need not keep the written order)."""
    return MulticastGroup(entry.multicast_group_id,
                          tuple(sorted((r.egress_port, r.instance) for r in entry.replicas)))


def decode_clone_session(entry: p4runtime_pb2.CloneSessionEntry) -> CloneSession:
    if len(entry.replicas) != 1:
        raise ValueError(f"clone session {entry.session_id} has {len(entry.replicas)} replicas; "
                         "ControlState models exactly one")
    return CloneSession(entry.session_id, entry.replicas[0].egress_port)


def entity_proto(index: P4InfoIndex,
                 entity: TableEntry | MulticastGroup | CloneSession) -> p4runtime_pb2.Entity:
    """The P4Runtime ``Entity`` for one piece of switch state."""
    if isinstance(entity, TableEntry):
        return p4runtime_pb2.Entity(table_entry=table_entry_proto(index, entity))
    if isinstance(entity, MulticastGroup):
        return p4runtime_pb2.Entity(packet_replication_engine_entry=multicast_group_proto(entity))
    if isinstance(entity, CloneSession):
        return p4runtime_pb2.Entity(packet_replication_engine_entry=clone_session_proto(entity))
    raise TypeError(f"cannot write {type(entity).__name__}: expected TableEntry, "
                    "MulticastGroup or CloneSession")


def normalise_config(index: P4InfoIndex, config: SwitchConfig) -> SwitchConfig:
    """``config`` as a switch holds it: entries normalised, per-table order and replica
    order canonical, empty tables left out. Equal to :func:`decode`-d reads of it."""
    tables = {}
    for name, entries in config.tables.items():
        if entries:
            tables[name] = tuple(sorted((normalise_entry(index, e) for e in entries), key=repr))
    groups = {g: MulticastGroup(g, tuple(sorted(m.replicas)))
              for g, m in config.multicast_groups.items()}
    return SwitchConfig(tables=dict(sorted(tables.items())),
                        multicast_groups=dict(sorted(groups.items())),
                        clone_sessions=dict(sorted(config.clone_sessions.items())))


def config_from_entities(index: P4InfoIndex,
                         entities: list[p4runtime_pb2.Entity]) -> SwitchConfig:
    """A normalised :class:`SwitchConfig` from read (or stored) P4Runtime entities."""
    tables: dict[str, list[TableEntry]] = {}
    groups: dict[int, MulticastGroup] = {}
    sessions: dict[int, CloneSession] = {}
    for ent in entities:
        kind = ent.WhichOneof("entity")
        if kind == "table_entry":
            e = decode_table_entry(index, ent.table_entry)
            tables.setdefault(e.table, []).append(e)
        elif kind == "packet_replication_engine_entry":
            pre = ent.packet_replication_engine_entry
            if pre.WhichOneof("type") == "multicast_group_entry":
                g = decode_multicast_group(pre.multicast_group_entry)
                groups[g.group_id] = g
            else:
                s = decode_clone_session(pre.clone_session_entry)
                sessions[s.session_id] = s
    return SwitchConfig(
        tables={t: tuple(sorted(es, key=repr)) for t, es in sorted(tables.items())},
        multicast_groups=dict(sorted(groups.items())),
        clone_sessions=dict(sorted(sessions.items())))
