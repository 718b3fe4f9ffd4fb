"""Tree / stop / hop label counts of the virtual-tree family's headers.

The ``header_tree_labels``, ``header_stop_labels`` and ``header_hop_labels``
columns (seed 000 Fig. 6.9b, header entries by label type) are counted from
the encoded bytes; checked here on the worked examples of seed 000 Figs. 5.2
and 5.3 (2 VTs + 1 stop + 1 hop; 2 VTs + 1 stop + 2 hops) and on the rows of
a small cell.
"""

from __future__ import annotations

import os

import pytest

from experiments.cells.pipeline import run_cell
from experiments.cells.spec import parse_spec_dict
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.virtual_tree.codec import (
    LabelCounts,
    LabelFormat,
    StackDecodeError,
    count_labels,
)
from sim.dataplanes.virtual_tree.reference import hop_label, stop_label, tree_label
from sim.engines.static import run_notification
from strategies.base import HEADER_LABEL_FIELDS, Knowledge
from strategies.virtual_tree.installation import Candidate, VirtualTreeStrategy
from strategies.virtual_tree.labels import edge_id
from topologies.model import build_topology

FMT = LabelFormat()


class Fixed(VirtualTreeStrategy):
    """A VT strategy that installs exactly the given link sets, in order."""

    name = "fixed-count-test"
    cache_installs = False

    def __init__(self, trees):
        super().__init__(self.Params())
        self.trees = trees

    def candidates(self, topology, knowledge):
        return iter(Candidate(frozenset(t), f"vt{i + 1}") for i, t in enumerate(self.trees))


def counts_of(topo, strategy, pub, receivers):
    state = strategy.install(topo, Knowledge())
    note = Notification(1, pub)
    d = run_notification(topo, strategy, state, note, frozenset(receivers),
                         payload_for(note, 50))
    extra = strategy.extra_metrics(topo, state, note, frozenset(receivers), d)
    return d, (extra.header_tree_labels, extra.header_stop_labels, extra.header_hop_labels)


def test_count_labels_reads_the_type_bits():
    headers = [FMT.encode([tree_label(FMT, 3), stop_label(FMT, 7), hop_label(FMT, 7),
                           hop_label(FMT, 9)]), FMT.encode([tree_label(FMT, 1)])]
    assert count_labels(FMT, headers) == LabelCounts(tree=2, stop=1, hop=2)
    assert count_labels(FMT, headers).total == 5
    assert count_labels(FMT, []) == LabelCounts()
    with pytest.raises(StackDecodeError, match="invalid type"):
        count_labels(FMT, [FMT.encode([5])])  # type 00


def test_fig_5_2_header_is_two_trees_one_stop_one_hop():
    # Fig. 5.2: P at N1; S1 at N2; S2, S3, S4, S7 at N3; S5, S6 at N4.
    topo = build_topology("fig5.2", [(1, 2), (1, 4), (2, 3)], range(1, 5),
                          {1: 1, 2: 1, 3: 4, 4: 2})
    pub, s1, s2, s3, s4, s7, s5, s6 = "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"

    def e(a, b):
        return edge_id(topo, a, b)

    vt1 = {e("s1", "s2"), e("s1", "s4"), e("s2", s1), e("s4", s5), e("s4", s6)}
    vt2 = {e("s1", "s2"), e("s2", "s3"), e("s3", s2), e("s3", s3), e("s3", s7)}
    d, counts = counts_of(topo, Fixed([vt1, vt2]), pub, {s1, s2, s3, s4, s5, s6})
    assert counts == (2, 1, 1)  # "VT_1 and VT_2 ... along with a stop and hop label"
    assert sum(counts) == d.encoding.header_entries == 4


def test_fig_5_3_header_is_two_trees_one_stop_two_hops():
    # Fig. 5.3: P at N1; S1, S2 at N2; S6 at N3; S3, S4 at N4; S5 at N5.
    topo = build_topology("fig5.3", [(1, 2), (1, 5), (2, 3), (3, 4)], range(1, 6),
                          {1: 1, 2: 2, 3: 1, 4: 2, 5: 1})
    pub, t1, t2, t6, t3, t4, t5 = "h1", "h2", "h3", "h4", "h5", "h6", "h7"

    def e(a, b):
        return edge_id(topo, a, b)

    vt1 = {e("s1", "s2"), e("s1", "s5"), e("s2", t1), e("s2", t2)}
    vt2 = {e("s3", "s4"), e("s4", t3), e("s4", t4), e("s3", t6)}
    d, counts = counts_of(topo, Fixed([vt1, vt2]), pub, {t1, t2, t3, t4, t5})
    assert counts == (2, 1, 2)  # "the two VTs, along with a stop and two hop labels"
    assert sum(counts) == d.encoding.header_entries == 5


@pytest.mark.skipif(not os.environ.get("STACKCAST_ZOO_DIR"), reason="STACKCAST_ZOO_DIR unset")
def test_rows_label_counts_add_up_to_header_entries():
    spec = parse_spec_dict({
        "experiment": {"name": "counts", "notifications": 6, "seeds": [1]},
        "grid": {"topology": ["zoo:Litnet"], "strategy": ["vt-freq-relation", "source-routed"],
                 "receivers": ["clustered:scenario=nearby,churn=0"]},
        "strategy_params": {"vt-freq-relation": {"max_rules": 40}}})
    rows = {c.strategy: run_cell(c).to_pylist() for c in spec.cells()}
    for strategy_rows in rows.values():
        for r in strategy_rows:
            assert sum(r[f] for f in HEADER_LABEL_FIELDS) == r["header_entries"] > 0
    # source routing: hop labels only; freq-relation maps its trees: tree labels appear
    assert all(r["header_hop_labels"] == r["header_entries"] for r in rows["source-routed"])
    assert any(r["header_tree_labels"] > 0 for r in rows["vt-freq-relation"])


def test_strategies_without_typed_labels_report_zero():
    spec = parse_spec_dict({
        "experiment": {"name": "zero", "notifications": 3, "seeds": [1]},
        "grid": {"topology": ["jellyfish:switches=16,degree=3,seed=1"],
                 "strategy": ["switch-bitmask"], "receivers": ["uniform:percent=30"]}})
    for r in run_cell(spec.cells()[0]).to_pylist():
        assert r["header_entries"] > 0
        assert all(r[f] == 0 for f in HEADER_LABEL_FIELDS)
