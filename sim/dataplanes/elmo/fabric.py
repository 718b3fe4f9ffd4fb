"""The three-tier Clos as Elmo sees it: layers, pods, and which bit means which port.

Elmo (Shahbaz et al., "Elmo: Source Routed Multicast for Public Clouds",
SIGCOMM 2019, §3.1-3.2) relies on the symmetry of a multi-rooted Clos: every
leaf (ToR) of a pod links to every spine of that pod, so the spines of a pod
are one *logical spine* downstream (a downstream spine p-rule names the pod,
not a spine), and a packet only climbs as high as it must. This module reads
that structure off a :class:`~topologies.model.Topology` once:

- ``elmo:pods=..,leaves=..,hosts=..`` (:mod:`topologies.clos3`): ``node_attrs``
  role ``core`` / ``spine`` / ``leaf`` with ``pod``;
- ``fattree:k=K`` (:mod:`topologies.generators`): role ``aggregation`` is a
  spine and ``edge`` a leaf.

Bit numbering (what every bitmap of :mod:`sim.dataplanes.elmo.codec` means).
A switch's *down ports* are its ports towards the tier below (a leaf's hosts,
a spine's leaves, a core's spines) and its *up ports* those towards the tier
above (a leaf's spines, a spine's cores), each in port order. Bit ``i`` (LSB
= 0) of a downstream bitmap is the ``i``-th down port; bit ``i`` of an
upstream bitmap the ``i``-th up port. In the switch's *complete* bitmap (the
one its replication uses) the down bits come first and the up bits follow at
offset ``down_bits`` of its layer (the concatenation of Elmo's P4_14
``elmo_upstream_leaf_p_rule_act``, Elmo-MCast/p4-programs
``elmo_leaf_switch.p4``, with the up and down halves swapped so that the
downstream-only p-rules need no shift).

Identifiers (the ids of shared p-rules): a leaf's id is its index among all
leaves in switch order; a downstream spine p-rule names a pod (0-based);
cores need none (the core p-rule is not shared, Elmo §3.2).

Requirements, checked by :func:`elmo_fabric` (a :class:`~topologies.registry.SpecError`
names the first violation): every switch has a role; hosts hang off leaves
only; a leaf links only to spines of its pod, a spine only to leaves of its
pod and to cores, a core only to spines; all spines of a pod list the pod's
leaves in the same port order; every core's down ports, mapped to pods, are
in the same order (the one-bit-per-pod core p-rule of Elmo §3.2 then means
the same on every core the multipath choice may pick).

References
----------
Elmo SIGCOMM 2019 §3.1 (Clos symmetry, logical spines), §3.2 (p-rules per
layer); Elmo-MCast/p4-programs ``elmo_leaf_switch.p4``,
``elmo_spine_switch.p4``, ``elmo_core_switch.p4`` (bitmap widths per tier);
Elmo-MCast/numerical-evals ``simulation/data.py`` (leaf and pod bitmaps).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from topologies.model import Topology
from topologies.registry import SpecError

#: Topology roles -> Elmo tier (fattree's aggregation/edge are spine/leaf).
ROLE_TIER = {"core": "core", "spine": "spine", "leaf": "leaf",
             "aggregation": "spine", "edge": "leaf"}
#: Tier codes carried by the ``elmo_switch`` rule (``role`` parameter).
ROLE_CORE, ROLE_SPINE, ROLE_LEAF = 1, 2, 3
TIER_CODE = {"core": ROLE_CORE, "spine": ROLE_SPINE, "leaf": ROLE_LEAF}

NEEDS = ("a three-tier Clos with core/spine/leaf roles (elmo:pods=P,leaves=L,hosts=H "
         "or fattree:k=K)")


@dataclass(frozen=True, slots=True)
class SwitchPorts:
    """One switch's tier, its Elmo id, and its down and up ports in bit order."""

    tier: str
    elmo_id: int
    down: tuple[int, ...]
    up: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class ElmoFabric:
    """A topology read as Elmo's three tiers (see the module docstring).

    Attributes
    ----------
    topology : Topology
    switches : mapping
        Switch -> :class:`SwitchPorts`.
    leaves : tuple of str
        All leaves; the index is the leaf's Elmo id.
    pod_of : mapping
        Spine or leaf -> its pod.
    pod_spines, pod_leaves : tuple of tuple of str
        Per pod its spines (switch order) and its leaves in spine down-port
        order (bit ``i`` of a pod bitmap is ``pod_leaves[pod][i]``).
    leaf_bit : mapping
        Leaf -> its bit in a pod bitmap.
    host_bit : mapping
        Host -> its bit in its leaf's downstream bitmap.
    cores : tuple of str
    core_pods : tuple of int
        The pod behind each down bit of a core (the same on every core).
    down_bits, up_bits : mapping
        Tier -> bitmap widths: the largest number of down / up ports of a
        switch of that tier (at least 1).
    leaf_id_bits, pod_id_bits : int
        Widths of the leaf and pod identifiers.
    """

    topology: Topology
    switches: Mapping[str, SwitchPorts]
    leaves: tuple[str, ...]
    pod_of: Mapping[str, int]
    pod_spines: tuple[tuple[str, ...], ...]
    pod_leaves: tuple[tuple[str, ...], ...]
    leaf_bit: Mapping[str, int]
    host_bit: Mapping[str, int]
    cores: tuple[str, ...]
    core_pods: tuple[int, ...]
    down_bits: Mapping[str, int]
    up_bits: Mapping[str, int]
    leaf_id_bits: int
    pod_id_bits: int

    @property
    def pods(self) -> int:
        return len(self.pod_leaves)

    def leaf_of(self, host: str) -> str:
        """The leaf ``host`` hangs off."""
        return self.topology.host_switch(host)

    def leaf_id(self, leaf: str) -> int:
        return self.switches[leaf].elmo_id


def _bits(count: int) -> int:
    """Identifier width for ``count`` values (at least 1 bit)."""
    return max(1, (count - 1).bit_length())


def _tier(topology: Topology, switch: str) -> str:
    role = topology.node_attrs.get(switch, {}).get("role")
    tier = ROLE_TIER.get(role) if isinstance(role, str) else None
    if tier is None:
        raise SpecError(f"Elmo needs {NEEDS}; switch {switch} of {topology.name!r} has role "
                        f"{role!r}")
    return tier


@lru_cache(maxsize=16)
def elmo_fabric(topology: Topology) -> ElmoFabric:
    """Read ``topology`` as Elmo's three tiers (cached per topology object).

    Raises
    ------
    SpecError
        If the topology is not a three-tier Clos of the required shape; the
        message names the first switch or link that breaks it.
    """
    topo = topology
    tier = {s: _tier(topo, s) for s in topo.switches}
    pod_of: dict[str, int] = {}
    for s, t in tier.items():
        if t != "core":
            pod = topo.node_attrs[s].get("pod")
            if not isinstance(pod, int) or pod < 0:
                raise SpecError(f"Elmo needs {NEEDS}; {t} {s} of {topo.name!r} has no pod")
            pod_of[s] = pod
    above = {"leaf": "spine", "spine": "core", "core": None}
    below = {"leaf": None, "spine": "leaf", "core": "spine"}
    ports: dict[str, tuple[list[int], list[int]]] = {}
    for s in topo.switches:
        down: list[int] = []
        up: list[int] = []
        for port, info in topo.ports(s).items():
            nb = info.neighbor
            if topo.is_host(nb):
                if tier[s] != "leaf":
                    raise SpecError(f"Elmo needs {NEEDS}; host {nb} hangs off {tier[s]} {s}")
                down.append(port)
                continue
            nt = tier[nb]
            same_pod = nt == "core" or tier[s] == "core" or pod_of[nb] == pod_of[s]
            if nt == above[tier[s]] and same_pod:
                up.append(port)
            elif nt == below[tier[s]] and same_pod:
                down.append(port)
            else:
                raise SpecError(f"Elmo needs {NEEDS}; link {s}-{nb} joins a {tier[s]} and a "
                                f"{nt} of {topo.name!r} that Elmo's layers do not connect")
        ports[s] = (down, up)
    pods = 1 + max(pod_of.values(), default=-1)
    pod_spines = [[s for s in topo.switches if tier[s] == "spine" and pod_of[s] == p]
                  for p in range(pods)]
    pod_leaves: list[tuple[str, ...]] = []
    for p in range(pods):
        members = tuple(s for s in topo.switches if tier[s] == "leaf" and pod_of[s] == p)
        orders = {tuple(topo.ports(sp)[port].neighbor for port in ports[sp][0])
                  for sp in pod_spines[p]}
        if len(orders) > 1 or (orders and set(next(iter(orders))) != set(members)):
            raise SpecError(f"Elmo needs {NEEDS}; the spines of pod {p} of {topo.name!r} do not "
                            "all link to every leaf of the pod")
        pod_leaves.append(next(iter(orders)) if orders else members)
    cores = tuple(s for s in topo.switches if tier[s] == "core")
    core_orders = {tuple(pod_of[topo.ports(c)[port].neighbor] for port in ports[c][0])
                   for c in cores}
    if len(core_orders) > 1:
        raise SpecError(f"Elmo needs {NEEDS}; the cores of {topo.name!r} reach the pods in "
                        "different port orders")
    leaves = tuple(s for s in topo.switches if tier[s] == "leaf")
    leaf_index = {leaf: i for i, leaf in enumerate(leaves)}
    switches = {}
    for s in topo.switches:
        elmo_id = (leaf_index[s] if tier[s] == "leaf" else
                   pod_of[s] if tier[s] == "spine" else cores.index(s))
        switches[s] = SwitchPorts(tier[s], elmo_id, tuple(ports[s][0]), tuple(ports[s][1]))
    widths_down = {t: max([1] + [len(p.down) for p in switches.values() if p.tier == t])
                   for t in ("leaf", "spine", "core")}
    widths_up = {t: max([1] + [len(p.up) for p in switches.values() if p.tier == t])
                 for t in ("leaf", "spine", "core")}
    host_bit = {topo.ports(leaf)[port].neighbor: i for leaf in leaves
                for i, port in enumerate(switches[leaf].down)}
    return ElmoFabric(
        topology=topo, switches=switches, leaves=leaves, pod_of=pod_of,
        pod_spines=tuple(tuple(s) for s in pod_spines), pod_leaves=tuple(pod_leaves),
        leaf_bit={leaf: i for p in pod_leaves for i, leaf in enumerate(p)}, host_bit=host_bit,
        cores=cores, core_pods=next(iter(core_orders)) if core_orders else (),
        down_bits=widths_down, up_bits=widths_up, leaf_id_bits=_bits(len(leaves)),
        pod_id_bits=_bits(pods))
