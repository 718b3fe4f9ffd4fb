"""The virtual-tree data plane as it was before its lookups were memoised (test reference).

A verbatim copy of ``VirtualTreeDataPlane.process`` at commit 01b5425
(before issue 9) (every table lookup through ``SwitchConfig.lookup``, one pass at a
time); ``tests/sim/test_virtual_tree_memo.py`` checks that the optimised
model gives the same :class:`PipelineResult` on every frame of random runs.
"""

from __future__ import annotations

from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import Emit, PipelineResult
from sim.dataplanes.virtual_tree.codec import StackDecodeError
from sim.dataplanes.virtual_tree.reference import (
    CHECK_HOP,
    CHECK_STOP,
    CHECK_TREE,
    EXTRACT_PORT,
    SET_TREE_GROUP,
    VirtualTreeDataPlane,
    _reject,
    _session,
)


class ReferenceVirtualTree(VirtualTreeDataPlane):
    """:class:`VirtualTreeDataPlane` with the original, unmemoised ``process``."""

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        fmt = self.fmt
        if packet.ethertype != fmt.ethertype:
            return _reject()
        try:
            labels, payload = fmt.split_body(packet.header, packet.payload)
        except StackDecodeError:
            return _reject()
        if not labels:
            return _reject()
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
                    session = _session(switch, config, port)
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
