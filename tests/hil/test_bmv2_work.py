"""What BMv2 did for a visit, counted from its trace log (no BMv2 needed)."""

from __future__ import annotations

import pytest

from hil.bmv2_work import ProgramShape, Work, count_work
from hil.programs import Program


def _shape(name: str) -> ProgramShape:
    return ProgramShape.from_json(name, Program(name).bmv2_json)


def test_shapes_of_committed_programs():
    port = _shape("source_routing_port")
    # p4/source_routing.p4's stack of 749 two-field entries, popped by MyEgress.pop_entry
    assert port.stack_shifts == {"MyEgress.pop_entry": 749 * 2}
    assert (port.headers, port.fields) == (753, 1542)
    assert port.tables["MyIngress.read_entry"] == "exact"
    assert port.tables["tbl_act"] == "keyless"
    assert _shape("l2_multicast").tables["MyIngress.l2_forward"] == "ternary"
    assert "lpm" in _shape("prefix_filter").tables.values()
    assert "range" in _shape("range_filter_2x16").tables.values()
    assert _shape("virtual_tree").stack_shifts == {}


def test_unknown_match_kind_is_refused():
    spec = {"pipelines": [{"tables": [{"name": "t", "key": [{}], "match_type": "optional"}]}]}
    with pytest.raises(ValueError, match="optional"):
        ProgramShape.from_json("p", spec)


SHAPE = ProgramShape("p", {"tbl_a": "keyless", "MyIngress.t": "exact",
                           "MyIngress.r": "range", "MyIngress.k": "ternary"},
                     {"MyEgress.pop": 10}, headers=7, fields=20)


def _line(instance: str, text: str, level: str = "D", thread: int = 5) -> str:
    return f"[16:12:16.108] [bmv2] [{level}] [thread {thread}] [{instance}] [cxt 0] {text}"


#: One arrival that is cloned at ingress (the clone re-parsed and replicated to
#: port 1), the original popped and recirculated, the recirculated pass sent to port 2.
LOG = [
    _line("0.0", "Processing packet received on port 3"),
    _line("0.0", "Parser 'parser': start"),
    _line("0.0", "Extracting header 'ethernet'"),
    _line("0.0", "Bytes parsed: 14", "T"),
    _line("0.0", "Extracting to header stack 0, next header is 4"),
    _line("0.0", "Bytes parsed: 18", "T"),
    _line("0.0", "Parser 'parser': end"),
    _line("0.0", "Pipeline 'ingress': start"),
    _line("0.0", "Applying table 'tbl_a'", "T"),
    _line("0.0", "Looking up key:"),
    _line("0.0", "Table 'tbl_a': miss"),
    _line("0.0", "Action entry is act - "),
    _line("0.0", "Action act", "T"),
    _line("0.0", "p.p4(1) Primitive meta.x = 1", "T"),
    _line("0.0", "p.p4(2) Condition \"meta.x == 1\" (node_3) is true", "T"),
    _line("0.0", "Applying table 'MyIngress.r'", "T"),
    _line("0.0", "Applying table 'MyIngress.k'", "T"),
    _line("0.0", "Pipeline 'ingress': end"),
    _line("0.0", "Cloning packet at ingress"),
    _line("0.1", "Parser 'parser': start"),
    _line("0.1", "Extracting header 'ethernet'"),
    _line("0.1", "Bytes parsed: 14", "T"),
    _line("0.1", "Parser 'parser': end"),
    "[16:12:16.111] [bmv2] [D] [thread 5] number of packets replicated : 1 for MGID: 32769",
    _line("0.1", "Replicating packet on port 1"),
    _line("0.1", "Pipeline 'egress': start", thread=6),
    _line("0.1", "Deparser 'deparser': start", thread=6),
    _line("0.1", "Deparsing header 'ethernet'", thread=6),
    _line("0.1", "Transmitting packet of size 66 out of port 1", thread=7),
    _line("0.0", "Pipeline 'egress': start", thread=6),
    _line("0.0", "Action MyEgress.pop", "T", thread=6),
    _line("0.0", "p.p4(9) Primitive hdr.stack.pop_front(1)", "T", thread=6),
    _line("0.0", "Deparser 'deparser': start", thread=6),
    _line("0.0", "Deparsing header 'ethernet'", thread=6),
    _line("0.0", "Deparsing header 'stack[0]'", thread=6),
    _line("0.0", "Recirculating packet", thread=6),
    _line("0.2", "Processing packet received on port 3"),
    _line("0.2", "Parser 'parser': start"),
    _line("0.2", "Extracting header 'ethernet'"),
    _line("0.2", "Bytes parsed: 14", "T"),
    _line("0.2", "Pipeline 'ingress': start"),
    _line("0.2", "Applying table 'MyIngress.t'", "T"),
    _line("0.2", "Dumping entry 0\nMatch key:"),
    "* meta.num_seen_labels: EXACT     0000",
    _line("0.2", "Pipeline 'egress': start", thread=8),
    _line("0.2", "Deparser 'deparser': start", thread=8),
    _line("0.2", "Transmitting packet of size 70 out of port 2", thread=7),
    _line("0.3", "Dropping packet at the end of egress", thread=8),
]


def test_counts_of_a_cloned_and_recirculated_visit():
    work = count_work(LOG, SHAPE, {"MyIngress.r": 30, "MyIngress.k": 4, "MyIngress.t": 99})
    assert work == Work(ingress=2, egress=3, parses=3, parsed_headers=4,
                        parsed_bytes=18 + 14 + 14, deparses=3, deparsed_headers=3,
                        keyless=1, exact=1, ternary=1, range=1, scanned_entries=34,
                        actions=2, primitives=2, conditions=1, stack_shifts=10, clones=1,
                        replicas=1, recirculations=1, transmitted=2, transmitted_bytes=136,
                        dropped=1)
    assert work.as_dict()["scanned_entries"] == 34


def test_a_table_of_another_program_is_refused():
    with pytest.raises(ValueError, match="MyIngress.other"):
        count_work([_line("0.0", "Applying table 'MyIngress.other'", "T")], SHAPE)
