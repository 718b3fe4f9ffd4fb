"""``mixed``: tagged ``<switch id, tag, value>`` entries; per switch port, bitmask or mc-group.

Every entry carries a strategy tag (1 port, 2 bitmask, 3 mc-group) so one
stack can mix the three encodings (seed 000 §3.3.4, Fig. 3.7); entries are
``id:8 | tag:8 | value:16`` = 4 B by default (digest §3.5). All switches
support port and bitmask entries; the *mc-group switches* also hold
multicast groups. Which switches those are:

- ``mcgroup_switches``: an explicit list of switch names, or else
- every switch with at most ``mcgroup_max_ports`` ports (8 by default, so a
  switch stores at most 2^8 - 1 = 255 groups: the thesis's "high-capacity
  switches use preinstalled multicast groups", with capacity measured in the
  groups a full port-combination set needs).

``groups`` = ``all`` installs every port combination on the mc-group
switches, ``used`` only those the known receiver sets use. Encoding per tree
switch: an mc-group switch whose port combination is installed gets one
mc-group entry; if it is not, the largest installed group inside it (most
ports, then lowest id) plus ``remainder`` entries (port by default, as N3 in
Fig. 3.7) for the other ports; other switches get ``fallback`` entries
(bitmask by default). Each entry is followed, in preorder, by the subtrees
of the children it serves.

A switch cannot know whether more of its entries follow, so the original
scans the whole stack, one entry per pass (plus m - 1 passes per bitmask
entry with m bits), "as in the switch/port strategy"; after a multicast it
continues through a continuation clone. ``pruning`` = ``per-type`` (default,
digest §3.11: copies made by port entries prune predictively, bitmask and
mc-group copies reactively), ``predictive`` or ``reactive``.

References
----------
Seed 000 §3.3.4 (Fig. 3.7), §3.3.3 (group reduction 3); digest ch. 1-4 §3.5,
§3.11.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from sim.dataplanes.control_state import ControlState, MulticastGroup, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.source_routing.codec import (
    TAG_BITMASK,
    TAG_MCGROUP,
    TAG_PORT,
    StackEntry,
    StackLayout,
)
from sim.dataplanes.source_routing.reference import (
    CHECK_ENTRY,
    KEY_ENTRY_ID,
    KEY_ENTRY_TAG,
    READ_ENTRY,
    TAG_OWN_ACTION,
    Pruning,
)
from sim.dataplanes.trees import Tree
from strategies.base import Knowledge, register_strategy
from strategies.source_routing.stack_strategy import (
    StackParams,
    StackStrategy,
    add_clone_sessions,
    add_entries,
    check_bitmask_rules,
    check_ports,
    finish_state,
    mask_ports,
    ordered_children,
    own_rule,
    port_mask,
    read_entry_rules,
)
from strategies.source_routing.switch_mcgroup import all_groups
from topologies.model import Topology
from topologies.registry import SpecError, check

_TAGS = {"port": TAG_PORT, "bitmask": TAG_BITMASK}
Plan = list[tuple[StackEntry, tuple[str, ...]]]  # entries with the children each one serves


@dataclass(frozen=True, slots=True, kw_only=True)
class MixedParams(StackParams):
    """mixed parameters (plus those of :class:`StackParams`).

    Parameters
    ----------
    tag_bits, value_bits : int
        Tag (8) and value (16) widths; the value holds a port, a bitmask or a
        group id.
    mcgroup_switches : tuple of str
        Switches that hold multicast groups (empty: use ``mcgroup_max_ports``).
    mcgroup_max_ports : int
        Without an explicit list, switches with at most this many ports hold
        multicast groups (8).
    groups : {"all", "used"}
        Groups installed on the mc-group switches.
    fallback : {"bitmask", "port"}
        Entry type of the other switches.
    remainder : {"port", "bitmask"}
        Entry type for the ports of an mc-group switch that no installed
        group covers.
    pruning : {"per-type", "predictive", "reactive"}
        Clone post-processing.
    max_total_groups : int
        Refuse to install more multicast groups than this.
    """

    tag_bits: int = 8
    value_bits: int = 16
    mcgroup_switches: tuple[str, ...] = ()
    mcgroup_max_ports: int = 8
    groups: Literal["all", "used"] = "all"
    fallback: Literal["bitmask", "port"] = "bitmask"
    remainder: Literal["port", "bitmask"] = "port"
    pruning: Literal["per-type", "predictive", "reactive"] = "per-type"
    max_total_groups: int = 2_000_000

    def __post_init__(self) -> None:
        StackParams.__post_init__(self)
        check(self.tag_bits >= 2, f"tag_bits must be >= 2 (three tags), got {self.tag_bits}")
        check(self.value_bits <= 16 or not self.mcgroup_switches and self.mcgroup_max_ports == 0,
              f"value_bits must be <= 16 (v1model mcast_grp) when switches hold multicast "
              f"groups, got {self.value_bits}")
        check(self.mcgroup_max_ports >= 0, "mcgroup_max_ports must be >= 0")
        check(self.groups in ("all", "used"), f"groups must be all or used; got {self.groups!r}")
        check(self.fallback in _TAGS, f"fallback must be bitmask or port; got {self.fallback!r}")
        check(self.remainder in _TAGS, f"remainder must be port or bitmask; got {self.remainder!r}")
        check(self.pruning in ("per-type", "predictive", "reactive"),
              f"pruning must be per-type, predictive or reactive; got {self.pruning!r}")
        self.layout()

    def layout(self) -> StackLayout:
        return StackLayout(id_bits=self.id_bits, tag_bits=self.tag_bits,
                           value_bits=self.value_bits, size_bits=self.size_bits,
                           ethertype=self.ethertype, value_field="value_bits")


@register_strategy
class Mixed(StackStrategy):
    #: with groups=all/subsets the state depends on the topology only (:meth:`state_scope`)
    cell_invariant = True
    name = "mixed"
    kind = "mixed"
    Params = MixedParams
    summary = "tagged port/bitmask/mc-group entries, entry type chosen per switch"

    def pruning(self) -> Pruning:
        """The ``pruning`` parameter (per-type by default, digest §3.11)."""
        return self.params.pruning

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The closed-form tree walk (:mod:`sim.dataplanes.source_routing.fast_path_entries`)
        on shortest-path trees in port order with ``groups=all`` (every mc-group
        switch gets one group entry); None for ``groups=used`` (the entries depend on
        the installed groups), unknown ``mcgroup_switches`` and subclasses, which may
        change ``encode``, ``host_receive`` or ``extra_metrics``."""
        if type(self) is not Mixed or self.params.groups != "all":
            return None
        try:
            mc = frozenset(self.mcgroup_switches(topology))
        except ValueError:
            return None  # install raises the same error
        pruning = self.params.pruning
        predictive = ((True, False, False) if pruning == "per-type"
                      else (pruning == "predictive",) * 3)
        return self.tree_walk_fast_path(topology, delays, "mixed", fallback=self.params.fallback,
                                        predictive=predictive, mc_switches=mc)

    def check_widths(self, topology: Topology) -> None:
        super().check_widths(topology)
        check_ports(topology, self.params.value_bits, f"value_bits={self.params.value_bits}")

    def mcgroup_switches(self, topology: Topology) -> tuple[str, ...]:
        """The switches that hold multicast groups, in topology order."""
        named = self.params.mcgroup_switches
        if named:
            unknown = sorted(set(named) - set(topology.switches))
            if unknown:
                raise SpecError(f"mcgroup_switches names unknown switches: {', '.join(unknown)}")
            return tuple(s for s in topology.switches if s in set(named))
        return tuple(s for s in topology.switches
                     if len(topology.ports(s)) <= self.params.mcgroup_max_ports)

    # -- control plane -------------------------------------------------------
    def state_scope(self) -> Literal["topology", "publisher", "receivers"]:
        """"topology" unless ``groups=used`` (then the installed groups are the receivers')."""
        return "receivers" if self.params.groups == "used" else "topology"

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        self.check_widths(topology)
        p = self.params
        mc = self.mcgroup_switches(topology)
        mc_set = set(mc)
        if p.groups == "all":
            total = sum((1 << len(topology.ports(s))) - 1 for s in mc)
            if total > p.max_total_groups:
                raise SpecError(f"groups=all needs {total} multicast groups, more than "
                                f"max_total_groups={p.max_total_groups}; lower "
                                "mcgroup_max_ports or use groups=used")
        used = self.used_masks(topology, knowledge, mc_set) if p.groups == "used" else {}
        builder = StateBuilder()
        groups: dict[str, Mapping[int, MulticastGroup]] = {}
        for sw in topology.switches:
            sid = topology.switch_id(sw)
            ports = tuple(sorted(topology.ports(sw)))
            tags = (TAG_PORT, TAG_BITMASK, TAG_MCGROUP) if sw in mc_set else (TAG_PORT, TAG_BITMASK)
            for tag in tags:
                builder.add_entry(sw, own_rule(CHECK_ENTRY, [(KEY_ENTRY_ID, sid),
                                                             (KEY_ENTRY_TAG, tag)],
                                               TAG_OWN_ACTION[tag]))
            add_entries(builder, sw, check_bitmask_rules(ports))
            add_clone_sessions(builder, topology, sw, continuation=sw in mc_set)
            if sw in mc_set:
                groups[sw] = all_groups(ports) if p.groups == "all" else {
                    m: MulticastGroup(m, tuple((q, 1) for q in mask_ports(m)))
                    for m in sorted(used.get(sw, ()))}
        return finish_state(builder.build(topology.switches),
                            {READ_ENTRY: read_entry_rules(self.stack_size)}, groups,
                            {"mcgroup_switches": list(mc)})

    # -- encoder -------------------------------------------------------------
    def stack_entries(self, topology: Topology, state: ControlState, tree: Tree
                      ) -> list[StackEntry]:
        children = ordered_children(tree, topology, self.params.stack_order)
        mc = set(state.publisher_info.get("mcgroup_switches", ()))
        out: list[StackEntry] = []

        def units(tag: int, sid: int, node: str, kids: tuple[str, ...]) -> Plan:
            if not kids:
                return []
            if tag == TAG_BITMASK:
                mask = port_mask(topology.port_to(node, c) for c in kids)
                return [(StackEntry(sid, mask, TAG_BITMASK), kids)]
            return [(StackEntry(sid, topology.port_to(node, c), TAG_PORT), (c,)) for c in kids]

        def visit(node: str) -> None:
            sid = topology.switch_id(node)
            kids = children.get(node, ())
            if node in mc:
                plan = self._mc_plan(topology, state, node, sid, kids, units)
            else:
                plan = units(_TAGS[self.params.fallback], sid, node, kids)
            for entry, served in plan:
                out.append(entry)
                for child in served:
                    if not topology.is_host(child):
                        visit(child)

        visit(tree.root)
        return out

    def _mc_plan(self, topology: Topology, state: ControlState, node: str, sid: int,
                 kids: tuple[str, ...], units: Callable[[int, int, str, tuple[str, ...]], Plan]
                 ) -> Plan:
        """An mc-group entry for the installed group that covers most of ``kids``."""
        port = {c: topology.port_to(node, c) for c in kids}
        want = port_mask(port.values())
        installed = state.config(node).multicast_groups
        if want in installed:
            best = want
        else:
            fits = [g for g in installed if g & ~want == 0]
            best = min(fits, key=lambda g: (-g.bit_count(), g), default=0)
        plan: Plan = []
        if best:
            plan.append((StackEntry(sid, best, TAG_MCGROUP),
                         tuple(c for c in kids if best >> (port[c] - 1) & 1)))
        rest = tuple(c for c in kids if not best >> (port[c] - 1) & 1)
        return plan + units(_TAGS[self.params.remainder], sid, node, rest)
