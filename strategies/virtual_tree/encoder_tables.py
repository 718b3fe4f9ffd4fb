"""The installed virtual trees as flat arrays, and the compiled encoder's entry point.

:class:`TreeTables` holds a state's published VTs in the form the compiled
greedy loop (:mod:`strategies.virtual_tree.encoder_kernel`) reads: edge ids
and switch indices per tree in compressed rows, and the per-state part of the
candidate order. A strategy builds it once per installed state
(``Caches.vt_compiled``, :meth:`strategies.virtual_tree.installation.
VirtualTreeStrategy.tree_tables`); :func:`encode_arrays` runs one
notification through the kernel.

References
----------
Seed 000 §5.2.7 (Algorithm 5.1); digest ch. 5-7 §1.6.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from strategies.virtual_tree.encoder_kernel import (
    BEST_IMPROVEMENT,
    SINGLE_PASS,
    encode_kernel,
    tree_order,
)
from strategies.virtual_tree.steiner import EncoderGraph
from topologies.model import Topology

if TYPE_CHECKING:
    from strategies.virtual_tree.encoder import CompiledTree, EncoderOptions


@dataclass(frozen=True, eq=False)
class TreeTables:
    """A state's VTs for the compiled encoder (built by :func:`tree_tables`).

    Attributes
    ----------
    trees : tuple of CompiledTree
        The VTs, in published order (position ``k`` is row ``k`` below).
    tree_ids : numpy.ndarray
        Their tree ids.
    t_ptr, t_edges : numpy.ndarray
        Tree ``k``'s edge ids, ascending: ``t_edges[t_ptr[k]:t_ptr[k + 1]]``.
    t_node_ptr, t_nodes : numpy.ndarray
        Its switch indices (the bits of its mask), ascending.
    order : numpy.ndarray
        Positions by size (descending), then tree id.
    """

    trees: tuple[CompiledTree, ...]
    tree_ids: np.ndarray
    t_ptr: np.ndarray
    t_edges: np.ndarray
    t_node_ptr: np.ndarray
    t_nodes: np.ndarray
    order: np.ndarray


def _rows(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(rows) + 1, np.int64)
    ptr[1:] = np.cumsum([len(r) for r in rows])
    flat = np.fromiter((x for r in rows for x in r), np.int64, int(ptr[-1]))
    return ptr, flat


def _mask_bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def tree_tables(trees: Sequence[CompiledTree]) -> TreeTables:
    """The :class:`TreeTables` of ``trees``."""
    trees = tuple(trees)
    t_ptr, t_edges = _rows([sorted(t.edges) for t in trees])
    t_node_ptr, t_nodes = _rows([_mask_bits(t.mask) for t in trees])
    ids = np.array([t.tree_id for t in trees], np.int64)
    return TreeTables(trees=trees, tree_ids=ids, t_ptr=t_ptr, t_edges=t_edges,
                      t_node_ptr=t_node_ptr, t_nodes=t_nodes,
                      order=tree_order(np.diff(t_ptr), ids))


def encode_arrays(topology: Topology, g: EncoderGraph, tables: TreeTables, publisher: str,
                  receivers: frozenset[str], options: EncoderOptions
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 5.1 for one notification, compiled (``options.steiner`` must be ``"sph"``).

    Returns
    -------
    (tree_ids, stops, hops, delivery) : numpy.ndarray
        As :class:`~strategies.virtual_tree.encoder.VtEncoding`: selected tree ids
        in selection order, stop edge ids ascending, hop edge ids in header
        order, delivery edge ids.

    Raises
    ------
    ValueError
        If a receiver's switch is not connected to the publisher's.
    """
    if encode_kernel is None:
        raise RuntimeError("the compiled encoder needs numba (pip install numba)")
    recv = np.fromiter(map(topology.host_id, receivers), np.int64, len(receivers))
    status, chosen, stops, hops, delivery = encode_kernel(
        g.arrays, g.end_a, g.end_b, g.link_switch, g.host_switch, g.host_edge,
        g.host_link_ptr, g.host_link_eid, tables.t_ptr, tables.t_edges, tables.t_node_ptr,
        tables.t_nodes, tables.order, topology.host_id(publisher), recv,
        BEST_IMPROVEMENT if options.mode == "best_improvement" else SINGLE_PASS,
        -1 if options.patience is None else options.patience, options.prefilter,
        options.prune_unused)
    if status == 2:
        raise ValueError(f"switch {g.names[int(chosen[0])]} is not connected to the tree")
    if status == 3:
        raise RuntimeError("compiled Steiner routine: deque bound exceeded (a bug)")
    return tables.tree_ids[chosen], stops, hops, delivery
