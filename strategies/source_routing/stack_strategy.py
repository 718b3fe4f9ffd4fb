"""What the ch. 3 source-routing strategies share: parameters, trees, rules, packets.

switch-port, switch-bitmask, switch-mcgroup and mixed all encode the
publisher's delivery tree as a preorder label stack (seed 000 §3.2) for the
``source_routing`` data-plane family (:mod:`sim.dataplanes.source_routing.reference`).
This module holds their common parameters (field widths, EtherType, stack
order, tree algorithm, MTU policy), the width checks, the helper rules every
switch gets (``read_entry``, own-id rules, ``check_bitmask``, clone
sessions) and the encoder skeleton with the MTU split (one packet per
subtree of the publisher's switch, §3.4.1).

The publisher's own host is never a receiver: it would sit behind the
ingress port, whose bit the publisher clears (§3.3.2, digest §7.10).

References
----------
Seed 000 §3.2-3.4 (stacks, preorder, pruning, split and jumbo frames),
§3.5.2 (widths); digest ch. 1-4 §2, §3, §6, §7.3-7.10.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal, cast

from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    MulticastGroup,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    Ternary,
)
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import BROADCAST_MAC, Notification, Packet, host_mac
from sim.dataplanes.pipeline import DataPlane
from sim.dataplanes.source_routing.codec import StackEntry, StackLayout, encode_stack
from sim.dataplanes.source_routing.fast_path import source_routing_fast_path
from sim.dataplanes.source_routing.reference import (
    CHECK_BITMASK,
    CONTINUE_SESSION,
    DROP_ORIGINAL,
    FORWARD_PKT,
    KEY_ENTRY_VALUE,
    KEY_NUM_SEEN,
    READ_ENTRY,
    READ_INDEX,
    Kind,
    Pruning,
    SourceRoutingDataPlane,
)
from sim.dataplanes.trees import Tree, shortest_path_tree, steiner_tree
from strategies.base import Encoding, Knowledge, Strategy
from strategies.frame_size import (
    DEFAULT_MTU_BYTES,
    ETHERTYPE_STACK,
    OnOversize,
    enforce_mtu,
    frame_limit,
)
from topologies.model import Topology
from topologies.registry import SpecError, check

StackOrder = Literal["port", "largest-first", "smallest-first"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StackParams:
    """Parameters every source-routing strategy has.

    Parameters
    ----------
    id_bits : int
        Switch-id width (8: up to 256 switches).
    size_bits : int
        Width of the ``Size`` field (16).
    ethertype : int
        EtherType of the stack (0x9999).
    stack_order : {"port", "largest-first", "smallest-first"}
        Order of a node's children in the preorder stack: by port (thesis
        figures), or by subtree size (tree nodes), ties by port.
    tree : {"spt", "steiner"}
        Delivery tree: shortest-path tree (default, digest §7.3) or the
        Steiner heuristic.
    mtu_bytes : int
        Largest stack + payload in bytes (1500).
    on_oversize : {"error", "split", "jumbo"}
        Oversized stacks: raise naming the notification and size, send one
        packet per subtree of the publisher's switch, or allow 9000 B.
    """

    id_bits: int = 8
    size_bits: int = 16
    ethertype: int = ETHERTYPE_STACK
    stack_order: StackOrder = "port"
    tree: Literal["spt", "steiner"] = "spt"
    mtu_bytes: int = DEFAULT_MTU_BYTES
    on_oversize: OnOversize = "error"

    def __post_init__(self) -> None:
        check(self.stack_order in ("port", "largest-first", "smallest-first"),
              "stack_order must be port, largest-first or smallest-first; "
              f"got {self.stack_order!r}")
        check(self.tree in ("spt", "steiner"), f"tree must be spt or steiner; got {self.tree!r}")
        check(self.on_oversize in ("error", "split", "jumbo"),
              f"on_oversize must be error, split or jumbo; got {self.on_oversize!r}")
        check(self.mtu_bytes > 0, f"mtu_bytes must be > 0, got {self.mtu_bytes}")


def stack_size(layout: StackLayout, mtu_bytes: int, on_oversize: OnOversize) -> int:
    """STACK_SIZE: the most entries a frame within the MTU can carry (empty payload)."""
    fit = (frame_limit(mtu_bytes, on_oversize) - layout.size_bytes) // layout.entry_bytes
    return max(0, min(layout.max_entries, fit))


# -- width checks ----------------------------------------------------------


def check_switch_ids(topology: Topology, id_bits: int) -> None:
    """Every switch id must fit ``id_bits``."""
    n = len(topology.switches)
    if n > 1 << id_bits:
        raise SpecError(f"{n} switches need switch ids up to {n - 1}, which do not fit "
                        f"id_bits={id_bits} (max {(1 << id_bits) - 1})")


def check_ports(topology: Topology, limit: int, what: str) -> None:
    """Every port number must be <= ``limit`` (``what`` names the parameter)."""
    for sw in topology.switches:
        ports = topology.ports(sw)
        top = max(ports, default=0)
        if top > limit:
            raise SpecError(f"switch {sw} has port {top}, beyond what {what} can address "
                            f"(max port {limit})")


# -- control-plane rules ---------------------------------------------------


#: ``check_bitmask`` priorities (higher wins; P4Runtime needs >= 1 for ternary tables).
BITMASK_FORWARD_PRIORITY = 2
BITMASK_DROP_PRIORITY = 1


@lru_cache(maxsize=32)
def read_entry_rules(size: int) -> tuple[TableEntry, ...]:
    """``read_entry``: one exact rule per stack index (Listing 3.5), shared by all switches."""
    return tuple(TableEntry(table=READ_ENTRY, match=((KEY_NUM_SEEN, Exact(i)),),
                            action=f"{READ_INDEX}{i}") for i in range(size))


def own_rule(table: str, key: Sequence[tuple[str, int]], action: str,
             params: tuple[tuple[str, int], ...] = ()) -> TableEntry:
    """An exact-match rule (own switch id, maybe with a tag or subset index)."""
    return TableEntry(table=table, match=tuple((k, Exact(v)) for k, v in key), action=action,
                      params=params)


def check_bitmask_rules(ports: Iterable[int]) -> tuple[TableEntry, ...]:
    """``check_bitmask``: "lowest set bit = port i" -> ``forward_pkt(i, 2^(i-1))``, else drop.

    Bit ``i - 1`` (LSB first) stands for port ``i``. The port rules are
    mutually exclusive (priority :data:`BITMASK_FORWARD_PRIORITY`); a
    catch-all ``drop_original`` (:data:`BITMASK_DROP_PRIORITY`, lower, so it
    only matches what no port rule does) ends the original when no servable
    bit is left (Listing 3.6). Both priorities are >= 1: P4Runtime rejects
    priority 0 in tables with a ternary field. Switches with the same ports
    share one tuple.
    """
    return _check_bitmask_rules(tuple(sorted(ports)))


@lru_cache(maxsize=64)
def _check_bitmask_rules(ports: tuple[int, ...]) -> tuple[TableEntry, ...]:
    rules = [TableEntry(table=CHECK_BITMASK,
                        match=((KEY_ENTRY_VALUE, Ternary(1 << (p - 1), (1 << p) - 1)),),
                        action=FORWARD_PKT, params=(("clone_port", p), ("bit_pos", 1 << (p - 1))),
                        priority=BITMASK_FORWARD_PRIORITY)
             for p in ports]
    rules.append(TableEntry(table=CHECK_BITMASK, match=((KEY_ENTRY_VALUE, Ternary(0, 0)),),
                            action=DROP_ORIGINAL, priority=BITMASK_DROP_PRIORITY))
    return tuple(rules)


def add_clone_sessions(builder: StateBuilder, topology: Topology, switch: str,
                       continuation: bool = False) -> None:
    """One clone session per port (session id = port), plus the continuation session."""
    ports = sorted(topology.ports(switch))
    for p in ports:
        builder.add_clone_session(switch, p, p)
    if continuation and ports:
        builder.add_clone_session(switch, CONTINUE_SESSION, ports[0])


def add_entries(builder: StateBuilder, switch: str, entries: Iterable[TableEntry]) -> None:
    for e in entries:
        builder.add_entry(switch, e)


def finish_state(built: ControlState, shared: Mapping[str, tuple[TableEntry, ...]] = {},
                 groups: Mapping[str, Mapping[int, MulticastGroup]] | None = None,
                 publisher_info: Mapping[str, Any] | None = None) -> ControlState:
    """``built`` plus tables shared by every switch and per-switch multicast groups.

    The shared tables (``read_entry``: STACK_SIZE identical rules per switch)
    and the group mappings (65,535 groups per 16-port switch with
    ``groups=all``) are the same objects on every switch instead of copies
    made one entry at a time.
    """
    groups = groups or {}
    return ControlState(
        switches={s: SwitchConfig(tables={**c.tables, **shared},
                                  multicast_groups=groups.get(s, c.multicast_groups),
                                  clone_sessions=c.clone_sessions)
                  for s, c in built.switches.items()},
        publisher_info=dict(publisher_info or built.publisher_info))


def port_mask(ports: Iterable[int]) -> int:
    """Bitmask with bit ``p - 1`` set for every port ``p``."""
    mask = 0
    for p in ports:
        mask |= 1 << (p - 1)
    return mask


def mask_ports(mask: int) -> tuple[int, ...]:
    """Ports whose bits are set in ``mask``, ascending."""
    return tuple(i + 1 for i in range(mask.bit_length()) if mask >> i & 1)


# -- trees -----------------------------------------------------------------


def delivery_tree(topology: Topology, kind: str, publisher: str,
                  receivers: Iterable[str]) -> Tree | None:
    """The tree from the publisher's switch to ``receivers`` (publisher excluded), or None."""
    targets = sorted((h for h in receivers if h != publisher), key=topology.host_id)
    if not targets:
        return None
    build = steiner_tree if kind == "steiner" else shortest_path_tree
    return build(topology, topology.host_switch(publisher), targets)


def ordered_children(tree: Tree, topology: Topology, order: StackOrder
                     ) -> Mapping[str, tuple[str, ...]]:
    """Children of every tree node in stack order (port order, or by subtree size)."""
    if order == "port":
        return tree.children
    size: dict[str, int] = {}
    for node in reversed(list(tree.preorder())):
        size[node] = 1 + sum(size[c] for c in tree.children.get(node, ()))
    sign = -1 if order == "largest-first" else 1

    def arrange(node: str, kids: tuple[str, ...]) -> tuple[str, ...]:
        keyed = sorted((sign * size[c], topology.port_to(node, c), c) for c in kids)
        return tuple(c for _, _, c in keyed)

    return {n: arrange(n, cs) for n, cs in tree.children.items()}


def restrict_to_child(tree: Tree, child: str) -> Tree:
    """``tree`` with the root keeping only ``child`` (for the per-subtree split)."""
    keep = [child]
    i = 0
    while i < len(keep):
        keep.extend(tree.children.get(keep[i], ()))
        i += 1
    children = {n: tree.children[n] for n in keep if n in tree.children}
    children[tree.root] = (child,)
    return Tree(root=tree.root, parent={n: tree.parent[n] for n in keep}, children=children)


# -- encoder skeleton ------------------------------------------------------


class StackStrategy(Strategy):
    """Base of the source-routing strategies: tree -> entries -> packets -> MTU policy.

    Subclasses set :attr:`kind`, give their ``Params`` a ``layout()`` (the
    field widths), override :meth:`pruning` or :meth:`mc_subsets` where a
    parameter chooses them, and implement :meth:`stack_entries`; the
    constructor compiles the program (:attr:`dataplane_model`) from these.
    """

    dataplane = "source_routing"
    #: What the program reads the untagged stack value as (port, bitmask, mc-group) or
    #: ``mixed`` for tagged entries (seed 000 §3.3.1-3.3.4).
    kind: ClassVar[Kind]
    layout: StackLayout
    dataplane_model: SourceRoutingDataPlane

    def __init__(self, params: Any = None) -> None:
        super().__init__(params)
        self.layout = self.params.layout()
        self.dataplane_model = SourceRoutingDataPlane(
            layout=self.layout, kind=self.kind, pruning=self.pruning(),
            mc_subsets=self.mc_subsets(), stack_size=self.stack_size)

    def check_applicable(self, topology: Topology, population: Any) -> None:
        self.check_widths(topology)

    def pruning(self) -> Pruning:
        """The program's clone post-processing (default reactive, digest §3.11)."""
        return "reactive"

    def mc_subsets(self) -> int:
        """c, the port subsets of the mc-group kind's groups (default 1)."""
        return 1

    def model(self) -> DataPlane:
        """The source-routing program compiled with this strategy's widths."""
        # cast: DataPlane declares ``name`` as a settable attribute; the model is frozen.
        return cast(DataPlane, self.dataplane_model)

    def stack_entries(self, topology: Topology, state: ControlState, tree: Tree
                      ) -> list[StackEntry]:
        raise NotImplementedError

    @property
    def stack_size(self) -> int:
        return stack_size(self.layout, self.params.mtu_bytes, self.params.on_oversize)

    def check_widths(self, topology: Topology) -> None:
        """Raise SpecError naming the field that cannot address ``topology``."""
        check_switch_ids(topology, self.layout.id_bits)

    def tree_walk_fast_path(self, topology: Topology, delays: DelayModel,
                            kind: Literal["bitmask", "port", "mcgroup", "mixed"],
                            pruning: Literal["predictive", "reactive"] = "reactive",
                            **walk: Any) -> FastPath | None:
        """The closed-form walk of :mod:`sim.dataplanes.source_routing.fast_path` for
        this strategy's stacks, or None where it does not model them exactly.

        It covers shortest-path trees in port order (the preorder the closed
        forms assume, seed 000 §3.2) whose fields address ``topology``; the
        strategies whose encoder it models call it from their
        :meth:`~strategies.base.Strategy.fast_path` hook; ``walk`` are the
        mcgroup/mixed settings of :func:`source_routing_fast_path`.
        """
        if self.params.tree != "spt" or self.params.stack_order != "port":
            return None
        try:
            self.check_widths(topology)
        except ValueError:
            return None  # the reference raises the same error per notification
        return source_routing_fast_path(
            topology, delays, self.encode, layout=self.layout, kind=kind, pruning=pruning,
            stack_size=self.stack_size,
            frame_limit=frame_limit(self.params.mtu_bytes, self.params.on_oversize),
            caches=self.caches, **walk)

    def tree_for(self, topology: Topology, publisher: str, receivers: Iterable[str]
                 ) -> Tree | None:
        return delivery_tree(topology, self.params.tree, publisher, receivers)

    def used_masks(self, topology: Topology, knowledge: Knowledge,
                   switches: AbstractSet[str] | None = None) -> dict[str, set[int]]:
        """Per switch, the port bitmasks the known receiver sets' trees use.

        With ``on_oversize=split`` the root also uses one single-port mask per
        child (one packet per subtree). ``switches`` restricts the result to
        those switches (default: every tree switch). These are the multicast
        groups ``groups=used`` installs (seed 000 §3.3.3, "only the
        combinations actively involved").
        """
        used: dict[str, set[int]] = {}
        for pub in knowledge.publishers:
            for receivers in knowledge.receiver_sets[pub]:
                tree = self.tree_for(topology, pub, receivers)
                if tree is None:
                    continue
                for sw in tree.switches(topology):
                    if switches is not None and sw not in switches:
                        continue
                    ports = [topology.port_to(sw, c) for c in tree.children.get(sw, ())]
                    used.setdefault(sw, set()).add(port_mask(ports))
                    if sw == tree.root and self.params.on_oversize == "split":
                        used[sw].update(port_mask([p]) for p in ports)
        return used

    def packet(self, topology: Topology, publisher: str, entries: Sequence[StackEntry],
               payload: bytes) -> Packet:
        return Packet(dst_mac=BROADCAST_MAC, src_mac=host_mac(topology, publisher),
                      ethertype=self.layout.ethertype, header=encode_stack(entries, self.layout),
                      payload=payload)

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        pub = notification.publisher
        tree = self.tree_for(topology, pub, receivers)
        if tree is None:
            return Encoding(())
        self.check_widths(topology)

        def build(t: Tree) -> Packet:
            return self.packet(topology, pub, self.stack_entries(topology, state, t), payload)

        def split() -> list[Packet]:
            return [build(restrict_to_child(tree, c)) for c in tree.children[tree.root]]

        packets = enforce_mtu([build(tree)], self.params.mtu_bytes, self.params.on_oversize,
                              notification, split)
        sb = self.layout.size_bytes
        return Encoding(packets,
                        header_entries=sum(int.from_bytes(p.header[:sb], "big") for p in packets))
