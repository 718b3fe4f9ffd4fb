"""Table cost model: range-to-prefix expansion, entry bits, capacity, lookup latency.

A :class:`~sim.dataplanes.control_state.ControlState` says *what* is installed; this module
says what it costs on a target:

- :func:`range_prefixes`: the minimal prefix (ternary) cover of an integer
  range on ``w`` bits (at most ``2w - 2`` prefixes); an entry with several
  range fields costs the product of their covers on a TCAM (seed 002 A.4,
  seed 004 B2 [I]).
- :func:`state_cost`: per switch the filter entries, SRAM (all-exact tables)
  and TCAM entries (ternary/lpm/range tables; ranges native, as on BMv2 and
  the Netronome, or expanded to prefixes), TCAM bits = key bits x TCAM
  entries, entry bits = key + action data, multicast groups and the number
  of tables a packet goes through (stages).
- :class:`TableCapacity`: per-switch capacities and the overflow count
  (the content strategies report overflow; none evicts entries).
- :class:`LatencyModel`: per-lookup latency, constant (TCAM/ASIC) or linear
  in the table size (seed 004's Netronome: 6.4 us + 1.12 us per extra entry,
  +0.8 us for multicast).

References
----------
Seed 002 §III-C (ranges split into LPM prefixes); seed 003 §5.2 (range match
costs O(#bits) TCAM entries, exact matches in SRAM), Table 1; seed 004 §5.3
(latency linear in entries, 6.4 us / 530 entries 600 us, multicast +0.8 us);
digests seed002-003 C.2 and seed001-004 B2, B4, Part C "TCAM model".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sim.dataplanes.control_state import (
    ControlState,
    Exact,
    Lpm,
    Range,
    SwitchConfig,
    TableEntry,
    Ternary,
)
from topologies.registry import check


def range_prefixes(lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """Minimal cover of ``[lo, hi]`` by prefixes ``(value, prefix_len)`` on ``width`` bits."""
    if not 0 <= lo <= hi < 1 << width:
        raise ValueError(f"range [{lo}, {hi}] does not fit {width} bits")
    out = []
    while lo <= hi:
        # the largest aligned block starting at lo that stays within hi
        size = lo & -lo if lo else 1 << width
        while size > hi - lo + 1:
            size >>= 1
        out.append((lo, width - size.bit_length() + 1))
        lo += size
    return out


def prefix_count(lo: int, hi: int, width: int) -> int:
    return len(range_prefixes(lo, hi, width))


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSpec:
    """Widths of one table: key field -> bits, and action data bits."""

    key_bits: Mapping[str, int]
    action_bits: int = 0

    @property
    def key_width(self) -> int:
        return sum(self.key_bits.values())

    @property
    def entry_bits(self) -> int:
        return self.key_width + self.action_bits


def tcam_entries(entry: TableEntry, spec: TableSpec, ranges: Literal["native", "expand"]
                 ) -> int:
    """TCAM entries ``entry`` needs (1 unless ranges are expanded to prefixes)."""
    if ranges == "native":
        return 1
    n = 1
    for name, m in entry.match:
        if isinstance(m, Range):
            n *= prefix_count(m.low, m.high, spec.key_bits[name])
    return n


def is_tcam(entry: TableEntry) -> bool:
    return any(isinstance(m, _TCAM_MATCHES) for _, m in entry.match)


_TCAM_MATCHES = (Ternary, Lpm, Range)


@dataclass(frozen=True, kw_only=True)
class StateCost:
    """What a control state costs, summed over switches unless per switch."""

    filter_entries: Mapping[str, int] = field(default_factory=dict)  # per switch
    replicates: Mapping[str, bool] = field(default_factory=dict)     # has multicast groups
    tcam_entries: int = 0
    tcam_bits: int = 0
    sram_entries: int = 0
    sram_bits: int = 0
    multicast_groups: int = 0
    stages: int = 0  # tables in sequence on the deepest switch
    per_switch_tcam: Mapping[str, int] = field(default_factory=dict)
    per_switch_sram: Mapping[str, int] = field(default_factory=dict)


def state_cost(state: ControlState, specs: Mapping[str, TableSpec],
               filter_tables: Callable[[str], bool], stages: int | Callable[[str], int],
               ranges: Literal["native", "expand"] = "native",
               memo: dict[str, Any] | None = None) -> StateCost:
    """The cost of ``state``.

    Parameters
    ----------
    specs : mapping
        Table name -> its widths (tables missing here count 0 bits).
    filter_tables : callable
        True for the tables whose entries count as the switch's filter
        entries (the flows of seed 001, the entries of seed 004).
    stages : int or callable
        Tables a packet traverses on a switch.
    ranges : str
        ``native`` range match (1 entry) or ``expand`` (prefix cover product).
    memo : dict, optional
        The caller's per-switch memo (switch -> its configuration, ``specs``,
        ``ranges`` and entry costs), so that configurations shared with an
        earlier state (unchanged switches under churn) are not costed again.
        One memo must always be used with the same ``filter_tables``.
    """
    filt: dict[str, int] = {}
    rep: dict[str, bool] = {}
    per_tcam: dict[str, int] = {}
    per_sram: dict[str, int] = {}
    tcam = tbits = sram = sbits = groups = 0
    deepest = 0
    for sw, cfg in state.switches.items():
        hit = memo.get(sw) if memo is not None else None
        if hit is not None and hit[0] is cfg and hit[2] == ranges and hit[1] == specs:
            costs = hit[3]
        else:
            costs = _switch_cost(cfg, specs, filter_tables, ranges)
            if memo is not None:
                memo[sw] = (cfg, specs, ranges, costs)
        n_filter, sw_tcam, sw_tbits, sw_sram, sw_sbits = costs
        tbits += sw_tbits
        sbits += sw_sbits
        tcam += sw_tcam
        sram += sw_sram
        per_tcam[sw] = sw_tcam
        per_sram[sw] = sw_sram
        filt[sw] = n_filter
        rep[sw] = bool(cfg.multicast_groups)
        groups += len(cfg.multicast_groups)
        if cfg.tables:
            deepest = max(deepest, stages(sw) if callable(stages) else stages)
    return StateCost(filter_entries=filt, replicates=rep, tcam_entries=tcam, tcam_bits=tbits,
                     sram_entries=sram, sram_bits=sbits, multicast_groups=groups,
                     stages=deepest, per_switch_tcam=per_tcam, per_switch_sram=per_sram)


def _switch_cost(cfg: SwitchConfig, specs: Mapping[str, TableSpec],
                 filter_tables: Callable[[str], bool], ranges: Literal["native", "expand"]
                 ) -> tuple[int, int, int, int, int]:
    """One switch's filter entries, TCAM entries and bits, SRAM entries and bits."""
    n_filter = sw_tcam = tbits = sw_sram = sbits = 0
    for table, entries in cfg.tables.items():
        spec = specs.get(table, TableSpec(key_bits={}))
        if filter_tables(table):
            n_filter += len(entries)
        for e in entries:
            if is_tcam(e):
                k = tcam_entries(e, spec, ranges)
                sw_tcam += k
                tbits += k * spec.key_width
            else:
                sw_sram += 1
                sbits += spec.entry_bits
    return n_filter, sw_tcam, tbits, sw_sram, sbits


def exact_count(entries: tuple[TableEntry, ...]) -> int:
    return sum(1 for e in entries if all(isinstance(m, Exact) for _, m in e.match))


@dataclass(frozen=True, slots=True, kw_only=True)
class TableCapacity:
    """Per-switch capacities (0 = unlimited)."""

    tcam_entries: int = 0
    sram_entries: int = 0
    multicast_groups: int = 0
    stages: int = 0

    def __post_init__(self) -> None:
        for name in ("tcam_entries", "sram_entries", "multicast_groups", "stages"):
            check(getattr(self, name) >= 0, f"capacity {name} must be >= 0")

    def overflowing_switches(self, state: ControlState, cost: StateCost) -> list[str]:
        """Switches above any per-switch capacity: TCAM entries (after expansion), SRAM
        entries, multicast groups or stages (the strategies report, never evict)."""
        out = []
        for sw, cfg in state.switches.items():
            over = (
                (self.tcam_entries and cost.per_switch_tcam.get(sw, 0) > self.tcam_entries)
                or (self.sram_entries and cost.per_switch_sram.get(sw, 0) > self.sram_entries)
                or (self.multicast_groups and len(cfg.multicast_groups) > self.multicast_groups)
                or (self.stages and cfg.tables and cost.stages > self.stages))
            if over:
                out.append(sw)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyModel:
    """Lookup latency of one switch pass in microseconds."""

    kind: Literal["constant", "linear"] = "constant"
    base_us: float = 6.4
    per_entry_us: float = 1.12
    multicast_us: float = 0.8

    def __post_init__(self) -> None:
        check(self.kind in ("constant", "linear"), "latency must be constant or linear")
        check(self.base_us >= 0 and self.per_entry_us >= 0 and self.multicast_us >= 0,
              "latency constants must be >= 0")

    def lookup_us(self, entries: int, multicast: bool = False) -> float:
        t = self.base_us
        if self.kind == "linear":
            t += self.per_entry_us * max(entries - 1, 0)
        return t + (self.multicast_us if multicast else 0.0)
