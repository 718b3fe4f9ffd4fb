"""Source-routing label stacks: reference model of ``p4/source_routing.p4``, pass by pass.

One P4_16/v1model program family, compiled per entry kind with the widths of
:class:`~sim.dataplanes.source_routing.codec.StackLayout`:

- ``port``: switch/port pairs, P4_14 Listing 3.3 semantics (seed 000 §3.3.1);
- ``bitmask``: switch/bitmask pairs, Listing 3.6 with the foreign-entry pop
  fix (§3.3.2, digest [BUG] §3.3);
- ``mcgroup``: switch/mc-group pairs, Listing 3.7, optionally with the ports
  split into ``mc_subsets`` disjoint subsets (§3.3.3);
- ``mixed``: tagged entries ``id | tag | value`` (§3.3.4).

Tables (all names are prefixed with ``MyIngress.``; every apply, hit or
miss, is one lookup, digest §7.7; pop, recirculate, clone and drop are plain
statements of the P4_16 program and are not counted):

====================  =============================  ===============================  ========
table                 key (all exact but noted)      actions (params)                 kinds
====================  =============================  ===============================  ========
``read_entry``        ``meta.num_seen_labels``       ``read_index_<i>()``, one rule   port,
                                                     per stack index < STACK_SIZE     mixed
``check_entry``       ``meta.entry.id``              ``own_entry()``                  port
``check_entry``       ``meta.entry.id``,             ``own_port_entry()``,            mixed
                      ``meta.entry.tag``             ``own_bitmask_entry()``,
                                                     ``own_mcgroup_entry()``
``check_dev``         ``hdr.stack[0].id``            ``own_entry()``                  bitmask
``check_bitmask``     ``meta.entry.value`` ternary   ``forward_pkt(clone_port,        bitmask,
                                                     bit_pos)``, ``drop_original()``  mixed
``multicast_forward`` ``hdr.stack[0].id``            ``do_multicast()``               mcgroup
``multicast_forward`` ``hdr.stack[0].id``,           ``do_multicast_subset(mask,      mcgroup
                      ``meta.subset_index``          last)``                          c > 1
====================  =============================  ===============================  ========

``check_bitmask`` priorities: port rules 2, the catch-all ``drop_original``
1 (higher wins; P4Runtime needs >= 1 in a table with a ternary key).

Clone sessions: session ``p`` clones to port ``p`` (one per port);
:data:`CONTINUE_SESSION` (512, just above the 9-bit port space) is the
continuation copy that keeps scanning after a multicast replaced the
original (mixed stacks, mc-group subsets). Multicast groups: group id = the
port bitmask of its replicas (the thesis's optional fixed mapping) unless the
control plane numbers them otherwise.

Lookups per pass:

- port: ``read_entry`` + ``check_entry`` in every pass of every instance
  (original and predictive clones); reactive clones take no extra pass.
- bitmask: ``check_dev``; plus ``check_bitmask`` when it hits.
- mcgroup: ``multicast_forward``.
- mixed: ``read_entry`` + ``check_entry``; plus ``check_bitmask`` on an own
  bitmask entry.

Instances and passes. The *original* reads the top entry each pass
(``num_seen_labels`` stays 0 because it pops what it processed). A *copy*
(I2E clone or PRE replica) first pops the entry that created it in the
egress of its creation pass; under predictive pruning it then recirculates,
skipping (``num_seen_labels++``) entries until one carries its switch id and
deleting from there on (``delete_flag``), one entry per pass (Listing 3.3).
``passes`` counts ingress executions (1 + recirculations); ``Emit.depth``
is the number of passes on the copy's chain (its creation pass's number on
the original's chain plus its own recirculations). Exhausted originals are dropped in
the egress of their last pass (``mark_to_drop``; the P4_14 listings leave
this to an extra pass, digest §7.8). Closed forms at switch ``v`` (L_v
arriving entries, own entries at positions p_j, q_v foreign entries above
the own one, m_v set bits, c subsets): port predictive
``(L_v-1) + Σ_j (L_v-1-p_j)``, port reactive ``L_v - 1``, bitmask
``q_v + m_v - 1``, mcgroup ``q_v + c - 1`` recirculations (digest §3.11).
``circulations_simplified`` is the thesis's count, "equal to the number of
switch ports to be used for forwarding" (§3.3.3): own-entry forwarding
actions (port, bitmask, mixed) or own-entry passes (mcgroup: 1, or c).

Pass trace (``PipelineResult.pass_parents``): each pass's parent is the
pass that spawned it - the original's (or its continuation copy's) previous
pass, the pass that made a copy (I2E clone or PRE replica) for the copy's
first post-processing recirculation, the copy's previous pass after that.
Passes are numbered in the order the model runs them: a copy's
post-processing passes right after the pass that made it, before the
original's next pass (so a timed engine queues them first). A copy leaves
after its last pass (``Emit.after_pass``), which for reactive copies is the
pass that made it; the chain from there back to the arrival pass is
``Emit.depth`` passes long.

References
----------
Seed 000 §3.2-3.4 (Listings 3.1-3.7, Figs. 3.3-3.7); digest ch. 1-4 §2,
§3.2-3.5, §3.11, §4, §7.7-7.10.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, cast

from sim.dataplanes.control_state import SwitchConfig, TableEntry
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, DataPlane, Emit, PipelineResult
from sim.dataplanes.source_routing.codec import (
    TAG_BITMASK,
    TAG_MCGROUP,
    TAG_PORT,
    StackDecodeError,
    StackEntry,
    StackLayout,
    decode_stack,
    encode_stack,
)
from topologies.registry import SpecError

READ_ENTRY = "MyIngress.read_entry"
READ_INDEX = "MyIngress.read_index_"  # + stack index
CHECK_ENTRY = "MyIngress.check_entry"
CHECK_DEV = "MyIngress.check_dev"
CHECK_BITMASK = "MyIngress.check_bitmask"
MULTICAST_FORWARD = "MyIngress.multicast_forward"
OWN_ENTRY = "MyIngress.own_entry"
OWN_PORT_ENTRY = "MyIngress.own_port_entry"
OWN_BITMASK_ENTRY = "MyIngress.own_bitmask_entry"
OWN_MCGROUP_ENTRY = "MyIngress.own_mcgroup_entry"
FORWARD_PKT = "MyIngress.forward_pkt"
DROP_ORIGINAL = "MyIngress.drop_original"
DO_MULTICAST = "MyIngress.do_multicast"
DO_MULTICAST_SUBSET = "MyIngress.do_multicast_subset"
OWN_ACTION_TAG = {OWN_PORT_ENTRY: TAG_PORT, OWN_BITMASK_ENTRY: TAG_BITMASK,
                  OWN_MCGROUP_ENTRY: TAG_MCGROUP}
TAG_OWN_ACTION = {t: a for a, t in OWN_ACTION_TAG.items()}

# Match-field names (keys of TableEntry.match).
KEY_NUM_SEEN = "meta.num_seen_labels"
KEY_ENTRY_ID = "meta.entry.id"
KEY_ENTRY_TAG = "meta.entry.tag"
KEY_ENTRY_VALUE = "meta.entry.value"
KEY_TOP_ID = "hdr.stack[0].id"
KEY_SUBSET = "meta.subset_index"

CONTINUE_SESSION = 512

Kind = Literal["port", "bitmask", "mcgroup", "mixed"]
Pruning = Literal["predictive", "reactive", "per-type"]


@lru_cache(maxsize=4096)
def _read_index(action: str) -> int:
    if not action.startswith(READ_INDEX):
        raise LookupError(f"{READ_ENTRY}: unexpected action {action}")
    return int(action[len(READ_INDEX):])


@dataclass(slots=True)
class _Run:
    """Counters and emitted copies of one arriving packet at one switch.

    ``read_entry`` and ``check_entry`` apply the two tables every pass of a
    port or mixed stack applies; they remember what the (unchanging) tables
    answered for this packet, as the scan asks the same keys over and over.
    """

    config: SwitchConfig
    #: mixed stacks: check_entry is keyed on the entry's tag as well
    mixed: bool = False
    passes: int = 0
    recirculations: int = 0
    lookups: int = 0
    dropped: int = 0
    simplified: int = 0
    #: (depth, creation order, port, stack, index of the pass it leaves after)
    emits: list[tuple[int, int, int, list[StackEntry], int]] = field(default_factory=list)
    #: the pass trace: parents[j] = the pass that spawned pass j (-1: arrival)
    parents: list[int] = field(default_factory=list)
    _read: dict[int, int | None] = field(default_factory=dict)
    _own: dict[tuple[int, int], TableEntry | None] = field(default_factory=dict)

    def apply(self, table: str, *key: int) -> TableEntry | None:
        self.lookups += 1
        return self.config.lookup(table, *key)

    def read_entry(self, seen: int) -> int | None:
        """Apply ``read_entry`` to ``num_seen_labels``: the stack index to read, or None."""
        self.lookups += 1
        if seen in self._read:
            return self._read[seen]
        hit = self.config.lookup(READ_ENTRY, seen)
        index = self._read[seen] = None if hit is None else _read_index(hit.action)
        return index

    def check_entry(self, entry: StackEntry) -> TableEntry | None:
        """Apply ``check_entry`` to the entry's id (and tag, mixed): its own_* rule or None."""
        self.lookups += 1
        key = (entry.switch_id, entry.tag)
        if key in self._own:
            return self._own[key]
        hit = self._own[key] = (self.config.lookup(CHECK_ENTRY, *key) if self.mixed
                                else self.config.lookup(CHECK_ENTRY, entry.switch_id))
        return hit

    def new_pass(self, parent: int) -> int:
        """Start a pass spawned by pass ``parent`` (-1: the arrival); its index."""
        self.passes += 1
        if parent >= 0:
            self.recirculations += 1
        self.parents.append(parent)
        return len(self.parents) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRoutingDataPlane:
    """The source-routing program compiled for one entry kind and layout.

    Parameters
    ----------
    layout : StackLayout
        Field widths and EtherType.
    kind : {"port", "bitmask", "mcgroup", "mixed"}
        What the untagged ``value`` means (mixed: tagged entries).
    pruning : {"predictive", "reactive", "per-type"}
        Clone post-processing of ``port``/``mixed`` copies: predictive
        (skip own subtree, delete the rest), reactive (only pop the creating
        entry), per-type (mixed: predictive for copies made by port entries,
        reactive for bitmask and mc-group copies, digest §3.11).
        bitmask/mcgroup copies are always reactive.
    mc_subsets : int
        c, the number of disjoint port subsets of the mc-group kind (1 = one
        group per port combination); c > 1 adds ``meta.subset_index`` to the
        key of ``multicast_forward``.
    stack_size : int or None
        Parser limit (STACK_SIZE); frames with more entries fail parsing and
        are dropped. None = what ``Size`` can count.
    """

    name: str = field(default="source_routing", init=False)
    layout: StackLayout = StackLayout()
    kind: Kind = "port"
    pruning: Pruning = "predictive"
    mc_subsets: int = 1
    stack_size: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("port", "bitmask", "mcgroup", "mixed"):
            raise SpecError(f"kind must be port, bitmask, mcgroup or mixed; got {self.kind!r}")
        if self.pruning not in ("predictive", "reactive", "per-type"):
            raise SpecError("pruning must be predictive, reactive or per-type; "
                            f"got {self.pruning!r}")
        if (self.kind == "mixed") != (self.layout.tag_bits > 0):
            raise SpecError("tag_bits must be > 0 exactly for mixed stacks, "
                            f"got tag_bits={self.layout.tag_bits} for kind {self.kind!r}")
        if self.mc_subsets < 1 or (self.mc_subsets > 1 and self.kind != "mcgroup"):
            raise SpecError(f"mc_subsets must be >= 1 (and 1 unless kind is mcgroup), "
                            f"got {self.mc_subsets}")

    # -- entry point -------------------------------------------------------
    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        """Run the program on ``packet`` arriving on ``in_port`` of ``switch``."""
        run = _Run(config, mixed=self.kind == "mixed")
        body = packet.header + packet.payload
        entries: tuple[StackEntry, ...] = ()
        used = 0
        ok = packet.ethertype == self.layout.ethertype
        if ok:
            try:
                entries, used = decode_stack(body, self.layout)
            except StackDecodeError:
                ok = False
            limit = self.layout.max_entries if self.stack_size is None else self.stack_size
            ok = ok and 0 < len(entries) <= limit
        if not ok:  # parser reject or empty stack: the ingress drops it
            return PipelineResult(passes=1, recirculations=0, lookups=0, emitted=(), dropped=1,
                                  pass_parents=(-1,))
        stack = list(entries)
        if self.kind == "bitmask":
            self._bitmask(run, stack)
        elif self.kind == "mcgroup":
            self._mcgroup(run, stack)
        else:
            self._scan(run, stack)
        payload = body[used:]
        emitted = tuple(
            Emit(port, Packet(packet.dst_mac, packet.src_mac, packet.ethertype,
                              encode_stack(st, self.layout), payload), depth, after)
            for depth, _, port, st, after in sorted(run.emits, key=lambda e: (e[0], e[1])))
        return PipelineResult(passes=run.passes, recirculations=run.recirculations,
                              lookups=run.lookups, emitted=emitted, dropped=run.dropped,
                              circulations_simplified=run.simplified,
                              pass_parents=tuple(run.parents))

    # -- copies ------------------------------------------------------------
    def _copy(self, run: _Run, port: int | None, stack: list[StackEntry], depth: int,
              made_in: int, predictive: bool) -> None:
        """A copy created in pass ``made_in`` (number ``depth`` on its chain) with ``stack``
        (creating entry on top); its post-processing passes descend from ``made_in``."""
        if port is None:  # clone session or multicast group not installed: no copy
            return
        st = stack[1:]  # egress of the creation pass pops the creating entry
        last = made_in
        if predictive:
            seen, delete = 0, False
            parents, read_entry, check_entry = run.parents, run.read_entry, run.check_entry
            while len(st) > seen:  # recirculate while unseen entries remain
                depth += 1
                parents.append(last)  # run.new_pass(last), counted below
                last = len(parents) - 1
                run.passes += 1
                run.recirculations += 1
                index = read_entry(seen)
                if index is None or index >= len(st):
                    run.dropped += 1
                    return
                if check_entry(st[index]) is not None:
                    delete = True  # root of another subtree of this switch
                if delete:
                    del st[index]
                else:
                    seen += 1
        run.emits.append((depth, len(run.emits), port, st, last))

    def _session_port(self, run: _Run, session: int) -> int | None:
        s = run.config.clone_sessions.get(session)
        return None if s is None else s.port

    def _predictive(self, tag: int) -> bool:
        if self.pruning == "per-type":
            return tag == TAG_PORT
        return self.pruning == "predictive"

    # -- port / mixed: the original scans the whole stack --------------------
    def _scan(self, run: _Run, stack: list[StackEntry]) -> None:
        depth, cur = 0, -1  # the original (or its continuation copy): one chain of passes
        while True:
            depth += 1
            cur = run.new_pass(cur)
            index = run.read_entry(0)
            if index is None or index >= len(stack):
                run.dropped += 1
                return
            entry = stack[index]
            hit = run.check_entry(entry)
            pop = True
            if hit is not None:
                action = hit.action
                if action in (OWN_ENTRY, OWN_PORT_ENTRY):
                    run.simplified += 1
                    self._copy(run, self._session_port(run, entry.value), list(stack), depth,
                               cur, self._predictive(TAG_PORT))
                elif action == OWN_BITMASK_ENTRY:
                    rule = run.apply(CHECK_BITMASK, entry.value)
                    if rule is not None and rule.action == FORWARD_PKT:
                        run.simplified += 1
                        self._copy(run, self._session_port(run, rule.param("clone_port")),
                                   list(stack), depth, cur, self._predictive(TAG_BITMASK))
                        stack[index] = StackEntry(entry.switch_id,
                                                  entry.value - rule.param("bit_pos"), entry.tag)
                        pop = stack[index].value == 0
                elif action == OWN_MCGROUP_ENTRY:
                    run.simplified += 1
                    group = run.config.multicast_groups.get(entry.value)
                    for port in group.ports if group is not None else ():
                        self._copy(run, port, list(stack), depth, cur,
                                   self._predictive(TAG_MCGROUP))
                    if len(stack) == 1:
                        return  # the replicas replaced the original; nothing left to scan
                    if self._session_port(run, CONTINUE_SESSION) is None:
                        return  # no continuation copy: the scan ends here
                else:
                    raise LookupError(f"{CHECK_ENTRY}: unexpected action {action}")
            if pop:  # egress: pop_front(1), Size - 1
                del stack[index]
            if not stack:
                run.dropped += 1  # original exhausted: mark_to_drop
                return

    # -- bitmask: pop foreign entries, then one clone per set bit -----------
    def _bitmask(self, run: _Run, stack: list[StackEntry]) -> None:
        depth, cur = 0, -1
        while True:
            depth += 1
            cur = run.new_pass(cur)
            entry = stack[0]
            if run.apply(CHECK_DEV, entry.switch_id) is None:
                del stack[0]  # foreign entry: pop (digest [BUG] fix) and go on
                if not stack:
                    run.dropped += 1
                    return
                continue
            rule = run.apply(CHECK_BITMASK, entry.value)
            if rule is None or rule.action != FORWARD_PKT:
                run.dropped += 1  # no 1-bit left (or none this switch can serve)
                return
            run.simplified += 1
            self._copy(run, self._session_port(run, rule.param("clone_port")), list(stack),
                       depth, cur, predictive=False)
            stack[0] = StackEntry(entry.switch_id, entry.value - rule.param("bit_pos"), entry.tag)
            if stack[0].value == 0:
                run.dropped += 1  # all bits served: the original is discarded
                return

    # -- mc-group: pop foreign entries, then one multicast per subset -------
    def _mcgroup(self, run: _Run, stack: list[StackEntry]) -> None:
        depth, subset, cur = 0, 0, -1
        while True:
            depth += 1
            cur = run.new_pass(cur)
            entry = stack[0]
            if self.mc_subsets == 1:
                hit = run.apply(MULTICAST_FORWARD, entry.switch_id)
            else:
                hit = run.apply(MULTICAST_FORWARD, entry.switch_id, subset)
            if hit is None:
                del stack[0]
                if not stack:
                    run.dropped += 1
                    return
                continue
            if hit.action == DO_MULTICAST:
                mask, last = (1 << self.layout.value_bits) - 1, True
            elif hit.action == DO_MULTICAST_SUBSET:
                mask, last = hit.param("mask"), bool(hit.param("last"))
            else:
                raise LookupError(f"{MULTICAST_FORWARD}: unexpected action {hit.action}")
            run.simplified += 1
            grp = entry.value & mask
            if grp:
                group = run.config.multicast_groups.get(grp)
                for port in group.ports if group is not None else ():
                    self._copy(run, port, list(stack), depth, cur, predictive=False)
            if last:
                if not grp:
                    run.dropped += 1
                return
            if grp and self._session_port(run, CONTINUE_SESSION) is None:
                return
            subset += 1  # the original (or its continuation copy) takes the next subset


DATAPLANES.add("source_routing", cast(DataPlane, SourceRoutingDataPlane()))
