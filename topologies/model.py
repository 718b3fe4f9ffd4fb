"""The immutable network model every other layer reads.

A :class:`Topology` holds switches, hosts and links. Names are normalised by
:func:`build_topology`: switches are ``s1..sN`` and hosts ``h1..hM`` in the
order the caller gives them. Ports are numbered from 1 on every node,
deterministically, by sorting the node's neighbours by name (natural order:
``h2 < h10 < s1``). Every undirected link has one stable ``edge_id`` (from 1,
in sorted order of its end points). Every host is attached to exactly one
switch.

References
----------
Seed 000 §3.5.1 (one host per switch, port bit i <-> port i, ports from 1) and
§5.3.1 (datacenter fabric); shared/DESIGN.md "Layout".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import networkx as nx

from topologies.registry import SpecError

_NAME = re.compile(r"^([a-z]+)(\d+)$")


class TopologyError(SpecError):
    """Bad topology input: the message names the problem in one line."""


def node_sort_key(name: str) -> tuple[str, int, str]:
    """Natural sort key: ``h2 < h10 < s1 < s2 < s10``."""
    m = _NAME.match(name)
    if m:
        return (m.group(1), int(m.group(2)), "")
    return (name, -1, name)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkDefaults:
    """Default link properties applied where an input gives none.

    Parameters
    ----------
    bandwidth_bps : float
        Link rate in bit/s (default 1 Gbit/s).
    delay_s : float
        One-way propagation delay in seconds (default 0: the thesis ignores
        cable delay, seed 000 §3.5.4).
    """

    bandwidth_bps: float = 1e9
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.bandwidth_bps > 0:
            raise TopologyError(f"bandwidth_bps must be > 0, got {self.bandwidth_bps!r}")
        if not self.delay_s >= 0:
            raise TopologyError(f"delay_s must be >= 0, got {self.delay_s!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One undirected link between ``a`` (port ``a_port``) and ``b`` (port ``b_port``)."""

    a: str
    a_port: int
    b: str
    b_port: int
    edge_id: int
    bandwidth_bps: float
    delay_s: float


@dataclass(frozen=True, slots=True)
class PortInfo:
    """What is behind one port of a node."""

    port: int
    neighbor: str
    neighbor_port: int
    link: Link


@dataclass(frozen=True, kw_only=True, eq=False)
class Topology:
    """Switches, hosts and links, with derived lookup tables.

    Build instances with :func:`build_topology`; the constructor only checks
    consistency. Equality and hashing are by identity (loaders cache one
    instance per spec), so a topology can key caches of derived data.
    """

    name: str
    switches: tuple[str, ...]
    hosts: tuple[str, ...]
    links: tuple[Link, ...]
    node_attrs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ports: dict[str, dict[int, PortInfo]] = {n: {} for n in (*self.switches, *self.hosts)}
        for link in self.links:
            for node, port, other, oport in (
                (link.a, link.a_port, link.b, link.b_port),
                (link.b, link.b_port, link.a, link.a_port),
            ):
                if node not in ports:
                    raise TopologyError(f"link {link.edge_id} names unknown node {node!r}")
                if port in ports[node]:
                    raise TopologyError(f"port {port} of {node} is used twice")
                ports[node][port] = PortInfo(port, other, oport, link)
        switch_set = set(self.switches)
        host_switch = {}
        for h in self.hosts:
            if len(ports[h]) != 1:
                raise TopologyError(f"host {h} must have exactly one link, has {len(ports[h])}")
            (info,) = ports[h].values()
            if info.neighbor not in switch_set:
                raise TopologyError(f"host {h} is attached to {info.neighbor}, not to a switch")
            host_switch[h] = info.neighbor
        object.__setattr__(self, "_ports", MappingProxyType(
            {n: MappingProxyType(dict(sorted(p.items()))) for n, p in ports.items()}))
        object.__setattr__(self, "_host_switch", MappingProxyType(host_switch))
        object.__setattr__(self, "node_attrs", MappingProxyType(
            {k: MappingProxyType(dict(v)) for k, v in self.node_attrs.items()}))

    # -- lookups ---------------------------------------------------------
    def ports(self, node: str) -> Mapping[int, PortInfo]:
        """Ports of ``node`` (switch or host), keyed by port number from 1."""
        return self._ports[node]  # type: ignore[attr-defined,no-any-return]

    def port_to(self, node: str, neighbor: str) -> int:
        """The port of ``node`` that leads to ``neighbor``."""
        try:
            return self._port_to[(node, neighbor)]
        except KeyError:
            raise TopologyError(f"{node} and {neighbor} are not adjacent") from None

    def host_switch(self, host: str) -> str:
        """The switch a host is attached to."""
        try:
            return self._host_switch[host]  # type: ignore[attr-defined,no-any-return]
        except KeyError:
            raise TopologyError(f"unknown host {host!r}") from None

    def hosts_of(self, switch: str) -> tuple[str, ...]:
        """Hosts attached to ``switch``, in port order."""
        return self._hosts_of.get(switch, ())

    def is_host(self, node: str) -> bool:
        return node in self._host_switch  # type: ignore[attr-defined]

    def switch_id(self, switch: str) -> int:
        """Numeric switch id used in labels: the 0-based index in ``switches``."""
        return self._switch_index[switch]

    def host_id(self, host: str) -> int:
        """Numeric host id: the 0-based index in ``hosts``."""
        return self._host_index[host]

    def degree(self, node: str) -> int:
        return len(self.ports(node))

    @property
    def max_switch_ports(self) -> int:
        """The largest port count of any switch (hosts included)."""
        return max((self.degree(s) for s in self.switches), default=0)

    @cached_property
    def _port_to(self) -> dict[tuple[str, str], int]:
        return {(n, p.neighbor): p.port for n, ps in self._ports.items()  # type: ignore[attr-defined]
                for p in ps.values()}

    @cached_property
    def _hosts_of(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for h, s in self._host_switch.items():  # type: ignore[attr-defined]
            out.setdefault(s, []).append(h)
        return {s: tuple(sorted(hs, key=lambda h: self.port_to(s, h))) for s, hs in out.items()}

    @cached_property
    def _switch_index(self) -> dict[str, int]:
        return {s: i for i, s in enumerate(self.switches)}

    @cached_property
    def _host_index(self) -> dict[str, int]:
        return {h: i for i, h in enumerate(self.hosts)}

    @cached_property
    def graph(self) -> nx.Graph:
        """The whole network (switches and hosts) as an undirected graph.

        Nodes carry ``kind`` ("switch"/"host"); edges carry ``edge_id``.
        Treat it as read-only.
        """
        g = nx.Graph()
        g.add_nodes_from(self.switches, kind="switch")
        g.add_nodes_from(self.hosts, kind="host")
        for link in self.links:
            g.add_edge(link.a, link.b, edge_id=link.edge_id)
        return g

    @cached_property
    def switch_graph(self) -> nx.Graph:
        """The switch-to-switch graph (hosts removed). Treat it as read-only."""
        return self.graph.subgraph(self.switches).copy()

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (the ``stackcast topology show`` contract)."""
        return {
            "name": self.name,
            "switches": list(self.switches),
            "hosts": list(self.hosts),
            "links": [
                {"a": lk.a, "a_port": lk.a_port, "b": lk.b, "b_port": lk.b_port,
                 "edge_id": lk.edge_id}
                for lk in self.links
            ],
        }


def build_topology(
    name: str,
    switch_edges: Iterable[tuple[Any, Any]],
    switch_order: Iterable[Any],
    hosts_per_switch: Mapping[Any, int] | int = 1,
    defaults: LinkDefaults = LinkDefaults(),
    node_attrs: Mapping[Any, Mapping[str, Any]] | None = None,
) -> Topology:
    """Build a :class:`Topology` from any switch labels.

    Parameters
    ----------
    name : str
        Name of the topology (usually its spec string).
    switch_edges : iterable of (u, v)
        Switch-to-switch links in the caller's labels. Duplicates and
        self-loops are rejected (loaders collapse them first).
    switch_order : iterable
        All switch labels in the order that assigns ``s1..sN``.
    hosts_per_switch : int or mapping
        Hosts attached to each switch; hosts are named ``h1..hM`` following
        the switch order.
    defaults : LinkDefaults
        Bandwidth and delay of every link.
    node_attrs : mapping, optional
        Extra attributes per switch label (role, pod, original name, ...).

    Raises
    ------
    TopologyError
        On a self-loop, a repeated link, an unknown switch or a disconnected
        network.
    """
    order = list(switch_order)
    rename = {label: f"s{i + 1}" for i, label in enumerate(order)}
    if len(rename) != len(order):
        raise TopologyError("switch_order repeats a switch")
    if not order:
        raise TopologyError("a topology needs at least one switch")
    pairs: set[tuple[str, str]] = set()
    for u, v in switch_edges:
        if u not in rename or v not in rename:
            raise TopologyError(f"link ({u!r}, {v!r}) names a switch not in switch_order")
        a, b = sorted((rename[u], rename[v]), key=node_sort_key)
        if a == b:
            raise TopologyError(f"self-loop on {a}")
        if (a, b) in pairs:
            raise TopologyError(f"link {a}-{b} appears twice")
        pairs.add((a, b))
    hosts: list[str] = []
    for label in order:
        count = (hosts_per_switch if isinstance(hosts_per_switch, int)
                 else hosts_per_switch.get(label, 0))
        if count < 0:
            raise TopologyError(f"hosts_per_switch must be >= 0, got {count}")
        for _ in range(count):
            h = f"h{len(hosts) + 1}"
            hosts.append(h)
            pairs.add((h, rename[label]))
    neighbors: dict[str, list[str]] = {}
    for a, b in pairs:
        neighbors.setdefault(a, []).append(b)
        neighbors.setdefault(b, []).append(a)
    port_of: dict[tuple[str, str], int] = {}
    for node, nbrs in neighbors.items():
        for i, nb in enumerate(sorted(nbrs, key=node_sort_key), start=1):
            port_of[(node, nb)] = i
    links = []
    ordered = sorted(pairs, key=lambda p: (node_sort_key(p[0]), node_sort_key(p[1])))
    for eid, (a, b) in enumerate(ordered, start=1):
        links.append(Link(a=a, a_port=port_of[(a, b)], b=b, b_port=port_of[(b, a)], edge_id=eid,
                          bandwidth_bps=defaults.bandwidth_bps, delay_s=defaults.delay_s))
    switches = tuple(rename[label] for label in order)
    attrs = {rename[k]: dict(v) for k, v in (node_attrs or {}).items() if k in rename}
    topo = Topology(name=name, switches=switches, hosts=tuple(hosts), links=tuple(links),
                    node_attrs=attrs)
    if len(switches) > 1 and not nx.is_connected(topo.switch_graph):
        n = nx.number_connected_components(topo.switch_graph)
        raise TopologyError(f"topology {name!r} is disconnected ({n} components)")
    return topo
