"""The virtual-tree data plane, memoised: same results as the pass-by-pass model, faster.

:class:`MemoVirtualTreeDataPlane` computes exactly what
:class:`sim.dataplanes.virtual_tree.reference.VirtualTreeDataPlane` computes
(passes, lookups, emitted bytes, drops, pass trace) with fewer steps:

- tables whose entries all match exactly (``check_hop``, ``check_tree``,
  ``check_stop`` as the strategies install them) are read once per switch
  configuration into dictionaries; ``extract_port`` answers are memoised per
  bitmask;
- a run of labels that miss both ``check_hop`` and ``check_tree`` costs one
  pass and two lookups each, counted in one loop;
- a clone's ``check_stop`` scan is a set membership test per label.

The per-configuration memos live in the ``vt_lookups`` store of the
:class:`sim.dataplanes.caches.Caches` the model is given (a fresh one by
default), keyed by the configuration object itself: a configuration is
immutable, so a memo never goes stale. Errors surface exactly when the
reference raises them (derived values are computed on first use).

``tests/sim/test_virtual_tree_memo.py`` runs both models on every frame of
random virtual-tree runs and requires equal results; engines use this one
(the strategies' ``model()``), the reference stays the definition.

References
----------
Seed 000 §5.2.6 (Listings 5.1-5.5); digest ch. 5-7 §1.2-1.5.4.
"""

from __future__ import annotations

from typing import Any

from sim.dataplanes.caches import Caches, Identity, or_fresh
from sim.dataplanes.control_state import Exact, SwitchConfig, TableEntry
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import Emit, PipelineResult
from sim.dataplanes.virtual_tree.codec import LabelFormat
from sim.dataplanes.virtual_tree.reference import (
    CHECK_HOP,
    CHECK_STOP,
    CHECK_TREE,
    DEFAULT_FORMAT,
    EXTRACT_PORT,
    SET_TREE_GROUP,
    VirtualTreeDataPlane,
    clone_session,
    reject,
)


class MemoVirtualTreeDataPlane(VirtualTreeDataPlane):
    """:class:`VirtualTreeDataPlane` with memoised table lookups (see the module docstring).

    Parameters
    ----------
    fmt : LabelFormat
        Field widths and EtherType.
    caches : Caches, optional
        Where the per-configuration memos live (``caches.vt_lookups``); a
        fresh :class:`Caches` when None (then they live as long as the model).
    """

    def __init__(self, fmt: LabelFormat = DEFAULT_FORMAT, caches: Caches | None = None) -> None:
        super().__init__(fmt)
        self.caches = or_fresh(caches)

    def _memo(self, config: SwitchConfig) -> _Memo:
        """The lookup memo of ``config`` under this model's format."""
        store = self.caches.vt_lookups
        key = (Identity(config), self.fmt)
        memo = store.get(key)
        if memo is None:
            memo = store.put(key, _Memo(config, self.fmt))
        return memo  # type: ignore[no-any-return]

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        fmt = self.fmt
        parsed = fmt.parse(packet)
        if parsed is None:
            return reject()
        labels, payload = parsed
        memo = self._memo(config)
        hops, trees, stops, extract = memo.hop, memo.tree, memo.stop, memo.extract
        stack = list(labels)
        n_labels = len(stack)
        index = remaining = served = 0
        passes = lookups = drops = 0
        # clones: (pass that made it, egress port, its stack, first label it scans)
        clones: list[tuple[int, int, list[int], int]] = []
        active = memo.active
        while True:
            if remaining == 0 and active is not None:
                # labels that miss check_hop and check_tree: one pass and two lookups
                # each, nothing else (the pass below, in fewer steps)
                label = stack[index]
                while label not in active and index + 1 < n_labels:
                    passes += 1
                    lookups += 2
                    index += 1
                    label = stack[index]
            passes += 1
            label = stack[index]
            remove = False
            if remaining == 0:
                lookups += 1
                bit = hops.get(label, _MISS)
                if bit is _MISS:
                    bit = hops[label] = memo.hop_bit(label)
                if bit is not None:
                    remaining |= bit
                    remove = True
                else:
                    lookups += 1
                    hit = trees.get(label, _MISS)
                    if hit is _MISS:
                        hit = trees[label] = memo.tree_entry(label)
                    if hit is not None and hit.action == SET_TREE_GROUP:
                        drops += self._replicate(switch, config, hit.param("group"), in_port,
                                                 served, passes, stack, index, clones)
                        break
                    if hit is not None:
                        remaining |= hit.param("ports")
            if remaining:
                lookups += 1
                got = extract.get(remaining)
                if got is None:
                    got = extract[remaining] = memo.extract_port(switch, remaining)
                port, bit = got
                remaining &= ~bit
                if not served & bit and port != in_port:
                    served |= bit
                    session = clone_session(switch, config, port)
                    if remove:
                        clones.append((passes, session.port, stack[:index] + stack[index + 1:],
                                       index))
                    else:
                        clones.append((passes, session.port, list(stack), index + 1))
            if remaining == 0 and index + 1 >= n_labels:
                drops += 1  # original: every label seen, mask empty
                break
            if remove:
                del stack[index]
                n_labels -= 1
            elif remaining == 0:
                index += 1
        emitted: list[Emit] = []
        parents = [-1, *range(passes - 1)]  # pass trace: the original's passes first
        stop_sets = memo.stop_sets
        for made, port, cstack, start in clones:
            # one pass per label from ``start``, each a check_stop lookup, until a hit
            end = len(cstack)
            dropped = False
            if stop_sets is not None:
                stopping = stop_sets.get(port)
                if stopping:
                    for j in range(start, end):
                        if cstack[j] in stopping:
                            end, dropped = j + 1, True
                            break
            else:
                for j in range(start, end):
                    key = (cstack[j], port)
                    stopped = stops.get(key)
                    if stopped is None:
                        stopped = stops[key] = config.lookup(CHECK_STOP, *key) is not None
                    if stopped:
                        end, dropped = j + 1, True
                        break
            k = max(0, end - start)
            depth = made + k
            passes += k
            lookups += k
            last = made - 1  # index of the pass that made the clone
            if k:  # a chain: each pass follows the previous one
                base = len(parents)
                parents.append(last)
                parents.extend(range(base, base + k - 1))
                last = base + k - 1
            if dropped:
                drops += 1
            else:
                emitted.append(Emit(port, Packet(packet.dst_mac, packet.src_mac,
                                                 packet.ethertype, fmt.encode(cstack), payload),
                                    depth, last))
        emitted.sort(key=lambda e: e.depth)
        return PipelineResult(passes=passes, recirculations=passes - 1, lookups=lookups,
                              emitted=tuple(emitted), dropped=drops, pass_parents=tuple(parents))


_MISS: Any = object()


class _Memo:
    """Table lookups of one :class:`SwitchConfig` under one :class:`LabelFormat`.

    A table whose entries all match exactly on every field answers like
    ``config.lookup``: the first installed entry with the key, if any. Such
    tables are read once into dictionaries (``check_hop`` / ``check_tree``:
    label -> entry; ``check_stop``: clone port -> labels that stop it); any
    other table goes through ``config.lookup``, memoised. Derived values
    (port bits) are computed on first use, so errors surface exactly when the
    model would raise them.
    """

    __slots__ = ("config", "fmt", "hop", "tree", "stop_sets", "stop", "extract", "active",
                 "_hop_entries", "_tree_entries")

    def __init__(self, config: SwitchConfig, fmt: LabelFormat) -> None:
        self.config = config
        self.fmt = fmt
        self.hop: dict[int, int | None] = {}  # hop label -> port bit (None: miss)
        self.tree: dict[int, TableEntry | None] = {}
        self.stop: dict[tuple[int, int], bool] = {}  # (label, clone port) -> hit
        self.extract: dict[int, tuple[int, int]] = {}  # remaining ports -> (port, bit)
        self._hop_entries = _exact_index(config, CHECK_HOP, 1)
        self._tree_entries = _exact_index(config, CHECK_TREE, 1)
        #: labels that hit check_hop or check_tree (None: not both all-exact)
        self.active: frozenset[int] | None = None
        if self._hop_entries is not None and self._tree_entries is not None:
            self.active = frozenset(k[0] for k in self._hop_entries) | frozenset(
                k[0] for k in self._tree_entries)
        stops = _exact_index(config, CHECK_STOP, 2)
        #: clone port -> labels that stop it (None: check_stop is not all-exact)
        self.stop_sets: dict[int, frozenset[int]] | None = None
        if stops is not None:
            sets: dict[int, set[int]] = {}
            for label, port in stops:
                sets.setdefault(port, set()).add(label)
            self.stop_sets = {p: frozenset(s) for p, s in sets.items()}

    def hop_bit(self, label: int) -> int | None:
        if self._hop_entries is not None:
            hit = self._hop_entries.get((label,))
        else:
            hit = self.config.lookup(CHECK_HOP, label)
        return None if hit is None else self.fmt.port_bit(hit.param("port"))

    def tree_entry(self, label: int) -> TableEntry | None:
        if self._tree_entries is not None:
            return self._tree_entries.get((label,))
        return self.config.lookup(CHECK_TREE, label)

    def extract_port(self, switch: str, remaining: int) -> tuple[int, int]:
        hit = self.config.lookup(EXTRACT_PORT, remaining)
        if hit is None:
            raise LookupError(f"{switch}: {EXTRACT_PORT} has no entry for bitmask "
                              f"{remaining:#x}")
        port = hit.param("port")
        return port, self.fmt.port_bit(port)


def _exact_index(config: SwitchConfig, table: str, width: int
                 ) -> dict[tuple[int, ...], TableEntry] | None:
    """Key -> first entry of ``table`` if every entry matches exactly on ``width``
    fields (what ``config.lookup`` answers), else None."""
    out: dict[tuple[int, ...], TableEntry] = {}
    for entry in config.tables.get(table, ()):
        if len(entry.match) != width or not all(type(m) is Exact for _, m in entry.match):
            return None
        out.setdefault(tuple(m.value for _, m in entry.match), entry)  # type: ignore[union-attr]
    return out
