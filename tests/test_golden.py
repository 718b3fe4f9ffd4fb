"""Golden control states: one small fixed case per data-plane family.

Each case installs one strategy on a small fixed topology and workload and
exports every switch's :class:`~sim.dataplanes.control_state.ControlState`
configuration with :func:`~sim.dataplanes.control_state.to_runtime_json` (the
p4lang/tutorials ``sN-runtime.json`` shape the HIL writer also uses). The text
is compared exactly with ``tests/golden/<family>-<strategy>.json``; a change
in tables, multicast groups or clone sessions shows as a diff. Regenerate,
after checking the diff is intended, with::

    python -m pytest tests/test_golden.py --regen-golden
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from sim.dataplanes.control_state import ControlState, to_runtime_json
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import STRATEGIES, Knowledge, load_builtin_strategies, make_strategy
from topologies.model import Topology
from topologies.specs import load_topology

JELLYFISH = "jellyfish:switches=6,degree=3,seed=1"  # one host per switch
FABRIC = "fabric:pods=2,racks=2,hosts=2,planes=2,spines=2"  # datacenter virtual trees
CONTENT = "content:subs=8,publishers=2,subscribers=4,dims=2,bits=8,width=0.25"


@dataclass(frozen=True)
class Case:
    family: str
    strategy: str
    params: dict[str, Any] = field(default_factory=dict)
    topology: str = JELLYFISH
    receivers: str | None = None  # a receiver model; None: fixed receiver sets

    @property
    def file(self) -> str:
        return f"{self.family}-{self.strategy}.json"


CASES = [
    Case("source_routing", "switch-bitmask"),
    Case("neighbor_labels", "hops"),
    Case("virtual_tree", "tree"),
    Case("virtual_tree", "vt-clusters", {"max_rules": 6}, "jellyfish:switches=12,degree=3,seed=1",
         "clustered"),
    Case("virtual_tree", "path", {"max_rules": 3}, FABRIC, "frequency:subscribers=30"),
    Case("l2", "multicast"),
    Case("alm", "alm-fork"),
    Case("bier", "bier"),
    Case("elmo", "elmo", {"leaf_prules": 1, "leaf_srules": 2}, "elmo:pods=2,leaves=2,hosts=2"),
    Case("prefix_filter", "pleroma-dz", receivers=CONTENT),
    Case("range_filter", "range-boxes", receivers=CONTENT),
    Case("camus", "camus-bdd", receivers=CONTENT),
    Case("kundel", "kundel-bitmask", receivers=CONTENT),
]


def fixed_receiver_sets(topology: Topology) -> Knowledge:
    """Two publishers (the first two hosts), each with two receiver sets and two stable ones."""
    hosts = sorted(topology.hosts)
    pubs = hosts[:2]
    sets = {p: (frozenset(h for h in hosts[1::2] if h != p), frozenset(h for h in hosts if h != p))
            for p in pubs}
    stable = {p: frozenset([h for h in hosts if h != p][:2]) for p in pubs}
    return Knowledge(receiver_sets=sets, stable=stable)


def install(case: Case) -> ControlState:
    topology = load_topology(case.topology)
    if case.receivers is None:
        knowledge = fixed_receiver_sets(topology)
    else:
        population = receiver_model(case.receivers).population(
            topology, child_rng(1, "population"))
        knowledge = Knowledge(population=population, seed=1)
    return make_strategy(case.strategy, case.params).install(topology, knowledge)


def dumps(value: Any, depth: int = 0) -> str:
    """JSON with sorted keys, one line per table entry / group / session (readable diffs)."""
    if depth >= 3 or not isinstance(value, dict | list) or not value:
        return json.dumps(value, sort_keys=True)
    pad, inner = " " * depth, " " * (depth + 1)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {dumps(v, depth + 1)}" for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    return "[\n" + ",\n".join(inner + dumps(v, depth + 1) for v in value) + f"\n{pad}]"


def runtime_json(state: ControlState) -> str:
    doc = {switch: to_runtime_json(state.config(switch)) for switch in sorted(state.switches)}
    return dumps(doc) + "\n"


def test_every_family_has_a_golden_case():
    load_builtin_strategies()
    import strategies.virtual_tree.datacenter  # noqa: F401
    import strategies.virtual_tree.installation  # noqa: F401  (register the virtual-tree strategies)

    families = {STRATEGIES.get(name).dataplane for name in STRATEGIES.names()}
    assert families == {c.family for c in CASES}
    for case in CASES:
        assert STRATEGIES.get(case.strategy).dataplane == case.family, case


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.file.removesuffix(".json"))
def test_control_state_matches_golden_runtime_json(case: Case,
                                                    golden: Callable[[str, str], None]):
    state = install(case)
    assert state.entries > 0
    golden(case.file, runtime_json(state))
