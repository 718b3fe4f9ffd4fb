"""Table capacity: what each table costs, whether a state fits, occupancy over time.

Kinds (the fields of :class:`~sim.engines.timed.config.Capacity`):

``exact_entries``
    Entries of tables whose every key field is exact (SRAM hash tables).
``ternary_entries``
    Entries of tables with any ternary, LPM or range key field (TCAM). The
    kind is decided per table, so an exact-valued entry in a table with a
    ternary field (e.g. ``MyIngress.l2_forward``, whose source MAC is
    ternary) costs a TCAM entry, as on a real target.
``tree_rules``
    Virtual-tree rules: entries of ``MyIngress.check_tree`` (stored trees of
    *tree* and *hybrid*), counted apart because they grow with the
    receiver sets (seed 000 §4.4.2, Fig. 4.6).
``multicast_groups``, ``clone_sessions``
    PRE multicast groups and clone (mirror) sessions.

Overflow: an update that does not fit is handled by the strategy's hook
``on_overflow(topology, old, new, violations) -> ControlState | None`` when
it defines one (none of the built-in strategies does yet), otherwise by the
config's policy: ``reject`` keeps the old state (the change stays unserved
until a later update fits) and ``allow`` installs it and counts the
overflow.

References
----------
Seed 000 §3.3.3 (multicast-group counts), §4.4.2 (rule counts); digest
seeds 001-004 Part C (TCAM model: capacity per switch, optionally per table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sim.dataplanes.control_state import ControlState, Exact, SwitchConfig, TableEntry
from sim.engines.timed.config import Capacity
from sim.engines.timed.metrics import TimeWeighted

TREE_TABLES = frozenset({"MyIngress.check_tree"})
KINDS = ("exact_entries", "ternary_entries", "tree_rules", "multicast_groups", "clone_sessions")


def table_kind(table: str, entries: tuple[TableEntry, ...]) -> str:
    """The capacity kind of ``table`` given its entries (see the module docstring).

    A P4 table's key kinds are fixed, so the first entry decides.
    """
    if table in TREE_TABLES:
        return "tree_rules"
    if entries and not all(isinstance(m, Exact) for _, m in entries[0].match):
        return "ternary_entries"
    return "exact_entries"


def occupancy(config: SwitchConfig) -> dict[str, int]:
    """Entries of each kind installed on one switch."""
    out = dict.fromkeys(KINDS, 0)
    for table, entries in config.tables.items():
        out[table_kind(table, entries)] += len(entries)
    out["multicast_groups"] = len(config.multicast_groups)
    out["clone_sessions"] = len(config.clone_sessions)
    return out


@dataclass(frozen=True, slots=True)
class Violation:
    """One switch over one limit."""

    switch: str
    kind: str
    used: int
    limit: int


def violations(state: ControlState | Mapping[str, SwitchConfig], capacity: Capacity
               ) -> list[Violation]:
    """Every (switch, kind) of ``state`` over ``capacity``, sorted."""
    limits = capacity.limits()
    if not limits:
        return []
    configs = state.switches if isinstance(state, ControlState) else state
    out: list[Violation] = []
    for sw in sorted(configs):
        occ = occupancy(configs[sw])
        out.extend(Violation(sw, k, occ[k], lim) for k, lim in sorted(limits.items())
                   if occ[k] > lim)
    return out


def overflow_fallback(strategy: Any, topology: Any, old: ControlState, new: ControlState,
                      found: list[Violation]) -> ControlState | None:
    """The strategy's own overflow answer, or None (null-object default)."""
    hook = getattr(strategy, "on_overflow", None)
    if hook is None:
        return None
    result: ControlState | None = hook(topology, old, new, found)
    return result


class OccupancyTracker:
    """Network-wide occupancy per kind over time, and the per-switch peak.

    ``totals[kind]`` is a :class:`TimeWeighted` of the sum over switches;
    ``switch_peak[kind]`` the largest single-switch value seen.
    """

    def __init__(self, configs: Mapping[str, SwitchConfig], t0: float = 0.0) -> None:
        self._per_switch = {sw: occupancy(c) for sw, c in configs.items()}
        self.totals = {k: TimeWeighted(t0=t0, level=float(sum(o[k] for o in
                                                              self._per_switch.values())))
                       for k in KINDS}
        self.switch_peak = {k: max((o[k] for o in self._per_switch.values()), default=0)
                            for k in KINDS}

    def update(self, t: float, switch: str, config: SwitchConfig) -> None:
        new = occupancy(config)
        old = self._per_switch.get(switch, dict.fromkeys(KINDS, 0))
        self._per_switch[switch] = new
        for k in KINDS:
            if new[k] != old[k]:
                self.totals[k].add(t, new[k] - old[k])
            if new[k] > self.switch_peak[k]:
                self.switch_peak[k] = new[k]

    def report(self, t_end: float) -> dict[str, dict[str, float]]:
        """Per kind: time-weighted mean and peak of the total, and the per-switch peak."""
        return {k: {"mean": self.totals[k].mean(t_end), "peak": self.totals[k].peak,
                    "switch_peak": float(self.switch_peak[k])} for k in KINDS}
