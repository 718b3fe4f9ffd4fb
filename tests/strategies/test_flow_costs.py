"""The global optimizer's costs (Alg. 5 and 6) and the unlimited flow set equal their
references.

:func:`traffic_cost` and :func:`history_cost` compute each port's union once per call
and cut a path's input space to the members related to the merge node; the sums must
be the same floats as :func:`traffic_cost_reference` and :func:`history_cost_reference`
give (seed 001 §5.4), on random tables, nodes, input spaces, histories and links.
:func:`normalize_flows` (Algorithm 1's fixpoint, §4.2) equals its reference on random
logical flow sets (port sets and port counters, empty ones included).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from strategies.prefix_filter.dz import normalize
from strategies.prefix_filter.flow_limits import (
    PathInfo,
    PrefixTable,
    history_cost,
    history_cost_reference,
    normalize_flows,
    normalize_flows_reference,
    traffic_cost,
    traffic_cost_reference,
)

DZ = st.text(alphabet="01", max_size=6)
FLOWS = st.dictionaries(DZ, st.frozensets(st.integers(1, 5), min_size=1, max_size=3),
                        min_size=1, max_size=14)
SPACE = st.lists(DZ, max_size=10).map(normalize)
EVENTS = st.lists(st.text(alphabet="01", min_size=8, max_size=8), max_size=30).map(
    lambda evs: tuple(sorted(evs)))
PATH = st.builds(PathInfo, SPACE, SPACE, st.sampled_from([0.0, 1.0, 250.0, 1000.0]),
                 EVENTS, st.sampled_from([1.0, 0.5, 0.1]))
LINKS = st.dictionaries(st.integers(1, 5), st.integers(0, 9), max_size=5)


def _nodes(table: PrefixTable, extra: str) -> list[str]:
    return sorted(set(table.merge_points()) | set(table.keys[:3]) | {extra, ""})


@settings(max_examples=300)
@given(FLOWS, st.lists(PATH, max_size=5), LINKS, DZ)
def test_traffic_cost_equals_the_reference(flows, paths, links, extra) -> None:
    table = PrefixTable(flows)
    for node in _nodes(table, extra):
        got = traffic_cost(table, node, paths, links)
        assert got == traffic_cost_reference(table, node, paths, links), node


@settings(max_examples=300)
@given(FLOWS, st.lists(PATH, max_size=5), LINKS, DZ)
def test_history_cost_equals_the_reference(flows, paths, links, extra) -> None:
    table = PrefixTable(flows)
    for node in _nodes(table, extra):
        got = history_cost(table, node, paths, links)
        assert got == history_cost_reference(table, node, paths, links), node


LOGICAL = st.dictionaries(DZ, st.one_of(
    st.frozensets(st.integers(1, 5), max_size=3),
    st.dictionaries(st.integers(1, 5), st.integers(1, 3), max_size=3)), max_size=20)


@settings(max_examples=400)
@given(LOGICAL)
def test_normalize_flows_equals_the_reference(logical) -> None:
    got, ref = normalize_flows(logical), normalize_flows_reference(logical)
    assert got.flows == ref.flows
    assert got.keys == ref.keys
    assert list(got.flows) == ref.keys
