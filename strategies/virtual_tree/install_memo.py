"""What virtual-tree installs share across the cells of a runner partition (seed 000 §5.4).

An install (:func:`strategies.virtual_tree.installation.install_trees`) walks
a strategy's candidates in order and keeps those that every switch has room
for. Two things it computes depend on less than the install itself:

- the candidates depend on the strategy's parameters except ``max_rules``
  (the rule budget is read by installation alone, never by a strategy's
  ``candidates``), on the topology and, for a strategy that reads the
  workload, on the workload seed and the controller's view. A
  :class:`CandidateTape` draws them once and replays them to every install
  with another budget (ch6-networks sweeps 8 budgets per network, strategy
  and seed);
- a candidate's VT ports per switch, its switches as one bitmask (what
  installation checks capacity on), the port masks of its ``check_tree``
  entries and whether its links are connected depend on its links and the
  topology only: :class:`TreePorts` remembers them per topology.

Both live in the runner's :class:`~sim.dataplanes.caches.Caches`
(``vt_candidates``, ``vt_ports``); an install through them equals one
without (``tests/strategies/test_vt_install_memo.py``).

References
----------
Seed 000 §5.2.1 (a VT's ``check_tree`` bitmask per switch), §5.4 (Table 5.1
``max_rules``); DESIGN.md "Layout and layers" (caches live in an explicit
per-cell object).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from sim.dataplanes.virtual_tree.codec import LabelFormat
from strategies.virtual_tree.encoder import encoder_graph
from topologies.model import Topology

T = TypeVar("T")


def link_ends(topology: Topology, edge_id: int) -> tuple[str, str]:
    """The two nodes of link ``edge_id``."""
    link = topology.links[edge_id - 1]
    return link.a, link.b


def tree_ports(topology: Topology, edges: Iterable[int]) -> dict[str, list[int]]:
    """Switch -> its ports on the VT (what its ``check_tree`` bitmask holds)."""
    ends = encoder_graph(topology).edge_ports
    out: dict[str, list[int]] = {}
    for e in edges:
        for node, port in ends[e]:
            got = out.get(node)
            if got is None:
                out[node] = [port]
            else:
                got.append(port)
    for ports in out.values():
        ports.sort()
    return out


def is_connected(topology: Topology, edges: Iterable[int]) -> bool:
    """Whether the links form one connected subgraph."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    nodes: set[str] = set()
    for e in edges:
        a, b = link_ends(topology, e)
        nodes.update((a, b))
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    return len({find(n) for n in nodes}) <= 1


def link_index(topology: Topology) -> tuple[tuple[int, int], ...]:
    """Per link, in ``topology.links`` order, its two nodes as numbers (every node of
    the topology numbered): :func:`link_ends` as integers."""
    number: dict[str, int] = {}
    return tuple((number.setdefault(link.a, len(number)), number.setdefault(link.b, len(number)))
                 for link in topology.links)


def links_connected(ends: tuple[tuple[int, int], ...], edges: Iterable[int]) -> bool:
    """:func:`is_connected` on :func:`link_index`'s numbers (link ``e`` is
    ``ends[e - 1]``, as :func:`link_ends` reads it): one component when every
    union but ``nodes - 1`` found its ends already joined (path halving)."""
    parent: dict[int, int] = {}
    joins = 0
    for e in edges:
        a, b = ends[e - 1]
        if a not in parent:
            parent[a] = a
        if b not in parent:
            parent[b] = b
        while (up := parent[a]) != a:
            parent[a] = top = parent[up]
            a = top
        while (up := parent[b]) != b:
            parent[b] = top = parent[up]
            b = top
        if a != b:
            parent[a] = b
            joins += 1
    return len(parent) - joins <= 1


class TreePorts:
    """:func:`tree_ports`, switch bitmasks, port masks and :func:`is_connected` of link
    sets of one topology, remembered.

    The port lists returned are shared: callers must not change them.
    Everything is forgotten at once past :attr:`LIMIT` link sets.

    Parameters
    ----------
    topology : Topology
    """

    #: link sets remembered before everything is forgotten at once
    LIMIT = 1 << 15

    __slots__ = ("topology", "_ports", "_connected", "_masks", "_edge_bits", "bits",
                 "_port_masks", "_link_index")

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self._ports: dict[frozenset[int], dict[str, list[int]]] = {}
        self._connected: dict[frozenset[int], bool] = {}
        self._masks: dict[frozenset[int], int] = {}
        self._port_masks: dict[tuple[frozenset[int], int], list[tuple[str, int]]] = {}
        g = encoder_graph(topology)
        #: switch -> its bit in :meth:`switch_mask` (its encoder-graph index)
        self.bits = {s: 1 << i for s, i in g.index.items()}
        #: edge id -> the bits of its switch ends (as ``tree_ports`` finds them)
        self._edge_bits = tuple(sum(self.bits[node] for node, _ in ends)
                                for ends in g.edge_ports)
        self._link_index = link_index(topology)

    def ports(self, edges: frozenset[int]) -> dict[str, list[int]]:
        """``tree_ports(topology, sorted(edges))``."""
        got = self._ports.get(edges)
        if got is None:
            if len(self._ports) >= self.LIMIT:
                self._ports.clear()
            got = self._ports[edges] = tree_ports(self.topology, sorted(edges))
        return got

    def switch_mask(self, edges: frozenset[int]) -> int:
        """The switches of ``ports(edges)`` as one bitmask (:attr:`bits`)."""
        got = self._masks.get(edges)
        if got is None:
            if len(self._masks) >= self.LIMIT:
                self._masks.clear()
            bits = self._edge_bits
            got = 0
            for e in edges:
                got |= bits[e]
            self._masks[edges] = got
        return got

    def port_masks(self, edges: frozenset[int], fmt: LabelFormat) -> list[tuple[str, int]]:
        """``(switch, fmt.port_mask(ports))`` of ``ports(edges)``, in its order."""
        key = (edges, fmt.bitmask_bits)
        got = self._port_masks.get(key)
        if got is None:
            if len(self._port_masks) >= self.LIMIT:
                self._port_masks.clear()
            got = self._port_masks[key] = [(s, fmt.port_mask(on))
                                        for s, on in self.ports(edges).items()]
        return got

    def connected(self, edges: frozenset[int]) -> bool:
        """``is_connected(topology, edges)`` (by :func:`links_connected`)."""
        got = self._connected.get(edges)
        if got is None:
            if len(self._connected) >= self.LIMIT:
                self._connected.clear()
            got = self._connected[edges] = links_connected(self._link_index, edges)
        return got


class CandidateTape(Generic[T]):
    """A strategy's candidates, drawn from ``source`` once, as far as an install asked
    for them, and replayed to every later iteration (each from the start).

    Iterations may interleave; an error of ``source`` is raised again to every
    iteration that reaches it.

    Parameters
    ----------
    source : iterable
        The candidates in priority order (may be infinite).
    """

    __slots__ = ("_source", "_items", "_error")

    def __init__(self, source: Iterable[T]) -> None:
        self._source: Iterator[T] | None = iter(source)
        self._items: list[T] = []
        self._error: BaseException | None = None

    def __iter__(self) -> Iterator[T]:
        items = self._items
        i = 0
        while True:
            if i == len(items):
                if self._error is not None:
                    raise self._error
                source = self._source
                if source is None:
                    return
                try:
                    items.append(next(source))
                except StopIteration:
                    self._source = None
                    return
                except BaseException as err:
                    self._source, self._error = None, err
                    raise
            yield items[i]
            i += 1

    def __len__(self) -> int:
        """Candidates drawn so far."""
        return len(self._items)


__all__ = ["CandidateTape", "TreePorts", "is_connected", "link_ends", "link_index",
           "links_connected", "tree_ports"]
