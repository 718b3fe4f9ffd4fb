"""Tree topologies of seed 001's evaluation: regular trees and Alg. 8's random trees.

- ``regulartree:depth=4,fanout=5,hosts=7``: a complete tree of switches with
  ``depth`` levels (the root is level 1) and ``fanout`` children per switch;
  ``hosts`` hosts on every leaf switch. The defaults give seed 001's regular
  tree: 156 switches, 125 leaves, 875 hosts. Switch order: level by level.
- ``randomtree:switches=200,ports=24,hosts=4000,seed=1``: Alg. 8: a random
  root, then every other switch (in random order) is attached to a random
  already-connected switch with a free port; then every host is attached to
  a random switch with a free port. A switch has at most ``ports`` ports
  (hosts included). Switch order: attachment order (``s1`` is the root).

References
----------
Seed 001 §6.1 (regular tree depth 4 / fanout 5 / 156 switches / 875 hosts;
Alg. 8 random trees up to 300 switches and 4202 hosts, 24 ports); digest
seed001-004 A3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topologies.model import LinkDefaults, Topology, build_topology
from topologies.registry import check
from topologies.specs import TopologySize, register_topology


@dataclass(frozen=True, slots=True, kw_only=True)
class RegularTreeParams:
    """Parameters of ``regulartree:depth=4,fanout=5,hosts=7`` (see the module docstring)."""

    depth: int = 4
    fanout: int = 5
    hosts: int = 7

    def __post_init__(self) -> None:
        check(self.depth >= 1, f"depth must be >= 1; got {self.depth}")
        check(self.fanout >= 1, f"fanout must be >= 1; got {self.fanout}")
        check(self.hosts >= 1, f"hosts must be >= 1; got {self.hosts}")
        check(self.fanout == 1 or (self.depth <= 64 and self.fanout ** (self.depth - 1) <= 100_000),
              "tree too large (> 100000 leaves)")


def _regular_tree_size(p: RegularTreeParams) -> TopologySize:
    # Levels beyond 64 only matter as "too large": cap the exponent so the
    # estimate itself stays cheap for any depth.
    levels = min(p.depth, 64)
    leaves = p.fanout ** (levels - 1)
    switches = p.depth if p.fanout == 1 else sum(p.fanout ** i for i in range(levels))
    return TopologySize(switches, leaves * p.hosts, switches - 1 + leaves * p.hosts)


@register_topology("regulartree", RegularTreeParams,
                   "complete switch tree, hosts on the leaves (seed 001 regular tree)",
                   estimate=_regular_tree_size)
def build_regular_tree(params: RegularTreeParams, defaults: LinkDefaults, spec: str
                       ) -> Topology:
    order: list[int] = [0]
    edges: list[tuple[int, int]] = []
    level = [0]
    for _ in range(params.depth - 1):
        nxt = []
        for parent in level:
            for _ in range(params.fanout):
                child = len(order)
                order.append(child)
                edges.append((parent, child))
                nxt.append(child)
        level = nxt
    hosts = {leaf: params.hosts for leaf in level}
    return build_topology(name=spec, switch_edges=edges, switch_order=order,
                          hosts_per_switch=hosts, defaults=defaults)


@dataclass(frozen=True, slots=True, kw_only=True)
class RandomTreeParams:
    """Parameters of ``randomtree:switches=200,ports=24,hosts=4000,seed=1``."""

    switches: int = 200
    ports: int = 24
    hosts: int = 4000
    seed: int = 1

    def __post_init__(self) -> None:
        check(self.switches >= 1, "switches must be >= 1")
        check(self.ports >= 2, "ports must be >= 2")
        check(self.hosts >= 1, "hosts must be >= 1")
        free = self.switches * self.ports - 2 * (self.switches - 1)
        check(self.hosts <= free, f"{self.hosts} hosts do not fit: only {free} free ports "
                                  f"on {self.switches} switches of {self.ports} ports")


@register_topology("randomtree", RandomTreeParams,
                   "random switch tree with bounded ports (seed 001 Alg. 8)",
                   estimate=lambda p: TopologySize(p.switches, p.hosts,
                                                   p.switches - 1 + p.hosts))
def build_random_tree(params: RandomTreeParams, defaults: LinkDefaults, spec: str) -> Topology:
    rng = np.random.Generator(np.random.PCG64(params.seed))
    labels = [int(x) for x in rng.permutation(params.switches)]
    used = {labels[0]: 0}
    connected = [labels[0]]
    edges = []
    for sw in labels[1:]:
        free = [c for c in connected if used[c] < params.ports]
        parent = free[int(rng.integers(len(free)))]
        edges.append((parent, sw))
        used[parent] += 1
        used[sw] = 1
        connected.append(sw)
    hosts: dict[int, int] = {}
    for _ in range(params.hosts):
        free = [c for c in connected if used[c] < params.ports]
        sw = free[int(rng.integers(len(free)))]
        used[sw] += 1
        hosts[sw] = hosts.get(sw, 0) + 1
    return build_topology(name=spec, switch_edges=edges, switch_order=connected,
                          hosts_per_switch=hosts, defaults=defaults)
