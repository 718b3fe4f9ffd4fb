"""``switch-mcgroup``: one ``<switch id, multicast group>`` entry per tree switch, preorder.

The packet-replication engine makes all copies of a switch in one pass
(seed 000 §3.3.3, Fig. 3.6, Listing 3.7): ``MyIngress.multicast_forward``
matches the own id and sets ``mcast_grp`` from the label; egress pops the
entry on every replica (reactive pruning). The stack has the same shape and
size as switch-bitmask's: the group id *is* the port bitmask of its replicas
(the thesis's optional fixed mapping, digest §7.10) unless
``group_ids=sequential``.

``groups`` chooses what the controller installs per switch (n = its ports):

- ``all``: every port combination, 2^n - 1 groups (65,535 for 16 ports);
- ``subsets``: the ports split into ``subsets`` = c contiguous blocks (sizes
  as equal as possible, lower ports first), every combination within a
  block, Σ_k (2^{n_k} - 1) = c(2^(n/c) - 1) groups (510 for n=16, c=2).
  Entry encoding: unchanged, one label whose value is the full port bitmask.
  The switch processes it in c passes: pass k applies
  ``multicast_forward[(id, k)] -> do_multicast_subset(mask_k, last)`` and
  multicasts group ``value & mask_k`` (skipped when 0); the original goes
  on to pass k+1 through a continuation clone (session 512), so each
  involved switch takes c - 1 extra passes;
- ``used``: only the combinations the known receiver sets use (plus, with
  ``on_oversize=split``, the single-port groups of the root's split).

Recirculations at switch v: ``q_v`` (foreign entries above its own) plus
``c - 1`` with subsets (digest §3.11).

References
----------
Seed 000 §3.3.3 (Fig. 3.6, Listing 3.7, group counts); digest ch. 1-4 §3.4,
§3.11, §5.4.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from sim.dataplanes.control_state import ControlState, MulticastGroup, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.source_routing.codec import StackEntry, StackLayout
from sim.dataplanes.source_routing.reference import (
    CONTINUE_SESSION,
    DO_MULTICAST,
    DO_MULTICAST_SUBSET,
    KEY_SUBSET,
    KEY_TOP_ID,
    MULTICAST_FORWARD,
)
from sim.dataplanes.trees import Tree
from strategies.base import Knowledge, register_strategy
from strategies.source_routing.stack_strategy import (
    StackParams,
    StackStrategy,
    check_ports,
    finish_state,
    mask_ports,
    ordered_children,
    own_rule,
    port_mask,
)
from strategies.source_routing.switch_bitmask import mask_entries
from topologies.model import Topology
from topologies.registry import SpecError, check

MCAST_GRP_BITS = 16  # v1model standard_metadata.mcast_grp


@dataclass(frozen=True, slots=True, kw_only=True)
class SwitchMcgroupParams(StackParams):
    """switch-mcgroup parameters (plus those of :class:`StackParams`).

    Parameters
    ----------
    group_bits : int
        Group field width (16, at most v1model's 16-bit ``mcast_grp``).
    groups : {"all", "subsets", "used"}
        Which groups the controller installs (see the module docstring).
    subsets : int
        c, the number of port subsets for ``groups=subsets`` (2).
    group_ids : {"bitmask", "sequential"}
        Group id = port bitmask, or 1, 2, ... per switch in ascending bitmask
        order (only with ``groups=used``).
    max_total_groups : int
        Refuse to install more groups than this in one state (they are real
        objects; 16-port switches with ``all`` need 65,535 each).
    """

    group_bits: int = 16
    groups: Literal["all", "subsets", "used"] = "all"
    subsets: int = 2
    group_ids: Literal["bitmask", "sequential"] = "bitmask"
    max_total_groups: int = 2_000_000

    def __post_init__(self) -> None:
        StackParams.__post_init__(self)
        check(self.groups in ("all", "subsets", "used"),
              f"groups must be all, subsets or used; got {self.groups!r}")
        check(self.group_ids in ("bitmask", "sequential"),
              f"group_ids must be bitmask or sequential; got {self.group_ids!r}")
        check(self.group_ids == "bitmask" or self.groups == "used",
              "group_ids=sequential needs groups=used")
        check(self.subsets >= 1, f"subsets must be >= 1, got {self.subsets}")
        check(self.group_bits <= MCAST_GRP_BITS,
              f"group_bits must be <= {MCAST_GRP_BITS} (v1model mcast_grp), got {self.group_bits}")
        check(self.max_total_groups >= 0, "max_total_groups must be >= 0")
        self.layout()

    @property
    def c(self) -> int:
        return self.subsets if self.groups == "subsets" else 1

    def layout(self) -> StackLayout:
        return StackLayout(id_bits=self.id_bits, value_bits=self.group_bits,
                           size_bits=self.size_bits, ethertype=self.ethertype,
                           value_field="group_bits")


def port_blocks(ports: tuple[int, ...], c: int) -> tuple[tuple[int, ...], ...]:
    """Split ``ports`` (ascending) into ``c`` contiguous blocks, larger blocks first."""
    base, extra = divmod(len(ports), c)
    blocks, start = [], 0
    for k in range(c):
        size = base + (1 if k < extra else 0)
        blocks.append(ports[start:start + size])
        start += size
    return tuple(blocks)


@lru_cache(maxsize=24)
def all_groups(ports: tuple[int, ...]) -> dict[int, MulticastGroup]:
    """Every non-empty combination of ``ports``, keyed by its bitmask (shared, read-only).

    Built in ascending bitmask order; a group's replicas extend those of the
    group without its lowest port, so 65,535 groups take well under a second.
    """
    full = port_mask(ports)
    masks = []
    sub = full
    while sub:
        masks.append(sub)
        sub = (sub - 1) & full
    replica = {p: (p, 1) for p in ports}
    reps: dict[int, tuple[tuple[int, int], ...]] = {0: ()}
    out = {}
    for sub in reversed(masks):  # ascending
        low = sub & -sub
        reps[sub] = (replica[low.bit_length()], *reps[sub ^ low])
        out[sub] = MulticastGroup(sub, reps[sub])
    return out


def group_count(n: int, c: int) -> int:
    """Groups that cover every combination of n ports split into c blocks."""
    base, extra = divmod(n, c)
    return sum((1 << (base + (1 if k < extra else 0))) - 1 for k in range(c))


@register_strategy
class SwitchMcgroup(StackStrategy):
    #: with groups=all/subsets the state depends on the topology only (:meth:`state_scope`)
    cell_invariant = True
    name = "switch-mcgroup"
    kind = "mcgroup"
    Params = SwitchMcgroupParams
    summary = "preorder switch/multicast-group stack, one PRE multicast per switch"

    def mc_subsets(self) -> int:
        """c of ``groups=subsets`` (1 otherwise)."""
        return int(self.params.c)

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The closed-form tree walk (:mod:`sim.dataplanes.source_routing.fast_path_entries`)
        on shortest-path trees in port order with every group of the port blocks
        installed (``groups=all`` or ``subsets``, group id = port bitmask); None for
        ``groups=used`` (which groups exist depends on the installed knowledge) and
        for subclasses, which may change ``encode``, ``host_receive`` or
        ``extra_metrics``."""
        if type(self) is not SwitchMcgroup:
            return None
        if self.params.groups == "used" or self.params.group_ids != "bitmask":
            return None
        return self.tree_walk_fast_path(topology, delays, "mcgroup", subsets=self.mc_subsets())

    def check_widths(self, topology: Topology) -> None:
        super().check_widths(topology)
        if self.params.group_ids == "bitmask":
            check_ports(topology, self.params.group_bits, f"group_bits={self.params.group_bits}")

    # -- control plane -------------------------------------------------------
    def state_scope(self) -> Literal["topology", "publisher", "receivers"]:
        """"topology" unless ``groups=used`` (then the installed groups are the receivers')."""
        return "receivers" if self.params.groups == "used" else "topology"

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        self.check_widths(topology)
        p = self.params
        builder = StateBuilder()
        groups: dict[str, dict[int, MulticastGroup]] = {}
        seq: dict[str, dict[int, int]] = {}  # sequential ids: switch -> bitmask -> id
        used = self.used_masks(topology, knowledge) if p.groups == "used" else {}
        if p.groups != "used":
            total = sum(group_count(len(topology.ports(s)), p.c) for s in topology.switches)
            if total > p.max_total_groups:
                raise SpecError(f"groups={p.groups} needs {total} multicast groups, more than "
                                f"max_total_groups={p.max_total_groups}; use groups=subsets or "
                                "groups=used")
        for sw in topology.switches:
            sid = topology.switch_id(sw)
            ports = tuple(sorted(topology.ports(sw)))
            if p.c == 1:
                builder.add_entry(sw, own_rule(MULTICAST_FORWARD, [(KEY_TOP_ID, sid)],
                                               DO_MULTICAST))
            else:
                for k, block in enumerate(port_blocks(ports, p.c)):
                    builder.add_entry(sw, own_rule(
                        MULTICAST_FORWARD, [(KEY_TOP_ID, sid), (KEY_SUBSET, k)],
                        DO_MULTICAST_SUBSET,
                        (("mask", port_mask(block)), ("last", int(k == p.c - 1)))))
                if ports:  # the continuation clone; no per-port sessions are needed
                    builder.add_clone_session(sw, CONTINUE_SESSION, ports[0])
            if p.groups == "all":
                groups[sw] = all_groups(ports)
            elif p.groups == "subsets":
                groups[sw] = {}
                for block in port_blocks(ports, p.c):
                    groups[sw].update(all_groups(block))
            else:
                masks = sorted(used.get(sw, ()))
                if p.group_ids == "sequential":
                    ids = {m: i for i, m in enumerate(masks, start=1)}
                    if ids and max(ids.values()) >= 1 << p.group_bits:
                        raise SpecError(f"{sw} needs {len(ids)} groups, more than "
                                        f"group_bits={p.group_bits} can number")
                    seq[sw] = ids
                else:
                    ids = {m: m for m in masks}
                groups[sw] = {ids[m]: MulticastGroup(ids[m], tuple((q, 1) for q in mask_ports(m)))
                              for m in masks}
        return finish_state(builder.build(topology.switches), groups=groups,
                            publisher_info={"group_ids": seq} if seq else {})

    # -- encoder -------------------------------------------------------------
    def stack_entries(self, topology: Topology, state: ControlState, tree: Tree
                      ) -> list[StackEntry]:
        children = ordered_children(tree, topology, self.params.stack_order)
        value: dict[str, int] | None = None
        if self.params.groups == "used":
            ids = state.publisher_info.get("group_ids", {})
            value = {}
            for sw in tree.switches(topology):
                mask = port_mask(topology.port_to(sw, c) for c in children.get(sw, ()))
                gid = ids[sw].get(mask) if sw in ids else mask
                if gid is None or gid not in state.config(sw).multicast_groups:
                    raise LookupError(f"no multicast group for ports {list(mask_ports(mask))} on "
                                      f"{sw} (groups=used installs only known receiver sets)")
                value[sw] = gid
        return mask_entries(topology, tree, children, value)
