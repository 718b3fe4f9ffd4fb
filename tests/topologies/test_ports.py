"""Port numbering and edge ids of every generator and loader (model invariants)."""

from __future__ import annotations

from pathlib import Path

import pytest

from topologies.model import Topology, node_sort_key
from topologies.specs import load_topology

DATA = Path(__file__).parent / "data"

SPECS = [
    "jellyfish:switches=30,degree=4,hosts=2,seed=5",
    "jellyfish:switches=15,degree=3,seed=2",
    "fattree:k=4",
    "fabric:pods=3,racks=2,hosts=2,planes=2,spines=2",
    "leafspine:leaves=5,spines=3,hosts=2",
    "zoo:Litnet",
    "zoo:VtlWavenet2008",
    f"file:{DATA / 'repeated_edges.gml'}",
    f"file:{DATA / 'hosts.graphml'}",
]


@pytest.fixture(params=SPECS)
def topo(request: pytest.FixtureRequest) -> Topology:
    return load_topology(request.param)


def test_ports_are_1_to_degree_sorted_by_neighbour_name(topo: Topology) -> None:
    for node in (*topo.switches, *topo.hosts):
        ports = topo.ports(node)
        assert list(ports) == list(range(1, len(ports) + 1))
        neighbours = [p.neighbor for p in ports.values()]
        assert neighbours == sorted(neighbours, key=node_sort_key)
        assert len(set(neighbours)) == len(neighbours)


def test_edge_ids_are_1_to_e_and_links_match_ports(topo: Topology) -> None:
    assert sorted(lk.edge_id for lk in topo.links) == list(range(1, len(topo.links) + 1))
    for lk in topo.links:
        assert topo.ports(lk.a)[lk.a_port].neighbor == lk.b
        assert topo.ports(lk.b)[lk.b_port].neighbor == lk.a
        assert topo.ports(lk.a)[lk.a_port].neighbor_port == lk.b_port
        assert topo.ports(lk.a)[lk.a_port].link is lk
        assert topo.port_to(lk.b, lk.a) == lk.b_port
    assert sum(topo.degree(n) for n in (*topo.switches, *topo.hosts)) == 2 * len(topo.links)


def test_names_are_normalised(topo: Topology) -> None:
    assert topo.switches == tuple(f"s{i}" for i in range(1, len(topo.switches) + 1))
    assert topo.hosts == tuple(f"h{i}" for i in range(1, len(topo.hosts) + 1))
    for h in topo.hosts:
        assert topo.degree(h) == 1
        assert topo.host_switch(h) in topo.switches


def test_hosts_follow_switch_order(topo: Topology) -> None:
    owners = [topo.switch_id(topo.host_switch(h)) for h in topo.hosts]
    assert owners == sorted(owners)
