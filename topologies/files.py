"""Topologies from graph files: ``file:PATH`` (GraphML, GML, node-link JSON).

The file's graph is preprocessed like the Topology Zoo networks: directed
edges become undirected, parallel edges are merged and self-loops dropped.
A disconnected graph is an error (the simulator needs one network).

Hosts: nodes whose ``kind`` or ``type`` attribute is ``"host"`` become hosts
attached to their single neighbouring switch. If the file marks no host,
every switch gets one host (seed 000 §3.5.1 and §6.5.1). Switches keep the
file's node order (GML: ascending node id); ``node_attrs`` keep the original
node id as ``name`` and the ``label`` where the file has one.

The GML reader tolerates repeated edges, which networkx's ``read_gml``
refuses, by parsing the file as a multigraph (``multigraph 1``) and
collapsing it afterwards; :mod:`topologies.zoo` reuses it.

References
----------
Seed 000 §3.5.1 (one host per switch), §6.5.1 and Table 6.1 (Topology Zoo
preprocessing); shared/data/topology-zoo/README.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx

from topologies.model import LinkDefaults, Topology, TopologyError, build_topology
from topologies.registry import check
from topologies.specs import register_topology

#: File extensions ``file:PATH`` understands.
EXTENSIONS = (".gml", ".graphml", ".json")

_GRAPH_OPEN = re.compile(r"\bgraph\s*\[")
_HAS_MULTIGRAPH = re.compile(r"^\s*multigraph\s", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileParams:
    """Parameters of ``file:PATH``.

    Parameters
    ----------
    path : str
        Path of a ``.gml``, ``.graphml`` or ``.json`` (networkx node-link)
        file, absolute or relative to the working directory.
    """

    path: str

    def __post_init__(self) -> None:
        check(bool(self.path.strip()), "path must name a file (file:PATH)")


def parse_gml_text(text: str) -> nx.MultiGraph:
    """Parse GML text as an undirected multigraph keyed by GML node id.

    A ``multigraph 1`` line is inserted after ``graph [`` (unless present),
    so files that repeat an edge parse; directed graphs become undirected.
    """
    if not _HAS_MULTIGRAPH.search(text):
        text = _GRAPH_OPEN.sub("graph [\n  multigraph 1", text, count=1)
    g = nx.parse_gml(text, label="id")
    return nx.MultiGraph(g.to_undirected()) if g.is_directed() else g


def simple_graph(g: nx.Graph, order: list[Any] | None = None) -> nx.Graph:
    """Undirected simple graph of ``g``: parallel edges merged, self-loops dropped.

    Node attributes are kept; nodes follow ``order`` (default: ``g``'s order).
    """
    out = nx.Graph()
    out.add_nodes_from((n, g.nodes[n]) for n in (g if order is None else order))
    out.add_edges_from((u, v) for u, v in g.edges() if u != v)
    return out


def _read_node_link(text: str) -> nx.MultiGraph:
    """Parse networkx node-link JSON (``edges`` or the older ``links`` key).

    Read by hand so the result does not depend on the networkx version's
    ``node_link_graph`` keyword defaults.
    """
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise ValueError("not a node-link document (no 'nodes' list)")
    edges = data.get("edges", data.get("links")) or []
    if not isinstance(edges, list):
        raise ValueError("'edges' (or 'links') must be a list")
    g = nx.MultiGraph()
    for node in data["nodes"]:
        attrs = {k: v for k, v in node.items() if k != "id"}
        g.add_node(_hashable(node["id"]), **attrs)
    for edge in edges:
        u, v = _hashable(edge["source"]), _hashable(edge["target"])
        if u not in g or v not in g:
            raise ValueError(f"edge ({u!r}, {v!r}) names an unknown node")
        g.add_edge(u, v)
    return g


def _hashable(value: Any) -> Hashable:
    return tuple(value) if isinstance(value, list) else value


def read_graph_file(path: str | Path) -> nx.Graph:
    """Read a graph file into a simple undirected graph (see module docstring).

    Raises
    ------
    TopologyError
        If the file is missing, unreadable, malformed or has an unknown
        extension; the one-line message names the path.
    """
    p = Path(path).expanduser()
    ext = p.suffix.lower()
    if ext not in EXTENSIONS:
        raise TopologyError(f"topology file {str(p)!r}: unknown extension {ext or '(none)'!r} "
                            f"(allowed: {', '.join(EXTENSIONS)})")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TopologyError(f"topology file {str(p)!r} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopologyError(f"topology file {str(p)!r} cannot be read: {_one_line(exc)}") from None
    try:
        if ext == ".gml":
            g = parse_gml_text(text)
            return simple_graph(g, order=sorted(g, key=node_id_key))
        if ext == ".graphml":
            return simple_graph(nx.parse_graphml(text))
        return simple_graph(_read_node_link(text))
    except (nx.NetworkXError, ValueError, KeyError, TypeError, SyntaxError) as exc:
        raise TopologyError(f"topology file {str(p)!r} is not valid {ext[1:].upper()}: "
                            f"{_one_line(exc)}") from None


def node_id_key(node: Any) -> tuple[int, Any, str]:
    """Sort key for node ids: numbers numerically first, then the rest by text."""
    if isinstance(node, int | float):
        return (0, node, "")
    return (1, 0, str(node))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_host(attrs: Mapping[str, Any]) -> bool:
    return any(str(attrs.get(key, "")).lower() == "host" for key in ("kind", "type"))


def topology_from_graph(g: nx.Graph, spec: str, defaults: LinkDefaults) -> Topology:
    """Turn a simple graph (file node order) into a :class:`Topology`.

    Nodes marked as hosts (``kind``/``type`` == ``"host"``) attach to their
    single switch neighbour; without marked hosts every switch gets one.
    """
    host_nodes = [n for n, a in g.nodes(data=True) if _is_host(a)]
    switches = [n for n in g if n not in set(host_nodes)]
    if not switches:
        raise TopologyError(f"{spec}: the graph has no switch node")
    hosts_per_switch: dict[Any, int] | int = 1
    if host_nodes:
        hosts_per_switch = {}
        host_set = set(host_nodes)
        for h in host_nodes:
            nbrs = list(g[h])
            if len(nbrs) != 1 or nbrs[0] in host_set:
                raise TopologyError(f"{spec}: host node {h!r} must have exactly one link, "
                                    f"to a switch; it has neighbours {nbrs!r}")
            hosts_per_switch[nbrs[0]] = hosts_per_switch.get(nbrs[0], 0) + 1
        g = g.subgraph(switches)
    attrs = {}
    for n in switches:
        a: dict[str, Any] = {"name": str(n)}
        if "label" in g.nodes[n]:
            a["label"] = g.nodes[n]["label"]
        attrs[n] = a
    return build_topology(name=spec, switch_edges=g.edges(), switch_order=switches,
                          hosts_per_switch=hosts_per_switch, defaults=defaults, node_attrs=attrs)


@register_topology("file", FileParams, "GraphML, GML or node-link JSON file (file:PATH)")
def build_file(params: FileParams, defaults: LinkDefaults, spec: str) -> Topology:
    """Load ``file:PATH`` (see the module docstring for the rules)."""
    return topology_from_graph(read_graph_file(params.path), spec, defaults)
