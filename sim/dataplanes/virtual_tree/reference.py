"""Virtual-tree label program (tree / hop / stop labels), pass by pass.

Reference model of ``p4/virtual_tree.p4``: the seed 000 ch. 5 P4_16 program
(Listings 5.1-5.5), which is also the P4 implementation of the ch. 4 *tree*
and *hybrid* strategies (§4.3.2: bitmasks for tree and hop labels, with the
served-ports mask of ch. 5 instead of "batch stack scanning").

Frame: Ethernet (EtherType 0x9999) | Size (16) | labels (16 each) | payload;
a label is a 2-bit type (``01`` hop, ``10`` stop, ``11`` tree) and a 14-bit
id (:mod:`sim.dataplanes.virtual_tree.codec`). Hop and stop ids are the
topology's undirected ``edge_id``; tree ids are chosen by the control plane.

Tables (fully qualified P4 names; key ``meta.label`` is the label that
``act_read_entry`` copied from ``hdr.stack[meta.stack_index]``):

=============================  =====================================  =========================
table / key                    action(params)                         entries per switch
=============================  =====================================  =========================
``check_hop``  label exact     ``set_hop_port(port)``: set the port's  one per port (incident
                               bit in ``remaining_ports``, set          edge, host links too)
                               ``remove_flag`` (hop labels are
                               consumed)
``check_tree`` label exact     ``set_tree_ports(ports)``: OR the       one per stored tree on
                               stored 64-bit mask into                  the switch
                               ``remaining_ports`` (tree labels are
                               kept); or ``set_tree_group(group)``:
                               hand the packet to the PRE
``check_stop`` label exact,    ``stop_clone()``: drop this clone       one per port
``meta.clone_port`` exact
``extract_port``               ``set_port(port)``: the lowest 1-bit    one ternary entry per port
``remaining_ports`` ternary    of ``remaining_ports``                   (value ``1<<(p-1)``, mask
                                                                        ``(1<<p)-1``)
=============================  =====================================  =========================

Clone sessions: one per port, session id = port (BMv2 ``mirroring_add``).

One pass of the *original* (ingress, then egress):

1. read ``L[stack_index]``; if ``remaining_ports == 0`` apply ``check_hop``,
   on a miss ``check_tree`` (short-circuit ``||`` of Listing 5.4);
2. if ``remaining_ports != 0``: ``extract_port`` gives the next port ``p``;
   clear its bit; clone to ``p`` unless ``p`` is in ``served_ports`` or is
   the ingress port (then set its bit in ``served_ports``) - one clone per
   pass;
3. if the mask is empty and this was the last label, drop the original;
4. egress: if ``remove_flag``, remove the label (hop consumed), else if the
   mask is empty advance ``stack_index``; recirculate.

A *clone* made at label ``i`` leaves the creating pass with the same stack
edit as the original (a consumed hop label is removed in the clone too), then
recirculates once per remaining label after ``i``, applying ``check_stop``
with its port: a hit drops it, otherwise it leaves on its port when the stack
is exhausted. So a stop label is seen only by clones made by earlier labels,
which is why encoders put trees first, then stops, then hops.

Pass trace (``PipelineResult.pass_parents``): the original's passes come
first (a chain); then each clone's or replica's passes, the first spawned by
the pass that made it; a copy leaves after its last pass.

Deviations from the thesis listings (all flagged [BUG]/[R] in the digest):

- The original is dropped in ingress in the pass that finishes its last label
  (Listing 5.4 tests ``num_entries == 0``, which never holds when tree labels
  are kept).
- Clones do not inherit ``remaining_ports`` (their field list omits it), so a
  clone made in the middle of a multi-port tree label advances normally.
- ``remove_flag`` is per pass (not preserved across recirculation).
- ``act_read_entry`` / ``remove_entry`` use a run-time stack index (BMv2
  accepts it), so they are actions, not tables, and cost no lookup.
- ``set_tree_group`` (multicast-group variant of stored trees, seed 000
  §4.2.3) is an addition: the PRE replicates the packet to the group's ports
  in one pass (minus the ingress port and served ports, dropped in egress);
  every replica then behaves like a clone made at that label, and the
  original ends there (labels after it are not applied at this switch).
- A packet that is not 0x9999, has ``Size == 0`` or is shorter than its
  ``Size`` is rejected by the parser and dropped (one pass, no lookup).

References
----------
Seed 000 §4.3.2 (Fig. 4.4, hybrid P4 program), §5.2.4-5.2.6 (labels,
Listings 5.1-5.5); digest ch. 1-4 §3.9, §9 and ch. 5-7 §1.2-1.5.4.
"""

from __future__ import annotations

from collections.abc import Iterable

from sim.dataplanes.control_state import (
    CloneSession,
    Exact,
    StateBuilder,
    SwitchConfig,
    TableEntry,
    Ternary,
)
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, Emit, PipelineResult
from sim.dataplanes.virtual_tree.codec import (
    KIND_HOP,
    KIND_STOP,
    KIND_TREE,
    LabelFormat,
)
from topologies.model import Topology

CHECK_HOP = "MyIngress.check_hop"
CHECK_TREE = "MyIngress.check_tree"
CHECK_STOP = "MyIngress.check_stop"
EXTRACT_PORT = "MyIngress.extract_port"
SET_HOP_PORT = "MyIngress.set_hop_port"
SET_TREE_PORTS = "MyIngress.set_tree_ports"
SET_TREE_GROUP = "MyIngress.set_tree_group"
STOP_CLONE = "MyIngress.stop_clone"
SET_PORT = "MyIngress.set_port"
KEY_LABEL = "meta.label"
KEY_CLONE_PORT = "meta.clone_port"
KEY_REMAINING = "meta.remaining_ports"

DEFAULT_FORMAT = LabelFormat()


# -- rules (the control-plane side of the program) ----------------------------


def hop_label(fmt: LabelFormat, edge_id: int) -> int:
    return fmt.label(KIND_HOP, edge_id, "hop label edge id")


def stop_label(fmt: LabelFormat, edge_id: int) -> int:
    return fmt.label(KIND_STOP, edge_id, "stop label edge id")


def tree_label(fmt: LabelFormat, tree_id: int) -> int:
    return fmt.label(KIND_TREE, tree_id, "tree id")


def hop_entry(fmt: LabelFormat, edge_id: int, port: int) -> TableEntry:
    """``check_hop``: hop label of ``edge_id`` -> clone to ``port`` and consume it."""
    fmt.port_bit(port)
    return TableEntry(CHECK_HOP, ((KEY_LABEL, Exact(hop_label(fmt, edge_id))),), SET_HOP_PORT,
                      (("port", port),))


def stop_entry(fmt: LabelFormat, edge_id: int, port: int) -> TableEntry:
    """``check_stop``: stop label of ``edge_id`` seen by a clone for ``port`` -> drop it."""
    return TableEntry(CHECK_STOP, ((KEY_LABEL, Exact(stop_label(fmt, edge_id))),
                                   (KEY_CLONE_PORT, Exact(port))), STOP_CLONE)


def tree_ports_entry(fmt: LabelFormat, tree_id: int, ports: Iterable[int]) -> TableEntry:
    """``check_tree``: tree label -> OR the stored port bitmask into ``remaining_ports``."""
    return TableEntry(CHECK_TREE, ((KEY_LABEL, Exact(tree_label(fmt, tree_id))),),
                      SET_TREE_PORTS, (("ports", fmt.port_mask(ports)),))


def tree_group_entry(fmt: LabelFormat, tree_id: int, group: int) -> TableEntry:
    """``check_tree``: tree label -> multicast group ``group`` (PRE replication)."""
    return TableEntry(CHECK_TREE, ((KEY_LABEL, Exact(tree_label(fmt, tree_id))),),
                      SET_TREE_GROUP, (("group", group),))


def extract_port_entries(fmt: LabelFormat, ports: Iterable[int]) -> list[TableEntry]:
    """``extract_port``: one ternary entry per port, matching "lowest 1-bit is port p"."""
    out = []
    for p in sorted(ports):
        bit = fmt.port_bit(p)
        out.append(TableEntry(EXTRACT_PORT, ((KEY_REMAINING, Ternary(bit, (bit << 1) - 1)),),
                              SET_PORT, (("port", p),), priority=fmt.bitmask_bits - p + 1))
    return out


def install_port_rules(builder: StateBuilder, topology: Topology, switch: str, fmt: LabelFormat,
                       *, hops: bool = True, stops: bool = True, extract: bool = True) -> None:
    """Install the per-port rules of ``switch``: hop and stop rules (one per incident
    edge), the ``extract_port`` helpers and one clone session per port.

    Raises
    ------
    FieldRangeError
        If the switch has more ports than ``bitmask_bits`` or an edge id does
        not fit the label id field.
    """
    ports = topology.ports(switch)
    for port, info in ports.items():
        fmt.port_bit(port)
        if hops:
            builder.add_entry(switch, hop_entry(fmt, info.link.edge_id, port))
        if stops:
            builder.add_entry(switch, stop_entry(fmt, info.link.edge_id, port))
        builder.add_clone_session(switch, port, port)
    if extract:
        for entry in extract_port_entries(fmt, ports):
            builder.add_entry(switch, entry)


# -- the data plane -----------------------------------------------------------


class VirtualTreeDataPlane:
    """Pass-by-pass model of the tree/hop/stop label program (the definition).

    Every table apply goes through :meth:`SwitchConfig.lookup`, one pass at
    a time, exactly as the module docstring lists them. Engines run the
    memoised :class:`sim.dataplanes.virtual_tree.memo.MemoVirtualTreeDataPlane`
    (same results, property-tested against this class in
    ``tests/sim/test_virtual_tree_memo.py``); this one is registered as the
    family's model.

    Parameters
    ----------
    fmt : LabelFormat
        Field widths and EtherType (defaults: the thesis's 16/2/16/64, 0x9999).

    References
    ----------
    Seed 000 §5.2.6 (Listings 5.1-5.5); digest ch. 5-7 §1.2-1.5.4.
    """

    name = "virtual_tree"

    def __init__(self, fmt: LabelFormat = DEFAULT_FORMAT) -> None:
        self.fmt = fmt

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        fmt = self.fmt
        parsed = fmt.parse(packet)
        if parsed is None:
            return reject()
        labels, payload = parsed
        stack = list(labels)
        index = remaining = served = 0
        passes = lookups = drops = 0
        # clones: (pass that made it, egress port, its stack, first label it scans)
        clones: list[tuple[int, int, list[int], int]] = []
        while True:
            passes += 1
            label = stack[index]
            remove = False
            if remaining == 0:
                lookups += 1
                hit = config.lookup(CHECK_HOP, label)
                if hit is not None:
                    remaining |= fmt.port_bit(hit.param("port"))
                    remove = True
                else:
                    lookups += 1
                    hit = config.lookup(CHECK_TREE, label)
                    if hit is not None and hit.action == SET_TREE_GROUP:
                        drops += self._replicate(switch, config, hit.param("group"), in_port,
                                                 served, passes, stack, index, clones)
                        break
                    if hit is not None:
                        remaining |= hit.param("ports")
            if remaining:
                lookups += 1
                hit = config.lookup(EXTRACT_PORT, remaining)
                if hit is None:
                    raise LookupError(f"{switch}: {EXTRACT_PORT} has no entry for bitmask "
                                      f"{remaining:#x}")
                port = hit.param("port")
                bit = fmt.port_bit(port)
                remaining &= ~bit
                if not served & bit and port != in_port:
                    served |= bit
                    session = clone_session(switch, config, port)
                    if remove:
                        clones.append((passes, session.port, stack[:index] + stack[index + 1:],
                                       index))
                    else:
                        clones.append((passes, session.port, list(stack), index + 1))
            if remaining == 0 and index + 1 >= len(stack):
                drops += 1  # original: every label seen, mask empty
                break
            if remove:
                del stack[index]
            elif remaining == 0:
                index += 1
        emitted: list[Emit] = []
        parents = [-1, *range(passes - 1)]  # pass trace: the original's passes first
        for made, port, cstack, start in clones:
            depth = made
            last = made - 1  # index of the pass that made the clone
            for j in range(start, len(cstack)):
                depth += 1
                passes += 1
                parents.append(last)
                last = len(parents) - 1
                lookups += 1
                if config.lookup(CHECK_STOP, cstack[j], port) is not None:
                    drops += 1
                    break
            else:
                emitted.append(Emit(port, Packet(packet.dst_mac, packet.src_mac,
                                                 packet.ethertype, fmt.encode(cstack), payload),
                                    depth, last))
        emitted.sort(key=lambda e: e.depth)
        return PipelineResult(passes=passes, recirculations=passes - 1, lookups=lookups,
                              emitted=tuple(emitted), dropped=drops, pass_parents=tuple(parents))

    def _replicate(self, switch: str, config: SwitchConfig, group_id: int, in_port: int,
                   served: int, made: int, stack: list[int], index: int,
                   clones: list[tuple[int, int, list[int], int]]) -> int:
        """PRE replication for ``set_tree_group``; returns the replicas dropped in egress."""
        group = config.multicast_groups.get(group_id)
        if group is None:
            raise LookupError(f"{switch}: multicast group {group_id} not installed")
        dropped = 0
        for port in group.ports:
            if port == in_port or served & self.fmt.port_bit(port):
                dropped += 1
                continue
            clones.append((made, port, list(stack), index + 1))
        return dropped


def clone_session(switch: str, config: SwitchConfig, port: int) -> CloneSession:
    """The clone session of ``port`` (one per port, session id = port).

    Raises
    ------
    LookupError
        If the control plane installed none.
    """
    session = config.clone_sessions.get(port)
    if session is None:
        raise LookupError(f"{switch}: no clone session {port} (install one per port)")
    return session


def reject() -> PipelineResult:
    """What the parser does with a frame that is not a label stack: one pass, dropped."""
    return PipelineResult(passes=1, recirculations=0, lookups=0, emitted=(), dropped=1,
                          pass_parents=(-1,))


DATAPLANES.add(VirtualTreeDataPlane.name, VirtualTreeDataPlane())
