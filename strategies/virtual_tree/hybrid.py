"""``hybrid``: a stored tree T' of the stable subscribers plus hop labels (seed 000 §4.3).

T is the publisher's shortest-path tree over all potential subscribers; T'
keeps only its branches towards the *stable* subscribers and is stored once
(one ``check_tree`` bitmask rule per T' switch). A notification's header is

    [tree label T'] + [stop labels] + [hop labels]

on the ``virtual_tree`` data plane (the ch. 5 program, which is the P4
implementation of §4.3.2 with served-ports duplicate suppression):

- the tree label makes every T' switch clone to its T' child ports (the
  label is kept for the switches below);
- a stop label cuts a T' edge that leads to no receiver of this
  notification (stable subscribers that are not receivers);
- hop labels (one per edge, consumed where applied) carry the *extensions*:
  for each dynamic subscriber the path of the shortest-path tree from its
  deepest T' ancestor down to it; such paths never re-enter T', and D = T'
  (minus stopped edges) plus the extensions is the shortest-path tree to the
  receivers, so no copy is duplicated.

Stable subscribers: ``Knowledge.stable[publisher]`` when the controller knows
them (T' is then stored once per publisher, tree id ``host_id + 1``, and
reused for every notification, stop labels pruning absent stable
subscribers); otherwise, for each known receiver set R, ``round(y% x |R|)``
receivers drawn at random (digest §7.13) with a generator seeded from the
publisher, R and the ``seed`` parameter (never global state), stored under
tree ids ``n_hosts + 1, ...``. ``ratio="x:y"`` is hop%:tree% ("80:20
indicates that 80% of subscribers are reached using dynamically added hop
entries").

Rules per switch: ``check_hop`` and ``check_stop`` (one per port each),
``extract_port`` (one ternary rule per port), clone sessions, plus one
``check_tree`` rule per stored T' through the switch.

Deviations from Fig. 4.3 (node-id hops with a subtree-root id and marker
elements): hop labels name *edges* (ch. 5 ``edge_id``), applied by the
switch at either end of the edge, so no subtree-root ids and no markers are
needed; stop labels are an addition (ch. 5) that lets a per-publisher T'
serve receiver sets without all its stable subscribers. Hop labels are not
pruned along T' (as in the thesis: "the header stack remains unchanged").
``on_oversize="split"`` sends one packet per child subtree of the
publisher's switch: the tree label with stops on the other T' root edges,
or only hop labels when that child is not on T'.

References
----------
Seed 000 §4.3 (Fig. 4.3), §4.3.2 (Fig. 4.4), §4.4.2-4.4.3; §5.2.4-5.2.6
(tree/hop/stop labels); digest ch. 1-4 §3.9, §7.12, §7.13 and ch. 5-7 §1.5.4.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.dataplanes.caches import Identity
from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.packet import BROADCAST_MAC, Notification, Packet, host_mac
from sim.dataplanes.seeds import child_rng, stable_seed
from sim.dataplanes.tree_tables import tree_tables
from sim.dataplanes.trees import Tree, shortest_path_tree
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import (
    hop_label,
    install_port_rules,
    stop_label,
    tree_label,
)
from strategies.base import Encoding, Knowledge, Strategy, register_strategy
from strategies.frame_size import frame_limit
from strategies.virtual_tree.data_plane import VirtualTreeModel
from strategies.virtual_tree.hybrid_kernel import (
    EdgeTable,
    header_stack,
    label_counts,
    out_labels,
)
from strategies.virtual_tree.labels import (
    LabelParams,
    check_receivers,
    edge_id,
    encode_stacks,
    round_half_up,
    subtree_preorder,
    tree_key,
    validate_label_params,
)
from strategies.virtual_tree.stored_trees import StoredTrees
from topologies.model import Topology, node_sort_key
from topologies.registry import SpecError, check


def parse_ratio(text: str) -> tuple[int, int]:
    """``"80:20"`` -> (80, 20): hop% and tree%, integers summing to 100."""
    hop, sep, tree = str(text).partition(":")
    try:
        x, y = int(hop), int(tree)
    except ValueError:
        raise SpecError(f"ratio must be 'x:y' (hop%:tree%), got {text!r}") from None
    check(bool(sep) and x >= 0 and y >= 0 and x + y == 100,
          f"ratio must be 'x:y' with x + y = 100 (hop%:tree%), got {text!r}")
    return x, y


@dataclass(frozen=True, slots=True, kw_only=True)
class HybridParams(LabelParams):
    """Parameters of ``hybrid``: the label widths of :class:`LabelParams` plus

    Parameters
    ----------
    ratio : str
        ``"x:y"``: x% of a notification's receivers reached by hop labels, y%
        by the stored tree (default ``"80:20"``); used when the controller
        does not know the stable subscribers.
    seed : int
        Seed of the random stable/dynamic split (with the publisher and the
        receiver set).
    """

    ratio: str = "80:20"
    seed: int = 0

    def __post_init__(self) -> None:
        validate_label_params(self)
        parse_ratio(self.ratio)


def choose_stable(topology: Topology, publisher: str, receivers: frozenset[str], tree_percent: int,
                  seed: int) -> frozenset[str]:
    """``round(tree_percent% x |receivers|)`` receivers drawn at random as stable.

    The generator is seeded from (publisher, sorted receivers, seed), so the
    control plane and the encoder draw the same set on any machine.
    """
    ordered = sorted(receivers, key=topology.host_id)
    k = round_half_up(tree_percent * len(ordered), 100)
    root = stable_seed({"publisher": publisher, "receivers": ordered, "seed": seed})
    picks = child_rng(root, "hybrid.stable").choice(len(ordered), size=k, replace=False)
    return frozenset(ordered[int(i)] for i in picks)


def stored_tree(topology: Topology, publisher: str, stable: frozenset[str]) -> Tree:
    """T': the shortest-path tree from the publisher's switch to the stable subscribers."""
    return shortest_path_tree(topology, topology.host_switch(publisher), stable)


def install_stable_tree(builder: StateBuilder, topology: Topology, publisher: str,
                        stable: frozenset[str], tree_id: int, fmt: LabelFormat) -> None:
    """Store T' of ``stable`` under ``tree_id`` (one bitmask rule per T' switch)."""
    rules = StoredTrees(topology, fmt)
    add_stable_tree(rules, publisher, stable, tree_id)
    rules.add_to(builder)


def add_stable_tree(rules: StoredTrees, publisher: str, stable: frozenset[str],
                    tree_id: int) -> None:
    """Add T' of ``stable`` under ``tree_id`` to ``rules`` (nothing if none is stable)."""
    check_receivers(publisher, stable)
    if stable:
        tree_label(rules.fmt, tree_id)  # raises if the id does not fit
        rules.add(stored_tree(rules.topology, publisher, stable), tree_id)


class EdgeLabels:
    """Stop and hop labels of the directed tree edges of one topology and format.

    Each is made (and validated, raising what :func:`hop_label` / :func:`stop_label`
    raise) on first use, then remembered.
    """

    def __init__(self, topology: Topology, fmt: LabelFormat) -> None:
        self.topology = topology
        self.fmt = fmt
        self._hop: dict[tuple[str, str], int] = {}
        self._stop: dict[tuple[str, str], int] = {}

    def hops(self, edges: Iterable[tuple[str, str]]) -> list[int]:
        return self._labels(self._hop, hop_label, edges)

    def stops(self, edges: Iterable[tuple[str, str]]) -> list[int]:
        return self._labels(self._stop, stop_label, edges)

    def _labels(self, known: dict[tuple[str, str], int],
                make: Callable[[LabelFormat, int], int], edges: Iterable[tuple[str, str]]
                ) -> list[int]:
        out = []
        for edge in edges:
            label = known.get(edge)
            if label is None:
                label = known[edge] = make(self.fmt, edge_id(self.topology, *edge))
            out.append(label)
        return out


def hybrid_stacks(topology: Topology, fmt: LabelFormat, publisher: str,
                  receivers: frozenset[str], stable: frozenset[str], tree_id: int,
                  stored: tuple[list[tuple[str, str]], tuple[str, ...]] | None = None,
                  edge_labels: EdgeLabels | None = None
                  ) -> tuple[list[int], Callable[[], list[list[int]]]]:
    """The header labels of one notification, and its per-root-subtree split.

    ``stored``: T' of ``stable`` as (edges in preorder, the root's children) when
    the caller has it (:func:`stored_edges`); ``edge_labels``: the topology's
    remembered edge labels.

    Returns
    -------
    labels : list of int
        Tree label (if T' shares an edge with the delivery tree), stops, hops.
    parts : callable
        One stack per child of the publisher's switch in the delivery tree
        (made when called; the labels it uses are validated here).
    """
    root = topology.host_switch(publisher)
    d = shortest_path_tree(topology, root, receivers)
    d_list = d.edges()
    d_edges = set(d_list)
    if stored is None:
        stored = stored_edges(topology, publisher, stable)
    t_edges, t_children = stored
    used = {e for e in t_edges if e in d_edges}
    d_nodes = set(d.parent) | {root}
    stops = [e for e in t_edges if used and e not in d_edges and e[0] in d_nodes]
    hops = [e for e in d_list if e not in used]
    tlab = [tree_label(fmt, tree_id)] if used else []
    known = edge_labels if edge_labels is not None else EdgeLabels(topology, fmt)
    labels = tlab + known.stops(stops) + known.hops(hops)
    roots = d.children.get(root, ())
    # the stops a split adds (T' edges at the root): validated now, as the labels are
    known.stops([(root, c) for child in roots if (root, child) in used
                 for c in t_children if c != child])

    def parts() -> list[list[int]]:
        out = []
        for child in roots:
            inside = set(subtree_preorder(d, child))
            sub_hops = known.hops(e for e in hops if e[1] in inside)
            if (root, child) in used:
                sub_stops = [(root, c) for c in t_children if c != child]
                sub_stops += [e for e in stops if e[0] in inside]
                out.append(tlab + known.stops(sub_stops) + sub_hops)
            else:
                out.append(sub_hops)
        return out

    return labels, parts


def stored_edges(topology: Topology, publisher: str, stable: frozenset[str]
                 ) -> tuple[list[tuple[str, str]], tuple[str, ...]]:
    """T' of ``stable`` as (edges in preorder, the children of the publisher's switch)."""
    if not stable:
        return [], ()
    t = stored_tree(topology, publisher, stable)
    return list(t.edges()), t.children.get(topology.host_switch(publisher), ())


@register_strategy
class Hybrid(VirtualTreeModel, Strategy):
    """Stored tree of the stable subscribers plus edge hop labels for the others."""

    name = "hybrid"
    vt_fast_path = True
    dataplane = "virtual_tree"
    Params = HybridParams
    scope = "receivers"
    summary = "stored tree of stable subscribers + hop labels for dynamic ones (x:y hop:tree)"

    def base_rules(self, builder: StateBuilder, topology: Topology) -> None:
        """Hop, stop and ``extract_port`` rules and clone sessions of every switch."""
        fmt = self.fmt
        for sw in topology.switches:
            install_port_rules(builder, topology, sw, fmt)

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """T' per publisher (known stable subscribers) or per receiver set on
        :meth:`base_rules` (configurations of equal rules shared,
        :mod:`~strategies.virtual_tree.stored_trees`)."""
        _, tree_percent = parse_ratio(self.params.ratio)
        rules = StoredTrees(topology, self.fmt)
        per_publisher: dict[str, dict[str, Any]] = {}
        per_set: dict[str, dict[str, Any]] = {}
        next_id = len(topology.hosts) + 1
        for pub in sorted(set(knowledge.receiver_sets) | set(knowledge.stable), key=node_sort_key):
            if pub in knowledge.stable:
                stable = frozenset(knowledge.stable[pub])
                tree_id = topology.host_id(pub) + 1
                add_stable_tree(rules, pub, stable, tree_id)
                per_publisher[pub] = {"tree": tree_id,
                                      "stable": sorted(stable, key=topology.host_id)}
                continue
            for receivers in sorted(knowledge.receiver_sets[pub], key=sorted):
                key = tree_key(pub, receivers)
                if key in per_set or not receivers:
                    continue
                check_receivers(pub, receivers)
                stable = choose_stable(topology, pub, receivers, tree_percent, self.params.seed)
                tree_id = 0
                if stable:
                    tree_id, next_id = next_id, next_id + 1
                    add_stable_tree(rules, pub, stable, tree_id)
                per_set[key] = {"tree": tree_id, "stable": sorted(stable, key=topology.host_id)}
        return rules.state(self.base_state(topology), self.caches.stored_configs,
                           {"stable_trees": per_publisher, "set_trees": per_set})

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        pub = notification.publisher
        check_receivers(pub, receivers)
        if not receivers:
            return Encoding(())
        fmt = self.fmt
        known = self._known(topology, state, fmt)
        stored, edges = known.stored, known.edges
        # the receiver set's stored tree and the receivers' node numbers (None: not
        # hosts), remembered per state for the receiver sets it stores a tree of
        hit = stored.get(("set", pub, receivers))
        if hit is not None:
            entry, receiver_nodes = hit
        else:
            info = state.publisher_info
            entry = info.get("set_trees", {}).get(tree_key(pub, receivers))
            receiver_nodes = _host_nodes(edges.host_gid, receivers)
            if entry is not None:
                stored[("set", pub, receivers)] = (entry, receiver_nodes)
            else:
                entry = info.get("stable_trees", {}).get(pub)
        if entry is None:
            raise LookupError(f"no stored tree for publisher {pub} and these receivers; install "
                              f"with their receiver set or the publisher's stable subscribers")
        tree_id = entry["tree"]
        # per entry of this state: the stable set and its node numbers (None: not hosts)
        got = stored.get(id(entry))
        if got is None or got[0] is not entry:
            stable = frozenset(entry["stable"])
            got = stored[id(entry)] = (entry, stable, _host_nodes(edges.host_gid, stable))
        _, stable, stable_nodes = got

        def definition() -> tuple[list[int], Callable[[], list[list[int]]]]:
            t = stored.get((pub, stable))
            if t is None:
                t = stored[(pub, stable)] = stored_edges(topology, pub, stable)
            edge_labels = self.caches.vt_tables.get_or_make(
                ("edge labels", (Identity(topology), fmt)), lambda: EdgeLabels(topology, fmt))
            return hybrid_stacks(topology, fmt, pub, receivers, stable, tree_id, t, edge_labels)

        counts = self._kernel_counts(known, topology, pub, receiver_nodes, stable_nodes)
        if counts is None:
            labels, parts = definition()
        else:
            n_stops, n_hops, used = counts
            tree = tree_label(fmt, tree_id) if used else -1
            n = n_stops + n_hops + used
            if n <= fmt.max_entries:
                header = header_stack(edges, n_stops, n_hops, tree, fmt)
                if len(header) + len(payload) <= frame_limit(self.params.mtu_bytes,
                                                             self.params.on_oversize):
                    # what encode_stacks makes of one packet that fits
                    return Encoding((Packet(BROADCAST_MAC, host_mac(topology, pub),
                                            fmt.ethertype, header, payload),),
                                    header_entries=n)
            rest = out_labels(edges, n_stops, n_hops)
            labels = [tree, *rest] if used else rest

            def parts() -> list[list[int]]:
                return definition()[1]()

        return encode_stacks(topology, self.params, fmt, notification, payload, labels, parts)

    def _known(self, topology: Topology, state: ControlState, fmt: LabelFormat) -> _Known:
        """What :meth:`encode` reads per state (remembered for the last state, topology,
        format and caches)."""
        known = self._last
        if (known is None or known.state is not state or known.topology is not topology
                or known.fmt is not fmt or known.caches is not self.caches):
            caches = self.caches
            known = self._last = _Known(
                state, topology, fmt, caches,
                # T' of each stored tree, read once per state (what the controller told
                # the publisher)
                caches.vt_compiled.get_or_make((Identity(state), Identity(topology)), dict),
                caches.vt_tables.get_or_make(("edge table", (Identity(topology), fmt)),
                                             lambda: EdgeTable(topology, fmt)),
                tree_tables(topology, caches))
        return known

    def _kernel_counts(self, known: _Known, topology: Topology, pub: str,
                       receiver_nodes: np.ndarray | None, stable_nodes: np.ndarray | None
                       ) -> tuple[int, int, bool] | None:
        """:func:`hybrid_stacks`' labels by :func:`~.hybrid_kernel.label_counts` (left in
        the edge table's buffer) from the receivers' and stable subscribers' node
        numbers (:func:`_host_nodes`), or None where the definition must run."""
        if stable_nodes is None or receiver_nodes is None:
            return None
        return label_counts(known.rows, known.edges, topology.host_switch(pub),
                            receiver_nodes, stable_nodes)

    _last: _Known | None = None


@dataclass(frozen=True, slots=True)
class _Known:
    """:meth:`Hybrid.encode`'s per-state objects: the stored trees' memo, the edge table,
    the tree tables."""

    state: ControlState
    topology: Topology
    fmt: LabelFormat
    caches: Any
    stored: dict[Any, Any]
    edges: EdgeTable
    rows: Any


def _host_nodes(hosts_gid: dict[str, int], hosts: frozenset[str]) -> np.ndarray | None:
    """Node numbers of ``hosts`` (:attr:`~.hybrid_kernel.EdgeTable.host_gid`), or None if one
    is not a host of the topology."""
    try:
        return np.fromiter(map(hosts_gid.__getitem__, hosts), np.int64, len(hosts))
    except KeyError:
        return None
