"""The P4Runtime writer (hil/p4rt.py) against the fake server (hil/fake_p4rt.py).

Runs without BMv2. Every program family's state from real strategies is
written switch by switch and must be what the fake stores (decoded from the
stored protobufs, independently of the client's own read path), with the
P4Runtime encoding rules checked on the raw messages; ``apply(diff(old, new))``
must take the store from old to new; server errors must name the entry.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import grpc
import pytest
from google.rpc import code_pb2
from hypothesis import given, settings
from hypothesis import strategies as st
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from support.bmv2 import needs_bmv2
from support.hil_states import cases

from hil.fake_p4rt import FakeP4RuntimeServer
from hil.p4rt import P4RuntimeError, P4RuntimeWriteError, SwitchClient
from hil.p4rt_entities import (
    P4InfoIndex,
    config_from_entities,
    encode_value,
    normalise_config,
    table_entry_proto,
)
from hil.programs import PASS_COUNTER, Program
from sim.dataplanes.control_state import (
    CloneSession,
    ControlState,
    Exact,
    Lpm,
    MulticastGroup,
    Range,
    SwitchConfig,
    TableEntry,
    Ternary,
    Write,
    diff,
)

CASES = cases()
IDS = [f"{c.program}:{c.label}" for c in CASES]


@pytest.fixture
def server():
    with FakeP4RuntimeServer() as srv:
        yield srv


def _client(srv: FakeP4RuntimeServer, program: str, **kw) -> SwitchClient:
    return SwitchClient(srv.grpc_addr, 0, Program(program), timeout_s=5.0, **kw)


def _stored(srv: FakeP4RuntimeServer) -> SwitchConfig:
    return config_from_entities(srv.index, srv.entities)


def _cfg_equal(a: SwitchConfig, b: SwitchConfig) -> bool:
    return (dict(a.tables) == dict(b.tables)
            and dict(a.multicast_groups) == dict(b.multicast_groups)
            and dict(a.clone_sessions) == dict(b.clone_sessions))


def test_every_program_has_a_case():
    programs = {c.program for c in CASES}
    assert programs >= {"l2_multicast", "virtual_tree", "neighbor_labels",
                        "source_routing_port", "source_routing_bitmask",
                        "source_routing_mcgroup", "source_routing_mcgroup_subsets",
                        "source_routing_mixed"}


def _largest(case) -> tuple[str, SwitchConfig]:
    return max(sorted(case.state.switches.items()),
               key=lambda kv: (kv[1].entry_count() + len(kv[1].multicast_groups)
                               + len(kv[1].clone_sessions)))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_state_round_trips_through_the_fake_server(server, case):
    switches = sorted(case.state.switches.items())
    # the largest switch, and the first and last by name (pure-Python protobuf is slow)
    picked = dict([_largest(case), switches[0], switches[-1]])
    with _client(server, case.program) as client:
        for switch, config in sorted(picked.items()):
            client.push_pipeline()  # clears the previous switch's state
            n = client.write_config(config)
            expected = normalise_config(client.index, config)
            assert n == (config.entry_count() + len(config.multicast_groups)
                         + len(config.clone_sessions))
            assert len(server.entities) == n, f"{switch}: store holds {len(server.entities)}"
            assert _cfg_equal(_stored(server), expected), switch
            assert _cfg_equal(client.read_config(), expected), switch
            # normalising only masks values / drops needless priorities: same entries
            assert {t: len(es) for t, es in expected.tables.items()} == {
                t: len(es) for t, es in config.tables.items() if es}


def _dont_care(index: P4InfoIndex, table: str, field: str, m) -> bool:
    """A match P4Runtime wants omitted: ternary mask 0, LPM prefix 0, the full range."""
    width = next(f.bitwidth for f in index.table(table).fields if f.name == field)
    return ((isinstance(m, Ternary) and m.mask == 0) or (isinstance(m, Lpm) and not m.prefix_len)
            or (isinstance(m, Range) and (m.low, m.high) == (0, (1 << width) - 1)))


def _field_bytes(fm) -> list[bytes]:
    which = fm.WhichOneof("field_match_type")
    m = getattr(fm, which)
    return {"exact": lambda: [m.value], "ternary": lambda: [m.value, m.mask],
            "lpm": lambda: [m.value], "range": lambda: [m.low, m.high]}[which]()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_raw_messages_follow_p4runtime_rules(server, case):
    """Don't-care fields omitted, priority only on ternary/range tables, canonical bytes,
    replicas as in the state."""
    index = P4InfoIndex.from_file(Program(case.program).p4info)
    with _client(server, case.program) as client:
        switch, config = max(case.state.switches.items(), key=lambda kv: kv[1].entry_count())
        client.push_pipeline()
        client.write_config(config)
    for ent in server.entities:
        kind = ent.WhichOneof("entity")
        if kind == "table_entry":
            te = ent.table_entry
            table = index.table_by_id(te.table_id)
            assert (te.priority > 0) == table.needs_priority
            for fm in te.match:
                for v in _field_bytes(fm):
                    assert v and (len(v) == 1 or v[0] != 0), f"not canonical: {v!r}"
                if fm.WhichOneof("field_match_type") == "ternary":
                    assert fm.ternary.mask != b"\x00"
        else:
            pre = ent.packet_replication_engine_entry
            reps = lambda m: sorted((r.egress_port, r.instance) for r in m.replicas)  # noqa: E731
            if pre.WhichOneof("type") == "clone_session_entry":
                s = config.clone_sessions[pre.clone_session_entry.session_id]
                assert reps(pre.clone_session_entry) == [(s.port, 1)]
            else:
                g = config.multicast_groups[pre.multicast_group_entry.multicast_group_id]
                assert reps(pre.multicast_group_entry) == sorted(g.replicas)
    # the omitted fields are exactly the state's don't-care matches
    omitted = sum(1 for es in config.tables.values() for e in es
                  for f, m in e.match if _dont_care(index, e.table, f, m))
    stored_fields = sum(len(ent.table_entry.match) for ent in server.entities
                        if ent.WhichOneof("entity") == "table_entry")
    total_fields = sum(len(e.match) for es in config.tables.values() for e in es)
    assert stored_fields == total_fields - omitted
    assert sum(ent.WhichOneof("entity") == "table_entry" for ent in server.entities) == (
        config.entry_count())


def test_cases_cover_every_match_kind_and_wildcards():
    """Guards the encoding checks above against vacuous passes."""
    kinds = {type(m) for c in CASES for cfg in c.state.switches.values()
             for es in cfg.tables.values() for e in es for _, m in e.match}
    assert kinds == {Exact, Ternary, Lpm, Range}
    assert any(isinstance(m, Ternary) and m.mask == 0
               for c in CASES for cfg in c.state.switches.values()
               for es in cfg.tables.values() for e in es for _, m in e.match)


@cache
def _churned(case) -> ControlState:
    return case.strategy.update(case.topology, case.state, case.churn)


def test_churn_exercises_every_write_type():
    """Guards the churn test below against vacuous passes (static states write nothing)."""
    types = {(w.type, type(w.entity).__name__) for c in CASES for w in diff(c.state, _churned(c))}
    assert {("INSERT", "TableEntry"), ("DELETE", "TableEntry"), ("MODIFY", "TableEntry"),
            ("INSERT", "MulticastGroup"), ("DELETE", "MulticastGroup")} <= types, types
    # most label-stack states depend on the topology only; the random-churn test
    # below covers every case
    assert sum(bool(diff(c.state, _churned(c))) for c in CASES) >= 5


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_apply_diff_follows_strategy_churn(server, case):
    new = _churned(case)
    writes = diff(case.state, new)
    by_switch: dict[str, list[Write]] = {}
    for w in writes:
        by_switch.setdefault(w.switch, []).append(w)
    with _client(server, case.program) as client:
        for switch, ws in sorted(by_switch.items()):
            client.push_pipeline()
            client.write_config(case.state.config(switch))
            client.apply(ws)
            assert _cfg_equal(_stored(server), normalise_config(client.index,
                                                                new.config(switch))), switch


def _table_entries(case) -> list[tuple[str, TableEntry]]:
    return [(s, e) for s, cfg in sorted(case.state.switches.items())
            for es in cfg.tables.values() for e in es]


def _modified(entry: TableEntry) -> TableEntry:
    if entry.params:
        name, value = entry.params[0]
        return replace(entry, params=((name, value ^ 1),) + entry.params[1:])
    return entry


@settings(max_examples=20)
@given(data=st.data())
def test_apply_diff_under_random_churn(data):
    """Random old/new subsets of a real state (with modified parameters) on one switch."""
    case = data.draw(st.sampled_from(CASES))
    switch, config = max(case.state.switches.items(), key=lambda kv: kv[1].entry_count())
    entries = [e for es in config.tables.values() for e in es]
    groups = list(config.multicast_groups.values())
    sessions = list(config.clone_sessions.values())

    def pick(items):
        return [x for x in items if data.draw(st.booleans())]

    def build(es, gs, ss) -> ControlState:
        tables: dict[str, list[TableEntry]] = {}
        for e in es:
            tables.setdefault(e.table, []).append(e)
        return ControlState({switch: SwitchConfig(
            tables={t: tuple(v) for t, v in tables.items()},
            multicast_groups={g.group_id: g for g in gs},
            clone_sessions={s.session_id: s for s in ss})})

    old = build(pick(entries[:60]), pick(groups), pick(sessions))
    new_entries = [_modified(e) if data.draw(st.booleans()) else e for e in pick(entries[:60])]
    new_groups = [MulticastGroup(g.group_id, g.replicas[:-1] or g.replicas) for g in pick(groups)]
    new = build(new_entries, new_groups, [CloneSession(s.session_id, s.port + 1)
                                          for s in pick(sessions)])
    with FakeP4RuntimeServer() as srv, _client(srv, case.program) as client:
        client.push_pipeline()
        client.write_config(old.config(switch))
        client.apply(diff(old, new))
        assert _cfg_equal(_stored(srv), normalise_config(client.index, new.config(switch)))


def _l2_entry(mac: int, port: int) -> TableEntry:
    return TableEntry("MyIngress.l2_forward",
                      (("hdr.ethernet.dstAddr", Exact(mac)),
                       ("hdr.ethernet.srcAddr", Ternary(0, 0))),
                      "MyIngress.forward", (("port", port),), priority=1)


def test_l2_entry_shape_matches_the_program():
    """The hand-made entries below are real l2_multicast entries (else the error tests lie)."""
    index = P4InfoIndex.from_file(Program("l2_multicast").p4info)
    table_entry_proto(index, _l2_entry(0x0A, 1))
    shapes = {(e.table, tuple(f for f, _ in e.match), e.action)
              for c in CASES if c.program == "l2_multicast"
              for cfg in c.state.switches.values() for es in cfg.tables.values() for e in es}
    assert ("MyIngress.l2_forward", ("hdr.ethernet.dstAddr", "hdr.ethernet.srcAddr"),
            "MyIngress.forward") in shapes


def test_duplicate_insert_names_the_entry(server):
    with _client(server, "l2_multicast") as client:
        client.push_pipeline()
        client.apply([Write("INSERT", "s1", _l2_entry(0x0A, 1))])
        with pytest.raises(P4RuntimeWriteError) as err:
            client.apply([Write("INSERT", "s1", _l2_entry(0x0B, 2)),
                          Write("INSERT", "s1", _l2_entry(0x0A, 3))])
    msg = str(err.value)
    assert "1 of 2 updates failed" in msg
    assert "INSERT table MyIngress.l2_forward [hdr.ethernet.dstAddr=10" in msg
    assert "ALREADY_EXISTS" in msg and "dstAddr=11" not in msg
    assert [(op, code) for op, _, code, _ in err.value.failures] == [("INSERT", "ALREADY_EXISTS")]
    # as on BMv2, the good update of the batch was applied
    assert len(server.entities) == 2


def test_modify_and_delete_of_missing_entries_name_them(server):
    with _client(server, "l2_multicast") as client:
        client.push_pipeline()
        with pytest.raises(P4RuntimeWriteError, match=r"MODIFY table MyIngress.l2_forward.*"
                                                      r"NOT_FOUND"):
            client.apply([Write("MODIFY", "s1", _l2_entry(0x0C, 1))])
        with pytest.raises(P4RuntimeWriteError, match=r"DELETE multicast group 7.*NOT_FOUND"):
            client.apply([Write("DELETE", "s1", MulticastGroup(7, ((1, 1),)))])
        client.apply([Write("INSERT", "s1", CloneSession(5, 2))])
        with pytest.raises(P4RuntimeWriteError, match=r"INSERT clone session 5.*ALREADY_EXISTS"):
            client.apply([Write("INSERT", "s1", CloneSession(5, 3))])


def test_bad_entries_fail_before_sending_with_the_field_named(server):
    with _client(server, "l2_multicast") as client:
        client.push_pipeline()
        with pytest.raises(ValueError, match=r"field hdr.ethernet.dstAddr: value .* does not "
                                             r"fit in 48 bits"):
            client.apply([Write("INSERT", "s1", _l2_entry(1 << 48, 1))])
        with pytest.raises(ValueError, match=r"table 'MyIngress.nope' is not in "
                                             r"l2_multicast.p4info.txtpb \(tables: .*l2_forward"):
            client.apply([Write("INSERT", "s1", replace(_l2_entry(1, 1), table="MyIngress.nope"))])
        with pytest.raises(ValueError, match="priority must be > 0"):
            client.apply([Write("INSERT", "s1", replace(_l2_entry(1, 1), priority=0))])
        with pytest.raises(ValueError, match=r"parameters \['prt'\] differ"):
            client.apply([Write("INSERT", "s1", replace(_l2_entry(1, 1), params=(("prt", 1),)))])
        with pytest.raises(ValueError, match="several switches"):
            client.apply([Write("INSERT", "s1", _l2_entry(1, 1)),
                          Write("INSERT", "s2", _l2_entry(2, 1))])
    assert server.entities == []


def test_batches_split_where_the_write_type_changes(server):
    with _client(server, "l2_multicast") as client:
        client.push_pipeline()
        before = server.write_rpcs
        client.apply([Write("INSERT", "s1", _l2_entry(1, 1)),
                      Write("INSERT", "s1", _l2_entry(2, 1)),
                      Write("DELETE", "s1", _l2_entry(1, 1)),
                      Write("INSERT", "s1", _l2_entry(1, 2))])
        assert server.write_rpcs - before == 3
        assert client.read_config().tables["MyIngress.l2_forward"] == tuple(sorted(
            (_l2_entry(1, 2), _l2_entry(2, 1)), key=repr))


def test_read_counter(server):
    with _client(server, "virtual_tree") as client:
        client.push_pipeline()
        assert client.read_counter() == 0
        server.set_counter(PASS_COUNTER, 0, 17)
        assert client.read_counter(PASS_COUNTER, 0) == 17
        with pytest.raises(ValueError, match="counter 'nope' is not in"):
            client.read_counter("nope")
        with pytest.raises(ValueError, match="index 5 outside"):
            client.read_counter(PASS_COUNTER, 5)


def test_write_before_pipeline_is_a_clear_error(server):
    with _client(server, "l2_multicast") as client:
        with pytest.raises(P4RuntimeError, match="FAILED_PRECONDITION: no forwarding pipeline"):
            client.apply([Write("INSERT", "s1", _l2_entry(1, 1))])


def test_backup_client_is_refused_and_two_switches_work_at_once():
    with FakeP4RuntimeServer() as a, FakeP4RuntimeServer() as b:
        with _client(a, "l2_multicast", election_id=(0, 5)) as primary:
            with pytest.raises(P4RuntimeError, match=r"not primary .*ALREADY_EXISTS"):
                _client(a, "l2_multicast", election_id=(0, 2))
            with _client(b, "virtual_tree") as other:
                primary.push_pipeline()
                other.push_pipeline()
                primary.apply([Write("INSERT", "s1", _l2_entry(1, 1))])
                assert other.read_config().tables == {}
                assert len(primary.read_config().tables["MyIngress.l2_forward"]) == 1


def test_no_server_is_a_clear_error():
    with FakeP4RuntimeServer() as srv:
        addr = srv.grpc_addr
    with pytest.raises(P4RuntimeError, match=r"no server answered within 0.5 s"):
        SwitchClient(addr, 0, Program("l2_multicast"), timeout_s=0.5)


def _raw_write(srv: FakeP4RuntimeServer, te: p4runtime_pb2.TableEntry) -> p4runtime_pb2.Error:
    """Send one raw update through a primary client's channel; the per-update error."""
    with _client(srv, "l2_multicast") as client:
        client.push_pipeline()
        stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(srv.grpc_addr))
        req = p4runtime_pb2.WriteRequest(device_id=0)
        req.election_id.low = 1
        req.updates.append(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT,
                                                entity=p4runtime_pb2.Entity(table_entry=te)))
        with pytest.raises(grpc.RpcError) as err:
            stub.Write(req, timeout=5)
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    from hil.p4rt import _status_details
    status = _status_details(err.value)
    out = p4runtime_pb2.Error()
    status.details[0].Unpack(out)
    return out


def test_fake_rejects_what_bmv2_rejects(server):
    """A 0 ternary mask, and priority 0 on a ternary table, are INVALID_ARGUMENT (as in PI)."""
    index = P4InfoIndex.from_file(Program("l2_multicast").p4info)
    te = table_entry_proto(index, _l2_entry(1, 1))
    src = next(f for f in index.table("MyIngress.l2_forward").fields
               if f.match_type == p4info_pb2.MatchField.TERNARY)
    fm = te.match.add(field_id=src.id)
    fm.ternary.value, fm.ternary.mask = b"\x00", b"\x00"
    err = _raw_write(server, te)
    assert err.canonical_code == code_pb2.INVALID_ARGUMENT and "0 mask" in err.message
    te = table_entry_proto(index, _l2_entry(1, 1))
    te.priority = 0
    err = _raw_write(server, te)
    assert err.canonical_code == code_pb2.INVALID_ARGUMENT and "priority" in err.message


def test_encode_value_is_canonical():
    assert encode_value(0, 9, "x") == b"\x00"
    assert encode_value(0x1FF, 9, "x") == b"\x01\xff"
    assert encode_value(0x0A, 48, "x") == b"\x0a"
    with pytest.raises(ValueError, match="x: value 512 does not fit in 9 bits"):
        encode_value(512, 9, "x")


# -- real BMv2 ------------------------------------------------------------------------




@pytest.fixture(scope="module")
def bmv2(tmp_path_factory):
    """One simple_switch_grpc with one port, in a namespace the fixture removes."""
    from hil.bmv2 import Bmv2Switch
    from hil.netns import Namespace

    with Namespace() as ns:
        ns.add_veth("p1", "q1")
        switch = Bmv2Switch(ns, "writer", {1: "p1"}, tmp_path_factory.mktemp("bmv2"),
                            log_level="off")
        try:
            switch.start(30.0)
            yield switch
        finally:
            switch.stop()


#: One case per program: the one whose largest switch has the most state.
PROGRAM_CASES = list({c.program: c for c in sorted(
    CASES, key=lambda c: _largest(c)[1].entry_count())}.values())


@pytest.mark.hil
@needs_bmv2
@pytest.mark.parametrize("case", PROGRAM_CASES, ids=[c.program for c in PROGRAM_CASES])
def test_bmv2_holds_what_the_writer_wrote(bmv2, case):
    switch, config = _largest(case)
    with SwitchClient(bmv2.grpc_addr, bmv2.device_id, Program(case.program)) as client:
        client.push_pipeline()
        n = client.write_config(config)
        assert n > 0
        assert _cfg_equal(client.read_config(), normalise_config(client.index, config))
        assert client.read_counter() == 0
        new = _churned(case).config(switch)
        writes = [w for w in diff(case.state, _churned(case)) if w.switch == switch]
        client.apply(writes)
        assert _cfg_equal(client.read_config(), normalise_config(client.index, new))


@pytest.mark.hil
@needs_bmv2
def test_bmv2_errors_name_the_entry(bmv2):
    with SwitchClient(bmv2.grpc_addr, bmv2.device_id, Program("l2_multicast")) as client:
        client.push_pipeline()
        client.apply([Write("INSERT", "s1", _l2_entry(0x0A, 1))])
        with pytest.raises(P4RuntimeWriteError) as err:
            client.apply([Write("INSERT", "s1", _l2_entry(0x0B, 2)),
                          Write("INSERT", "s1", _l2_entry(0x0A, 3))])
        assert [(op, code) for op, _, code, _ in err.value.failures] == [
            ("INSERT", "ALREADY_EXISTS")]
        assert "dstAddr=10" in str(err.value)
        with pytest.raises(P4RuntimeWriteError, match=r"DELETE clone session 9.*NOT_FOUND"):
            client.apply([Write("DELETE", "s1", CloneSession(9, 1))])
        assert len(client.read_config().tables["MyIngress.l2_forward"]) == 2
