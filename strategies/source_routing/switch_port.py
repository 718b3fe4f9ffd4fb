"""``switch-port``: the delivery tree as a preorder list of switch/port pairs ("P4-Pub/Sub").

One entry ``<switch id, port>`` per used output port of every tree switch
(host ports included), in preorder of the delivery tree: each entry is
followed by the entries of the subtree behind its port (seed 000 §3.3.1,
Fig. 3.4). Header: ``Size + 2·(|V_T| - 1 + |S|)`` bytes at the thesis widths.

Every switch gets the same static rules, independent of subscriptions:
``MyIngress.check_entry`` (own id -> ``own_entry``), ``MyIngress.read_entry``
(STACK_SIZE rules, STACK_SIZE derived from the MTU) and one clone session
per port. ``pruning`` selects the clone post-processing of Listing 3.3:
``predictive`` (default: a clone skips its own subtree's entries and deletes
everything from the switch's next entry on) or ``reactive`` (a clone only
pops the entry that created it). Recirculations at switch v: predictive
``(L_v - 1) + Σ_j (L_v - 1 - p_j)``, reactive ``L_v - 1`` (digest §3.2).

References
----------
Seed 000 §3.3.1 (Fig. 3.4, Listings 3.2-3.5), §3.5 (evaluation); digest
ch. 1-4 §3.2, §3.11.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.source_routing.codec import StackEntry, StackLayout
from sim.dataplanes.source_routing.reference import (
    CHECK_ENTRY,
    KEY_ENTRY_ID,
    OWN_ENTRY,
    READ_ENTRY,
    Pruning,
)
from sim.dataplanes.trees import Tree
from strategies.base import Knowledge, register_strategy
from strategies.source_routing.stack_strategy import (
    StackParams,
    StackStrategy,
    add_clone_sessions,
    check_ports,
    finish_state,
    ordered_children,
    own_rule,
    read_entry_rules,
)
from topologies.model import Topology
from topologies.registry import check


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchPortParams(StackParams):
    """switch-port parameters (plus those of :class:`StackParams`).

    Parameters
    ----------
    port_bits : int
        Port field width (8).
    pruning : {"predictive", "reactive"}
        Clone post-processing (predictive, as evaluated in the thesis).
    """

    port_bits: int = 8
    pruning: Literal["predictive", "reactive"] = "predictive"

    def __post_init__(self) -> None:
        StackParams.__post_init__(self)
        check(self.pruning in ("predictive", "reactive"),
              f"pruning must be predictive or reactive; got {self.pruning!r}")
        self.layout()

    def layout(self) -> StackLayout:
        return StackLayout(id_bits=self.id_bits, value_bits=self.port_bits,
                           size_bits=self.size_bits, ethertype=self.ethertype,
                           value_field="port_bits")


@register_strategy
class SwitchPort(StackStrategy):
    name = "switch-port"
    kind = "port"
    Params = SwitchPortParams
    summary = "preorder switch/port label stack, one entry per output port (P4-Pub/Sub)"
    #: The rules depend on the topology only (runners install once per cell).
    scope = "topology"
    cell_invariant = True

    def pruning(self) -> Pruning:
        """The ``pruning`` parameter (predictive by default, as evaluated in the thesis)."""
        return self.params.pruning

    def check_widths(self, topology: Topology) -> None:
        super().check_widths(topology)
        bits = self.params.port_bits
        check_ports(topology, (1 << bits) - 1, f"port_bits={bits}")

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The closed-form tree walk (:mod:`sim.dataplanes.source_routing.fast_path`) on
        shortest-path trees in port order; None for subclasses, which may change
        ``encode``, ``host_receive`` or ``extra_metrics``."""
        if type(self) is not SwitchPort:
            return None
        return self.tree_walk_fast_path(topology, delays, "port", self.params.pruning)

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        self.check_widths(topology)
        builder = StateBuilder()
        for sw in topology.switches:
            builder.add_entry(sw, own_rule(CHECK_ENTRY, [(KEY_ENTRY_ID, topology.switch_id(sw))],
                                           OWN_ENTRY))
            add_clone_sessions(builder, topology, sw)
        return finish_state(builder.build(topology.switches),
                            {READ_ENTRY: read_entry_rules(self.stack_size)})

    def stack_entries(self, topology: Topology, state: ControlState, tree: Tree
                      ) -> list[StackEntry]:
        return port_entries(topology, tree, ordered_children(tree, topology,
                                                              self.params.stack_order))


def port_entries(topology: Topology, tree: Tree,
                 children: Mapping[str, tuple[str, ...]] | None = None) -> list[StackEntry]:
    """Preorder switch/port entries of ``tree`` (children in the given order)."""
    kids = tree.children if children is None else children
    out: list[StackEntry] = []

    def visit(node: str) -> None:
        sid = topology.switch_id(node)
        for child in kids.get(node, ()):
            out.append(StackEntry(sid, topology.port_to(node, child)))
            if not topology.is_host(child):
                visit(child)

    visit(tree.root)
    return out
