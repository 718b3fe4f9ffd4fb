"""Source-routing codec and data-plane reference model (seed 000 §3.2-3.3, digest §2-4)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.control_state import (
    CloneSession,
    Exact,
    MulticastGroup,
    SwitchConfig,
    TableEntry,
)
from sim.dataplanes.packet import BROADCAST_MAC, Packet
from sim.dataplanes.pipeline import get_dataplane
from sim.dataplanes.source_routing import codec
from sim.dataplanes.source_routing.codec import (
    TAG_MCGROUP,
    TAG_PORT,
    StackDecodeError,
    StackEntry,
    StackLayout,
    decode_stack,
    encode_stack,
    header_length,
    parse_frame,
)
from sim.dataplanes.source_routing.reference import (
    CHECK_DEV,
    CHECK_ENTRY,
    CONTINUE_SESSION,
    DO_MULTICAST_SUBSET,
    KEY_SUBSET,
    KEY_TOP_ID,
    MULTICAST_FORWARD,
    OWN_ENTRY,
    SourceRoutingDataPlane,
)
from strategies.source_routing.stack_strategy import check_bitmask_rules, read_entry_rules
from topologies.registry import SpecError


@st.composite
def layouts(draw):
    id_bits = draw(st.integers(1, 24))
    tag_bits = draw(st.sampled_from([0, 0, 2, 8]))
    value_bits = draw(st.integers(1, 24))
    value_bits += -(id_bits + tag_bits + value_bits) % 8  # whole bytes
    return StackLayout(id_bits=id_bits, tag_bits=tag_bits, value_bits=value_bits,
                       size_bits=draw(st.sampled_from([8, 16, 24])))


@st.composite
def stacks(draw):
    layout = draw(layouts())
    entry = st.builds(StackEntry, st.integers(0, (1 << layout.id_bits) - 1),
                      st.integers(0, (1 << layout.value_bits) - 1),
                      st.integers(0, (1 << layout.tag_bits) - 1))
    return layout, draw(st.lists(entry, max_size=40)), draw(st.binary(max_size=30))


@given(stacks())
def test_codec_round_trips(case):
    layout, entries, payload = case
    header = encode_stack(entries, layout)
    assert len(header) == layout.header_bytes(len(entries))
    assert decode_stack(header + payload, layout) == (tuple(entries), len(header))
    assert header_length(header + payload, layout) == len(header)
    pkt = Packet(BROADCAST_MAC, 0x020000000001, layout.ethertype, header, payload)
    assert parse_frame(pkt.to_bytes(), layout) == pkt


@st.composite
def byte_field_stacks(draw):
    """Layouts whose fields are whole bytes (the column-wise codec) and their entries."""
    id_bits, tag_bits, value_bits = (8 * draw(st.integers(lo, 3)) for lo in (1, 0, 1))
    layout = StackLayout(id_bits=id_bits, tag_bits=tag_bits, value_bits=value_bits)
    entry = st.builds(StackEntry, st.integers(0, (1 << id_bits) - 1),
                      st.integers(0, (1 << value_bits) - 1), st.integers(0, (1 << tag_bits) - 1))
    return layout, draw(st.lists(entry, max_size=40)), draw(st.binary(max_size=8))


@given(byte_field_stacks())
def test_column_parser_agrees_with_the_entry_by_entry_parser(case):
    layout, entries, payload = case
    body = encode_stack(entries, layout) + payload
    end = layout.header_bytes(len(entries))
    assert codec._decode_columns(body, layout.size_bytes, end, layout) == \
        codec._decode_each(body, layout.size_bytes, end, layout) == tuple(entries)


def test_codec_is_big_endian_size_then_entries():
    layout = StackLayout(id_bits=8, value_bits=16)
    assert encode_stack([StackEntry(1, 0x0203), StackEntry(255, 0xFFFF)], layout).hex() == \
        "0002" "010203" "ffffff"
    tagged = StackLayout(id_bits=8, tag_bits=8, value_bits=16)
    assert encode_stack([StackEntry(4, 3, TAG_MCGROUP)], tagged).hex() == "0001" "04030003"


@pytest.mark.parametrize(("entry", "field"), [
    (StackEntry(256, 1), "id_bits=8"),
    (StackEntry(1, 256), "port_bits=8"),
    (StackEntry(1, 1, 1), "tag_bits=0"),
])
def test_codec_names_the_field_that_overflows(entry, field):
    with pytest.raises(ValueError, match=field):
        encode_stack([entry], StackLayout(value_field="port_bits"))


def test_layout_rejects_entries_that_are_not_whole_bytes():
    with pytest.raises(SpecError, match="bitmask_bits=4"):
        StackLayout(id_bits=8, value_bits=4, value_field="bitmask_bits")
    with pytest.raises(SpecError, match="size_bits"):
        StackLayout(size_bits=12)


def test_decode_rejects_truncated_stacks():
    layout = StackLayout()
    with pytest.raises(StackDecodeError, match="Size says 3 entries"):
        decode_stack(bytes.fromhex("0003" "0101" "0202"), layout)


def test_default_family_is_registered():
    dp = get_dataplane("source_routing")
    assert isinstance(dp, SourceRoutingDataPlane)
    assert (dp.kind, dp.pruning, dp.layout.entry_bytes, dp.layout.ethertype) == \
        ("port", "predictive", 2, 0x9999)


def port_config(own_id, ports=(1, 2, 3), size=8):
    return SwitchConfig(
        tables={"MyIngress.read_entry": read_entry_rules(size),
                CHECK_ENTRY: (TableEntry(CHECK_ENTRY, (("meta.entry.id", Exact(own_id)),),
                                         OWN_ENTRY),)},
        clone_sessions={p: CloneSession(p, p) for p in ports})


def packet(layout, entries, payload=b"ev"):
    return Packet(BROADCAST_MAC, 1, layout.ethertype, encode_stack(entries, layout), payload)


def test_port_original_pops_and_clones_prune_their_subtree():
    dp = SourceRoutingDataPlane()
    stack = [StackEntry(0, 2), StackEntry(5, 1), StackEntry(0, 3), StackEntry(6, 1)]
    res = dp.process("s1", port_config(0), packet(dp.layout, stack), 1)
    out = {e.port: (e.depth, decode_stack(e.packet.header, dp.layout)[0]) for e in res.emitted}
    assert out == {2: (4, (StackEntry(5, 1),)), 3: (4, (StackEntry(6, 1),))}
    # (L-1) + sum_j (L-1-p_j) = 3 + 3 + 1 recirculations; read_entry + check_entry each pass.
    assert (res.passes, res.recirculations, res.dropped) == (8, 7, 1)
    assert res.lookups == 16 and res.circulations_simplified == 2
    assert all(e.packet.payload == b"ev" for e in res.emitted)


def test_missing_clone_session_loses_only_that_copy():
    dp = SourceRoutingDataPlane(pruning="reactive")
    stack = [StackEntry(0, 2), StackEntry(0, 9)]
    res = dp.process("s1", port_config(0), packet(dp.layout, stack), 1)
    assert [e.port for e in res.emitted] == [2]
    assert res.passes == 2


def test_parser_drops_foreign_ethertype_empty_and_too_long_stacks():
    dp = SourceRoutingDataPlane(stack_size=2)
    cfg = port_config(0)
    good = packet(dp.layout, [StackEntry(0, 2)])
    assert [e.port for e in dp.process("s1", cfg, good, 1).emitted] == [2]
    for pkt in (Packet(BROADCAST_MAC, 1, 0x0800, good.header, b""),
                packet(dp.layout, []),
                packet(dp.layout, [StackEntry(0, 2)] * 3)):
        res = dp.process("s1", cfg, pkt, 1)
        assert (res.emitted, res.dropped, res.lookups) == ((), 1, 0)


def bitmask_config(own_id, ports=(1, 2, 3)):
    return SwitchConfig(
        tables={CHECK_DEV: (TableEntry(CHECK_DEV, ((KEY_TOP_ID, Exact(own_id)),), OWN_ENTRY),),
                "MyIngress.check_bitmask": check_bitmask_rules(ports)},
        clone_sessions={p: CloneSession(p, p) for p in ports})


def test_bitmask_pops_foreign_entries_and_clones_per_bit():
    dp = SourceRoutingDataPlane(layout=StackLayout(value_bits=16), kind="bitmask",
                                pruning="reactive")
    stack = [StackEntry(3, 1), StackEntry(0, 0b110), StackEntry(4, 1)]
    res = dp.process("s1", bitmask_config(0), packet(dp.layout, stack), 1)
    assert [(e.port, e.depth) for e in res.emitted] == [(2, 2), (3, 3)]
    assert all(decode_stack(e.packet.header, dp.layout)[0] == (StackEntry(4, 1),)
               for e in res.emitted)
    assert (res.recirculations, res.dropped) == (2, 1)  # q + m - 1 = 1 + 2 - 1
    # A bit for a port without a check_bitmask rule hits the catch-all drop.
    res = dp.process("s1", bitmask_config(0), packet(dp.layout, [StackEntry(0, 0b1000)]), 1)
    assert (res.emitted, res.dropped) == ((), 1)


def test_mcgroup_subsets_take_one_pass_per_subset_with_a_continuation_clone():
    layout = StackLayout(value_bits=16)
    dp = SourceRoutingDataPlane(layout=layout, kind="mcgroup", pruning="reactive", mc_subsets=2)
    rules = tuple(TableEntry(MULTICAST_FORWARD, ((KEY_TOP_ID, Exact(0)), (KEY_SUBSET, Exact(k))),
                             DO_MULTICAST_SUBSET, (("mask", m), ("last", k)))
                  for k, m in ((0, 0b0011), (1, 0b1100)))
    groups = {g: MulticastGroup(g, tuple((p, 1) for p in ports))
              for g, ports in ((0b0010, (2,)), (0b0100, (3,)), (0b1000, (4,)), (0b1100, (3, 4)))}
    cfg = SwitchConfig(tables={MULTICAST_FORWARD: rules}, multicast_groups=groups,
                       clone_sessions={CONTINUE_SESSION: CloneSession(CONTINUE_SESSION, 1)})
    res = dp.process("s1", cfg, packet(layout, [StackEntry(0, 0b1110), StackEntry(7, 1)]), 1)
    assert [(e.port, e.depth) for e in res.emitted] == [(2, 1), (3, 2), (4, 2)]
    assert (res.passes, res.recirculations, res.dropped, res.lookups) == (2, 1, 0, 2)
    # Without the continuation session the second subset is never served.
    cfg = SwitchConfig(tables={MULTICAST_FORWARD: rules}, multicast_groups=groups)
    res = dp.process("s1", cfg, packet(layout, [StackEntry(0, 0b1110)]), 1)
    assert [e.port for e in res.emitted] == [2]


def test_mixed_multicast_of_the_last_entry_consumes_the_original():
    layout = StackLayout(tag_bits=8, value_bits=16)
    dp = SourceRoutingDataPlane(layout=layout, kind="mixed", pruning="per-type")
    key = (("meta.entry.id", Exact(0)), ("meta.entry.tag", Exact(TAG_MCGROUP)))
    cfg = SwitchConfig(
        tables={"MyIngress.read_entry": read_entry_rules(4),
                CHECK_ENTRY: (TableEntry(CHECK_ENTRY, key, "MyIngress.own_mcgroup_entry"),)},
        multicast_groups={3: MulticastGroup(3, ((1, 1), (2, 1)))})
    res = dp.process("s1", cfg, packet(layout, [StackEntry(0, 3, TAG_MCGROUP)]), 4)
    assert [(e.port, e.depth) for e in res.emitted] == [(1, 1), (2, 1)]
    assert (res.passes, res.dropped) == (1, 0)
    # A port entry after it needs the continuation clone, which is not installed here.
    stack = [StackEntry(0, 3, TAG_MCGROUP), StackEntry(0, 3, TAG_PORT)]
    res = dp.process("s1", cfg, packet(layout, stack), 4)
    assert [e.port for e in res.emitted] == [1, 2] and res.passes == 1


def test_bad_model_configurations_name_the_problem():
    with pytest.raises(SpecError, match="tag_bits"):
        SourceRoutingDataPlane(kind="mixed")
    with pytest.raises(SpecError, match="mc_subsets"):
        SourceRoutingDataPlane(kind="port", mc_subsets=2)


def test_pure_modules_import_no_simulation_or_hardware_packages():
    code = ("import sys, sim.dataplanes.source_routing.reference, "
            "strategies.source_routing.switch_port, strategies.source_routing.switch_bitmask, "
            "strategies.source_routing.switch_mcgroup, strategies.source_routing.mixed; "
            "print(sorted({'simpy', 'pyspark', 'scapy', 'p4runtime_sh'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
