"""Seed 001's regular and random trees."""

from __future__ import annotations

import networkx as nx
import pytest

from topologies.registry import SpecError
from topologies.specs import load_topology


def test_regular_tree_has_seed001_sizes() -> None:
    t = load_topology("regulartree:depth=4,fanout=5,hosts=7")
    assert (len(t.switches), len(t.hosts)) == (156, 875)
    assert nx.is_tree(t.switch_graph)
    assert t.degree("s1") == 5 and len(t.hosts_of("s156")) == 7


def test_random_tree_respects_ports_and_is_reproducible() -> None:
    a = load_topology("randomtree:switches=60,ports=8,hosts=200,seed=3")
    b = load_topology("randomtree:switches=60,ports=8,hosts=200,seed=3")
    assert a.summary() == b.summary()
    assert nx.is_tree(a.switch_graph) and len(a.hosts) == 200
    assert a.max_switch_ports <= 8


def test_random_tree_rejects_too_many_hosts() -> None:
    with pytest.raises(SpecError, match="do not fit"):
        load_topology("randomtree:switches=3,ports=4,hosts=20")
