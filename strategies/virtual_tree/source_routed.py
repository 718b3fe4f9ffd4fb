"""``source-routed``: hop labels only, one per link of the Steiner tree (seed 000 ch. 5-6).

The baseline of both virtual-tree chapters ("source-routed" in Figs. 5.11-
5.13, "hops" in Figs. 6.9-6.14): no virtual tree is installed
(``check_tree`` stays empty), and the header holds one hop label per link
of the delivery tree, a Steiner tree of the publisher's and the receivers'
switches plus the receivers' host links (the publisher's own host link
carries the packet in and needs no label). It runs on the ``virtual_tree``
data plane, so its headers are byte-compatible with the VT strategies' and
its rules are the per-port ``check_hop`` / ``check_stop`` / ``extract_port``
rules every VT switch has anyway. Works on any topology.

It is Algorithm 5.1 with ``T_virt = {}``: the header is ``E+`` of line 3.

Deviations: none (the Steiner heuristic is the encoder's, see
:mod:`strategies.virtual_tree.encoder`; the thesis cites [103] without details).

References
----------
Seed 000 §5.2.4 (hop labels), §5.2.7 (Algorithm 5.1, line 3), §5.4
(source-routed baseline), §6.2.1 (label complexity r ... n - (l - r)),
§6.5.3 (hops); digest ch. 5-7 §1.6, §3.1.
"""

from __future__ import annotations

from collections.abc import Iterator

from strategies.base import Knowledge, register_strategy
from strategies.virtual_tree.installation import Candidate, VirtualTreeStrategy
from topologies.model import Topology


@register_strategy
class SourceRouted(VirtualTreeStrategy):
    """Hop labels over the Steiner tree; no stored trees."""

    name = "source-routed"
    vt_fast_path = True
    reads_workload = False  # no candidates
    summary = "hop labels only, one per Steiner-tree link (ch. 5-6 baseline)"

    def candidates(self, topology: Topology, knowledge: Knowledge) -> Iterator[Candidate]:
        return iter(())
