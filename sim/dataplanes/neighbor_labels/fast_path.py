"""Fast path of neighbour-label stacks (``hops``): the tree walk of the source-routing stacks.

A hops stack lists the nodes of the shortest-path delivery tree in preorder
(root omitted), and a switch clones to each neighbour it finds and trims
the clone to that neighbour's subtree (predictive pruning). Its walk is
that of a predictive switch/port stack except that a copy stops looking up
labels at the next neighbour label, so it runs on the shared closed form of
:mod:`sim.dataplanes.source_routing.fast_path` (walk ``"hops"``).

References
----------
Seed 000 §4.2.1 (Fig. 4.1), §3.3.1 (predictive pruning), §3.5.4 (delays);
digest ch. 1-4 §3.6, §7.11, §7.16.
"""

from __future__ import annotations

from sim.dataplanes.caches import Caches
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import Encoder
from sim.dataplanes.source_routing.fast_path import StackWalk, TreeWalkFastPath
from sim.dataplanes.virtual_tree.codec import LabelFormat
from topologies.model import Topology


def hops_fast_path(topology: Topology, delays: DelayModel, encode: Encoder, *,
                   fmt: LabelFormat, frame_limit: int, impl: str = "auto",
                   caches: Caches | None = None) -> TreeWalkFastPath | None:
    """The fast path of neighbour-label stacks of format ``fmt`` on ``topology``.

    Parameters
    ----------
    topology, delays
        The network and the analytic delay constants (seed 000 §3.5.4).
    encode
        The strategy's encoder (its packets go into the delivery).
    fmt : LabelFormat
        Label widths (one label per tree node, the root omitted).
    frame_limit : int
        Largest header + payload in bytes (the MTU policy's).
    impl : {"auto", "jit", "numpy"}
        As in :class:`~sim.dataplanes.source_routing.fast_path.TreeWalkFastPath`.
    caches : Caches, optional
        Where the tree tables of ``topology`` are kept (the strategy's).

    Returns
    -------
    TreeWalkFastPath or None
        None when the node ids do not fit the labels (the reference raises
        for every notification then).
    """
    if len(topology.switches) + len(topology.hosts) - 1 > fmt.max_id:
        return None
    shape = StackWalk(walk="hops", size_bytes=fmt.size_bytes, entry_bytes=fmt.label_bytes,
                      max_entries=fmt.max_entries, frame_limit=frame_limit)
    return TreeWalkFastPath(topology, shape, delays, encode, impl, caches)
