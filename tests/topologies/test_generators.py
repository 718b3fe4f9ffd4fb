"""Synthetic generators: Jellyfish, fat-tree, Facebook fabric, leaf-spine."""

from __future__ import annotations

import time
from collections import Counter

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from topologies.generators import jellyfish_edges
from topologies.model import Topology
from topologies.specs import load_topology


def switch_degree(topo: Topology, switch: str) -> int:
    """Switch-to-switch ports of ``switch``."""
    return sum(not topo.is_host(p.neighbor) for p in topo.ports(switch).values())


def link_set(topo: Topology) -> set[tuple[str, str]]:
    return {(lk.a, lk.b) for lk in topo.links}


# -- Jellyfish -----------------------------------------------------------------


@st.composite
def jellyfish_specs(draw: st.DrawFn) -> tuple[int, int, int, int]:
    switches = draw(st.integers(3, 40))
    degree = draw(st.integers(2, min(switches - 1, 8)))
    hosts = draw(st.integers(0, 2))
    seed = draw(st.integers(0, 2**32))
    return switches, degree, hosts, seed


@given(jellyfish_specs())
def test_jellyfish_is_regular_connected_and_has_hosts(case: tuple[int, int, int, int]) -> None:
    switches, degree, hosts, seed = case
    topo = load_topology(f"jellyfish:switches={switches},degree={degree},hosts={hosts},seed={seed}")
    assert len(topo.switches) == switches
    assert len(topo.hosts) == switches * hosts
    degrees = Counter(switch_degree(topo, s) for s in topo.switches)
    if switches * degree % 2 == 0:
        assert degrees == {degree: switches}
    else:  # exactly one port stays free
        assert degrees == {degree: switches - 1, degree - 1: 1}
    assert all(len(topo.hosts_of(s)) == hosts for s in topo.switches)
    assert nx.is_connected(topo.switch_graph)


@given(st.integers(2, 30), st.data())
def test_jellyfish_matching_never_overfills_a_port(switches: int, data: st.DataObject) -> None:
    degree = data.draw(st.integers(1, switches - 1))
    rng = np.random.Generator(np.random.PCG64(data.draw(st.integers(0, 2**32))))
    edges = jellyfish_edges(switches, degree, rng)
    if edges is None:  # a stuck attempt is allowed; the builder retries
        return
    assert len(set(edges)) == len(edges)
    assert all(u < v for u, v in edges)
    deg = Counter(x for e in edges for x in e)
    assert max(deg.values()) <= degree
    assert sum(degree - deg[s] for s in range(switches)) == switches * degree % 2


def test_jellyfish_is_deterministic_per_seed() -> None:
    a = load_topology("jellyfish:switches=60,degree=4,seed=7")
    b = load_topology("jellyfish:switches=60, degree=4, seed=7 ")  # another cache key
    assert a is not b
    assert link_set(a) == link_set(b)
    c = load_topology("jellyfish:switches=60,degree=4,seed=8")
    assert link_set(a) != link_set(c)


def test_jellyfish_default_seed_and_hosts() -> None:
    topo = load_topology("jellyfish:switches=20,degree=3")
    assert len(topo.hosts) == 20
    explicit = load_topology("jellyfish:switches=20,degree=3,seed=1,hosts=1")
    assert link_set(topo) == link_set(explicit)


def test_jellyfish_seed000_size_builds_quickly() -> None:
    """Seed 000 §3.5.1: 255 switches with one host each (degree 4, the digest default)."""
    start = time.perf_counter()
    topo = load_topology("jellyfish:switches=255,degree=4,hosts=1,seed=1")
    assert time.perf_counter() - start < 2.0
    assert len(topo.switches) == len(topo.hosts) == 255
    assert len(topo.links) == 255 * 4 // 2 + 255
    assert topo.max_switch_ports == 5


def test_jellyfish_odd_port_total() -> None:
    topo = load_topology("jellyfish:switches=255,degree=3,seed=3")
    degrees = Counter(switch_degree(topo, s) for s in topo.switches)
    assert degrees == {3: 254, 2: 1}


def test_jellyfish_complete_graph_and_two_switches() -> None:
    k5 = load_topology("jellyfish:switches=5,degree=4,seed=11")
    assert len(k5.switch_graph.edges) == 10
    pair = load_topology("jellyfish:switches=2,degree=1,hosts=3")
    assert len(pair.links) == 1 + 6


# -- fat-tree ------------------------------------------------------------------


def test_fattree_k4_counts_roles_and_order() -> None:
    topo = load_topology("fattree:k=4")
    assert len(topo.switches) == 20
    assert len(topo.hosts) == 16
    roles = [topo.node_attrs[s]["role"] for s in topo.switches]
    assert roles == ["core"] * 4 + (["aggregation"] * 2 + ["edge"] * 2) * 4
    assert Counter(roles) == {"core": 4, "aggregation": 8, "edge": 8}
    assert "pod" not in topo.node_attrs["s1"]
    assert [topo.node_attrs[s]["pod"] for s in topo.switches[4:]] == [p for p in range(4)
                                                                     for _ in range(4)]
    for s in topo.switches:
        role = topo.node_attrs[s]["role"]
        assert topo.degree(s) == 4  # every switch has k ports
        assert len(topo.hosts_of(s)) == (2 if role == "edge" else 0)
    # 16 host links + 16 edge-aggregation + 16 aggregation-core
    assert len(topo.links) == 48
    assert nx.diameter(topo.switch_graph) == 4


@pytest.mark.parametrize("k", [2, 6, 8])
def test_fattree_sizes(k: int) -> None:
    topo = load_topology(f"fattree:k={k}")
    assert len(topo.switches) == 5 * k * k // 4
    assert len(topo.hosts) == k**3 // 4
    assert all(topo.degree(s) == k for s in topo.switches)


# -- Facebook fabric -----------------------------------------------------------


def test_fabric_defaults_match_seed000_section_5_3_1() -> None:
    """Digest §2.1: 8 pods x 4 racks x 2 hosts -> 80 switches, 64 hosts, 320 links."""
    topo = load_topology("fabric:pods=8,racks=4,hosts=2,planes=4,spines=4")
    assert topo is not load_topology("fabric")  # same network, other spec string
    assert len(topo.switches) == 80
    assert len(topo.hosts) == 64
    assert len(topo.links) == 320
    roles = Counter(topo.node_attrs[s]["role"] for s in topo.switches)
    assert roles == {"spine": 16, "fabric": 32, "tor": 32}


def test_fabric_wiring_and_order() -> None:
    topo = load_topology("fabric")
    attrs = topo.node_attrs
    spines = topo.switches[:16]
    assert [(attrs[s]["plane"], attrs[s]["index"]) for s in spines] == [
        (p, i) for p in range(4) for i in range(4)]
    pod0 = topo.switches[16:24]
    assert [attrs[s]["role"] for s in pod0] == ["fabric"] * 4 + ["tor"] * 4
    assert [attrs[s]["rack"] for s in pod0[4:]] == [0, 1, 2, 3]
    for s in topo.switches:
        a = attrs[s]
        nbrs = [p.neighbor for p in topo.ports(s).values()]
        if a["role"] == "spine":  # one fabric switch of its plane in every pod
            assert sorted((attrs[n]["pod"], attrs[n]["plane"]) for n in nbrs) == [
                (pod, a["plane"]) for pod in range(8)]
        elif a["role"] == "fabric":
            ups = [n for n in nbrs if attrs[n]["role"] == "spine"]
            downs = [n for n in nbrs if attrs[n]["role"] == "tor"]
            assert {attrs[n]["plane"] for n in ups} == {a["plane"]} and len(ups) == 4
            assert {attrs[n]["pod"] for n in downs} == {a["pod"]} and len(downs) == 4
        else:
            assert len(topo.hosts_of(s)) == 2
            fabrics = [n for n in nbrs if not topo.is_host(n)]
            assert sorted(attrs[n]["plane"] for n in fabrics) == [0, 1, 2, 3]
            assert {attrs[n]["pod"] for n in fabrics} == {a["pod"]}


def test_fabric_small_variant() -> None:
    topo = load_topology("fabric:pods=2,racks=3,hosts=1,planes=2,spines=3")
    assert len(topo.switches) == 2 * 3 + 2 * (2 + 3)
    assert len(topo.hosts) == 6
    assert len(topo.links) == 6 + 2 * 3 * 2 + 2 * 2 * 3


# -- leaf-spine ----------------------------------------------------------------


def test_leafspine_counts() -> None:
    topo = load_topology("leafspine:leaves=8,spines=4,hosts=4")
    assert len(topo.switches) == 12
    assert len(topo.hosts) == 32
    assert len(topo.links) == 32 + 32
    assert [topo.node_attrs[s]["role"] for s in topo.switches] == ["spine"] * 4 + ["leaf"] * 8
    assert all(topo.degree(s) == 8 for s in topo.switches)
    assert nx.diameter(topo.switch_graph) == 2
    assert len(load_topology("leafspine:leaves=3,spines=1,hosts=0").hosts) == 0
