"""Which virtual-tree data-plane model the VT strategies' packets run on, and its caches.

Every strategy of the virtual-tree family (``tree``, ``hybrid`` and the
:class:`~strategies.virtual_tree.installation.VirtualTreeStrategy` family)
runs on ``p4/virtual_tree.p4``. Engines ask ``strategy.model()`` (the static
engine once per notification) and get the memoised model
(:class:`sim.dataplanes.virtual_tree.memo.MemoVirtualTreeDataPlane`), whose
lookup memos live in the strategy's :class:`~sim.dataplanes.caches.Caches`;
the pass-by-pass :class:`~sim.dataplanes.virtual_tree.reference.
VirtualTreeDataPlane` stays the definition (the registered family model,
property-tested against the memoised one).

The family's extra metrics (one place for all of it): the tree, stop and hop
labels of the encoded header, decoded from the packets' bytes
(:meth:`VirtualTreeModel.extra_metrics`).

References
----------
Seed 000 §5.2.4 (label types), §5.2.6 (Listings 5.1-5.5, the program both
models implement), Fig. 6.9b (header entries split by label type).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

from sim.dataplanes.caches import Caches
from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.virtual_tree.codec import LabelFormat, count_labels
from sim.dataplanes.virtual_tree.fast_path import VirtualTreeFastPath
from sim.dataplanes.virtual_tree.memo import MemoVirtualTreeDataPlane
from strategies.base import ExtraMetrics, Strategy
from strategies.virtual_tree.labels import label_format
from topologies.model import Topology


class VirtualTreeModel:
    """Mixin of the VT strategies: ``model()`` on the strategy's :class:`Caches`, and
    the label counts of the encoded header as extra metrics.

    ``Strategy.caches`` holds the data plane's lookup memos and the encoder's
    compiled trees (one object per runner partition, see
    :meth:`strategies.base.Strategy.use_caches`).
    """

    params: Any
    caches: Caches
    _fmt: tuple[Any, LabelFormat] | None = None
    #: Opt-in to the family's fast path; only a class that sets it in its own body
    #: gets one (a subclass may change ``encode``, ``host_receive`` or
    #: ``extra_metrics``, so it does not inherit it).
    vt_fast_path: ClassVar[bool] = False

    @property
    def fmt(self) -> LabelFormat:
        """This strategy's :class:`LabelFormat` (made once per parameters object)."""
        made = self._fmt
        if made is None or made[0] is not self.params:
            made = self._fmt = (self.params, label_format(self.params))
        return made[1]

    def fast_path(self, topology: Topology, delays: DelayModel) -> FastPath | None:
        """The packet-free walk of :mod:`sim.dataplanes.virtual_tree.fast_path` with this
        strategy's encoder and label widths, for classes that opt in (``vt_fast_path``
        in their own body) and keep the default host behaviour and these extra
        metrics; None otherwise."""
        cls = type(self)
        if (not cls.__dict__.get("vt_fast_path", False)
                or getattr(cls, "host_receive", None) is not Strategy.host_receive
                or cls.extra_metrics is not VirtualTreeModel.extra_metrics
                or hasattr(self, "broker_ports")):
            return None
        return VirtualTreeFastPath(topology, delays, self.encode,  # type: ignore[attr-defined]
                                   self.fmt, self.caches)

    def model(self, caches: Caches | None = None) -> MemoVirtualTreeDataPlane:
        """The memoised VT data plane for this strategy's label widths.

        Parameters
        ----------
        caches : Caches, optional
            Where its lookup memos live; default: :attr:`caches`.
        """
        return MemoVirtualTreeDataPlane(self.fmt, caches if caches is not None else self.caches)

    def extra_metrics(self, topology: Any, state: Any, notification: Any,
                      receivers: frozenset[str], delivery: Any) -> ExtraMetrics:
        """The header's tree, stop and hop labels (``header_*_labels`` columns).

        Counted from the bytes of ``delivery.encoding``'s packets with this
        strategy's :class:`~sim.dataplanes.virtual_tree.codec.LabelFormat`
        (:func:`~sim.dataplanes.virtual_tree.codec.count_labels`), so the
        three add up to the row's ``header_entries``. ``link_false_positives``
        stays None: the rows count link waste as for every strategy.

        The family's fast path does not call this hook: its row metrics carry
        the three counts under the same names
        (:data:`strategies.base.HEADER_LABEL_FIELDS`), computed with
        ``count_labels`` from the encoding it builds, and the cell pipeline
        copies them into the row's :class:`~strategies.base.ExtraMetrics`.
        """
        counts = count_labels(self.fmt, (p.header for p in delivery.encoding.packets))
        return _label_metrics(counts.tree, counts.stop, counts.hop)


@lru_cache(maxsize=4096)
def _label_metrics(tree: int, stop: int, hop: int) -> ExtraMetrics:
    """One shared (frozen) record per count triple."""
    return ExtraMetrics(header_tree_labels=tree, header_stop_labels=stop, header_hop_labels=hop)
