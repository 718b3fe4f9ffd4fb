"""The eight distribution-tree examples of seed 000 §6.5.4 (Figs. 6.10-6.12, 20 rules/switch).

Every example asserts the labels of its encoded header by type: (tree,
stop, switch-level hop), read from the header bytes
(:func:`sim.dataplanes.virtual_tree.codec.count_labels`). With
``host_links=exclude`` (digest A4) every receiver's host link adds one more
hop for every strategy; the thesis's figures (switch graphs) do not draw
it, so it is checked (one per receiver) and left out of the counts. DFN is
``zoo:Dfn,preprocess=table61``, the 50-switch graph of Table 6.1.

Two kinds of setting
--------------------
*From the text* (hops, freq-relation): the text fixes the structure (P at
a hub, one publisher VT spanning the receivers and m uninterested nodes),
so :func:`freq_relation_case` builds it and the counts are the thesis's.

*Drawn* (all eight; the only setting for clusters, partitions, random and
cycles): the thesis shows receiver sets drawn from its random clustered
population (§6.5.2), given only as drawings (P, S_1 ... S_n on a map). Each
drawn example is one notification of the Fig. 6.9 experiment at 20 rules:
the cell (topology, strategy, ``max_rules=20``, ``clustered:scenario=nearby,
churn=0`` = four dense clusters, seed) of ``experiments/specs/ch6-static.toml``
and its notification ``run`` (:func:`drawn_case`; the same publisher,
receivers and installed state as that cell's row). The (seed, run) of each
is fixed in :data:`DRAWN`; it was chosen by :func:`search_case`:

    over seeds 1..200 and the cell's 20 notifications, in that order, the
    qualifying notifications are those with the described number of
    subscribers (DFN P + 7, VtlWavenet P + 13, Litnet P + 6); the case is
    the first one whose counts are the thesis's, or, if none is, the one
    nearest to them, compared by |d tree|, then |d stop|, then |d hop|
    (ties: the first).

The search does not run in the default test run. Re-run it with
``STACKCAST_SEARCH_6_5_4=1 pytest tests/strategies/test_vt_section_6_5_4.py
-k search`` (about 3 min on one core; it must find the fixed cases), or
print the thesis-vs-ours table with ``python
tests/strategies/test_vt_section_6_5_4.py`` (:func:`examples_table`).

Because the case is chosen for its counts, each drawn test also asserts a
property the choice does not guarantee: exact delivery (every test), plus
the structural claim of the text (which VTs are combined, where the stops
and hops lie).

Found with the thesis's counts: DFN clusters (3, 0, 1), Litnet partitions
(3, 0, 1), and freq-relation in DFN (1, 2, 0) and Litnet (1, 3, 0). Not
found (nearest asserted; each test's docstring says how and why it
differs): DFN partitions, VtlWavenet random and VtlWavenet cycles.

References
----------
Seed 000 §6.5.4 (Figs. 6.10-6.12), §6.5.2, §6.5.3 (b), (g); digest ch. 5-7
§4.2.5 (table "DT examples at 20 rules").
"""

from __future__ import annotations

import collections
import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

from experiments.cells.pipeline import cell_notifications, cell_setup
from experiments.cells.spec import Cell
from experiments.cells.workload import cell_workload
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.virtual_tree.codec import KIND_HOP, KIND_STOP, KIND_TREE, count_labels
from sim.engines.static import run_notification
from strategies.base import Knowledge, Strategy, make_strategy
from strategies.virtual_tree.arbitrary import modularity_partitions
from strategies.virtual_tree.client_view import ControllerView
from strategies.virtual_tree.installation import (
    VirtualTree,
    link_ends,
    published_trees,
    steiner_links,
    tree_ports,
)
from strategies.virtual_tree.labels import label_format
from topologies.model import Topology
from topologies.specs import load_topology

ZOO_DIR = os.environ.get("STACKCAST_ZOO_DIR", "")
pytestmark = pytest.mark.skipif(not ZOO_DIR or not Path(ZOO_DIR).is_dir(),
                                reason="STACKCAST_ZOO_DIR (shared/data/topology-zoo) needed")

DFN = "zoo:Dfn,preprocess=table61"
VTL = "zoo:VtlWavenet2008"
LITNET = "zoo:Litnet"
RULES = {"max_rules": 20}  # §6.5.4: "a limit of 20 flow rules per switch"
#: the receiver model of experiments/specs/ch6-static.toml (four dense clusters, k = 4)
CLUSTERED = "clustered:scenario=nearby,churn=0"
NOTIFICATIONS = 20  # per cell, as in ch6-static.toml
SEARCH_SEEDS = range(1, 201)

Counts = tuple[int, int, int]


# -- reading a header -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Header:
    """The labels of one encoded notification, by type.

    Attributes
    ----------
    trees : tuple of VirtualTree
        The VTs of the tree labels, in header order.
    stops : tuple of (str, str)
        The links of the stop labels.
    hops : tuple of (str, str)
        The switch-to-switch links of the hop labels (host-link hops left out).
    """

    trees: tuple[VirtualTree, ...]
    stops: tuple[tuple[str, str], ...]
    hops: tuple[tuple[str, str], ...]

    @property
    def counts(self) -> Counts:
        return len(self.trees), len(self.stops), len(self.hops)


def header(strategy: Strategy, topo: Topology, state: Any, pub: str, recv: list[str]) -> Header:
    """Encode one notification and read its header; delivery must be exact."""
    note = Notification(1, pub)
    d = run_notification(topo, strategy, state, note, frozenset(recv), payload_for(note, 10))
    assert d.delivered == dict.fromkeys(recv, 1)
    assert d.false_positives == 0
    fmt = label_format(strategy.params)  # type: ignore[attr-defined]
    headers = [p.header for p in d.encoding.packets]
    by_id = {t.tree_id: t for t in published_trees(state)}
    mask = (1 << fmt.id_bits) - 1
    trees, stops, hops, host_hops = [], [], [], 0
    for h in headers:
        labels, _ = fmt.decode(h)
        for label in labels:
            kind, ident = label >> fmt.id_bits, label & mask
            if kind == KIND_TREE:
                trees.append(by_id[ident])
            elif kind == KIND_STOP:
                stops.append(link_ends(topo, ident))
            elif kind == KIND_HOP:
                a, b = link_ends(topo, ident)
                if a in topo.hosts or b in topo.hosts:
                    host_hops += 1
                else:
                    hops.append((a, b))
    assert host_hops == len(recv)  # one host-link hop per receiver (host_links=exclude)
    c = count_labels(fmt, headers)  # the switches' view of the same bytes
    assert (c.tree, c.stop, c.hop) == (len(trees), len(stops), len(hops) + host_hops)
    return Header(tuple(trees), tuple(stops), tuple(hops))


def counts(strategy: Strategy, topo: Topology, state: object, pub: str,
           recv: list[str]) -> Counts:
    """(tree, stop, switch-level hop) labels of the header; delivery must be exact."""
    return header(strategy, topo, state, pub, recv).counts


def covered(topo: Topology, trees: tuple[VirtualTree, ...]) -> set[str]:
    """Switches on any of ``trees``."""
    return set().union(*(set(tree_ports(topo, t.edges)) for t in trees))


def edge_set(topo: Topology, t: VirtualTree) -> set[frozenset[str]]:
    return {frozenset(link_ends(topo, e)) for e in t.edges}


# -- settings from the text -------------------------------------------------------


def freq_relation_case(topo: Topology, n_receivers: int, n_uninterested: int, seed: int
                       ) -> tuple[Strategy, object, str, list[str]]:
    """P at the highest-degree switch with n + m frequent subscribers on random
    switches; its freq-relation VT is their Steiner tree. The notification goes
    to all but m subscribers at VT leaves: the VT spans m uninterested nodes."""
    rng = np.random.default_rng(seed)
    host = {s: topo.hosts_of(s)[0] for s in topo.switches}
    pub_sw = max(topo.switches, key=lambda s: (topo.switch_graph.degree(s), -topo.switch_id(s)))
    others = [s for s in topo.switches if s != pub_sw]
    subs = [others[i] for i in rng.choice(len(others), n_receivers + n_uninterested,
                                          replace=False)]
    pub = host[pub_sw]
    view = ControllerView(publishers=(pub,),
                          subscriptions={pub: tuple((host[s], 0.9) for s in subs)})
    strategy = make_strategy("vt-freq-relation", RULES)
    state = strategy.install(topo, Knowledge(population=view))
    (vt,) = published_trees(state)
    g = nx.Graph([link_ends(topo, e) for e in vt.edges])
    uninterested = [s for s in subs if g.degree(s) == 1][:n_uninterested]
    assert len(uninterested) == n_uninterested
    return strategy, state, pub, [host[s] for s in subs if s not in uninterested]


# -- settings drawn from the clustered workload -------------------------------------


@dataclass(frozen=True, slots=True)
class Drawn:
    """Notification ``run`` of a ch6-static cell at 20 rules: what it sends, the state
    it is encoded with and the controller's view of the population (its clusters)."""

    topology: Topology
    strategy: Strategy
    state: Any
    view: ControllerView
    run: int
    publisher: str
    receivers: list[str]

    def header(self) -> Header:
        return header(self.strategy, self.topology, self.state, self.publisher, self.receivers)


def ch6_static_cell(topology: str, strategy: str, seed: int) -> Cell:
    """The cell of experiments/specs/ch6-static.toml at 20 rules (any seed)."""
    params = (("max_rules", 20),) if strategy.startswith("vt-") else ()
    return Cell(experiment="ch6-static", topology=topology, strategy=strategy, params=params,
                receivers=CLUSTERED, payload_bytes=50, seed=seed, notifications=NOTIFICATIONS)


def drawn_cases(topology: str, strategy: str, seed: int) -> Iterator[Drawn]:
    """The cell's notifications in order, as its rows see them."""
    cell = ch6_static_cell(topology, strategy, seed)
    topo, strat, _ = cell_setup(cell)
    workload = cell_workload(cell, topo)
    view = workload.population.controller_view()
    assert isinstance(view, ControllerView)
    for item in cell_notifications(cell, topo, strat, workload=workload):
        yield Drawn(topo, strat, item.state, view, item.run, item.notification.publisher,
                    sorted(item.receivers, key=topo.host_id))


def drawn_case(topology: str, strategy: str, seed: int, run: int) -> Drawn:
    """Notification ``run`` of the ch6-static cell (topology, strategy, 20 rules, seed)."""
    return next(itertools.islice(drawn_cases(topology, strategy, seed), run, None))


# -- the documented search -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Example:
    """One §6.5.4 example on the clustered workload: the described setting, the
    thesis's counts, and the case :func:`search_case` fixed with its counts."""

    figure: str
    topology: str
    strategy: str
    subscribers: int
    thesis: Counts
    seed: int
    run: int
    ours: Counts


#: The drawn cases, as :func:`search_case` finds them over :data:`SEARCH_SEEDS`
#: (``test_search_finds_the_fixed_case`` re-runs it). Fig. 6.11a's thesis counts
#: are the text's description (1 VT, 1 stop, 2 hops), not its total "one VT and
#: two stop entries" (digest [BUG]).
DRAWN = {e.figure: e for e in (
    Example("6.10b", DFN, "vt-freq-relation", 7, (1, 2, 0), 4, 5, (1, 2, 0)),
    Example("6.10c", DFN, "vt-clusters", 7, (3, 0, 1), 4, 19, (3, 0, 1)),
    Example("6.10d", DFN, "vt-partitions", 7, (4, 1, 0), 121, 3, (4, 1, 2)),
    Example("6.11a", VTL, "vt-random", 13, (1, 1, 2), 28, 4, (1, 2, 2)),
    Example("6.11b", VTL, "vt-cycles", 13, (2, 3, 0), 44, 6, (2, 6, 0)),
    Example("6.12a", LITNET, "vt-freq-relation", 6, (1, 3, 0), 4, 1, (1, 3, 0)),
    Example("6.12b", LITNET, "vt-partitions", 6, (3, 0, 1), 78, 11, (3, 0, 1)),
)}


@dataclass(frozen=True, slots=True)
class Found:
    """What :func:`search_case` found: the chosen (seed, run) and its counts, the
    counts of every qualifying notification (``histogram``) and the first
    qualifying notification whatever its counts (``first``: seed, run, counts)."""

    seed: int
    run: int
    counts: Counts
    histogram: collections.Counter[Counts]
    first: tuple[int, int, Counts]

    @property
    def qualifying(self) -> int:
        return sum(self.histogram.values())


def search_case(topology: str, strategy: str, subscribers: int, thesis: Counts,
                seeds: range = SEARCH_SEEDS) -> Found:
    """The documented search of the module docstring.

    Scans every notification of the ch6-static cells (topology, strategy, 20
    rules, seed) for ``seeds``; those with ``subscribers`` receivers qualify.
    Returns the first qualifying one with the ``thesis`` counts, or, if none
    has them, the nearest (|d tree|, then |d stop|, then |d hop|; ties: the
    first), with the counts of all qualifying notifications. About 10-40 s
    per example for 200 seeds.
    """
    hist: collections.Counter[Counts] = collections.Counter()
    best: tuple[tuple[int, ...], int, int, Counts] | None = None
    first: tuple[int, int, Counts] | None = None
    for seed in seeds:
        for d in drawn_cases(topology, strategy, seed):
            if len(d.receivers) != subscribers:
                continue
            c = d.header().counts
            hist[c] += 1
            first = first or (seed, d.run, c)
            dist = tuple(abs(a - b) for a, b in zip(c, thesis, strict=True))
            if best is None or dist < best[0]:
                best = (dist, seed, d.run, c)
    assert best is not None and first is not None, "no qualifying notification"
    return Found(best[1], best[2], best[3], hist, first)


def examples_table() -> str:
    """The eight examples, thesis vs ours, as a Markdown table (runs the search:
    a few minutes). ``python tests/strategies/test_vt_section_6_5_4.py`` prints it."""

    def fmt(c: Counts) -> str:
        return "/".join(map(str, c))

    rows = ["| Fig. | Network, receivers | Strategy | Thesis (tree/stop/hop) "
            "| Ours, text setting | Ours, drawn case (seed, run) "
            "| Thesis counts among qualifying | Most common |",
            "|---|---|---|---|---|---|---|---|"]
    topo, litnet = load_topology(DFN), load_topology(LITNET)
    hops = make_strategy("source-routed")
    hops_state = hops.install(topo, Knowledge())

    def text_case(t: Topology, n: int, m: int, seed: int, hop: bool = False) -> Counts:
        strategy, state, pub, recv = freq_relation_case(t, n, m, seed)
        return counts(hops, t, hops_state, pub, recv) if hop else counts(
            strategy, t, state, pub, recv)

    text = {"6.10a": ", ".join(fmt(text_case(topo, 7, 2, s, True)) for s in range(3)),
            "6.10b": ", ".join(fmt(text_case(topo, 7, 2, s)) for s in range(3)),
            "6.12a": ", ".join(fmt(text_case(litnet, 6, 3, s)) for s in range(3))}
    c = DRAWN["6.10c"]
    h = drawn_case(DFN, "source-routed", c.seed, c.run).header()
    rows.append(f"| 6.10a | DFN, P + 7 | hops | 0/0/n (all hops; n not given) | {text['6.10a']} "
                f"| {fmt(h.counts)} ({c.seed}, {c.run}; 6.10c's receivers) | - | - |")
    for key, e in DRAWN.items():
        f = search_case(e.topology, e.strategy, e.subscribers, e.thesis)
        net = {DFN: "DFN", VTL: "VtlWavenet", LITNET: "Litnet"}[e.topology]
        mode, n_mode = f.histogram.most_common(1)[0]
        rows.append(f"| {key} | {net}, P + {e.subscribers} | {e.strategy} | {fmt(e.thesis)} "
                    f"| {text.get(key, '-')} | {fmt(f.counts)} ({f.seed}, {f.run}) "
                    f"| {f.histogram[e.thesis]} of {f.qualifying} | {fmt(mode)} ({n_mode}) |")
    return "\n".join(rows)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("STACKCAST_SEARCH_6_5_4"),
                    reason="the search takes minutes; set STACKCAST_SEARCH_6_5_4=1")
@pytest.mark.parametrize("figure", sorted(DRAWN))
def test_search_finds_the_fixed_case(figure: str) -> None:
    """The fixed (seed, run) of every drawn example is what the documented search
    finds, with the counts its test asserts."""
    e = DRAWN[figure]
    f = search_case(e.topology, e.strategy, e.subscribers, e.thesis)
    assert (f.seed, f.run, f.counts) == (e.seed, e.run, e.ours)


def fixed_case(figure: str, strategy: str | None = None) -> Drawn:
    """The fixed drawn case of ``figure`` (its receivers with ``strategy``, if given)."""
    e = DRAWN[figure]
    return drawn_case(e.topology, strategy or e.strategy, e.seed, e.run)


def uninterested_leaves(d: Drawn, vt: VirtualTree) -> set[str]:
    """Leaf switches of ``vt`` that neither publish nor receive this notification."""
    topo = d.topology
    g = nx.Graph([link_ends(topo, e) for e in vt.edges])
    ends = {topo.host_switch(h) for h in [d.publisher, *d.receivers]}
    return {v for v in g if g.degree(v) == 1 and v not in ends}


def hubs_of(topo: Topology, regions: Any) -> set[str]:
    """Highest-degree switch of each region (ties: lowest index), as the strategies pick."""
    return {min(r, key=lambda s: (-topo.switch_graph.degree(s), topo.switch_id(s)))
            for r in regions}


def backbone_and_internal(topo: Topology, trees: tuple[VirtualTree, ...],
                          regions: list[set[str]]) -> tuple[list[VirtualTree], list[int]]:
    """The backbone VTs of ``trees``, and for each other VT the one region holding it
    (-1 if no region holds it)."""
    backbone = [t for t in trees if ":backbone:" in t.name]
    homes = []
    for t in trees:
        if t not in backbone:
            nodes = set(tree_ports(topo, t.edges))
            homes.append(next((i for i, r in enumerate(regions) if nodes <= r), -1))
    return backbone, homes


# -- Fig. 6.10: DFN, P + 7 subscribers -------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_fig_6_10a_dfn_hops_encode_the_steiner_dt_with_hop_labels_only(seed: int) -> None:
    """Fig. 6.10(a): the initial DT of P + 7 subscribers is all hop labels, one per
    Steiner-tree link, and is the longest header of the four strategies."""
    topo = load_topology(DFN)
    frel, frel_state, pub, recv = freq_relation_case(topo, 7, 2, seed)
    hops = make_strategy("source-routed")
    tree, stop, hop = counts(hops, topo, hops.install(topo, Knowledge()), pub, recv)
    assert (tree, stop) == (0, 0)
    terminals = [topo.host_switch(h) for h in [pub, *recv]]
    assert hop == len(steiner_links(topo, terminals))  # one hop per Steiner-tree link
    assert hop > sum(counts(frel, topo, frel_state, pub, recv))


def test_fig_6_10a_dfn_hops_on_the_drawn_receiver_set() -> None:
    """Fig. 6.10(a) on the receivers of the drawn Fig. 6.10(c) case (seed 4, run 19:
    the thesis draws one receiver set for all four panels): 0/0/8, one hop per
    Steiner-tree link, twice the clusters header (3/0/1) of the same set."""
    d = fixed_case("6.10c", "source-routed")
    h = d.header()
    assert h.counts == (0, 0, 8)
    terminals = [d.topology.host_switch(x) for x in [d.publisher, *d.receivers]]
    assert len(h.hops) == len(steiner_links(d.topology, terminals))
    assert sum(h.counts) > sum(fixed_case("6.10c").header().counts)


@pytest.mark.parametrize("seed", range(3))
def test_fig_6_10b_dfn_freq_relation_one_vt_two_stops(seed: int) -> None:
    """Fig. 6.10(b): one large VT pruned by two stops. The thesis's receivers are
    not given; here the VT spans the 7 receivers and 2 uninterested leaves."""
    topo = load_topology(DFN)
    strategy, state, pub, recv = freq_relation_case(topo, 7, 2, seed)
    assert counts(strategy, topo, state, pub, recv) == (1, 2, 0)


def test_fig_6_10b_dfn_freq_relation_on_the_clustered_workload() -> None:
    """Fig. 6.10(b) drawn (seed 4, run 5; 102 of 771 qualifying notifications have
    1/2/0, the most common counts): 1 VT + 2 stops. Not guaranteed by the
    choice: the VT is the publisher's own relation VT, and each stop cuts off
    one of its uninterested leaves (subscribers below 100 % frequency that
    this notification skips)."""
    d = fixed_case("6.10b")
    h = d.header()
    assert h.counts == DRAWN["6.10b"].ours == (1, 2, 0)
    (vt,) = h.trees
    assert vt.name == f"relation:{d.publisher}"
    leaves = uninterested_leaves(d, vt)
    assert len(leaves) == 2 and all(len(leaves & set(s)) == 1 for s in h.stops)


def test_fig_6_10c_dfn_clusters_three_vts_one_hop() -> None:
    """Fig. 6.10(c) drawn (seed 4, run 19; 6 of 771 qualifying notifications have
    3/0/1): 3 VTs + 1 hop. Not guaranteed by the choice: the VTs are a backbone
    over the cluster hubs and internal VTs inside single dense clusters
    ('internal VTs of hotspots or backbone VTs connecting the hotspots'), the
    installed cluster VTs leave switches uncovered (30 of 50), and the hop
    fills a gap between the selected VTs. Deviation: the thesis's hop reaches
    an 'outlying' subscriber; ours links the publisher's switch to the
    backbone hub (the receivers all lie on the selected VTs)."""
    d = fixed_case("6.10c")
    topo, h = d.topology, d.header()
    assert h.counts == DRAWN["6.10c"].ours == (3, 0, 1)
    dense = [set(c) for c in d.view.clusters]
    backbone, homes = backbone_and_internal(topo, h.trees, dense)
    assert len(backbone) == 1 and set(backbone[0].name.split(":")[-1].split(",")) <= hubs_of(
        topo, dense)
    assert len(homes) == 2 and -1 not in homes
    assert len(covered(topo, published_trees(d.state))) == 30 < len(topo.switches)
    on_selected = covered(topo, h.trees)
    ((a, b),) = h.hops
    assert (a in on_selected) != (b in on_selected)
    assert topo.host_switch(d.publisher) in {a, b} - on_selected


def test_fig_6_10d_dfn_partitions_four_vts_one_stop_and_hops() -> None:
    """Fig. 6.10(d) drawn (seed 121, run 3): 4 VTs + 1 stop as in the thesis, plus
    2 hops it does not have. No qualifying notification of 771 has 4/1/0; the
    nearest (same tree and stop counts, fewest hops) has 2 hops. Why: the
    thesis's partition VTs 'cover all nodes', ours cover 43 of DFN's 50
    switches at 20 rules: backbone VTs over hub subsets come first (up to
    ``backbone_max`` = 32), hub s45 spends all its 20 rules on them, so its
    partition gets no internal VT and its 7 other switches stay uncovered;
    one hop here reaches receiver switch s5 there.
    Not guaranteed by the choice: backbone VT first, the others each inside
    one partition, and the header is the longest optimised one on this
    receiver set (ties with clusters), as the thesis says."""
    d = fixed_case("6.10d")
    topo, h = d.topology, d.header()
    assert h.counts == DRAWN["6.10d"].ours == (4, 1, 2)
    parts = [set(p) for p in modularity_partitions(topo)]
    backbone, homes = backbone_and_internal(topo, h.trees, parts)
    assert len(backbone) == 1 and h.trees[0] is backbone[0]
    assert len(homes) == 3 and -1 not in homes
    installed = covered(topo, published_trees(d.state))
    assert len(installed) == 43
    uncovered = {topo.host_switch(r) for r in d.receivers} - installed
    assert uncovered == {"s5"} and any("s5" in hop for hop in h.hops)
    (home,) = [p for p in parts if "s5" in p]
    assert set(topo.switches) - installed == home - {"s45"}
    others = [sum(fixed_case("6.10d", s).header().counts)
              for s in ("vt-clusters", "vt-freq-relation")]
    assert sum(h.counts) >= max(others)


# -- Fig. 6.11: VtlWavenet, P + 13 subscribers ------------------------------------------


def test_fig_6_11a_vtlwavenet_random_one_large_vt_extended_by_two_hops() -> None:
    """Fig. 6.11(a) drawn (seed 28, run 4): 1 VT + 2 hops as described, but 2 stops
    where the description has 1 (thesis 1/1/2, the text's total 1/2/0, digest
    [BUG]). No qualifying notification of 593 has 1/1/2; the nearest has
    1/2/2 (1/2/0 occurs once, seed 146 run 15). Why: our random VTs are
    Steiner trees over U{2..88} random switches, mostly large (the picked one
    spans 53 of VtlWavenet's 88 switches), and need a stop at every branch
    they take past the DT (typically 5-7: 1/7/0 is the most common). Not guaranteed
    by the choice, the text's structure: each hop joins a receiver off the
    VT to a VT switch (the branch 'extended by two additional hop
    entries'), and a receiver sits at a VT leaf so no stop is needed there
    ('the VT already terminates at S_4 and S_5'); §6.5.3 (b): one VT on
    average over the cell's notifications."""
    d = fixed_case("6.11a")
    topo, h = d.topology, d.header()
    assert h.counts == DRAWN["6.11a"].ours == (1, 2, 2)
    (vt,) = h.trees
    g = nx.Graph([link_ends(topo, e) for e in vt.edges])
    recv = {topo.host_switch(r) for r in d.receivers}
    for a, b in h.hops:
        assert (a in g) != (b in g) and ({a, b} - set(g)) <= recv
    assert any(g.degree(r) == 1 for r in recv if r in g)
    e = DRAWN["6.11a"]
    trees = [len(c.header().trees) for c in drawn_cases(e.topology, e.strategy, e.seed)]
    assert round(float(np.mean(trees))) == 1


def test_fig_6_11b_vtlwavenet_cycles_two_overlapping_vts() -> None:
    """Fig. 6.11(b) drawn (seed 44, run 6): 2 VTs as in the thesis, 6 stops where
    it has 3. No qualifying notification of 593 has 2/3/0; with 2 VTs the
    fewest stops is 6. Why: at 20 rules our cycles strategy installs all 17
    candidates, VtlWavenet's 5 basis rings and their connected unions of 2
    and 3 (``max_combination`` = 3); the encoder picks two 3-ring unions
    spanning 77 and 76 of 88 switches, which reach past the DT on many
    branches (the thesis's two VTs are smaller). Not guaranteed
    by the choice: the two VTs overlap, a stop on a shared link prunes both
    (5 of the 6 here; the thesis's 'branches of the overlapping trees'), and
    random encodes the same receivers in fewer entries (§6.5.3: cycles is
    beaten by random even in VtlWavenet)."""
    d = fixed_case("6.11b")
    topo, h = d.topology, d.header()
    assert h.counts == DRAWN["6.11b"].ours == (2, 6, 0)
    shared = edge_set(topo, h.trees[0]) & edge_set(topo, h.trees[1])
    assert sum(frozenset(s) in shared for s in h.stops) == 5
    assert sum(fixed_case("6.11b", "vt-random").header().counts) < sum(h.counts)


# -- Fig. 6.12: Litnet, P + 6 subscribers ----------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_fig_6_12a_litnet_freq_relation_one_vt_three_stops(seed: int) -> None:
    """Fig. 6.12(a): one publisher-centric VT spanning the 6 subscribers and three
    uninterested nodes, pruned by three stops."""
    topo = load_topology(LITNET)
    strategy, state, pub, recv = freq_relation_case(topo, 6, 3, seed)
    assert counts(strategy, topo, state, pub, recv) == (1, 3, 0)


def test_fig_6_12a_litnet_freq_relation_on_the_clustered_workload() -> None:
    """Fig. 6.12(a) drawn (seed 4, run 1; 146 of 794 qualifying notifications have
    1/3/0, the most common counts): 1 VT + 3 stops. Not guaranteed by the
    choice: the VT is the publisher's own ('publisher-centric') and spans
    three uninterested leaves, one cut off by each stop."""
    d = fixed_case("6.12a")
    h = d.header()
    assert h.counts == DRAWN["6.12a"].ours == (1, 3, 0)
    (vt,) = h.trees
    assert vt.name == f"relation:{d.publisher}"
    leaves = uninterested_leaves(d, vt)
    assert len(leaves) == 3 and all(len(leaves & set(s)) == 1 for s in h.stops)


def test_fig_6_12b_litnet_partitions_backbone_two_local_vts_one_hop() -> None:
    """Fig. 6.12(b) drawn (seed 78, run 11; 3 of 794 qualifying notifications have
    3/0/1): backbone Tree_1 + local Tree_2, Tree_3 + 1 hop. Not guaranteed by
    the choice: Tree_1 is a backbone over community hubs, the two others lie
    inside two different partitions, the hop attaches a receiver that no
    selected VT reaches ('requires an additional hop entry to attach S_1'),
    and the installed VTs cover every Litnet switch at 20 rules."""
    d = fixed_case("6.12b")
    topo, h = d.topology, d.header()
    assert h.counts == DRAWN["6.12b"].ours == (3, 0, 1)
    parts = [set(p) for p in modularity_partitions(topo)]
    backbone, homes = backbone_and_internal(topo, h.trees, parts)
    assert len(backbone) == 1 and h.trees[0] is backbone[0]
    assert set(backbone[0].name.split(":")[-1].split(",")) <= hubs_of(topo, parts)
    assert len(homes) == 2 and -1 not in homes and homes[0] != homes[1]
    ((a, b),) = h.hops
    off = {a, b} - covered(topo, h.trees)
    assert len(off) == 1 and off <= {topo.host_switch(r) for r in d.receivers}
    assert covered(topo, published_trees(d.state)) == set(topo.switches)


if __name__ == "__main__":
    print(examples_table())
