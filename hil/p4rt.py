"""P4Runtime writer: one client per switch, writing a strategy's ControlState (issue 7).

:class:`SwitchClient` talks plain gRPC to one P4Runtime server (BMv2's
``simple_switch_grpc`` or :mod:`hil.fake_p4rt`), so several clients, one per
switch, can be open at once (p4runtime-shell's ``shell`` module keeps a single
global client). It

- becomes primary through StreamChannel arbitration (P4Runtime 1.4 §5);
- pushes a committed program (:class:`hil.programs.Program`) with
  SetForwardingPipelineConfig ``VERIFY_AND_COMMIT``, which on BMv2 also clears
  every table entry, group and session;
- writes a :class:`~sim.dataplanes.control_state.SwitchConfig` (table entries, multicast
  groups, clone sessions) or the :class:`~sim.dataplanes.control_state.Write` list of
  :func:`sim.dataplanes.control_state.diff`, converted by :mod:`hil.p4rt_entities`;
- reads the per-pass counter and the installed state back.

A server error comes out as :class:`P4RuntimeWriteError`, whose message names
every entry that failed with the server's code and message (P4Runtime puts one
``p4.v1.Error`` per update in the status details).

Example::

    with SwitchClient("127.0.0.1:50051", 0, program_for("l2", "unicast", {})) as sw:
        sw.push_pipeline()
        sw.write_config(state.config("s1"))
        passes = sw.read_counter()
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from hil.p4rt_entities import P4InfoIndex, config_from_entities, describe, entity_proto
from hil.programs import PASS_COUNTER, Program
from sim.dataplanes.control_state import (
    CloneSession,
    MulticastGroup,
    SwitchConfig,
    TableEntry,
    Write,
)

log = logging.getLogger(__name__)

#: Updates per Write RPC (BMv2 accepts large batches; this bounds message size).
BATCH_SIZE = 256

Entity = TableEntry | MulticastGroup | CloneSession


class P4RuntimeError(RuntimeError):
    """A P4Runtime RPC failed (connection, arbitration, pipeline, read)."""


class P4RuntimeWriteError(P4RuntimeError):
    """Some updates of a Write failed.

    ``failures`` lists ``(update type, entity, code name, server message)``
    for each failed update; the message names every one.
    """

    def __init__(self, where: str, failures: list[tuple[str, Entity, str, str]],
                 total: int) -> None:
        self.failures = failures
        lines = [f"{op} {describe(ent)}: {code}: {msg}" for op, ent, code, msg in failures]
        super().__init__(f"{where}: {len(failures)} of {total} updates failed:\n  "
                         + "\n  ".join(lines))


_UPDATE_TYPE = {"INSERT": p4runtime_pb2.Update.INSERT,
                "MODIFY": p4runtime_pb2.Update.MODIFY,
                "DELETE": p4runtime_pb2.Update.DELETE}


def _status_details(error: grpc.RpcError) -> status_pb2.Status | None:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status()
            status.ParseFromString(value)
            return status
    return None


class SwitchClient:
    """A P4Runtime client for one switch (device) running one program.

    Parameters
    ----------
    grpc_addr
        ``host:port`` of the P4Runtime server.
    device_id
        The P4Runtime device id the server was started with.
    program
        The compiled program (P4Info and BMv2 JSON) the switch runs or will run.
    election_id
        ``(high, low)`` election id; the client must become primary.
    timeout_s
        Deadline for connecting and for every RPC, in seconds.

    References
    ----------
    P4Runtime Specification 1.4: §5 (arbitration), §8.3 (bytestrings),
    §9.1 (table entries), §9.5 (PRE entries), §12 (errors).
    """

    def __init__(self, grpc_addr: str, device_id: int, program: Program, *,
                 election_id: tuple[int, int] = (0, 1), timeout_s: float = 10.0) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.grpc_addr = grpc_addr
        self.device_id = device_id
        self.program = program
        self.election_id = election_id
        self.timeout_s = timeout_s
        self.index = P4InfoIndex.from_file(program.p4info)
        self._where = f"P4Runtime {grpc_addr} (device {device_id}, {program.name})"
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._responses: queue.Queue[p4runtime_pb2.StreamMessageResponse | Exception] = (
            queue.Queue())
        self._channel = grpc.insecure_channel(grpc_addr)
        self._stream: Any = None  # grpc's StreamChannel call (grpc ships no type stubs)
        self._reader: threading.Thread | None = None
        try:
            try:
                grpc.channel_ready_future(self._channel).result(timeout=timeout_s)
            except grpc.FutureTimeoutError:
                raise P4RuntimeError(f"{self._where}: no server answered within "
                                     f"{timeout_s} s") from None
            self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
            self._arbitrate()
        except BaseException:
            self.close()
            raise

    # -- session ------------------------------------------------------------

    def _request_iter(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            req = self._requests.get()
            if req is None:
                return
            yield req

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                self._responses.put(msg)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self._responses.put(e)

    def _arbitrate(self) -> None:
        self._stream = self._stub.StreamChannel(self._request_iter())
        self._reader = threading.Thread(target=self._read_stream, daemon=True,
                                        name=f"p4rt-stream-{self.grpc_addr}")
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self._requests.put(req)
        while True:
            try:
                msg = self._responses.get(timeout=self.timeout_s)
            except queue.Empty:
                raise P4RuntimeError(f"{self._where}: no arbitration answer within "
                                     f"{self.timeout_s} s") from None
            if isinstance(msg, Exception):
                raise P4RuntimeError(f"{self._where}: stream failed during arbitration: "
                                     f"{msg.code().name}: {msg.details()}")  # type: ignore[attr-defined]
            if msg.HasField("arbitration"):
                break
        code = msg.arbitration.status.code
        if code != code_pb2.OK:
            raise P4RuntimeError(
                f"{self._where}: not primary with election id {self.election_id} "
                f"({code_pb2.Code.Name(code)}: {msg.arbitration.status.message})")
        log.debug("%s: primary", self._where)

    def close(self) -> None:
        """End the stream and the channel (idempotent)."""
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None
        if self._reader is not None:
            self._reader.join(timeout=self.timeout_s)
            self._reader = None
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def __enter__(self) -> SwitchClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, rpc, request):  # noqa: ANN001, ANN202
        try:
            return rpc(request, timeout=self.timeout_s)
        except grpc.RpcError as e:
            raise P4RuntimeError(f"{self._where}: {what} failed: {e.code().name}: "
                                 f"{e.details()}") from None

    # -- pipeline -------------------------------------------------------------

    def push_pipeline(self) -> None:
        """Install the program (P4Info + BMv2 JSON), VERIFY_AND_COMMIT; clears all state."""
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high, req.election_id.low = self.election_id
        req.config.p4info.CopyFrom(self.index.p4info)
        req.config.p4_device_config = self.program.bmv2_json.read_bytes()
        self._call("SetForwardingPipelineConfig", self._stub.SetForwardingPipelineConfig, req)

    # -- writes ---------------------------------------------------------------

    def write_config(self, config: SwitchConfig) -> int:
        """Insert every multicast group, clone session and table entry of ``config``.

        Groups and sessions go first so that no entry refers to a missing one.
        Returns the number of updates written.
        """
        ops: list[tuple[str, Entity]] = []
        ops += [("INSERT", g) for _, g in sorted(config.multicast_groups.items())]
        ops += [("INSERT", s) for _, s in sorted(config.clone_sessions.items())]
        ops += [("INSERT", e) for t in sorted(config.tables) for e in config.tables[t]]
        self._write(ops)
        return len(ops)

    def apply(self, writes: list[Write]) -> None:
        """Send the writes of :func:`sim.dataplanes.control_state.diff` for this switch, in order.

        All writes must name the same switch (filter ``diff``'s output per
        switch first). Consecutive writes of the same type share a batch;
        a new type starts a new batch, because a server may reorder the
        updates of one batch and the make-before-break order must hold.
        """
        switches = sorted({w.switch for w in writes})
        if len(switches) > 1:
            raise ValueError(f"{self._where}: apply() got writes for several switches "
                             f"{switches}; pass one switch's writes per client")
        self._write([(w.type, w.entity) for w in writes])

    def _write(self, ops: Sequence[tuple[str, Entity]]) -> None:
        batch: list[tuple[str, Entity]] = []
        for op in ops:
            if op[0] not in _UPDATE_TYPE:
                raise ValueError(f"write type {op[0]!r} not one of {sorted(_UPDATE_TYPE)}")
            if batch and (len(batch) >= BATCH_SIZE or batch[-1][0] != op[0]):
                self._write_batch(batch)
                batch = []
            batch.append(op)
        if batch:
            self._write_batch(batch)

    def _write_batch(self, batch: list[tuple[str, Entity]]) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = self.election_id
        for op, entity in batch:
            req.updates.append(p4runtime_pb2.Update(type=_UPDATE_TYPE[op],
                                                    entity=entity_proto(self.index, entity)))
        try:
            self._stub.Write(req, timeout=self.timeout_s)
        except grpc.RpcError as e:
            status = _status_details(e)
            failures = []
            if status is not None and len(status.details) == len(batch):
                for (op, entity), detail in zip(batch, status.details, strict=True):
                    err = p4runtime_pb2.Error()
                    if detail.Unpack(err) and err.canonical_code != code_pb2.OK:
                        failures.append((op, entity, code_pb2.Code.Name(err.canonical_code),
                                         err.message))
            if not failures:
                first = f"{batch[0][0]} {describe(batch[0][1])}"
                raise P4RuntimeError(f"{self._where}: Write of {len(batch)} updates (first: "
                                     f"{first}) failed: {e.code().name}: {e.details()}"
                                     ) from None
            raise P4RuntimeWriteError(self._where, failures, len(batch)) from None

    # -- reads ----------------------------------------------------------------

    def _read(self, entities: Iterable[p4runtime_pb2.Entity], what: str
              ) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=list(entities))
        try:
            return [e for rep in self._stub.Read(req, timeout=self.timeout_s)
                    for e in rep.entities]
        except grpc.RpcError as e:
            raise P4RuntimeError(f"{self._where}: Read of {what} failed: {e.code().name}: "
                                 f"{e.details()}") from None

    def read_counter(self, name: str = PASS_COUNTER, index: int = 0) -> int:
        """The packet count of cell ``index`` of counter ``name``."""
        info = self.index.counter(name)
        if not 0 <= index < info.size:
            raise ValueError(f"counter {name}: index {index} outside 0..{info.size - 1}")
        if info.unit not in ("PACKETS", "BOTH"):
            raise ValueError(f"counter {name} counts {info.unit}, not packets")
        ent = p4runtime_pb2.Entity()
        ent.counter_entry.counter_id = info.id
        ent.counter_entry.index.index = index
        got = self._read([ent], f"counter {name}[{index}]")
        if len(got) != 1:
            raise P4RuntimeError(f"{self._where}: counter {name}[{index}]: expected one entry, "
                                 f"got {len(got)}")
        return got[0].counter_entry.data.packet_count

    def read_config(self) -> SwitchConfig:
        """Everything installed: table entries, multicast groups, clone sessions.

        Returned normalised (see :func:`hil.p4rt_entities.normalise_config`),
        so it equals ``normalise_config(index, written_config)``.
        """
        tables = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=0))
        groups = p4runtime_pb2.Entity()
        groups.packet_replication_engine_entry.multicast_group_entry.SetInParent()
        sessions = p4runtime_pb2.Entity()
        sessions.packet_replication_engine_entry.clone_session_entry.SetInParent()
        entities = self._read([tables], "table entries")
        entities += self._read([groups], "multicast groups")
        entities += self._read([sessions], "clone sessions")
        return config_from_entities(self.index, entities)
