"""``pleroma-dz``'s control state from its physical flow tables (seed 001 §2.3).

Every flow ``(ingress, dz) -> ports`` of a switch becomes one entry of the
prefix filter's table: ingress port exact, the dz's IP multicast prefix as
LPM (225.128.0.0/9 or ff0e::/16), action ``forward`` to the one port or
``multicast`` to the switch's group of the ports; one group per distinct
port set of two or more ports (:class:`~strategies.content_filter.GroupAllocator`,
ids stable while a set is in use).

- :func:`state_reference`: every switch built again from its tables (the
  definition).
- :class:`IncrementalStates`: the same states, with each switch's
  configuration rebuilt only when its flows differ from those of the
  configuration it last built for the switch; an unchanged switch keeps the
  very same :class:`~sim.dataplanes.control_state.SwitchConfig` object, so
  :func:`~sim.dataplanes.control_state.count_writes`, the table-cost memo and
  the content fast path's compiled pieces skip it. A rebuilt switch reuses
  the :class:`~sim.dataplanes.control_state.TableEntry` objects of its flows
  whose action did not change. Skipping an unchanged switch skips its
  ``GroupAllocator.assign`` call, which changes nothing when the port sets
  are those of the switch's previous call (ids kept, none freed).

Equality with the reference: ``tests/strategies/test_pleroma_state.py``.

References
----------
Seed 001 §2.2 (dz in the IP destination), §2.3 (flows on the ingress port
and the dz prefix); seed 004 §2.3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sim.dataplanes.control_state import (
    EMPTY_SWITCH,
    ControlState,
    Exact,
    Lpm,
    MulticastGroup,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    mark_writes,
)
from sim.dataplanes.prefix_filter.reference import (
    FORWARD,
    KEY_PORT,
    KEY_V4,
    KEY_V6,
    MULTICAST,
    TABLE_V4,
    TABLE_V6,
)
from strategies.content_filter import GroupAllocator
from strategies.prefix_filter.dz import dz_to_ipv4, dz_to_ipv6
from strategies.prefix_filter.flow_limits import PrefixTable
from topologies.model import Topology

#: one switch's physical flows: ingress port -> flow table
SwitchTables = Mapping[int, PrefixTable]
#: a table entry's source: (ingress port, dz) -> (action, its parameter, the entry)
Made = dict[tuple[int, str], tuple[str, tuple[str, int], TableEntry]]


def _encoding(v4: bool) -> tuple[str, str, int]:
    return (TABLE_V4, KEY_V4, 32) if v4 else (TABLE_V6, KEY_V6, 128)


def _entry(table: str, key: str, width: int, v4: bool, inp: int, dz: str, action: str,
           param: tuple[str, int]) -> TableEntry:
    addr, plen = dz_to_ipv4(dz) if v4 else dz_to_ipv6(dz)
    return TableEntry(table=table, match=((KEY_PORT, Exact(inp)), (key, Lpm(addr, plen, width))),
                      action=action, params=(param,))


def _port_sets(per: SwitchTables) -> set[tuple[int, ...]]:
    return {tuple(sorted(ports)) for t in per.values() for ports in t.flows.values()
            if len(ports) > 1}


def state_reference(topology: Topology, physical: Mapping[str, SwitchTables],
                    groups: GroupAllocator, v4: bool, length: int) -> ControlState:
    """The state of ``physical`` on every switch of ``topology``, built from scratch."""
    table, key, width = _encoding(v4)
    builder = StateBuilder()
    for sw in topology.switches:
        per = physical.get(sw, {})
        ids = groups.assign(sw, _port_sets(per))
        for ports, gid in sorted(ids.items(), key=lambda kv: kv[1]):
            builder.add_group(sw, gid, ports)
        for inp in sorted(per):
            for dz in per[inp].keys:
                ports = tuple(sorted(per[inp].flows[dz]))
                action, param = ((FORWARD, ("port", ports[0])) if len(ports) == 1
                                 else (MULTICAST, ("group", ids[ports])))
                builder.add_entry(sw, _entry(table, key, width, v4, inp, dz, action, param))
    return builder.build(topology.switches, {"dz_bits": length})


@dataclass(slots=True)
class _Port:
    """What one ingress port of a switch contributed to the configuration last built."""

    flows: dict[str, frozenset[int]]  # the flows it was built from (a copy)
    sets: set[tuple[int, ...]]  # their port sets of two or more ports
    entries: list[TableEntry]  # in key order
    made: Made


class IncrementalStates:
    """:func:`state_reference`'s states, rebuilding only what changed.

    Holds, per switch, the configuration last built and, per ingress port,
    the flows it was built from and the entries they made. A switch whose
    ports all hold the same flows keeps its configuration; otherwise the
    ports whose flows changed make their entries again (reusing those whose
    action did not change) and the others keep theirs (their port sets are
    still in use, so their group ids are kept). The new configuration carries
    its write count from the old one (:func:`~sim.dataplanes.control_state.mark_writes`),
    counted on the ports that changed. One instance serves one strategy
    instance (its :class:`GroupAllocator`) and starts again when the topology
    changes.
    """

    def __init__(self) -> None:
        self._topology: Topology | None = None
        self._built: dict[str, tuple[dict[int, _Port], SwitchConfig]] = {}
        self._sorted: dict[frozenset[int], tuple[int, ...]] = {}
        #: switch configurations and ports built (for tests and benchmarks)
        self.rebuilt = 0
        self.ports_rebuilt = 0

    def build(self, topology: Topology, physical: Mapping[str, SwitchTables],
              groups: GroupAllocator, v4: bool, length: int) -> ControlState:
        """The state :func:`state_reference` builds from the same arguments."""
        if self._topology is not topology:
            self._topology = topology
            self._built = {}
        built = self._built
        configs: dict[str, SwitchConfig] = {}
        empty: dict[int, _Port] = {}
        for sw in topology.switches:
            per = physical.get(sw, {})
            ports, config = built.get(sw, (empty, None))
            if config is not None and len(per) == len(ports) and all(
                    (b := ports.get(inp)) is not None and t.flows == b.flows
                    for inp, t in per.items()):
                configs[sw] = config
                continue
            ports, new = self._switch(sw, per, groups, v4, ports, config or EMPTY_SWITCH)
            built[sw] = (ports, new)
            configs[sw] = new
            self.rebuilt += 1
        return ControlState(switches=configs, publisher_info={"dz_bits": length})

    def _switch(self, sw: str, per: SwitchTables, groups: GroupAllocator, v4: bool,
                old: dict[int, _Port], before: SwitchConfig
                ) -> tuple[dict[int, _Port], SwitchConfig]:
        changed = [inp for inp, t in per.items()
                   if (b := old.get(inp)) is None or t.flows != b.flows]
        made = {inp: self._sets(per[inp].flows) for inp in changed}
        sets: set[tuple[int, ...]] = set()
        for inp in per:
            sets |= made[inp] if inp in made else old[inp].sets
        ids = groups.assign(sw, sets)
        ports: dict[int, _Port] = {}
        writes = 0
        for inp in sorted(per):
            if inp in made:
                was = old.get(inp)
                ports[inp] = port = self._port(inp, per[inp], made[inp], ids, v4, was)
                writes += _port_writes(was.made if was is not None else {}, port.made)
            else:
                ports[inp] = old[inp]
        for inp, was in old.items():
            if inp not in per:
                writes += len(was.made)  # deletes
        entries = [e for inp in sorted(ports) for e in ports[inp].entries]
        if not entries and not ids:
            return ports, EMPTY_SWITCH
        table = _encoding(v4)[0]
        mcast = {gid: MulticastGroup(gid, tuple((p, 1) for p in pset))
                 for pset, gid in sorted(ids.items(), key=lambda kv: kv[1])}
        config = SwitchConfig(tables={table: tuple(entries)} if entries else {},
                              multicast_groups=mcast)
        writes += _group_writes(before.multicast_groups, mcast)
        if not before.tables or before.tables.keys() == config.tables.keys():
            mark_writes(config, before, writes)
        return ports, config

    def _sets(self, flows: Mapping[str, frozenset[int]]) -> set[tuple[int, ...]]:
        order = self._sorted
        out = set()
        for ports in flows.values():
            if len(ports) > 1:
                got = order.get(ports)
                if got is None:
                    got = order[ports] = tuple(sorted(ports))
                out.add(got)
        return out

    def _port(self, inp: int, t: PrefixTable, sets: set[tuple[int, ...]],
              ids: Mapping[tuple[int, ...], int], v4: bool, was: _Port | None) -> _Port:
        self.ports_rebuilt += 1
        table, key, width = _encoding(v4)
        old = was.made if was is not None else {}
        order = self._sorted
        flows = t.flows
        made: Made = {}
        entries: list[TableEntry] = []
        for dz in t.keys:
            ports = flows[dz]
            if len(ports) == 1:
                (port,) = ports
                action, param = FORWARD, ("port", port)
            else:
                got = order.get(ports)
                if got is None:
                    got = order[ports] = tuple(sorted(ports))
                action, param = MULTICAST, ("group", ids[got])
            hit = old.get((inp, dz))
            entry = (hit[2] if hit is not None and hit[0] == action and hit[1] == param
                     else _entry(table, key, width, v4, inp, dz, action, param))
            made[(inp, dz)] = (action, param, entry)
            entries.append(entry)
        return _Port(dict(flows), sets, entries, made)


def _port_writes(old: Made, new: Made) -> int:
    """Writes from one port's old entries to its new ones: inserts, modifies (same
    key, another action: a new entry object), deletes."""
    writes = 0
    kept = 0
    for k, (_, _, entry) in new.items():
        hit = old.get(k)
        if hit is None:
            writes += 1
        else:
            kept += 1
            if hit[2] is not entry:
                writes += 1
    return writes + len(old) - kept


def _group_writes(old: Mapping[int, MulticastGroup], new: Mapping[int, MulticastGroup]) -> int:
    writes = sum(1 for gid, g in new.items() if old.get(gid) != g)
    return writes + sum(1 for gid in old if gid not in new)
