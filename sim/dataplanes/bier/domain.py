"""A BIER domain on a topology: which switches are BFERs, their BFR-ids, sets and bits.

Every switch is a BFR (it forwards BIER packets; RFC 8279 §6.9's tunnels
through non-BIER routers are not modelled). The BFERs are the switches with
hosts (``bfers="hosts"``, the default: a switch delivers to the hosts
attached to it) or every switch (``"all"``). BFR-ids are assigned from 1 in
topology switch order. With BitString length ``BSL``, BFR-id ``i`` lies in
set ``SI = (i - 1) // BSL`` at bit position ``k = (i - 1) % BSL + 1``
(RFC 8279 §3); a packet reaches BFERs of one set only, so the BFIR sends one
copy per set its receivers touch.

Limits: BFR-ids are 16-bit (the BFIR-id field, RFC 8296 §2.1.2; RFC 8279 §3
allows 1..65535) and the set identifier is 8-bit in the BIFT-id encoding of
:mod:`sim.dataplanes.bier.codec`, so at most ``256 x BSL`` BFERs.

References
----------
RFC 8279 §2 (BFR, BFIR, BFER), §3 (BFR-ids, SI and BitString); RFC 8296 §2.1.2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Literal

from sim.dataplanes.bier.codec import SI_BITS, bsl_code
from topologies.model import Topology
from topologies.registry import SpecError

BferChoice = Literal["hosts", "all"]
MAX_BFR_ID = 0xFFFF


@dataclass(frozen=True)
class BierDomain:
    """The BFERs of one topology and BitString length.

    Attributes
    ----------
    bsl_bits : int
        BitString length (bits).
    bfers : tuple of str
        BFER switches by BFR-id: ``bfers[i - 1]`` has BFR-id ``i``.
    bfr_id : mapping
        BFER switch -> its BFR-id.
    """

    bsl_bits: int
    bfers: tuple[str, ...]
    bfr_id: Mapping[str, int]

    @property
    def sets(self) -> int:
        """Number of sets (SIs) the BFR-ids span."""
        return -(-len(self.bfers) // self.bsl_bits)

    def position(self, bfr_id: int) -> tuple[int, int]:
        """(SI, bit position k from 1) of ``bfr_id`` (RFC 8279 §3)."""
        si, k = divmod(bfr_id - 1, self.bsl_bits)
        return si, k + 1


@lru_cache(maxsize=32)
def bier_domain(topology: Topology, bsl_bits: int, bfers: BferChoice = "hosts") -> BierDomain:
    """BFR-ids of ``topology``'s BFERs (module docstring).

    Raises
    ------
    SpecError
        If the BFERs need more BFR-ids than 16 bits or more sets than the
        8-bit SI can name at ``bsl_bits``.
    """
    bsl_code(bsl_bits)
    if bfers not in ("hosts", "all"):
        raise SpecError(f"bfers must be hosts or all; got {bfers!r}")
    chosen = tuple(sw for sw in topology.switches if bfers == "all" or topology.hosts_of(sw))
    limit = min(MAX_BFR_ID, (1 << SI_BITS) * bsl_bits)
    if len(chosen) > limit:
        raise SpecError(f"{len(chosen)} BFERs need more BFR-ids than bsl_bits={bsl_bits} "
                        f"allows (at most {limit}: 16-bit BFR-ids, 256 sets)")
    ids = {sw: i + 1 for i, sw in enumerate(chosen)}
    return BierDomain(bsl_bits=bsl_bits, bfers=chosen, bfr_id=MappingProxyType(ids))
