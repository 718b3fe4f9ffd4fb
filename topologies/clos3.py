"""Elmo's three-tier Clos datacenter: ``elmo:pods=12,leaves=48,hosts=48,spines=4,cores=4``.

The evaluation topology of Elmo (Shahbaz et al., "Elmo: Source Routed
Multicast for Public Clouds", SIGCOMM 2019, §5.1): a multi-rooted three-tier
Clos network of 12 pods, each with 48 leaf switches of 48 hosts, 27,648
hosts in all. The paper's text gives the pods, leaves and hosts; the spine
and core counts come from Elmo's numerical model (Elmo-MCast/numerical-evals
``simulation/data.py`` ``Data.__init__``: ``num_spines_per_pod=4``,
``num_cores=4``; ``fab_data.py`` runs with the same values), which sizes the
core's downstream p-rule as one bit per pod (``core_bits = num_pods``).

Wiring (as in the fat-tree of :mod:`topologies.generators`, plane by plane):

- every leaf links to every spine of its pod;
- the cores form ``spines`` planes of ``cores / spines`` cores each; spine
  ``j`` of every pod links to the cores of plane ``j`` (core ``c`` is in
  plane ``c // (cores / spines)``), so a core has exactly one port per pod,
  the one-bit-per-pod core p-rule of Elmo §3.2;
- every leaf has ``hosts`` hosts.

Switch order (which fixes ``s1..sN``): the cores, then per pod its spines
followed by its leaves; hosts ``h1..hM`` follow the leaves in that order, so
host ``h(1 + (pod * leaves + leaf) * hosts + i)`` is host ``i`` of that leaf
(numerical-evals' host numbering, ``placement.py``). Ports are the model's
(neighbours sorted by name): on a leaf the hosts take ports 1..hosts and the
spines the next ones; on a spine the cores come first, then the leaves.

``node_attrs``: ``role`` ("core", "spine", "leaf"), ``index`` (0-based within
the pod, or among the cores) and ``pod`` (spines and leaves, 0-based); spines
and cores also carry ``plane``.

References
----------
Elmo SIGCOMM 2019 §5.1 (27,648 hosts: 12 pods x 48 leaves x 48 hosts), §3.2
(p-rules per layer, one bit per pod at the core); Elmo-MCast/numerical-evals
``simulation/data.py`` (4 spines per pod, 4 cores), ``simulation/placement.py``
(host numbering).
"""

from __future__ import annotations

from dataclasses import dataclass

from topologies.model import LinkDefaults, Topology, build_topology
from topologies.registry import check
from topologies.specs import TopologySize, register_topology


@dataclass(frozen=True, slots=True, kw_only=True)
class Clos3Params:
    """Parameters of ``elmo:pods=12,leaves=48,hosts=48,spines=4,cores=4``.

    Parameters
    ----------
    pods : int
        Pods (>= 1); Elmo: 12.
    leaves : int
        Leaf (top-of-rack) switches per pod (>= 1); Elmo: 48.
    hosts : int
        Hosts per leaf (>= 0); Elmo: 48.
    spines : int
        Spine switches per pod, one per plane (>= 1); numerical-evals: 4.
    cores : int
        Core switches, a multiple of ``spines`` (``cores / spines`` per
        plane); numerical-evals: 4.
    """

    pods: int = 12
    leaves: int = 48
    hosts: int = 48
    spines: int = 4
    cores: int = 4

    def __post_init__(self) -> None:
        for name in ("pods", "leaves", "spines", "cores"):
            value = getattr(self, name)
            check(value >= 1, f"{name} must be an integer >= 1; got {value}")
        check(self.hosts >= 0, f"hosts must be an integer >= 0; got {self.hosts}")
        check(self.cores % self.spines == 0,
              f"cores must be a multiple of spines ({self.spines}: one plane of cores per "
              f"spine of a pod); got {self.cores}")

    @property
    def cores_per_plane(self) -> int:
        return self.cores // self.spines


def _clos3_size(p: Clos3Params) -> TopologySize:
    hosts = p.pods * p.leaves * p.hosts
    links = p.pods * p.leaves * p.spines + p.pods * p.cores + hosts
    return TopologySize(p.cores + p.pods * (p.spines + p.leaves), hosts, links)


@register_topology("elmo", Clos3Params,
                   "Elmo's three-tier Clos (pods x leaves x hosts, spines per pod, cores); "
                   "Elmo SIGCOMM 2019 §5.1",
                   estimate=_clos3_size)
def build_clos3(params: Clos3Params, defaults: LinkDefaults, spec: str) -> Topology:
    """Build the three-tier Clos described in the module docstring."""
    per_plane = params.cores_per_plane
    order: list[tuple] = []
    attrs: dict[tuple, dict[str, object]] = {}
    edges: list[tuple[tuple, tuple]] = []
    hosts: dict[tuple, int] = {}
    for c in range(params.cores):
        node = ("core", c)
        order.append(node)
        attrs[node] = {"role": "core", "index": c, "plane": c // per_plane}
    for pod in range(params.pods):
        spines = [("spine", pod, j) for j in range(params.spines)]
        leaves = [("leaf", pod, i) for i in range(params.leaves)]
        for j, spine in enumerate(spines):
            order.append(spine)
            attrs[spine] = {"role": "spine", "pod": pod, "index": j, "plane": j}
            edges.extend((("core", j * per_plane + i), spine) for i in range(per_plane))
        for i, leaf in enumerate(leaves):
            order.append(leaf)
            attrs[leaf] = {"role": "leaf", "pod": pod, "index": i}
            edges.extend((spine, leaf) for spine in spines)
            hosts[leaf] = params.hosts
    return build_topology(name=spec, switch_edges=edges, switch_order=order,
                          hosts_per_switch=hosts, defaults=defaults, node_attrs=attrs)
