"""A fake P4Runtime server for tests without BMv2 (issue 7).

:class:`FakeP4RuntimeServer` serves the P4Runtime gRPC service on
``127.0.0.1`` (an ephemeral port) for one device. It implements what the
writer (:mod:`hil.p4rt`) uses, with the checks BMv2's PI server makes:

- StreamChannel arbitration: the highest election id is primary (status OK),
  others get ALREADY_EXISTS; Write and SetForwardingPipelineConfig from a
  non-primary election id fail with PERMISSION_DENIED;
- SetForwardingPipelineConfig (VERIFY_AND_COMMIT / COMMIT): parses the P4Info,
  checks the device config is JSON, and clears all state;
- Write: a store of table entries (keyed like P4Runtime: table, match, priority),
  multicast groups and clone sessions. Duplicate INSERT gives ALREADY_EXISTS,
  MODIFY/DELETE of a missing entry NOT_FOUND; unknown ids, wrong match kinds,
  a ternary mask of 0, values wider than the field, a missing or needless
  priority and parameter mismatches INVALID_ARGUMENT. As on BMv2, each update
  is applied on its own and a failed batch returns gRPC UNKNOWN with one
  ``p4.v1.Error`` per update in the status details;
- Read: table entries (all, or one table), counters (tests set values with
  :meth:`FakeP4RuntimeServer.set_counter`), multicast groups and clone sessions.

Values are compared as integers, so canonical and zero-padded bytestrings
name the same entry; :attr:`FakeP4RuntimeServer.entities` returns the stored
protobufs as written.
"""

from __future__ import annotations

import json
import threading
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from hil.p4rt_entities import MatchType, P4InfoIndex, TableInfo, decode_value


class _UpdateError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _fits(data: bytes, bitwidth: int, what: str) -> int:
    if not data:
        raise _UpdateError(code_pb2.INVALID_ARGUMENT, f"{what}: empty bytestring")
    value = decode_value(data)
    if value >= 1 << bitwidth:
        raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                           f"{what}: bytestring does not fit within {bitwidth} bits")
    return value


@dataclass
class _Device:
    index: P4InfoIndex | None = None
    device_config: bytes = b""
    tables: dict[tuple[Any, ...], p4runtime_pb2.TableEntry] = field(default_factory=dict)
    groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = field(default_factory=dict)
    sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = field(default_factory=dict)
    counters: dict[tuple[int, int], int] = field(default_factory=dict)


class _Servicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.lock = threading.Lock()
        self.dev = _Device()
        self.primary: tuple[int, int] | None = None
        self.writes = 0  # Write RPCs served (tests check batching)

    # -- arbitration ----------------------------------------------------------

    def StreamChannel(self, request_iterator, context):  # noqa: N802
        for req in request_iterator:
            if not req.HasField("arbitration"):
                continue
            arb = req.arbitration
            if arb.device_id != self.device_id:
                context.abort(grpc.StatusCode.NOT_FOUND,
                              f"device id {arb.device_id} is not {self.device_id}")
            eid = (arb.election_id.high, arb.election_id.low)
            with self.lock:
                if self.primary is None or eid >= self.primary:
                    self.primary = eid
                primary = self.primary
            rep = p4runtime_pb2.StreamMessageResponse()
            rep.arbitration.device_id = self.device_id
            rep.arbitration.election_id.high, rep.arbitration.election_id.low = primary
            rep.arbitration.status.code = code_pb2.OK if eid == primary else code_pb2.ALREADY_EXISTS
            yield rep

    def _pipeline(self, context) -> P4InfoIndex:
        """The pushed P4Info's index; FAILED_PRECONDITION before a pipeline was set."""
        index = self.dev.index
        if index is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline set")
            raise RuntimeError("grpc context.abort() returned")  # it raises (grpc is untyped)
        return index

    def _check_primary(self, request, context) -> None:
        if request.device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"device id {request.device_id} is not {self.device_id}")
        eid = (request.election_id.high, request.election_id.low)
        if self.primary is None or eid != self.primary:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"election id {eid} is not the primary's ({self.primary})")

    # -- pipeline -------------------------------------------------------------

    def SetForwardingPipelineConfig(self, request, context):  # noqa: N802
        self._check_primary(request, context)
        Action = p4runtime_pb2.SetForwardingPipelineConfigRequest
        if request.action not in (Action.VERIFY_AND_COMMIT, Action.COMMIT, Action.VERIFY):
            context.abort(grpc.StatusCode.UNIMPLEMENTED,
                          f"action {Action.Action.Name(request.action)} not supported")
        try:
            json.loads(request.config.p4_device_config)
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"device config is not BMv2 JSON: {e}")
        if not request.config.p4info.tables and not request.config.p4info.actions:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty P4Info")
        if request.action != Action.VERIFY:
            info = p4info_pb2.P4Info()
            info.CopyFrom(request.config.p4info)
            with self.lock:
                self.dev = _Device(index=P4InfoIndex(info, "pushed P4Info"),
                                   device_config=request.config.p4_device_config)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):  # noqa: N802
        rep = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if self.dev.index is not None:
            rep.config.p4info.CopyFrom(self.dev.index.p4info)
            rep.config.p4_device_config = self.dev.device_config
        return rep

    # -- writes ---------------------------------------------------------------

    def Write(self, request, context):  # noqa: N802
        self._check_primary(request, context)
        self._pipeline(context)
        errors = []
        with self.lock:
            self.writes += 1
            for update in request.updates:
                err = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
                try:
                    self._update(update)
                except _UpdateError as e:
                    err = p4runtime_pb2.Error(canonical_code=e.code, message=e.message,
                                              space="fake-p4rt")
                errors.append(err)
        if any(e.canonical_code != code_pb2.OK for e in errors):
            status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure")
            for error in errors:
                detail = any_pb2.Any()
                detail.Pack(error)
                status.details.append(detail)
            context.set_trailing_metadata(
                (("grpc-status-details-bin", status.SerializeToString()),))
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details("Write failure")
        return p4runtime_pb2.WriteResponse()

    def _update(self, update: p4runtime_pb2.Update) -> None:
        kind = update.entity.WhichOneof("entity")
        op = update.type
        if op == p4runtime_pb2.Update.UNSPECIFIED:
            raise _UpdateError(code_pb2.INVALID_ARGUMENT, "update type UNSPECIFIED")
        store: dict[Any, Any]  # tables by match key, PRE entries by id
        key: Any
        if kind == "table_entry":
            te = update.entity.table_entry
            store, key = self.dev.tables, self._table_key(te, op)
            value: Any = te
        elif kind == "packet_replication_engine_entry":
            pre = update.entity.packet_replication_engine_entry
            which = pre.WhichOneof("type")
            if which == "multicast_group_entry":
                value = pre.multicast_group_entry
                store, key = self.dev.groups, value.multicast_group_id
                name = f"multicast group {key}"
            elif which == "clone_session_entry":
                value = pre.clone_session_entry
                store, key = self.dev.sessions, value.session_id
                name = f"clone session {key}"
            else:
                raise _UpdateError(code_pb2.INVALID_ARGUMENT, "empty PRE entry")
            if key == 0:
                raise _UpdateError(code_pb2.INVALID_ARGUMENT, f"{name}: id 0 is reserved")
            if op != p4runtime_pb2.Update.DELETE and not value.replicas:
                raise _UpdateError(code_pb2.INVALID_ARGUMENT, f"{name}: no replicas")
        else:
            raise _UpdateError(code_pb2.UNIMPLEMENTED, f"entity {kind} not supported")
        if op == p4runtime_pb2.Update.INSERT:
            if key in store:
                raise _UpdateError(code_pb2.ALREADY_EXISTS, "Match entry exists, use MODIFY "
                                   "if you wish to change action" if kind == "table_entry"
                                   else "entry already exists")
            store[key] = type(value)()
            store[key].CopyFrom(value)
        elif op == p4runtime_pb2.Update.MODIFY:
            if key not in store:
                raise _UpdateError(code_pb2.NOT_FOUND, "cannot modify: entry not found")
            store[key].CopyFrom(value)
        else:
            if key not in store:
                raise _UpdateError(code_pb2.NOT_FOUND, "cannot delete: entry not found")
            del store[key]

    def _table_key(self, te: p4runtime_pb2.TableEntry, op: int) -> tuple[Any, ...]:
        assert self.dev.index is not None
        try:
            table: TableInfo = self.dev.index.table_by_id(te.table_id)
        except ValueError as e:
            raise _UpdateError(code_pb2.INVALID_ARGUMENT, str(e)) from None
        fields = {f.id: f for f in table.fields}
        key: list[tuple[int, ...]] = []
        seen = set()
        for fm in te.match:
            f = fields.get(fm.field_id)
            if f is None:
                raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                                   f"table {table.name}: unknown match field id {fm.field_id}")
            if fm.field_id in seen:
                raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                                   f"table {table.name}: field {f.name} matched twice")
            seen.add(fm.field_id)
            which = fm.WhichOneof("field_match_type")
            want = {MatchType.EXACT: "exact", MatchType.TERNARY: "ternary",
                    MatchType.LPM: "lpm", MatchType.RANGE: "range"}.get(f.match_type)
            if which != want:
                raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                                   f"table {table.name}: field {f.name} is {f.kind}, got {which}")
            what = f"table {table.name}: field {f.name}"
            if which == "exact":
                key.append((f.id, _fits(fm.exact.value, f.bitwidth, what)))
            elif which == "ternary":
                value = _fits(fm.ternary.value, f.bitwidth, what)
                mask = _fits(fm.ternary.mask, f.bitwidth, what + " mask")
                if mask == 0:
                    raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                                       "Invalid reprensentation of 'don't care' ternary match, "
                                       "omit match field instead of using 0 mask")
                if value & ~mask:
                    raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                                       f"{what}: ternary value has bits set outside the mask")
                key.append((f.id, value, mask))
            elif which == "lpm":
                value = _fits(fm.lpm.value, f.bitwidth, what)
                plen = fm.lpm.prefix_len
                if not 0 < plen <= f.bitwidth:
                    raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                                       f"{what}: prefix length {plen} (omit a 0 prefix)")
                if value & ((1 << (f.bitwidth - plen)) - 1):
                    raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                                       f"{what}: LPM value has bits set beyond the prefix")
                key.append((f.id, value, plen))
            else:
                low = _fits(fm.range.low, f.bitwidth, what)
                high = _fits(fm.range.high, f.bitwidth, what)
                if low > high:
                    raise _UpdateError(code_pb2.INVALID_ARGUMENT, f"{what}: low > high")
                key.append((f.id, low, high))
        missing = [f.name for f in table.fields
                   if f.match_type == MatchType.EXACT and f.id not in seen]
        if missing:
            raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                               f"table {table.name}: exact fields {missing} missing")
        if table.needs_priority and te.priority <= 0:
            raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                               f"table {table.name}: priority must be > 0 for ternary/range "
                               "tables")
        if not table.needs_priority and te.priority != 0:
            raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                               f"table {table.name}: priority must be 0 for exact/LPM tables")
        if op != p4runtime_pb2.Update.DELETE:  # a DELETE names the key only
            self._check_action(table, te)
        return (te.table_id, tuple(sorted(key)), te.priority)

    def _check_action(self, table: TableInfo, te: p4runtime_pb2.TableEntry) -> None:
        assert self.dev.index is not None
        if te.action.WhichOneof("type") != "action":
            raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                               f"table {table.name}: only direct actions are supported")
        aid = te.action.action.action_id
        if aid not in table.action_ids:
            raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                               f"table {table.name}: action id {aid} not in the table")
        action = self.dev.index.action_by_id(aid)
        got = {p.param_id: p.value for p in te.action.action.params}
        want = {p.id: p for p in action.params}
        if set(got) != set(want) or len(got) != len(te.action.action.params):
            raise _UpdateError(code_pb2.INVALID_ARGUMENT,
                               f"action {action.name}: parameter ids {sorted(got)} != "
                               f"{sorted(want)}")
        for pid, value in got.items():
            _fits(value, want[pid].bitwidth, f"action {action.name}: param {want[pid].name}")

    # -- reads ----------------------------------------------------------------

    def Read(self, request, context):  # noqa: N802
        if request.device_id != self.device_id:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"device id {request.device_id} is not {self.device_id}")
        index = self._pipeline(context)
        rep = p4runtime_pb2.ReadResponse()
        with self.lock:
            for ent in request.entities:
                rep.entities.extend(self._read(ent, index, context))
        yield rep

    def _read(self, ent: p4runtime_pb2.Entity, index: P4InfoIndex, context
              ) -> list[p4runtime_pb2.Entity]:
        kind = ent.WhichOneof("entity")
        out = []
        if kind == "table_entry":
            tid = ent.table_entry.table_id
            for (t, _, _), te in sorted(self.dev.tables.items()):
                if tid in (0, t):
                    out.append(p4runtime_pb2.Entity(table_entry=te))
        elif kind == "counter_entry":
            ce = ent.counter_entry
            counters = {c.id: c for c in index.counters.values()}
            if ce.counter_id not in counters:
                context.abort(grpc.StatusCode.NOT_FOUND, f"no counter id {ce.counter_id}")
            info = counters[ce.counter_id]
            cells = ([ce.index.index] if ce.HasField("index") else range(info.size))
            for i in cells:
                if not 0 <= i < info.size:
                    context.abort(grpc.StatusCode.OUT_OF_RANGE,
                                  f"counter {info.name}: index {i} outside 0..{info.size - 1}")
                e = p4runtime_pb2.Entity()
                e.counter_entry.counter_id = info.id
                e.counter_entry.index.index = i
                e.counter_entry.data.packet_count = self.dev.counters.get((info.id, i), 0)
                out.append(e)
        elif kind == "packet_replication_engine_entry":
            pre = ent.packet_replication_engine_entry
            if pre.WhichOneof("type") == "multicast_group_entry":
                field, installed = "multicast_group_entry", self.dev.groups
                wanted = pre.multicast_group_entry.multicast_group_id
            else:
                field, installed = "clone_session_entry", self.dev.sessions
                wanted = pre.clone_session_entry.session_id
            for key, m in sorted(installed.items()):
                if wanted in (0, key):  # 0: all of them
                    e = p4runtime_pb2.Entity()
                    getattr(e.packet_replication_engine_entry, field).CopyFrom(m)
                    out.append(e)
        else:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"reading {kind} not supported")
        return out

    def Capabilities(self, request, context):  # noqa: N802
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version="1.4.1")


class FakeP4RuntimeServer:
    """One fake P4Runtime device on ``127.0.0.1:<ephemeral port>``; a context manager.

    Inspect its state with :attr:`entities` (the stored protobufs) and
    :attr:`pipeline_pushed`; set counter cells with :meth:`set_counter`.
    """

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = device_id
        self._servicer = _Servicer(device_id)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self._servicer, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.grpc_addr = f"127.0.0.1:{self.port}"

    def start(self) -> FakeP4RuntimeServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None).wait()

    def __enter__(self) -> FakeP4RuntimeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def index(self) -> P4InfoIndex:
        if self._servicer.dev.index is None:
            raise RuntimeError("no pipeline pushed yet")
        return self._servicer.dev.index

    @property
    def pipeline_pushed(self) -> bool:
        return self._servicer.dev.index is not None

    @property
    def write_rpcs(self) -> int:
        """How many Write RPCs the server has answered."""
        return self._servicer.writes

    @property
    def entities(self) -> list[p4runtime_pb2.Entity]:
        """Stored table entries, multicast groups and clone sessions, as written."""
        dev = self._servicer.dev
        with self._servicer.lock:
            out = [p4runtime_pb2.Entity(table_entry=te) for _, te in sorted(dev.tables.items())]
            for m in dev.groups.values():
                e = p4runtime_pb2.Entity()
                e.packet_replication_engine_entry.multicast_group_entry.CopyFrom(m)
                out.append(e)
            for s in dev.sessions.values():
                e = p4runtime_pb2.Entity()
                e.packet_replication_engine_entry.clone_session_entry.CopyFrom(s)
                out.append(e)
        return out

    def set_counter(self, name: str, index: int, packets: int) -> None:
        info = self.index.counter(name)
        with self._servicer.lock:
            self._servicer.dev.counters[(info.id, index)] = packets
