"""P4Runtime priorities: ternary and range entries need priority >= 1.

P4Runtime rejects priority 0 in a table with a ternary, range or optional
match field (higher priority wins; :meth:`sim.dataplanes.control_state.SwitchConfig.lookup`
orders the same way). Every registered strategy is installed on a small
case it accepts - receiver-set knowledge on a random topology, else the
datacenter fabric with a frequency population, else a content population -
and every entry of a table with a ternary or range field must have
priority >= 1 (the entry's own fields included, so a wildcard ``Ternary(0,
0)`` counts).
"""

from __future__ import annotations

import pytest
from support.random_topologies import random_topology

from sim.dataplanes.control_state import Range, SwitchConfig, Ternary
from sim.dataplanes.seeds import child_rng
from sim.dataplanes.source_routing.reference import CHECK_BITMASK, DROP_ORIGINAL, FORWARD_PKT
from sim.workloads.receivers import receiver_model
from strategies.base import STRATEGIES, Knowledge, load_builtin_strategies, make_strategy
from strategies.source_routing.stack_strategy import check_bitmask_rules
from topologies.registry import SpecError
from topologies.specs import load_topology

load_builtin_strategies()

FABRIC = "fabric:pods=2,racks=2,hosts=2,planes=2,spines=2"
CONTENT = "content:subs=20,dims=2"


def cases():
    """(label, topology, knowledge) the strategies are tried on, in order."""
    topo = random_topology(8, 3, seed=2)
    yield "receiver sets", topo, Knowledge.for_notification(topo.hosts[0],
                                                           frozenset(topo.hosts[2:6]))
    fabric = load_topology(FABRIC)
    pop = receiver_model("frequency:subscribers=40").population(fabric, child_rng(1, "pop"))
    recv = pop.receivers(pop.publishers[0], child_rng(1, "note"))
    yield "fabric + frequency population", fabric, Knowledge(
        receiver_sets={pop.publishers[0]: (recv,)}, population=pop, seed=1)
    content = receiver_model(CONTENT).population(topo, child_rng(1, "pop"))
    view, pub = content.at(0), content.publishers[0]
    _, recv = view.draw(pub, 0, child_rng(1, "note"))
    yield "content population", topo, Knowledge(receiver_sets={pub: (recv,)}, population=view,
                                                seed=1)


def installed(name):
    """The state ``name`` installs on the first case it accepts, or a skip with the reasons."""
    reasons = []
    for label, topo, knowledge in cases():
        try:
            return make_strategy(name).install(topo, knowledge)
        except SpecError as e:
            reasons.append(f"{label}: {e}")
    pytest.skip(f"{name} installs on none of the small cases: " + "; ".join(reasons))


def has_ternary_or_range(entry) -> bool:
    return any(isinstance(m, (Ternary, Range)) for _, m in entry.match)


@pytest.mark.parametrize("name", STRATEGIES.names())
def test_ternary_and_range_entries_have_positive_priority(name):
    state = installed(name)
    bad = sorted({f"{table} / {e.action} / priority {e.priority}"
                  for config in state.switches.values()
                  for table, entries in config.tables.items()
                  if any(has_ternary_or_range(e) for e in entries)
                  for e in entries if e.priority < 1})
    assert not bad, f"{name}: entries P4Runtime would reject:\n" + "\n".join(bad)


@pytest.mark.parametrize("ports", [(1,), (1, 2, 3), (2, 5), tuple(range(1, 17))])
def test_check_bitmask_keeps_its_match_order(ports):
    """Lowest set bit -> that port's forward rule; no servable lowest bit -> drop_original."""
    rules = check_bitmask_rules(ports)
    assert all(r.priority >= 1 for r in rules)
    config = SwitchConfig(tables={CHECK_BITMASK: rules})
    values = set(range(1 << 10)) | {1 << k | 1 << j for k in range(16) for j in range(k, 16)}
    for value in sorted(values):
        hit = config.lookup(CHECK_BITMASK, value)
        low = (value & -value).bit_length()  # port of the lowest set bit, 0 for none
        if low in ports:
            assert (hit.action, hit.param("clone_port"), hit.param("bit_pos")) == \
                (FORWARD_PKT, low, 1 << (low - 1)), value
        else:
            assert hit.action == DROP_ORIGINAL, value
