"""``bier``: Bit Index Explicit Replication on shortest paths, as P4-BIER runs it.

The publisher's host acts as the BFIR (RFC 8279 §4: the BFIR picks the
BFERs of the packet and imposes the BIER header): it sends the event frame a
plain multicast would send (group MAC, its own MAC, the event EtherType)
encapsulated in the RFC 8296 header (:mod:`sim.dataplanes.bier.codec`), one
packet per set (SI) its receivers' switches touch, in SI order, each with
the bits of that set's BFERs. The switches run the BIFT pass by pass
(:mod:`sim.dataplanes.bier.reference`: one pass per next hop, clone and
recirculation for the remaining bits), and each BFER decapsulates and
replicates the carried frame to its receiving hosts.

State (:mod:`strategies.bier.bift`): the BIFT of every switch and its
continuation clone session depend on the topology and the parameters only
(:meth:`Bier.base_rules`, built once per cell); the local-delivery group of
each receiver set on its BFERs is receiver-scoped (a single set's is built
directly on the BIFTs: :func:`strategies.bier.bift.local_group_state`).

Header: ``12 + BSL/8`` B of BIER plus the 14 B Ethernet header of the carried
frame per packet (``header_bytes``); one BitString per packet
(``header_entries`` = packets). Frames on host links are the plain event
frames.

References
----------
RFC 8279 §3 (sets), §4, §6 (BIFT, forwarding); RFC 8296 §2 (header);
uni-tue-kn/p4-bier (P4-Implementation, Controller-Implementation); Merling et
al., "P4-based implementation of BIER and BIER-FRR for scalable and resilient
multicast", JNCA 2020.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.dataplanes.bier.codec import BierHeader, bift_id, bsl_code, encapsulate
from sim.dataplanes.bier.domain import BferChoice, BierDomain, bier_domain
from sim.dataplanes.bier.fast_path import bier_fast_path
from sim.dataplanes.bier.reference import BierDataPlane
from sim.dataplanes.caches import Identity
from sim.dataplanes.control_state import ControlState, StateBuilder
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import Notification, Packet, group_mac, host_mac
from sim.dataplanes.pipeline import DataPlane
from strategies.base import Encoding, Knowledge, Strategy, register_strategy
from strategies.bier.bift import add_bift, add_local_groups, bift_state, local_group_state
from strategies.frame_size import DEFAULT_MTU_BYTES, OversizeError
from strategies.l2.rules import ETHERTYPE_EVENT
from topologies.model import Topology
from topologies.registry import check

#: The bitstring lengths this strategy offers (P4-BIER's 64 bits and the next two).
BSL_CHOICES = (64, 128, 256)


@dataclass(frozen=True, slots=True, kw_only=True)
class BierParams:
    """bier parameters.

    Parameters
    ----------
    bsl_bits : int
        BitString length in bits: 64 (P4-BIER's), 128 or 256 (RFC 8296
        §2.1.2). Domains with more BFERs use several sets.
    bfers : {"hosts", "all"}
        Which switches are BFERs (get a BFR-id, in switch order): those with
        hosts, or every switch. Every switch is a BFR.
    subdomain : int
        The sub-domain (0..255) named in the BIFT-id.
    ttl : int
        TTL the BFIR sets (1..255); a BFR does not forward a copy whose TTL
        would reach 0.
    mtu_bytes : int
        Largest BIER header + carried frame header + payload in bytes
        (1500); a larger notification raises :class:`OversizeError`.
    """

    bsl_bits: int = 64
    bfers: BferChoice = "hosts"
    subdomain: int = 0
    ttl: int = 64
    mtu_bytes: int = DEFAULT_MTU_BYTES

    def __post_init__(self) -> None:
        check(self.bsl_bits in BSL_CHOICES, "bsl_bits must be one of "
              f"{', '.join(map(str, BSL_CHOICES))}; got {self.bsl_bits!r}")
        check(self.bfers in ("hosts", "all"), f"bfers must be hosts or all; got {self.bfers!r}")
        check(0 <= self.subdomain <= 255, f"subdomain must be in 0..255; got {self.subdomain!r}")
        check(1 <= self.ttl <= 255, f"ttl must be in 1..255; got {self.ttl!r}")
        check(self.mtu_bytes > 0, f"mtu_bytes must be > 0; got {self.mtu_bytes!r}")


def receivers_key(receivers: frozenset[str]) -> str:
    """Key under which a receiver set's local group id is published to the encoder."""
    return ",".join(sorted(receivers))


@register_strategy
class Bier(Strategy):
    name = "bier"
    dataplane = "bier"
    Params = BierParams
    scope = "receivers"
    summary = "RFC 8296 bitstring of BFERs, BIFT on shortest paths, one pass per next hop"

    def model(self) -> DataPlane:
        """The BIER program compiled for this strategy's bitstring length."""
        return BierDataPlane(bsl_bits=self.params.bsl_bits)

    def domain(self, topology: Topology) -> BierDomain:
        """BFR-ids of ``topology`` (raises ``SpecError`` if they do not fit)."""
        return bier_domain(topology, self.params.bsl_bits, self.params.bfers)

    def check_applicable(self, topology: Topology, population: Any) -> None:
        self.domain(topology)

    def base_rules(self, builder: StateBuilder, topology: Topology) -> None:
        """Every switch's BIFT and continuation clone session."""
        add_bift(builder, topology, self.domain(topology), self.params.subdomain)

    def base_state(self, topology: Topology) -> ControlState:
        """The state of :meth:`base_rules`, built directly
        (:func:`strategies.bier.bift.bift_state`, equal to adding the rules one by
        one) and kept in ``caches.base_states`` as the base class does: a BIFT has
        switches x BFERs entries."""
        key = (type(self), self.params, Identity(topology))
        base = self.caches.base_states.get(key)
        if base is None:
            base = self.caches.base_states.put(
                key, bift_state(topology, self.domain(topology), self.params.subdomain))
        return base  # type: ignore[no-any-return]

    def install(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """The BIFTs (shared base) and one local group per known receiver set
        (:meth:`install_reference`); a single receiver set (what a receiver-scoped
        cell installs per notification) built directly on the base
        (:func:`strategies.bier.bift.local_group_state`, the same state)."""
        self.domain(topology)
        single = [receivers for pub in knowledge.publishers
                  for receivers in knowledge.receiver_sets[pub]]
        if len(single) != 1 or not single[0]:
            return self.install_reference(topology, knowledge)
        (receivers,) = single
        return local_group_state(topology, self.base_state(topology), 1, receivers,
                                 self.caches.group_configs,
                                 {"groups": {receivers_key(receivers): 1}})

    def install_reference(self, topology: Topology, knowledge: Knowledge) -> ControlState:
        """Every receiver set's local group added to a builder on the BIFTs (the
        reference)."""
        self.domain(topology)
        builder = self.state_builder(topology)
        groups: dict[str, int] = {}
        for pub in knowledge.publishers:
            for receivers in sorted(knowledge.receiver_sets[pub], key=sorted):
                key = receivers_key(receivers)
                if not receivers or key in groups:
                    continue
                group = groups[key] = len(groups) + 1
                add_local_groups(builder, topology, group, receivers)
        return builder.build(topology.switches, {"groups": groups})

    def encode(self, topology: Topology, state: ControlState, notification: Notification,
               receivers: frozenset[str], payload: bytes) -> Encoding:
        """One BIER packet per set the receivers' BFERs touch, in SI order."""
        if not receivers:
            return Encoding(())
        key = receivers_key(receivers)
        try:
            group = state.publisher_info["groups"][key]
        except KeyError:
            raise LookupError(f"no BIER local group installed for {key}") from None
        params = self.params
        domain = self.domain(topology)
        publisher = notification.publisher
        frame = Packet(group_mac(group), host_mac(topology, publisher), ETHERTYPE_EVENT,
                       b"", payload)
        sets: dict[int, int] = {}
        for host in receivers:
            sw = topology.host_switch(host)
            bfr = domain.bfr_id.get(sw)
            if bfr is None:
                raise ValueError(f"receiver {host}: its switch {sw} is not a BFER")
            si, k = domain.position(bfr)
            sets[si] = sets.get(si, 0) | 1 << (k - 1)
        bfir = domain.bfr_id.get(topology.host_switch(publisher), 0)
        code = bsl_code(params.bsl_bits)
        packets = tuple(
            encapsulate(BierHeader(bift_id=bift_id(params.bsl_bits, params.subdomain, si),
                                   ttl=params.ttl, bsl=code, bitstring=bits, bfir_id=bfir),
                        frame)
            for si, bits in sorted(sets.items()))
        size = len(packets[0].header) + len(payload)
        if size > params.mtu_bytes:
            raise OversizeError(
                f"notification {notification.notification_id} from {publisher}: {size} B of "
                f"BIER header + payload exceed the {params.mtu_bytes} B MTU")
        return Encoding(packets, header_entries=len(packets))

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The BIER walk of :mod:`sim.dataplanes.bier.fast_path`; not for subclasses."""
        if type(self) is not Bier:
            return None
        p = self.params
        return bier_fast_path(topology, delays, self.encode, bsl_bits=p.bsl_bits,
                              bfers=p.bfers, ttl=p.ttl, mtu_bytes=p.mtu_bytes)

