"""Elmo's three-tier Clos (``elmo``): counts, roles, wiring, ports, full size."""

from __future__ import annotations

import resource
import time
from collections import Counter

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topologies.model import Topology
from topologies.registry import SpecError
from topologies.specs import estimate_topology, load_topology


def switches_by_role(topo: Topology) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in topo.switches:
        out.setdefault(topo.node_attrs[s]["role"], []).append(s)
    return out


def switch_neighbours(topo: Topology, switch: str) -> list[str]:
    return [p.neighbor for p in topo.ports(switch).values() if not topo.is_host(p.neighbor)]


@st.composite
def small_clos(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    pods = draw(st.integers(1, 4))
    leaves = draw(st.integers(1, 5))
    hosts = draw(st.integers(0, 3))
    spines = draw(st.integers(1, 3))
    cores = spines * draw(st.integers(1, 3))
    return pods, leaves, hosts, spines, cores


@settings(max_examples=40, deadline=None)
@given(small_clos())
def test_counts_roles_and_wiring(case: tuple[int, int, int, int, int]) -> None:
    pods, leaves, hosts, spines, cores = case
    spec = f"elmo:pods={pods},leaves={leaves},hosts={hosts},spines={spines},cores={cores}"
    topo = load_topology(spec)
    roles = switches_by_role(topo)
    assert {r: len(v) for r, v in roles.items()} == {
        "core": cores, "spine": pods * spines, "leaf": pods * leaves}
    assert len(topo.hosts) == pods * leaves * hosts
    size = estimate_topology(spec)
    assert size is not None
    assert (size.switches, size.hosts, size.links) == (
        len(topo.switches), len(topo.hosts), len(topo.links))
    attrs = topo.node_attrs
    per_plane = cores // spines
    # switch order: cores, then per pod its spines and leaves
    expected = ["core"] * cores + (["spine"] * spines + ["leaf"] * leaves) * pods
    assert [attrs[s]["role"] for s in topo.switches] == expected
    for leaf in roles["leaf"]:
        a = attrs[leaf]
        ups = switch_neighbours(topo, leaf)
        assert sorted(attrs[n]["index"] for n in ups) == list(range(spines))
        assert {attrs[n]["role"] for n in ups} == {"spine"}
        assert {attrs[n]["pod"] for n in ups} == {a["pod"]}
        assert len(topo.hosts_of(leaf)) == hosts
    for spine in roles["spine"]:
        a = attrs[spine]
        nbrs = switch_neighbours(topo, spine)
        up = [n for n in nbrs if attrs[n]["role"] == "core"]
        down = [n for n in nbrs if attrs[n]["role"] == "leaf"]
        assert len(up) + len(down) == len(nbrs)
        assert {attrs[n]["plane"] for n in up} == {a["index"]} == {a["plane"]}
        assert len(up) == per_plane
        assert sorted(attrs[n]["index"] for n in down) == list(range(leaves))
        assert {attrs[n]["pod"] for n in down} == {a["pod"]}
    for core in roles["core"]:  # one port per pod: Elmo's one-bit-per-pod core p-rule
        nbrs = switch_neighbours(topo, core)
        assert sorted(attrs[n]["pod"] for n in nbrs) == list(range(pods))
        assert {attrs[n]["index"] for n in nbrs} == {attrs[core]["plane"]}
        assert not topo.hosts_of(core)
    assert nx.is_connected(topo.switch_graph)


def test_ports_hosts_first_on_leaves_cores_first_on_spines() -> None:
    topo = load_topology("elmo:pods=2,leaves=3,hosts=4,spines=2,cores=4")
    attrs = topo.node_attrs
    leaf = next(s for s in topo.switches if attrs[s]["role"] == "leaf")
    ports = topo.ports(leaf)
    assert [topo.is_host(ports[p].neighbor) for p in sorted(ports)] == [True] * 4 + [False] * 2
    assert [attrs[ports[p].neighbor]["index"] for p in (5, 6)] == [0, 1]  # spine j on port 5 + j
    spine = next(s for s in topo.switches if attrs[s]["role"] == "spine")
    ports = topo.ports(spine)
    assert [attrs[ports[p].neighbor]["role"] for p in sorted(ports)] == ["core"] * 2 + ["leaf"] * 3
    # numerical-evals numbering: host i of leaf l of pod p is h(1 + (p * leaves + l) * hosts + i)
    for s in topo.switches:
        if attrs[s]["role"] == "leaf":
            first = 1 + (attrs[s]["pod"] * 3 + attrs[s]["index"]) * 4
            assert topo.hosts_of(s) == tuple(f"h{first + i}" for i in range(4))


@pytest.mark.parametrize(("spec", "match"), [
    ("elmo:pods=0", r"pods must be an integer >= 1; got 0"),
    ("elmo:leaves=0", r"leaves must be an integer >= 1; got 0"),
    ("elmo:hosts=-1", r"hosts must be an integer >= 0; got -1"),
    ("elmo:spines=0", r"spines must be an integer >= 1; got 0"),
    ("elmo:spines=4,cores=6", r"cores must be a multiple of spines \(4"),
    ("elmo:pod=3", r"unknown parameter 'pod' \(allowed: cores, hosts, leaves, pods, spines\)"),
])
def test_bad_parameters_name_the_field(spec: str, match: str) -> None:
    with pytest.raises(SpecError, match=match) as info:
        load_topology(spec)
    assert "\n" not in str(info.value)


def test_elmo_paper_size_builds_in_seconds() -> None:
    """Elmo §5.1: 12 pods x 48 leaves x 48 hosts = 27,648 hosts.

    Measured on the 2-core development machine: 1.4 s and about 60 MB above
    the interpreter's baseline (peak RSS 101 MB). CPU time, not wall time, so
    that other jobs on the machine do not fail it; the bounds leave room.
    """
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    topo = load_topology("elmo")
    elapsed = time.process_time() - start
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert len(topo.hosts) == 27_648
    assert Counter(a["role"] for a in topo.node_attrs.values()) == {
        "core": 4, "spine": 48, "leaf": 576}
    assert len(topo.links) == 27_648 + 576 * 4 + 48
    assert topo.max_switch_ports == 52  # a leaf: 48 hosts + 4 spines
    assert elapsed < 30, f"building the Elmo topology took {elapsed:.1f} s of CPU"
    assert grown_mb < 600, f"building the Elmo topology grew the RSS by {grown_mb:.0f} MB"
