"""Run traces: the control state and encoded packets of a run, for replay on BMv2 (issue 7).

``stackcast run SPEC --trace FILE`` writes, for the **first cell(s)** of the
spec in grid order (``--trace-cells``, default 1; at most
``--trace-notifications`` notifications per cell, default 200), what the
simulator installed and sent and what the model predicts. The file is JSON
Lines, one record per line, each with a ``"record"`` kind:

``trace``
    First line: ``{"record": "trace", "format": "stackcast-trace", "version": 1}``.
``cell``
    Starts a cell: ``cell`` (the cell's canonical JSON: topology spec, strategy,
    params, receiver model, payload, seed, ...), ``cell_id``, ``program``
    (the P4 program of the strategy's family, or null) and ``notifications``
    (how many notification records follow for this cell).
``state``
    A control state, written before the first notification that uses it:
    ``id`` (unique in the file), ``switches`` (switch -> the
    :func:`sim.dataplanes.control_state.to_runtime_json` object of its configuration) and
    ``key_kinds`` (table -> ``[[field, kind, width], ...]``, kind one of
    exact/ternary/lpm/range, width only for lpm), which the runtime JSON
    alone leaves ambiguous.
``notification``
    ``run``, ``publisher``, ``receivers``, ``state`` (a state id),
    ``packets`` (``[{"frame": hex, "header_bytes": n}]``: what the publisher
    sends, in order, as wire bytes) and the static (zero-load) model's
    outcome: ``delivered`` (host -> copies), ``links`` (``[src, dst, frames,
    bytes]``), ``passes`` (switch -> pipeline passes) and ``visits`` (every
    switch visit in order: ``switch``, ``in_port``, ``frame``, ``emits``
    ``[[port, hex], ...]``, ``passes``), which hop mode replays one by one.

A FILE name ending in ``.gz`` is written and read gzip-compressed (states of
receiver-scoped strategies repeat most entries: about 20x smaller).
The trace is computed in-process with the static engine whatever ``--engine``
runs the experiment; timed cells get their zero-load outcome.
The publisher information of a state (what encoders were told) is not
written: the packets are already encoded. :func:`read_trace` validates a file
and raises :class:`TraceError` naming the line and field of the first problem.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sim.dataplanes.control_state import (
    CloneSession,
    ControlState,
    Exact,
    Lpm,
    Match,
    MulticastGroup,
    Range,
    SwitchConfig,
    TableEntry,
    Ternary,
    to_runtime_json,
)
from sim.dataplanes.packet import ETH_HEADER_BYTES, Packet

FORMAT = "stackcast-trace"
VERSION = 1
DEFAULT_NOTIFICATIONS = 200
KINDS = {Exact: "exact", Ternary: "ternary", Lpm: "lpm", Range: "range"}


class TraceError(ValueError):
    """A trace file that is not well formed; the message names the line and field."""


# -- records ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TraceVisit:
    """One switch handling one arriving frame in the model."""

    switch: str
    in_port: int
    frame: bytes
    emits: tuple[tuple[int, bytes], ...]
    passes: int


@dataclass(frozen=True, slots=True)
class TraceNotification:
    run: int
    publisher: str
    receivers: frozenset[str]
    state_id: int
    packets: tuple[Packet, ...]
    delivered: Mapping[str, int]
    links: tuple[tuple[str, str, int, int], ...]
    passes: Mapping[str, int]
    visits: tuple[TraceVisit, ...]


@dataclass(frozen=True, slots=True)
class TraceCell:
    cell: Mapping[str, Any]
    cell_id: str
    program: str | None
    notifications: tuple[TraceNotification, ...]


@dataclass(frozen=True, slots=True)
class Trace:
    cells: tuple[TraceCell, ...]
    states: Mapping[int, ControlState]

    def state(self, note: TraceNotification) -> ControlState:
        return self.states[note.state_id]


# -- writing ------------------------------------------------------------------------


def _open(path: Path, mode: str, gz: bool) -> IO[str]:
    """A text file, gzip-compressed when ``gz`` (trace names ending in ``.gz``)."""
    return gzip.open(path, mode + "t") if gz else path.open(mode)  # type: ignore[return-value]



def _match_kinds(config: SwitchConfig) -> dict[str, list[list[Any]]]:
    out: dict[str, list[list[Any]]] = {}
    for table, entries in sorted(config.tables.items()):
        if not entries:
            continue
        kinds = [[f, KINDS[type(m)], m.width if isinstance(m, Lpm) else None]
                 for f, m in entries[0].match]
        for e in entries[1:]:
            other = [[f, KINDS[type(m)], m.width if isinstance(m, Lpm) else None]
                     for f, m in e.match]
            if other != kinds:
                raise ValueError(f"table {table}: entries disagree on the key "
                                 f"({kinds} vs {other}); a P4 table has one key")
        out[table] = kinds
    return out


def state_record(state_id: int, state: ControlState) -> dict[str, Any]:
    """The ``state`` record of ``state``."""
    kinds: dict[str, list[list[Any]]] = {}
    for sw, config in sorted(state.switches.items()):
        for table, k in _match_kinds(config).items():
            if kinds.setdefault(table, k) != k:
                raise ValueError(f"table {table}: switch {sw} uses another key ({k} vs "
                                 f"{kinds[table]})")
    switches = {}
    for sw, config in sorted(state.switches.items()):
        doc = to_runtime_json(config)
        for key in ("target", "p4info", "bmv2_json"):
            doc.pop(key)
        switches[sw] = doc
    return {"record": "state", "id": state_id, "switches": switches, "key_kinds": kinds}


def notification_record(topology: Any, strategy: Any, item: Any, state_id: int
                        ) -> dict[str, Any]:
    """Run ``item`` (a :class:`experiments.cells.pipeline.CellNotification`) through the
    static engine and describe it: packets sent and the model's outcome."""
    from sim.engines.static import run_notification

    visits: list[dict[str, Any]] = []

    def on_switch(switch: str, in_port: int, packet: Packet, result: Any) -> None:
        visits.append({"switch": switch, "in_port": in_port, "frame": packet.to_bytes().hex(),
                       "emits": [[e.port, e.packet.to_bytes().hex()] for e in result.emitted],
                       "passes": result.passes})

    note = item.notification
    d = run_notification(topology, strategy, item.state, note, item.receivers, item.payload,
                         on_switch=on_switch)
    return {
        "record": "notification", "run": item.run, "publisher": note.publisher,
        "receivers": sorted(item.receivers), "state": state_id,
        "packets": [{"frame": p.to_bytes().hex(), "header_bytes": len(p.header)}
                    for p in d.encoding.packets],
        "delivered": dict(sorted(d.delivered.items())),
        "links": [[s, t, f, b] for (s, t), (f, b) in sorted(d.links.items())],
        "passes": {s: c.passes for s, c in sorted(d.switches.items())},
        "visits": visits,
    }


def _program_name(strategy: Any) -> str | None:
    """The P4 program of an installed strategy, None when its family has none."""
    from hil.programs import program_name

    p = strategy.params
    is_instance = dataclasses.is_dataclass(p) and not isinstance(p, type)
    params = dataclasses.asdict(p) if is_instance else {}
    try:
        return program_name(strategy.dataplane, strategy.name, params, strategy.model())
    except ValueError:
        return None


def write_cell(out: IO[str], cell: Any, limit: int, next_state_id: int) -> tuple[int, int]:
    """Append the records of one cell; returns (notifications written, next state id)."""
    from experiments.cells.pipeline import cell_notifications, cell_setup

    topology, strategy, _ = cell_setup(cell)
    records: list[dict[str, Any]] = []
    ids: dict[int, int] = {}  # id(state) -> state id
    keep: list[ControlState] = []  # hold the states so their ids stay unique
    previous: tuple[ControlState, int] | None = None
    for item in cell_notifications(cell, topology, strategy):
        if item.run >= limit:
            break
        state = item.state
        sid = ids.get(id(state))
        if sid is None and previous is not None and previous[0] == state:
            sid = previous[1]
        if sid is None:
            sid = next_state_id
            next_state_id += 1
            ids[id(state)] = sid
            keep.append(state)
            records.append(state_record(sid, state))
        previous = (state, sid)
        records.append(notification_record(topology, strategy, item, sid))
    count = sum(r["record"] == "notification" for r in records)
    head = {"record": "cell", "cell": cell.canonical(), "cell_id": cell.cell_id,
            "program": _program_name(strategy), "notifications": count}
    for rec in [head, *records]:
        out.write(json.dumps(rec, separators=(",", ":")) + "\n")
    return count, next_state_id


def write_trace(cells: Iterable[Any], path: str | Path,
                notifications: int = DEFAULT_NOTIFICATIONS) -> int:
    """Write the trace of ``cells`` (:class:`experiments.cells.spec.Cell`) to ``path``.

    At most ``notifications`` notifications per cell. Returns the number of
    notifications written.
    """
    if notifications < 1:
        raise ValueError(f"notifications must be >= 1, got {notifications}")
    total, next_id = 0, 0
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    try:
        with _open(tmp, "w", gz=path.suffix == ".gz") as out:
            out.write(json.dumps({"record": "trace", "format": FORMAT, "version": VERSION})
                      + "\n")
            for cell in cells:
                n, next_id = write_cell(out, cell, notifications, next_id)
                total += n
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return total


# -- reading ------------------------------------------------------------------------


class _Line:
    """Field access with errors naming the file, line and field."""

    def __init__(self, where: str, doc: Mapping[str, Any]) -> None:
        self.where = where
        self.doc = doc

    def fail(self, field: str, problem: str) -> TraceError:
        return TraceError(f"{self.where}: field {field!r}: {problem}")

    def get(self, field: str, kind: type | tuple[type, ...], doc: Any = None,
            name: str | None = None) -> Any:
        doc = self.doc if doc is None else doc
        name = name or field
        if not isinstance(doc, Mapping) or field not in doc:
            raise self.fail(name, "missing")
        value = doc[field]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            want = kind.__name__ if isinstance(kind, type) else " or ".join(
                k.__name__ for k in kind)
            raise self.fail(name, f"expected {want}, got {type(value).__name__}")
        return value

    def uint(self, field: str, doc: Any = None, name: str | None = None) -> int:
        value = self.get(field, int, doc, name)
        if value < 0:
            raise self.fail(name or field, f"must be >= 0, got {value}")
        return value

    def hexbytes(self, value: Any, name: str) -> bytes:
        if not isinstance(value, str):
            raise self.fail(name, f"expected a hex string, got {type(value).__name__}")
        try:
            return bytes.fromhex(value)
        except ValueError:
            raise self.fail(name, f"not hex: {value[:40]!r}") from None


def _match(line: _Line, value: Any, kind: list[Any], name: str) -> Match:
    _, k, width = kind
    ints = [value] if k == "exact" else value
    if not isinstance(ints, list) or not all(isinstance(v, int) and not isinstance(v, bool)
                                             and v >= 0 for v in ints):
        raise line.fail(name, f"a {k} match must be {'an int' if k == 'exact' else '[int, int]'}"
                              f", got {value!r}")
    if k == "exact":
        return Exact(value)
    if len(ints) != 2:
        raise line.fail(name, f"a {k} match must be [int, int], got {value!r}")
    if k == "ternary":
        return Ternary(*ints)
    if k == "lpm":
        if not isinstance(width, int) or not 0 <= ints[1] <= width:
            raise line.fail(name, f"prefix length {ints[1]} outside 0..{width}")
        return Lpm(ints[0], ints[1], width)
    if k == "range":
        return Range(*ints)
    raise line.fail(name, f"unknown match kind {k!r} (allowed: {', '.join(KINDS.values())})")


def _switch_config(line: _Line, doc: Any, kinds: Mapping[str, list[Any]], sw: str
                   ) -> SwitchConfig:
    where = f"switches.{sw}"
    tables: dict[str, list[TableEntry]] = {}
    for i, e in enumerate(line.get("table_entries", list, doc, f"{where}.table_entries")):
        at = f"{where}.table_entries[{i}]"
        table = line.get("table", str, e, f"{at}.table")
        if table not in kinds:
            raise line.fail(f"{at}.table", f"{table!r} has no entry in key_kinds")
        match = line.get("match", dict, e, f"{at}.match")
        key = kinds[table]
        if list(match) != [k[0] for k in key]:
            raise line.fail(f"{at}.match", f"fields {list(match)} differ from key_kinds "
                                           f"{[k[0] for k in key]}")
        params = line.get("action_params", dict, e, f"{at}.action_params")
        for p, v in params.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise line.fail(f"{at}.action_params.{p}", f"expected an int >= 0, got {v!r}")
        priority = line.uint("priority", e, f"{at}.priority") if "priority" in e else 0
        tables.setdefault(table, []).append(TableEntry(
            table=table,
            match=tuple((f, _match(line, match[f], k, f"{at}.match.{f}"))
                        for f, k in zip(match, key, strict=True)),
            action=line.get("action_name", str, e, f"{at}.action_name"),
            params=tuple(params.items()), priority=priority))
    groups = {}
    for i, g in enumerate(line.get("multicast_group_entries", list, doc,
                                   f"{where}.multicast_group_entries")):
        at = f"{where}.multicast_group_entries[{i}]"
        gid = line.uint("multicast_group_id", g, f"{at}.multicast_group_id")
        reps = tuple((line.uint("egress_port", r, f"{at}.replicas[{j}].egress_port"),
                      line.uint("instance", r, f"{at}.replicas[{j}].instance"))
                     for j, r in enumerate(line.get("replicas", list, g, f"{at}.replicas")))
        if gid in groups:
            raise line.fail(f"{at}.multicast_group_id", f"group {gid} defined twice")
        groups[gid] = MulticastGroup(gid, reps)
    sessions = {}
    for i, s in enumerate(line.get("clone_session_entries", list, doc,
                                   f"{where}.clone_session_entries")):
        at = f"{where}.clone_session_entries[{i}]"
        sid = line.uint("clone_session_id", s, f"{at}.clone_session_id")
        reps = line.get("replicas", list, s, f"{at}.replicas")
        if len(reps) != 1:
            raise line.fail(f"{at}.replicas", f"a clone session has one replica, got {len(reps)}")
        sessions[sid] = CloneSession(sid, line.uint("egress_port", reps[0],
                                                    f"{at}.replicas[0].egress_port"))
    return SwitchConfig(tables={t: tuple(es) for t, es in tables.items()},
                        multicast_groups=groups, clone_sessions=sessions)


def _state(line: _Line) -> ControlState:
    kinds = line.get("key_kinds", dict)
    for table, key in kinds.items():
        if not isinstance(key, list) or not all(
                isinstance(k, list) and len(k) == 3 and isinstance(k[0], str)
                and k[1] in KINDS.values() for k in key):
            raise line.fail(f"key_kinds.{table}", "expected [[field, kind, width], ...] with "
                                                  f"kind one of {', '.join(KINDS.values())}")
    switches = line.get("switches", dict)
    return ControlState({sw: _switch_config(line, doc, kinds, sw)
                         for sw, doc in switches.items()})


def _packet(line: _Line, doc: Any, name: str) -> Packet:
    frame = line.hexbytes(line.get("frame", str, doc, f"{name}.frame"), f"{name}.frame")
    header = line.uint("header_bytes", doc, f"{name}.header_bytes")
    if len(frame) < ETH_HEADER_BYTES + header:
        raise line.fail(f"{name}.frame", f"{len(frame)} B is shorter than Ethernet + a "
                                         f"{header} B header")
    return Packet.from_bytes(frame, header)


def _counts(line: _Line, field: str) -> dict[str, int]:
    doc = line.get(field, dict)
    for k in doc:
        line.uint(k, doc, f"{field}.{k}")
    return dict(doc)


def _notification(line: _Line, states: Mapping[int, ControlState]) -> TraceNotification:
    sid = line.uint("state")
    if sid not in states:
        raise line.fail("state", f"state {sid} is not defined on an earlier line")
    receivers = line.get("receivers", list)
    if not all(isinstance(r, str) for r in receivers):
        raise line.fail("receivers", "expected a list of host names")
    links = []
    for i, lk in enumerate(line.get("links", list)):
        if (not isinstance(lk, list) or len(lk) != 4 or not all(isinstance(x, str) for x in lk[:2])
                or not all(isinstance(x, int) and x >= 0 for x in lk[2:])):
            raise line.fail(f"links[{i}]", f"expected [src, dst, frames, bytes], got {lk!r}")
        links.append(tuple(lk))
    visits = []
    for i, v in enumerate(line.get("visits", list)):
        at = f"visits[{i}]"
        emits = []
        for j, em in enumerate(line.get("emits", list, v, f"{at}.emits")):
            if not isinstance(em, list) or len(em) != 2 or not isinstance(em[0], int):
                raise line.fail(f"{at}.emits[{j}]", f"expected [port, hex], got {em!r}")
            emits.append((em[0], line.hexbytes(em[1], f"{at}.emits[{j}]")))
        visits.append(TraceVisit(
            switch=line.get("switch", str, v, f"{at}.switch"),
            in_port=line.uint("in_port", v, f"{at}.in_port"),
            frame=line.hexbytes(line.get("frame", str, v, f"{at}.frame"), f"{at}.frame"),
            emits=tuple(emits), passes=line.uint("passes", v, f"{at}.passes")))
    return TraceNotification(
        run=line.uint("run"), publisher=line.get("publisher", str),
        receivers=frozenset(receivers), state_id=sid,
        packets=tuple(_packet(line, p, f"packets[{i}]")
                      for i, p in enumerate(line.get("packets", list))),
        delivered=_counts(line, "delivered"), links=tuple(links),
        passes=_counts(line, "passes"), visits=tuple(visits))


def _lines(path: Path) -> Iterator[tuple[int, _Line]]:
    with _open(path, "r", gz=path.suffix == ".gz") as f:
        for n, text in enumerate(f, 1):
            if not text.strip():
                continue
            where = f"{path}:{n}"
            try:
                doc = json.loads(text)
            except ValueError as e:
                raise TraceError(f"{where}: not JSON: {e}") from None
            if not isinstance(doc, dict):
                raise TraceError(f"{where}: expected a JSON object, got {type(doc).__name__}")
            yield n, _Line(where, doc)


def read_trace(path: str | Path) -> Trace:
    """Read and validate a trace written by :func:`write_trace`.

    Raises
    ------
    TraceError
        Naming the line and field of the first problem.
    FileNotFoundError
        If ``path`` does not exist.
    """
    path = Path(path)
    cells: list[TraceCell] = []
    states: dict[int, ControlState] = {}
    current: dict[str, Any] | None = None
    notes: list[TraceNotification] = []

    def close(where: str) -> None:
        if current is None:
            return
        if len(notes) != current["notifications"]:
            raise TraceError(f"{where}: the cell on line {current['line']} announces "
                             f"{current['notifications']} notifications, {len(notes)} follow")
        cells.append(TraceCell(current["cell"], current["cell_id"], current["program"],
                               tuple(notes)))

    seen_header = False
    for n, line in _lines(path):
        kind = line.get("record", str)
        if not seen_header:
            if kind != "trace":
                raise TraceError(f"{line.where}: the first record must be 'trace', got {kind!r}")
            if line.get("format", str) != FORMAT:
                raise line.fail("format", f"expected {FORMAT!r}, got {line.doc['format']!r}")
            if line.get("version", int) != VERSION:
                raise line.fail("version", f"this reader knows version {VERSION}, got "
                                           f"{line.doc['version']}")
            seen_header = True
        elif kind == "cell":
            close(line.where)
            program = line.doc.get("program")
            if program is not None and not isinstance(program, str):
                raise line.fail("program", "expected a program name or null")
            current = {"cell": line.get("cell", dict), "cell_id": line.get("cell_id", str),
                       "program": program, "notifications": line.uint("notifications"),
                       "line": n}
            for field in ("topology", "strategy", "receivers"):
                line.get(field, str, current["cell"], f"cell.{field}")
            notes = []
        elif kind == "state":
            sid = line.uint("id")
            if sid in states:
                raise line.fail("id", f"state {sid} defined twice")
            states[sid] = _state(line)
        elif kind == "notification":
            if current is None:
                raise TraceError(f"{line.where}: a notification before any cell record")
            notes.append(_notification(line, states))
        else:
            raise line.fail("record", f"unknown record {kind!r} (allowed: trace, cell, state, "
                                      "notification)")
    if not seen_header:
        raise TraceError(f"{path}: empty trace (no 'trace' record)")
    close(f"{path}:end")
    return Trace(tuple(cells), states)
