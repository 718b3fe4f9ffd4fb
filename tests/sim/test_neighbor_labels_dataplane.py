"""The hops/destinations label program (seed 000 §4.2.1-4.2.2): codec, splits, passes."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.control_state import StateBuilder, SwitchConfig
from sim.dataplanes.neighbor_labels.codec import (
    KIND_DEST,
    KIND_NODE,
    dest_label,
    node_id,
    node_label,
)
from sim.dataplanes.neighbor_labels.reference import (
    CHECK_DEST,
    CHECK_NEIGHBOR,
    NeighborLabelsDataPlane,
    dest_entry,
    install_clone_sessions,
    neighbor_entry,
)
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import get_dataplane
from sim.dataplanes.virtual_tree.codec import FieldRangeError, LabelFormat
from topologies.model import build_topology

FMT = LabelFormat()
NL = NeighborLabelsDataPlane()

# Fig. 4.1-like: P at N1; N1 -> N2 (N3, N4 below) and N1 -> N5 (N6 below)
FIG41 = build_topology("fig4.1", [(1, 2), (1, 5), (2, 3), (2, 4), (5, 6)], range(1, 7),
                       {1: 1, 3: 1, 4: 1, 6: 1})


def switch_config(topo, sw, dest: bool = False) -> SwitchConfig:
    b = StateBuilder()
    for port, info in topo.ports(sw).items():
        b.add_entry(sw, neighbor_entry(FMT, topo, info.neighbor, port))
    if dest:
        for h in topo.hosts:
            home = topo.host_switch(h)
            path = nx.shortest_path(topo.graph, sw, home) + [h]
            b.add_entry(sw, dest_entry(FMT, topo, h, topo.port_to(sw, path[1])))
    install_clone_sessions(b, topo, sw, FMT)
    return b.build([sw]).config(sw)


def frame(labels):
    return Packet(0xFFFF_FFFF_FFFF, 0x02_00_00_00_00_01, 0x9999, FMT.encode(labels), b"x" * 20)


def out(result):
    return {e.port: list(FMT.decode(e.packet.header)[0]) for e in result.emitted}


def nodes(*names):
    return [node_label(FMT, FIG41, n) for n in names]


def test_registered_under_its_family_name():
    assert isinstance(get_dataplane("neighbor_labels"), NeighborLabelsDataPlane)


def test_node_ids_cover_switches_then_hosts():
    assert [node_id(FIG41, s) for s in FIG41.switches] == list(range(6))
    assert [node_id(FIG41, h) for h in FIG41.hosts] == [6, 7, 8, 9]
    assert FMT.kind(node_label(FMT, FIG41, "h2")) == KIND_NODE
    assert FMT.kind(dest_label(FMT, FIG41, "h2")) == KIND_DEST
    assert dest_label(FMT, FIG41, "h2") == 0x8001


def test_ids_beyond_the_id_field_name_it():
    small = LabelFormat(label_bits=8, type_bits=2)  # 6-bit ids: 0..63
    topo = build_topology("line", [(i, i + 1) for i in range(39)], range(40))
    with pytest.raises(FieldRangeError, match="id_bits"):
        node_label(small, topo, "h30")  # id 40 + 29 = 69


def test_hops_split_at_each_neighbour_id():
    """Fig. 4.1: the N2 clone carries the entries between N2 and N5, the N5 clone the rest."""
    stack = nodes("s2", "s3", "h2", "s4", "h3", "s5", "s6", "h4")
    r = NL.process("s1", switch_config(FIG41, "s1"), frame(stack), FIG41.port_to("s1", "h1"))
    assert out(r) == {FIG41.port_to("s1", "s2"): nodes("s3", "h2", "s4", "h3"),
                      FIG41.port_to("s1", "s5"): nodes("s6", "h4")}
    # original: one pass per label (8); N2 clone (label 0) scans 7, N5 clone (label 5) scans 2
    assert r.passes == 8 + 7 + 2 and r.recirculations == r.passes - 1
    # every original pass and every clone pass up to the next neighbour id looks up
    assert r.lookups == 8 + 5 + 2
    assert r.dropped == 1
    assert [e.depth for e in r.emitted] == [8, 8]


def test_hops_formula_at_a_branching_switch():
    """Passes = L + sum_j (L - 1 - p_j) with p_j the positions of the neighbour ids."""
    stack = nodes("s3", "h2", "s4", "h3")
    r = NL.process("s2", switch_config(FIG41, "s2"), frame(stack), FIG41.port_to("s2", "s1"))
    assert out(r) == {FIG41.port_to("s2", "s3"): nodes("h2"),
                      FIG41.port_to("s2", "s4"): nodes("h3")}
    assert r.passes == 4 + (4 - 1 - 0) + (4 - 1 - 2)


def test_hops_leaf_clone_to_host_carries_an_empty_stack():
    r = NL.process("s3", switch_config(FIG41, "s3"), frame(nodes("h2")), 2)
    assert out(r) == {1: []}
    assert r.emitted[0].packet.header == b"\x00\x00"


def test_hops_never_clones_back_to_the_ingress_port():
    r = NL.process("s2", switch_config(FIG41, "s2"), frame(nodes("s1", "s3")),
                   FIG41.port_to("s2", "s1"))
    assert list(out(r)) == [FIG41.port_to("s2", "s3")]


# Fig. 4.2-like: P at N1; port 2 leads to S1, S2, port 3 to S3, S4, S5
FIG42 = build_topology("fig4.2", [(1, 2), (1, 3), (2, 4), (2, 5), (3, 6), (3, 7), (3, 8)],
                       range(1, 9), {1: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1})


def test_destinations_one_clone_per_port_with_its_ids_only():
    subs = ["h2", "h3", "h4", "h5", "h6"]  # S1..S5
    labels = [dest_label(FMT, FIG42, h) for h in subs]
    r = NL.process("s1", switch_config(FIG42, "s1", dest=True), frame(labels), 1)
    assert out(r) == {2: labels[:2], 3: labels[2:]}
    # original 5 passes; port-2 clone made at label 0 scans 4, port-3 clone at label 2 scans 2
    assert r.passes == 5 + 4 + 2
    assert r.lookups == r.passes


@given(st.lists(st.sampled_from(["h2", "h3", "h4", "h5", "h6", "h1"]), min_size=1, max_size=8),
       st.integers(1, 3))
def test_destinations_partition_ids_by_port(subs, in_port):
    cfg = switch_config(FIG42, "s1", dest=True)
    labels = [dest_label(FMT, FIG42, h) for h in subs]
    r = NL.process("s1", cfg, frame(labels), in_port)
    got = out(r)
    port_of = {lab: cfg.lookup(CHECK_DEST, lab).param("port") for lab in labels}
    want: dict[int, list[int]] = {}
    first: dict[int, int] = {}
    for k, lab in enumerate(labels):
        p = port_of[lab]
        if p != in_port:
            want.setdefault(p, []).append(lab)
            first.setdefault(p, k)
    assert got == want
    assert r.passes == len(labels) + sum(len(labels) - 1 - k for k in first.values())


@pytest.mark.parametrize("labels", [[], [0x8000 | 0x3FFF, 0], [0xC001]])
def test_rejects_and_unknown_kinds_drop_in_one_pass(labels):
    r = NL.process("s1", switch_config(FIG41, "s1"), frame(labels), 1)
    if labels and FMT.kind(labels[0]) == KIND_DEST:  # unknown destination: one pass, no clone
        assert (r.emitted, r.dropped) == ((), 1)
    else:
        assert (r.passes, r.lookups, r.emitted, r.dropped) == (1, 0, (), 1)


def test_rule_keys():
    cfg = switch_config(FIG41, "s2")
    assert cfg.entry_count(CHECK_NEIGHBOR) == FIG41.degree("s2")
    hit = cfg.lookup(CHECK_NEIGHBOR, node_label(FMT, FIG41, "s4"))
    assert hit.param("port") == FIG41.port_to("s2", "s4")
    assert cfg.lookup(CHECK_NEIGHBOR, node_label(FMT, FIG41, "s6")) is None
