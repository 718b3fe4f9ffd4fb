"""Neighbour-id and destination-id label program (*hops*, *destinations*), pass by pass.

Reference model of ``p4/neighbor_labels.p4``. Frame: Ethernet (0x9999) |
Size (16) | labels (16 each: 2-bit type + 14-bit id,
:mod:`sim.dataplanes.neighbor_labels.codec`) | payload. The program branches
on the type of the first label: NODE stacks run the *hops* logic, DEST stacks
the *destinations* logic (labels of the other type simply miss the tables).

Tables (key ``meta.label`` = the label ``act_read_entry`` copied):

==============================  =================================  =======================
table                           action(params)                     entries per switch
==============================  =================================  =======================
``MyIngress.check_neighbor``    ``clone_to_neighbor(port)``        one per port: the NODE
                                                                   label of the neighbour
                                                                   (switches and hosts)
``MyIngress.check_dest``        ``set_dest_port(port)``            one per host of the
                                                                   network: DEST label ->
                                                                   next-hop port (n^2 total)
==============================  =================================  =======================

Clone sessions: one per port, session id = port.

*hops* (seed 000 §4.2.1, predictive pruning as switch/port, Listing 3.3):

- the original reads the top label each pass and pops it; a ``check_neighbor``
  hit clones the packet to that neighbour's port (unless it is the ingress
  port); when the stack is empty the original is dropped;
- a clone made for label ``k`` keeps the labels after ``k``; it recirculates
  once per label, *skipping* labels (``num_seen_labels++``) until one hits
  ``check_neighbor`` - the next neighbour's id, root of the next sibling
  subtree - and from there on *deleting* one label per pass; then it leaves.
  So the clone carries exactly its neighbour's subtree ("begins immediately
  after its ID and extends either to the next neighbor's ID or to the end").

*destinations* (seed 000 §4.2.2):

- the original reads and pops one DEST label per pass; ``check_dest`` gives
  the port; a clone is made only the first time a port is used (the
  ``served_ports`` bitmask) and never to the ingress port;
- a clone made for label ``k`` (port ``p``) keeps label ``k``, then
  recirculates once per later label, applying ``check_dest`` and deleting
  labels whose port differs from ``p`` (clone post-processing, Fig. 4.2).

Pass trace (``PipelineResult.pass_parents``): the original's passes are
0..L-1 (a chain); each clone's passes follow, the first spawned by the
original pass that made it; a copy leaves after its clone's last pass.

Deviations from the thesis: the thesis gives no P4 code for *hops* and
*destinations*; the passes follow the switch/port listing (one label per
pass, clones trimmed one label per pass) and the Ch. 5 served-ports mask.
The type dispatch on the first label is an addition so both strategies share
one program. A packet that is not 0x9999, has ``Size == 0`` or a first label
of another type is rejected/dropped (one pass, no lookup).

References
----------
Seed 000 §3.3.1 (predictive pruning), §4.2.1 (Fig. 4.1), §4.2.2 (Fig. 4.2);
digest ch. 1-4 §3.2, §3.6, §3.7.
"""

from __future__ import annotations

from sim.dataplanes.control_state import Exact, StateBuilder, SwitchConfig, TableEntry
from sim.dataplanes.neighbor_labels.codec import KIND_DEST, KIND_NODE, dest_label, node_label
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, Emit, PipelineResult
from sim.dataplanes.virtual_tree.codec import LabelFormat
from topologies.model import Topology

CHECK_NEIGHBOR = "MyIngress.check_neighbor"
CHECK_DEST = "MyIngress.check_dest"
CLONE_TO_NEIGHBOR = "MyIngress.clone_to_neighbor"
SET_DEST_PORT = "MyIngress.set_dest_port"
KEY_LABEL = "meta.label"

DEFAULT_FORMAT = LabelFormat()


# -- rules ----------------------------------------------------------------------


def neighbor_entry(fmt: LabelFormat, topology: Topology, neighbor: str, port: int) -> TableEntry:
    fmt.port_bit(port)
    return TableEntry(CHECK_NEIGHBOR, ((KEY_LABEL, Exact(node_label(fmt, topology, neighbor))),),
                      CLONE_TO_NEIGHBOR, (("port", port),))


def dest_entry(fmt: LabelFormat, topology: Topology, host: str, port: int) -> TableEntry:
    fmt.port_bit(port)
    return TableEntry(CHECK_DEST, ((KEY_LABEL, Exact(dest_label(fmt, topology, host))),),
                      SET_DEST_PORT, (("port", port),))


def install_clone_sessions(builder: StateBuilder, topology: Topology, switch: str,
                           fmt: LabelFormat) -> None:
    """One clone session per port of ``switch`` (session id = port)."""
    for port in topology.ports(switch):
        fmt.port_bit(port)
        builder.add_clone_session(switch, port, port)


# -- the data plane ---------------------------------------------------------------


class NeighborLabelsDataPlane:
    """Pass-by-pass model of the hops/destinations label program.

    Parameters
    ----------
    fmt : LabelFormat
        Field widths and EtherType (defaults: 16/2/16/64, 0x9999).
    """

    name = "neighbor_labels"

    def __init__(self, fmt: LabelFormat = DEFAULT_FORMAT) -> None:
        self.fmt = fmt

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        fmt = self.fmt
        parsed = fmt.parse(packet)
        if parsed is None:
            return _reject()
        labels, payload = parsed
        kind = fmt.kind(labels[0])
        if kind == KIND_NODE:
            return self._hops(switch, config, packet, labels, payload, in_port)
        if kind == KIND_DEST:
            return self._destinations(switch, config, packet, labels, payload, in_port)
        return _reject()

    def _hops(self, switch: str, config: SwitchConfig, packet: Packet, labels: tuple[int, ...],
              payload: bytes, in_port: int) -> PipelineResult:
        passes = lookups = 0
        clones: list[tuple[int, int]] = []  # (label index that made it, port)
        for k, label in enumerate(labels):  # original: one label per pass, popped
            passes += 1
            lookups += 1
            hit = config.lookup(CHECK_NEIGHBOR, label)
            if hit is not None and hit.param("port") != in_port:
                clones.append((k, _session_port(switch, config, hit.param("port"))))
        emitted = []
        parents = _chain(len(labels))  # pass trace: the original's passes first
        for k, port in clones:
            keep: list[int] = []
            trimming = False
            depth = k + 1
            last = k  # the clone is made in pass k and recirculates from there
            for label in labels[k + 1:]:  # skip own subtree, delete from the next neighbour on
                passes += 1
                depth += 1
                parents.append(last)
                last = len(parents) - 1
                if not trimming:
                    lookups += 1
                    trimming = config.lookup(CHECK_NEIGHBOR, label) is not None
                if not trimming:
                    keep.append(label)
            emitted.append(self._emit(packet, port, keep, payload, depth, last))
        emitted.sort(key=lambda e: e.depth)
        return PipelineResult(passes=passes, recirculations=passes - 1, lookups=lookups,
                              emitted=tuple(emitted), dropped=1, pass_parents=tuple(parents))

    def _destinations(self, switch: str, config: SwitchConfig, packet: Packet,
                      labels: tuple[int, ...], payload: bytes, in_port: int) -> PipelineResult:
        fmt = self.fmt
        passes = lookups = served = 0
        clones: list[tuple[int, int, int]] = []  # (label index, table port, egress port)
        for k, label in enumerate(labels):  # original: one label per pass, popped
            passes += 1
            lookups += 1
            hit = config.lookup(CHECK_DEST, label)
            if hit is None:
                continue
            port = hit.param("port")
            bit = fmt.port_bit(port)
            if not served & bit and port != in_port:
                served |= bit
                clones.append((k, port, _session_port(switch, config, port)))
        emitted = []
        parents = _chain(len(labels))  # pass trace: the original's passes first
        for k, port, out in clones:
            keep = [labels[k]]
            depth = k + 1
            last = k  # the clone is made in pass k and recirculates from there
            for label in labels[k + 1:]:  # clone post-processing: keep ids of this port only
                passes += 1
                depth += 1
                parents.append(last)
                last = len(parents) - 1
                lookups += 1
                hit = config.lookup(CHECK_DEST, label)
                if hit is not None and hit.param("port") == port:
                    keep.append(label)
            emitted.append(self._emit(packet, out, keep, payload, depth, last))
        emitted.sort(key=lambda e: e.depth)
        return PipelineResult(passes=passes, recirculations=passes - 1, lookups=lookups,
                              emitted=tuple(emitted), dropped=1, pass_parents=tuple(parents))

    def _emit(self, packet: Packet, port: int, labels: list[int], payload: bytes,
              depth: int, after_pass: int) -> Emit:
        return Emit(port, Packet(packet.dst_mac, packet.src_mac, packet.ethertype,
                                 self.fmt.encode(labels), payload), depth, after_pass)


def _chain(n: int) -> list[int]:
    """Pass trace of ``n`` sequential passes (each the recirculation of the one before)."""
    return [-1, *range(n - 1)]


def _session_port(switch: str, config: SwitchConfig, port: int) -> int:
    session = config.clone_sessions.get(port)
    if session is None:
        raise LookupError(f"{switch}: no clone session {port} (install one per port)")
    return session.port


def _reject() -> PipelineResult:
    return PipelineResult(passes=1, recirculations=0, lookups=0, emitted=(), dropped=1,
                          pass_parents=(-1,))


DATAPLANES.add(NeighborLabelsDataPlane.name, NeighborLabelsDataPlane())
