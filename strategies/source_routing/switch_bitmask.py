"""``switch-bitmask``: one ``<switch id, port bitmask>`` entry per tree switch, preorder.

Bit ``i - 1`` (LSB first) of a switch's mask means "forward to port i"; the
mask holds exactly the tree children's ports, so the publisher's ingress
bit is never set (seed 000 §3.3.2, Fig. 3.5). Header: ``Size + 3·|V_T|``
bytes at the thesis widths (8-bit id, 16-bit mask).

Rules per switch, independent of subscriptions: ``MyIngress.check_dev``
(own id), ``MyIngress.check_bitmask`` (one ternary rule "lowest set bit =
port i" -> ``forward_pkt(i, 2^(i-1))`` per port at priority 2, plus a
catch-all ``drop_original`` at priority 1; P4Runtime wants ternary
priorities >= 1) and one clone session per port. Pruning is reactive: a
clone pops the switch's own entry and keeps the entries of later subtrees;
a switch pops foreign entries until it finds its own (the digest's [BUG]
fix, §3.3). Recirculations at switch v: ``q_v + m_v - 1`` (q_v foreign
entries above its own, m_v set bits).

References
----------
Seed 000 §3.3.2 (Fig. 3.5, Listing 3.6); digest ch. 1-4 §3.3, §3.11, §7.9-7.10.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.source_routing.codec import StackEntry, StackLayout
from sim.dataplanes.source_routing.reference import (
    CHECK_DEV,
    KEY_TOP_ID,
    OWN_ENTRY,
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
    ordered_children,
    own_rule,
    port_mask,
)
from topologies.model import Topology


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchBitmaskParams(StackParams):
    """switch-bitmask parameters (plus those of :class:`StackParams`).

    Parameters
    ----------
    bitmask_bits : int
        Bitmask width (16): the largest port number a switch may have.
    """

    bitmask_bits: int = 16

    def __post_init__(self) -> None:
        StackParams.__post_init__(self)
        self.layout()

    def layout(self) -> StackLayout:
        return StackLayout(id_bits=self.id_bits, value_bits=self.bitmask_bits,
                           size_bits=self.size_bits, ethertype=self.ethertype,
                           value_field="bitmask_bits")


@register_strategy
class SwitchBitmask(StackStrategy):
    name = "switch-bitmask"
    kind = "bitmask"
    Params = SwitchBitmaskParams
    summary = "preorder switch/bitmask stack, one entry per tree switch, reactive pruning"
    #: The rules depend on the topology only (runners install once per cell).
    scope = "topology"
    cell_invariant = True

    def check_widths(self, topology: Topology) -> None:
        super().check_widths(topology)
        check_ports(topology, self.params.bitmask_bits, f"bitmask_bits={self.params.bitmask_bits}")

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The closed-form tree walk (:mod:`sim.dataplanes.source_routing.fast_path`) on
        shortest-path trees in port order; None for subclasses, which may change
        ``encode``, ``host_receive`` or ``extra_metrics``."""
        if type(self) is not SwitchBitmask:
            return None
        return self.tree_walk_fast_path(topology, delays, "bitmask", "reactive")

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        self.check_widths(topology)
        builder = StateBuilder()
        for sw in topology.switches:
            builder.add_entry(sw, own_rule(CHECK_DEV, [(KEY_TOP_ID, topology.switch_id(sw))],
                                           OWN_ENTRY))
            add_entries(builder, sw, check_bitmask_rules(topology.ports(sw)))
            add_clone_sessions(builder, topology, sw)
        return builder.build(topology.switches)

    def stack_entries(self, topology: Topology, state: ControlState, tree: Tree
                      ) -> list[StackEntry]:
        return mask_entries(topology, tree, ordered_children(tree, topology,
                                                              self.params.stack_order))


def mask_entries(topology: Topology, tree: Tree, children: Mapping[str, tuple[str, ...]],
                 value: dict[str, int] | None = None) -> list[StackEntry]:
    """Preorder ``<switch id, port bitmask>`` entries, one per tree switch.

    ``value`` optionally maps a switch to the label value to use instead of
    its port bitmask (e.g. a sequentially numbered multicast group).
    """
    out: list[StackEntry] = []

    def visit(node: str) -> None:
        kids = children.get(node, ())
        mask = port_mask(topology.port_to(node, c) for c in kids)
        label = mask if value is None else value[node]
        out.append(StackEntry(topology.switch_id(node), label))
        for child in kids:
            if not topology.is_host(child):
                visit(child)

    visit(tree.root)
    return out
