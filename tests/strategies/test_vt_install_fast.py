"""Virtual-tree installs on bitmasks equal the pass-by-pass definitions.

:func:`~strategies.virtual_tree.installation.install_trees` checks a
candidate's capacity on switch bitmasks and
:func:`~strategies.virtual_tree.installation.build_state` makes each VT's
label once with its port masks remembered; ``install_trees_reference`` and
``build_state_reference`` stay the definitions (seed 000 §5.2.1, §5.4).
Property-tested on random topologies, candidate streams (connected and not,
repeated, too small, grouped), budgets, usages, group limits and label
widths that make ids or ports overflow: the same installation, the same
state, or the same error.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.virtual_tree.codec import LabelFormat
from strategies.virtual_tree.install_memo import (
    TreePorts,
    is_connected,
    link_index,
    links_connected,
)
from strategies.virtual_tree.installation import (
    Candidate,
    VirtualTree,
    build_state,
    build_state_reference,
    install_trees,
    install_trees_reference,
    steiner_links,
    steiner_links_reference,
)
from tests.support.random_topologies import random_topology


def outcome(call: Any) -> Any:
    """What ``call()`` returns, or the type and message of what it raises."""
    try:
        return call()
    except Exception as err:  # noqa: BLE001 (compared, not swallowed)
        return type(err), str(err)


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(2, 14))
    topology = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)))
    switches = topology.switches
    edge_ids = sorted(lk.edge_id for lk in topology.links)
    candidates = []
    for i in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["steiner", "steiner", "steiner", "links", "repeat"]))
        if kind == "steiner":
            terms = draw(st.lists(st.sampled_from(switches), min_size=1, max_size=n))
            edges = steiner_links(topology, terms)
        elif kind == "links":  # any link set: may be disconnected or hold host links
            edges = frozenset(draw(st.lists(st.sampled_from(edge_ids), max_size=6)))
        else:
            edges = candidates[-1].edges if candidates else frozenset()
        candidates.append(Candidate(edges, f"c{i}", draw(st.sampled_from(["", "a", "b"]))))
    usage = draw(st.dictionaries(st.sampled_from(switches), st.integers(0, 4), max_size=4))
    limits = draw(st.none() | st.dictionaries(st.sampled_from(["", "a", "b"]),
                                              st.integers(-1, 4), max_size=3))
    return {
        "topology": topology, "candidates": candidates,
        "max_rules": draw(st.integers(-1, 6)), "on_full": draw(st.sampled_from(["stop", "skip"])),
        "fmt": LabelFormat(label_bits=draw(st.sampled_from([8, 16])),
                           bitmask_bits=draw(st.sampled_from([2, 3, 64]))),
        "next_id": draw(st.integers(1, 70)), "usage": usage or None,
        "min_edges": draw(st.integers(0, 3)),
        "max_trees": draw(st.none() | st.integers(0, 8)),
        "max_failures": draw(st.none() | st.integers(1, 5)), "group_limits": limits,
        "exclude": draw(st.lists(st.sampled_from([c.edges for c in candidates] or
                                                 [frozenset()]), max_size=2)),
        "shared": draw(st.booleans()),
    }


@settings(max_examples=150, deadline=None)
@given(cases())
def test_install_trees_on_bitmasks_equals_the_reference(case):
    """The same trees, ids, rejections and usage (in order), or the same error;
    with a fresh or a shared :class:`TreePorts`."""
    case = dict(case)
    topology, shared = case.pop("topology"), case.pop("shared")
    candidates = case.pop("candidates")
    memo = TreePorts(topology) if shared else None
    want = outcome(lambda: install_trees_reference(topology, iter(candidates), **case))
    got = outcome(lambda: install_trees(topology, iter(candidates), ports=memo, **case))
    assert got == want
    if not isinstance(want, tuple):
        assert list(got.usage.items()) == list(want.usage.items())


@settings(max_examples=150, deadline=None)
@given(cases(), st.data())
def test_build_state_equals_the_reference(case, data):
    """The same state (entries in the same order per table) or the same error, for
    the VTs an install selects, published or not."""
    topology, fmt, shared = case["topology"], case["fmt"], case["shared"]
    memo = TreePorts(topology)
    connected = [c for c in case["candidates"] if memo.connected(c.edges)]
    inst = install_trees_reference(topology, connected, max_rules=max(1, case["max_rules"]),
                                   on_full="skip", fmt=LabelFormat(), min_edges=case["min_edges"],
                                   next_id=case["next_id"])
    trees = inst.trees
    published = data.draw(st.none() | st.just(trees[: len(trees) // 2]))
    memo = TreePorts(topology) if shared else None
    want = outcome(lambda: build_state_reference(topology, fmt, trees, inst.next_id, published,
                                                 {"x": 1}, ports=memo and TreePorts(topology)))
    got = outcome(lambda: build_state(topology, fmt, trees, inst.next_id, published, {"x": 1},
                                      ports=memo))
    assert got == want
    if not isinstance(want, tuple):
        for sw, config in want.switches.items():
            assert {t: list(es) for t, es in got.switches[sw].tables.items()} == \
                {t: list(es) for t, es in config.tables.items()}


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**16), st.data())
def test_build_state_of_any_trees_equals_the_reference(n, seed, data):
    """Trees drawn directly: ids past the label's id field, trees without links,
    ports past the bitmask: the same state or the same error."""
    topology = random_topology(n, data.draw(st.integers(0, n)), seed)
    ids = data.draw(st.lists(st.integers(1, 80), unique=True, max_size=8))
    trees = []
    for i in ids:
        terms = data.draw(st.lists(st.sampled_from(topology.switches), max_size=n))
        edges = steiner_links(topology, terms) if len(terms) > 1 else frozenset()
        trees.append(VirtualTree(i, tuple(sorted(edges)), f"t{i}"))
    fmt = LabelFormat(label_bits=data.draw(st.sampled_from([8, 16])),
                      bitmask_bits=data.draw(st.sampled_from([2, 64])))
    memo = data.draw(st.sampled_from([None, TreePorts(topology)]))
    want = outcome(lambda: build_state_reference(topology, fmt, trees, 81))
    got = outcome(lambda: build_state(topology, fmt, trees, 81, ports=memo))
    assert got == want


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 14), st.integers(0, 2**16), st.integers(1, 3), st.data())
def test_links_connected_equals_is_connected(n, seed, hosts, data):
    """Any link list (repeats, host links, link 0 read as the last one as
    ``link_ends`` reads it): the same answer as the union-find on names."""
    topology = random_topology(n, data.draw(st.integers(0, n)), seed, hosts)
    ids = [lk.edge_id for lk in topology.links]
    edges = data.draw(st.lists(st.sampled_from([0, *ids]), max_size=12))
    want = is_connected(topology, edges)
    assert links_connected(link_index(topology), edges) == want
    assert TreePorts(topology).connected(frozenset(edges)) == is_connected(topology,
                                                                          frozenset(edges))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 16), st.integers(0, 2**16), st.data())
def test_steiner_links_equals_the_reference(n, seed, data):
    """The kept-buffer call finds the reference's links for any terminals, one
    call after another on the same graph (buffers reused)."""
    topology = random_topology(n, data.draw(st.integers(0, n)), seed)
    for _ in range(3):
        terms = data.draw(st.lists(st.sampled_from(topology.switches), max_size=n + 2))
        assert steiner_links(topology, terms) == steiner_links_reference(topology, terms)
