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

References
----------
Seed 000 §5.2.6 (Listings 5.1-5.5, the program both models implement).
"""

from __future__ import annotations

from typing import Any

from sim.dataplanes.caches import Caches
from sim.dataplanes.virtual_tree.memo import MemoVirtualTreeDataPlane
from strategies.virtual_tree.labels import label_format


class VirtualTreeModel:
    """Mixin of the VT strategies: ``model()`` on the strategy's :class:`Caches`.

    ``Strategy.caches`` holds the data plane's lookup memos and the encoder's
    compiled trees (one object per runner partition, see
    :meth:`strategies.base.Strategy.use_caches`).
    """

    params: Any
    caches: Caches

    def model(self, caches: Caches | None = None) -> MemoVirtualTreeDataPlane:
        """The memoised VT data plane for this strategy's label widths.

        Parameters
        ----------
        caches : Caches, optional
            Where its lookup memos live; default: :attr:`caches`.
        """
        return MemoVirtualTreeDataPlane(label_format(self.params),
                                        caches if caches is not None else self.caches)
