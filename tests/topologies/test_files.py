"""``file:PATH`` loader: GML with repeated edges, GraphML and node-link JSON."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from topologies.files import read_graph_file
from topologies.model import Topology, TopologyError
from topologies.specs import load_topology

DATA = Path(__file__).parent / "data"


def without_name(topo: Topology) -> dict:
    summary = topo.summary()
    summary.pop("name")
    return summary


def test_gml_with_repeated_edges_and_self_loop_loads() -> None:
    topo = load_topology(f"file:{DATA / 'repeated_edges.gml'}")
    # ids 0..3 (listed out of order in the file), path 0-1-2-3 after merging
    # the three 0-1 edges and dropping the 2-2 self-loop
    assert [topo.node_attrs[s]["label"] for s in topo.switches] == [
        "Alpha", "Beta", "Gamma", "Alpha"]
    assert [topo.node_attrs[s]["name"] for s in topo.switches] == ["0", "1", "2", "3"]
    assert sorted(topo.switch_graph.edges) == [("s1", "s2"), ("s2", "s3"), ("s3", "s4")]
    assert len(topo.hosts) == 4
    assert all(len(topo.hosts_of(s)) == 1 for s in topo.switches)


def test_networkx_alone_refuses_the_fixture() -> None:
    """The fixture is a real regression case: plain read_gml rejects it."""
    with pytest.raises(nx.NetworkXError, match="duplicated"):
        nx.read_gml(DATA / "repeated_edges.gml", label="id")


def test_graphml_marked_hosts_attach_to_their_switch() -> None:
    topo = load_topology(f"file:{DATA / 'hosts.graphml'}")
    assert [topo.node_attrs[s]["name"] for s in topo.switches] == ["core", "left", "right"]
    assert [len(topo.hosts_of(s)) for s in topo.switches] == [0, 1, 2]
    assert len(topo.links) == 2 + 3  # the repeated core-left edge is merged


@pytest.mark.parametrize("spec", ["fattree:k=4", "jellyfish:switches=12,degree=3,hosts=2,seed=4",
                                  "fabric:pods=2,racks=2,hosts=1,planes=2,spines=1"])
def test_graphml_round_trip(spec: str, tmp_path: Path) -> None:
    topo = load_topology(spec)
    path = tmp_path / "net.graphml"
    nx.write_graphml(topo.graph, path)  # nodes carry kind = switch / host
    again = load_topology(f"file:{path}")
    assert again.name == f"file:{path}"
    assert without_name(again) == without_name(topo)


@pytest.mark.parametrize("links_key", ["edges", "links"])
def test_node_link_json_round_trip(links_key: str, tmp_path: Path) -> None:
    topo = load_topology("leafspine:leaves=4,spines=2,hosts=2")
    g = topo.graph
    data = {"directed": False, "multigraph": False, "graph": {},
            "nodes": [{"id": n, **g.nodes[n]} for n in g],
            links_key: [{"source": u, "target": v} for u, v in g.edges]}
    path = tmp_path / "net.json"
    path.write_text(json.dumps(data))
    assert without_name(load_topology(f"file:{path}")) == without_name(topo)


def test_json_and_gml_without_hosts_get_one_per_switch(tmp_path: Path) -> None:
    ring = nx.cycle_graph(5)
    path = tmp_path / "ring.gml"
    nx.write_gml(ring, path)
    topo = load_topology(f"file:{path}")
    assert len(topo.switches) == len(topo.hosts) == 5
    jpath = tmp_path / "ring.json"
    jpath.write_text(json.dumps({"nodes": [{"id": i} for i in range(5)],
                                 "edges": [{"source": u, "target": v} for u, v in ring.edges]}))
    assert without_name(load_topology(f"file:{jpath}")) == without_name(topo)


def test_directed_graph_becomes_undirected(tmp_path: Path) -> None:
    g = nx.DiGraph([("a", "b"), ("b", "a"), ("b", "c")])
    path = tmp_path / "d.graphml"
    nx.write_graphml(g, path)
    assert sorted(read_graph_file(path).edges) == [("a", "b"), ("b", "c")]
    gml = tmp_path / "d.gml"
    nx.write_gml(nx.DiGraph([(0, 1), (1, 0), (1, 2)]), gml)
    assert len(load_topology(f"file:{gml}").switch_graph.edges) == 2


def test_disconnected_file_is_an_error() -> None:
    with pytest.raises(TopologyError, match=r"disconnected \(2 components\)"):
        load_topology(f"file:{DATA / 'disconnected.gml'}")


def test_unknown_extension_names_path_and_allowed() -> None:
    path = DATA / "notes.txt"
    with pytest.raises(TopologyError, match=r"notes\.txt.*unknown extension '\.txt' "
                                            r"\(allowed: \.gml, \.graphml, \.json\)"):
        load_topology(f"file:{path}")


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match=r"nope\.gml' not found"):
        load_topology(f"file:{tmp_path / 'nope.gml'}")
    with pytest.raises(TopologyError, match=r"broken\.gml' is not valid GML"):
        load_topology(f"file:{DATA / 'broken.gml'}")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    with pytest.raises(TopologyError, match=r"bad\.json' is not valid JSON"):
        load_topology(f"file:{bad_json}")
    not_nodelink = tmp_path / "list.json"
    not_nodelink.write_text("[1, 2]")
    with pytest.raises(TopologyError, match="not a node-link document"):
        load_topology(f"file:{not_nodelink}")
    bad_xml = tmp_path / "bad.graphml"
    bad_xml.write_text("<graphml><graph>")
    with pytest.raises(TopologyError, match=r"bad\.graphml' is not valid GRAPHML"):
        load_topology(f"file:{bad_xml}")


def test_host_with_two_links_is_an_error(tmp_path: Path) -> None:
    g = nx.Graph([("s", "t"), ("h", "s"), ("h", "t")])
    g.nodes["h"]["type"] = "Host"
    path = tmp_path / "bad_host.graphml"
    nx.write_graphml(g, path)
    with pytest.raises(TopologyError, match="host node 'h' must have exactly one link"):
        load_topology(f"file:{path}")
