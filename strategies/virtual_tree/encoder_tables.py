"""The installed virtual trees as flat arrays, and the compiled encoder's entry point.

:class:`TreeTables` holds a state's published VTs in the form the compiled
greedy loop (:mod:`strategies.virtual_tree.encoder_kernel`) reads: edge ids
and switch indices per tree in compressed rows, and the per-state part of the
candidate order. A strategy builds it once per installed state
(``Caches.vt_compiled``, :meth:`strategies.virtual_tree.installation.
VirtualTreeStrategy.tree_tables`, from the link ids with numpy:
:func:`installed_tables`); :func:`encode_arrays` runs one notification
through the kernel.

References
----------
Seed 000 §5.2.7 (Algorithm 5.1); digest ch. 5-7 §1.6.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from strategies.virtual_tree.encoder_kernel import (
    BEST_IMPROVEMENT,
    NO_LABELS,
    SINGLE_PASS,
    TREE_PARTS,
    encode_kernel,
    pack,
    tree_order,
)
from strategies.virtual_tree.steiner import EncoderGraph
from topologies.model import Topology

if TYPE_CHECKING:
    from strategies.virtual_tree.encoder import CompiledTree, EncoderOptions


@dataclass(frozen=True, eq=False)
class TreeTables:
    """A state's VTs for the compiled encoder (built by :func:`tree_tables` or
    :func:`installed_tables`).

    Attributes
    ----------
    tree_ids : numpy.ndarray
        The tree ids, in published order (position ``k`` is row ``k`` below).
    t_ptr, t_edges : numpy.ndarray
        Tree ``k``'s edge ids, ascending: ``t_edges[t_ptr[k]:t_ptr[k + 1]]``.
    t_node_ptr, t_nodes : numpy.ndarray
        Its switch indices (the bits of its mask), ascending.
    order : numpy.ndarray
        Positions by size (descending), then tree id.
    make_trees : callable
        Builds :attr:`trees` (on first use: only the reference encoder reads them).
    packed : (numpy.ndarray, numpy.ndarray)
        The arrays above in the order of
        :data:`~strategies.virtual_tree.encoder_kernel.TREE_PARTS`, packed.
    """

    tree_ids: np.ndarray
    t_ptr: np.ndarray
    t_edges: np.ndarray
    t_node_ptr: np.ndarray
    t_nodes: np.ndarray
    order: np.ndarray
    make_trees: Callable[[], tuple[CompiledTree, ...]]
    packed: tuple[np.ndarray, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "packed", pack([getattr(self, n) for n in TREE_PARTS]))

    @cached_property
    def trees(self) -> tuple[CompiledTree, ...]:
        """The VTs as :class:`~strategies.virtual_tree.encoder.CompiledTree` s, in order."""
        return self.make_trees()


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
    return TreeTables(tree_ids=ids, t_ptr=t_ptr, t_edges=t_edges, t_node_ptr=t_node_ptr,
                      t_nodes=t_nodes, order=tree_order(np.diff(t_ptr), ids),
                      make_trees=lambda: trees)


def installed_tables(g: EncoderGraph, tree_ids: Sequence[int],
                     edges: Sequence[Sequence[int]],
                     make_trees: Callable[[], tuple[CompiledTree, ...]]) -> TreeTables:
    """:func:`tree_tables` of the VTs ``tree_ids`` with link sets ``edges``, computed
    from the link ids at once (``make_trees`` gives the same VTs as
    :class:`~strategies.virtual_tree.encoder.CompiledTree` s)."""
    n_trees, n, n_ids = len(tree_ids), len(g.names), g.edge_count
    sizes = np.fromiter(map(len, edges), np.int64, n_trees)
    flat = np.fromiter((e for es in edges for e in es), np.int64, int(sizes.sum()))
    owner = np.repeat(np.arange(n_trees, dtype=np.int64), sizes)
    # edge ids per tree, ascending and distinct
    code = np.unique(owner * n_ids + flat)
    owner, flat = code // n_ids, code % n_ids
    t_ptr = np.zeros(n_trees + 1, np.int64)
    t_ptr[1:] = np.cumsum(np.bincount(owner, minlength=n_trees))
    # switches per tree: both ends of switch links, the switch of host links
    switch_link = g.end_a[flat] >= 0
    ends = np.concatenate([g.end_a[flat][switch_link], g.end_b[flat][switch_link],
                           g.link_switch[flat][~switch_link]])
    node_owner = np.concatenate([owner[switch_link], owner[switch_link],
                                 owner[~switch_link]])
    code = np.unique(node_owner * n + ends)
    t_node_ptr = np.zeros(n_trees + 1, np.int64)
    t_node_ptr[1:] = np.cumsum(np.bincount(code // n, minlength=n_trees))
    ids = np.array(tree_ids, np.int64)
    return TreeTables(tree_ids=ids, t_ptr=t_ptr, t_edges=flat, t_node_ptr=t_node_ptr,
                      t_nodes=code % n, order=tree_order(np.diff(t_ptr), ids),
                      make_trees=make_trees)


class KernelEncoding(NamedTuple):
    """What :func:`encode_arrays` gives: ``ids`` = the selected tree ids in selection
    order, the stop edge ids (ascending), the hop edge ids (header order); the
    number of trees and of stops among them; their ``labels`` (empty unless asked
    and every id fits); the delivery edge ids."""

    ids: np.ndarray
    n_trees: int
    n_stops: int
    labels: np.ndarray
    delivery: np.ndarray


def encode_arrays(topology: Topology, g: EncoderGraph, tables: TreeTables, publisher: str,
                  receivers: frozenset[str], options: EncoderOptions,
                  label_spec: np.ndarray = NO_LABELS, tally: np.ndarray | None = None,
                  unique_fresh: bool = True) -> KernelEncoding:
    """Algorithm 5.1 for one notification, compiled (``options.steiner`` must be ``"sph"``).

    ``label_spec``: ``[id_bits, max_id, tree kind, stop kind, hop kind]`` to
    get the labels too (see :func:`~strategies.virtual_tree.encoder_kernel.encode_loop`).
    ``tally``: two int64 counters the loop adds its Steiner runs and its passed-over
    repeated trials to; ``unique_fresh=False`` evaluates repeated trials too (the
    same encoding; for the tests).

    Raises
    ------
    ValueError
        If a receiver's switch is not connected to the publisher's.
    """
    if encode_kernel is None:
        raise RuntimeError("the compiled encoder needs numba (pip install numba)")
    recv = np.fromiter(map(g.host_index.__getitem__, receivers), np.int64, len(receivers))
    mode = BEST_IMPROVEMENT if options.mode == "best_improvement" else SINGLE_PASS
    status, ids, n_trees, n_stops, labels, delivery = encode_kernel(
        *g.packed, *tables.packed, g.host_index[publisher], recv, mode,
        -1 if options.patience is None else options.patience, options.prefilter,
        options.prune_unused, label_spec, np.zeros(2, np.int64) if tally is None else tally,
        unique_fresh)
    if status == 2:
        raise ValueError(f"switch {g.names[int(ids[0])]} is not connected to the tree")
    if status == 3:
        raise RuntimeError("compiled Steiner routine: deque bound exceeded (a bug)")
    return KernelEncoding(ids, n_trees, n_stops, labels, delivery)
