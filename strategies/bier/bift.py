"""The control plane's BIER state: each BFR's BIFT and each BFER's local-delivery groups.

BIFT (RFC 8279 §6.4): for every BFR-id ``i`` the BFR-NBR towards BFER ``i``
and the F-BM of that neighbour, the OR of the bits of all BFERs of the same
set reached through it. Routing is shortest paths (the BIRT of §6.3 from the
topology's IGP): the next hop from switch ``x`` towards BFER ``e`` is the
parent of ``x`` in the BFS tree rooted at ``e``, ties to the lowest name
(:func:`sim.dataplanes.trees.bfs_next_hops`; the next hops
:func:`sim.dataplanes.trees.next_hop_port` and unicast use, so every switch
agrees on one path per BFER). A BFER's own bit is a ``decap`` entry whose
F-BM is that bit. As P4-BIER installs it (its
Controller-Implementation/libs/controller/BierController.py builds one
``bift`` entry per BFR-id with the neighbour's F-BM), the table holds one
entry per (set, bit position) with a BFER reachable from the switch; the
entries of one table reference one parameter tuple per (set, neighbour).

Local delivery (RFC 8279 §6.1: a BFER hands the packet to the multicast flow
overlay, which knows its local receivers; in P4-BIER the decapsulated IPv4
packet hits ``ipv4_mc`` and its multicast group): per receiver set a group
id ``g`` and, on every BFER with receivers, one ``local_group`` entry for
the group MAC of ``g`` and one multicast group ``g`` with a replica per
receiving host (port order). This part is receiver-scoped.

References
----------
RFC 8279 §6.3-6.5; uni-tue-kn/p4-bier Controller-Implementation/libs/controller/
BierController.py (``build_bift``: per BFR-id its F-BM and next hop).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from sim.dataplanes.bier.codec import bift_id
from sim.dataplanes.bier.domain import BierDomain
from sim.dataplanes.bier.reference import (
    BIFT,
    BIFT_PRIORITY,
    CONTINUE_SESSION,
    DECAP,
    FORWARD,
    KEY_BIFT_ID,
    KEY_DST,
    KEY_REMAINING,
    LOCAL_GROUP,
    SET_LOCAL_GROUP,
)
from sim.dataplanes.caches import Store
from sim.dataplanes.control_state import (
    CloneSession,
    ControlState,
    Exact,
    MulticastGroup,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    Ternary,
    derived_state,
)
from sim.dataplanes.derived_configs import ConfigExtension, derived_configs
from sim.dataplanes.packet import group_mac
from sim.dataplanes.trees import bfs_next_hops, host_ports
from topologies.model import Topology

#: P4's multicast group ids are 16-bit (v1model ``mcast_grp``); 0 means none.
MAX_GROUP_ID = 0xFFFF


def next_hop_ports(topology: Topology, domain: BierDomain) -> np.ndarray:
    """``[b, x]``: the port of switch ``x`` towards the BFER with BFR-id ``b + 1``
    (0 on that BFER itself, -1 where it cannot be reached)."""
    sid = {sw: i for i, sw in enumerate(topology.switches)}
    out = np.full((len(domain.bfers), len(topology.switches)), -1, np.int64)
    for b, sw in enumerate(domain.bfers):
        parent, port, _ = bfs_next_hops(topology, sid[sw])
        row = np.where(parent < 0, -1, port)
        row[sid[sw]] = 0
        out[b] = row
    return out


def bift_tables(topology: Topology, domain: BierDomain, subdomain: int
                ) -> list[tuple[TableEntry, ...]]:
    """Each switch's ``bift`` entries (topology order), in BFR-id order (module docstring)."""
    bsl = domain.bsl_bits
    n_bfers = len(domain.bfers)
    ids = [Exact(bift_id(bsl, subdomain, si)) for si in range(domain.sets)]
    bits = [Ternary(1 << k, (2 << k) - 1) for k in range(min(bsl, n_bfers))]
    matches = [((KEY_BIFT_ID, ids[b // bsl]), (KEY_REMAINING, bits[b % bsl]))
               for b in range(n_bfers)]
    ports = next_hop_ports(topology, domain)
    out = []
    for x in range(len(topology.switches)):
        column = ports[:, x].tolist()
        fbm: dict[tuple[int, int], int] = {}
        for b, port in enumerate(column):
            if port >= 0:
                key = (b // bsl, port)
                fbm[key] = fbm.get(key, 0) | 1 << (b % bsl)
        params = {key: (("fbm", mask), ("port", key[1])) if key[1] else (("fbm", mask),)
                  for key, mask in fbm.items()}
        out.append(tuple(
            TableEntry(BIFT, matches[b], FORWARD if port else DECAP, params[(b // bsl, port)],
                       BIFT_PRIORITY)
            for b, port in enumerate(column) if port >= 0))
    return out


def add_bift(builder: StateBuilder, topology: Topology, domain: BierDomain,
             subdomain: int) -> None:
    """Every switch's BIFT and its continuation clone session (to its first port; the
    clone recirculates and never leaves)."""
    for sw, entries in zip(topology.switches, bift_tables(topology, domain, subdomain),
                           strict=True):
        for entry in entries:
            builder.add_entry(sw, entry)
        ports = topology.ports(sw)
        if ports:
            builder.add_clone_session(sw, CONTINUE_SESSION, min(ports))


def bift_state(topology: Topology, domain: BierDomain, subdomain: int) -> ControlState:
    """What :func:`add_bift` adds to an empty :class:`StateBuilder`, built directly
    (one ``SwitchConfig`` per switch, no per-entry duplicate checks: a BFR-id has one
    entry per switch by construction)."""
    configs = {}
    for sw, entries in zip(topology.switches, bift_tables(topology, domain, subdomain),
                           strict=True):
        ports = topology.ports(sw)
        configs[sw] = SwitchConfig(
            tables={BIFT: entries} if entries else {},
            clone_sessions={CONTINUE_SESSION: CloneSession(CONTINUE_SESSION, min(ports))}
            if ports else {})
    return ControlState(switches=configs)


def local_entry(group: int) -> TableEntry:
    """The ``local_group`` entry of group ``group``: its group MAC -> ``set_local_group``."""
    return TableEntry(LOCAL_GROUP, ((KEY_DST, Exact(group_mac(group))),), SET_LOCAL_GROUP,
                      (("group", group),))


def _receiver_ports(topology: Topology, group: int, receivers: Iterable[str]
                    ) -> dict[str, list[int]]:
    """Each BFER with receivers -> the ports towards them (checks the group id)."""
    if not 0 < group <= MAX_GROUP_ID:
        raise ValueError(f"BIER local group id {group} does not fit 16 bits (1..{MAX_GROUP_ID})")
    by_switch: dict[str, list[int]] = {}
    attached = host_ports(topology)
    for host in receivers:
        sw, port = attached[host]
        got = by_switch.get(sw)
        if got is None:
            by_switch[sw] = [port]
        else:
            got.append(port)
    return by_switch


def add_local_groups(builder: StateBuilder, topology: Topology, group: int,
                     receivers: Iterable[str]) -> None:
    """Group ``group`` on every BFER with receivers: replicas to its receiving hosts."""
    by_switch = _receiver_ports(topology, group, receivers)
    entry = local_entry(group)
    for sw in sorted(by_switch, key=topology.switch_id):
        builder.add_group(sw, group, sorted(by_switch[sw]))
        builder.add_entry(sw, entry)


def local_group_state(topology: Topology, base: ControlState, group: int,
                      receivers: Iterable[str], configs: Store[tuple[Any, ...], Any],
                      publisher_info: Mapping[str, Any]) -> ControlState:
    """``base`` plus :func:`add_local_groups` of one receiver set, built directly.

    Each BFER's configuration is its base configuration with the ``local_group``
    rule and the group (:class:`~sim.dataplanes.derived_configs.ConfigExtension`),
    kept in ``configs`` (:func:`~sim.dataplanes.derived_configs.derived_configs` of
    ``base``) under (base configuration, group, ports): installs that
    give a BFER the same receiving ports share one object (skipped by control-write
    counting and the lookup memos), and those of one BFER share one table mapping
    (:class:`~sim.dataplanes.derived_configs.ConfigExtension`), so comparing two of
    them compares their groups only. Equal to adding the rules
    to a builder on ``base`` (``tests/strategies/test_tree_groups.py``).

    Raises
    ------
    ValueError
        If the group id does not fit 16 bits, or a BFER's base configuration has
        ``local_group`` rules or the group already.
    """
    by_switch = _receiver_ports(topology, group, receivers)
    made = derived_configs(base, configs)
    kept_of = made.kept
    changed = {}
    for sw, ports in by_switch.items():
        ports.sort()
        kept = kept_of[sw]
        key = ("bier local", kept, group, *ports)
        config = made.get(key)
        if config is None:
            extension_key = ("bier local rule", kept, group)
            extension = made.get(extension_key)
            if extension is None:
                extension = made.put(extension_key, ConfigExtension(
                    kept.obj, {LOCAL_GROUP: (local_entry(group),)}))  # type: ignore[arg-type]
            config = made.put(key, extension.config(
                {group: MulticastGroup(group, tuple((p, 1) for p in ports))}))
        changed[sw] = config
    return derived_state(base, changed, publisher_info)
