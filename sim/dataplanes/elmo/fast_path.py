"""Fast path of Elmo: the reference's walk on header structures instead of bytes.

The pass-by-pass reference (:mod:`sim.dataplanes.elmo.reference` under
:func:`sim.engines.static.run_notification`) decodes and re-encodes the
header at every switch and queues packets. An Elmo packet crosses a tree of
at most four tiers, each switch once: the sender's leaf, one spine of its pod
(the leaf's multipath pick), one core (the spine's pick), one spine per other
pod the core reaches, and the leaves below. :class:`ElmoFastPath` walks that
tree on the sender's :class:`~sim.dataplanes.elmo.codec.ElmoHeader` (built by
:func:`~sim.dataplanes.elmo.headers.sender_header`, which the strategy's
encoder also serialises): the same bitmaps, p-rule matches, s-rule lookups
in the installed state and default p-rules as the reference
(:func:`_first_match` for the reference's
:func:`~sim.dataplanes.elmo.reference.match_rule`;
:func:`~sim.dataplanes.elmo.reference.upstream_bits`), frame sizes from the
layout's byte counts of what each hop still carries
(:meth:`~sim.dataplanes.elmo.codec.ElmoLayout.header_bytes`), arrival
times in the reference's order of floating-point operations.

The walk reads the installed state (s-rules, the group's p-rules in
``publisher_info``): ``needs_states = True``. Declined (``None``, the
reference runs and raises its error): a notification whose group is not
installed, a publisher that is not a host.

References
----------
Elmo SIGCOMM 2019 §3.1-3.3; shared/DESIGN.md "Data planes" (fast paths are
property-tested against the pass-by-pass model: ``tests/sim/test_fast_paths.py``,
``tests/strategies/test_elmo.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel, Delivery, SwitchCount
from sim.dataplanes.elmo.codec import FIXED_BYTES, ElmoHeader, ElmoLayout, PRule
from sim.dataplanes.elmo.fabric import ElmoFabric
from sim.dataplanes.elmo.headers import (
    GroupRules,
    PackedGroup,
    group_for,
    sender_header,
    unpack_group,
)
from sim.dataplanes.elmo.reference import SRULE_TABLE, upstream_bits
from sim.dataplanes.fast_path import Encoder
from sim.dataplanes.link_waste import wasted_link_frames
from sim.dataplanes.packet import ETH_HEADER_BYTES, Notification


class _Walk:
    """What one notification did, in the reference's terms.

    Always: frame, byte and wasted-frame totals, switch visits (passes and
    lookups per switch), deliveries with first arrivals, drops. With
    ``detail`` also the frames and bytes per directed link.
    """

    __slots__ = ("frames", "bytes", "waste", "passes", "lookups", "delivered", "first",
                 "drops", "links", "pub", "receivers", "twice")

    def __init__(self, pub: str, receivers: frozenset[str], detail: bool) -> None:
        self.frames = self.bytes = self.waste = self.drops = 0
        self.passes: dict[str, int] = {}
        self.lookups: dict[str, int] = {}
        self.delivered: dict[str, int] = {}
        self.first: dict[str, float] = {}
        self.links: dict[tuple[str, str], list[int]] | None = {} if detail else None
        self.pub = pub
        self.receivers = receivers
        self.twice = False  # a switch was visited twice (never in Elmo's tree)

    def cross(self, u: str, v: str, nbytes: int, useful: bool) -> None:
        """One frame on ``u -> v``; ``useful``: a receiver is reached through it."""
        self.frames += 1
        self.bytes += nbytes
        if not useful and u != self.pub:
            self.waste += 1
        if self.links is not None:
            rec = self.links.get((u, v))
            if rec is None:
                self.links[(u, v)] = [1, nbytes]
            else:
                rec[0] += 1
                rec[1] += nbytes

    def visit(self, node: str, lookups: int) -> None:
        if node in self.passes:
            self.twice = True
        self.passes[node] = self.passes.get(node, 0) + 1
        self.lookups[node] = self.lookups.get(node, 0) + lookups


#: A neighbour across a port: (node, link delay in s).
_Hop = tuple[str, float]


#: Unpacked groups an :class:`ElmoFastPath` remembers (then forgets them at once).
UNPACKED_LIMIT = 1 << 16


class ElmoFastPath:
    """Elmo's static walk on one topology (module docstring).

    Parameters
    ----------
    fabric : ElmoFabric
    layout : ElmoLayout
        The header widths the strategy encodes with.
    delays : DelayModel
    encode : Encoder
        The strategy's encoder (the encoding of :meth:`delivery`).
    """

    needs_states = True
    impl = "python"

    def __init__(self, fabric: ElmoFabric, layout: ElmoLayout, delays: DelayModel,
                 encode: Encoder) -> None:
        self.fabric = fabric
        self.layout = layout
        self.delays = delays
        self.encode = encode
        topo = fabric.topology
        self._hosts = frozenset(topo.hosts)
        self._host_index = {h: i for i, h in enumerate(topo.hosts)}
        #: published group -> its p-rules (:func:`unpack_group`, a function of the
        #: group's value); a cell draws its groups with replacement, so many repeat
        self._unpacked: dict[PackedGroup, GroupRules] = {}
        #: per switch: neighbour by port, and by down / up bit
        self._port: dict[str, dict[int, _Hop]] = {}
        self._down: dict[str, tuple[_Hop, ...]] = {}
        self._up: dict[str, tuple[_Hop, ...]] = {}
        for sw, ports in fabric.switches.items():
            by_port = {p: (i.neighbor, i.link.delay_s) for p, i in topo.ports(sw).items()}
            self._port[sw] = by_port
            self._down[sw] = tuple(by_port[p] for p in ports.down)
            self._up[sw] = tuple(by_port[p] for p in ports.up)

    # -- public API ---------------------------------------------------------------
    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int, states: Sequence[ControlState] | None = None
                ) -> list[dict[str, Any] | None]:
        """Row metrics per notification (``METRIC_KEYS`` order); None where the reference
        runs, and for every notification without ``states``."""
        if states is None:
            return [None] * len(publishers)
        out: list[dict[str, Any] | None] = []
        for pub, receivers, state in zip(publishers, receiver_sets, states, strict=True):
            got = self._header(state, pub, receivers)
            if got is None:
                out.append(None)
                continue
            walk = self._walk(state, pub, receivers, got, payload_bytes, detail=False)
            if walk.twice:  # not a tree: count link waste the reference's way
                walk = self._walk(state, pub, receivers, got, payload_bytes, detail=True)
                assert walk.links is not None
                walk.waste = wasted_link_frames(walk.links, pub, receivers)
            out.append(self._row(walk, receivers, got, payload_bytes))
        return out

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The reference's :class:`~sim.dataplanes.delivery.Delivery`, or None where it
        must run."""
        pub = notification.publisher
        got = self._header(state, pub, receivers)
        if got is None:
            return None
        walk = self._walk(state, pub, receivers, got, len(payload), detail=True)
        assert walk.links is not None
        out = Delivery(publisher=pub, receivers=receivers,
                       encoding=self.encode(self.fabric.topology, state, notification, receivers,
                                            payload))
        out.links, out.delivered, out.first_arrival_s = walk.links, walk.delivered, walk.first
        out.switches = {s: SwitchCount(passes=p, lookups=walk.lookups[s])
                        for s, p in walk.passes.items()}
        out.drops = walk.drops
        return out

    # -- internals ----------------------------------------------------------------
    def _header(self, state: ControlState, publisher: str, receivers: frozenset[str]
                ) -> tuple[ElmoHeader | None] | None:
        """The sender's header (None inside: nothing is sent); None to decline."""
        if publisher not in self._hosts:
            return None
        if not receivers:
            return (None,)
        try:
            packed = group_for(state.publisher_info, publisher, receivers, self._host_index)
        except LookupError:
            return None
        unpacked = self._unpacked
        rules = unpacked.get(packed)
        if rules is None:
            if len(unpacked) >= UNPACKED_LIMIT:
                unpacked.clear()
            rules = unpacked[packed] = unpack_group(packed, self.layout,
                                                    self.fabric.topology.hosts)
        return (sender_header(self.fabric, rules, publisher),)

    def _walk(self, state: ControlState, pub: str, receivers: frozenset[str],
              got: tuple[ElmoHeader | None], payload_bytes: int, detail: bool) -> _Walk:
        w = _Walk(pub, receivers, detail)
        header = got[0]
        if header is None:
            return w
        fab, lay, d = self.fabric, self.layout, self.delays
        down_nb, up_nb, port_nb = self._down, self._up, self._port
        gid = header.group_id
        eth = ETH_HEADER_BYTES + payload_bytes
        size0 = lay.header_bytes(header)
        to_leaf = eth + FIXED_BYTES + lay.leaf_section_bytes(header)  # a spine to its leaves
        sw_s, pass_s = d.switch_s, d.pass_s
        leaf_rules, spine_rules = _first_match(header.leaf_rules), _first_match(header.spine_rules)

        def hosts_of(leaf: str, t: float, hops: Sequence[_Hop]) -> bool:
            """Copies from ``leaf`` (departing at ``t``) to the hosts ``hops``."""
            useful = False
            for h, delay in hops:
                w.delivered[h] = w.delivered.get(h, 0) + 1
                if h not in w.first:
                    w.first[h] = t + delay
                got = h in receivers
                useful = useful or got
                w.cross(leaf, h, eth, got)
            return useful

        def replicas(node: str, rules: dict[int, int], default: int | None
                     ) -> tuple[int, Sequence[_Hop]]:
            """A downstream switch: p-rule, else s-rule, else default, else nothing."""
            bits = rules.get(fab.switches[node].elmo_id)
            if bits is None:
                config = state.config(node)
                srule = config.lookup(SRULE_TABLE, gid)
                if srule is not None:
                    group = config.multicast_groups[srule.param("mcast_grp")]
                    by_port = port_nb[node]
                    return 2, [by_port[p] for p, _ in group.replicas]
                bits = default
                if bits is None:
                    return 2, ()
                lookups = 2
            else:
                lookups = 1
            down = down_nb[node]
            return lookups, [down[i] for i in _bits(bits) if i < len(down)]

        def down_leaf(leaf: str, t: float) -> bool:
            lookups, hops = replicas(leaf, leaf_rules, header.leaf_default)
            w.visit(leaf, lookups)
            if not hops:
                w.drops += 1
            return hosts_of(leaf, t + sw_s + (1 - 1) * pass_s, hops)

        def down_spine(spine: str, t: float) -> bool:
            lookups, hops = replicas(spine, spine_rules, header.spine_default)
            w.visit(spine, lookups)
            if not hops:
                w.drops += 1
            dep = t + sw_s + (1 - 1) * pass_s
            useful = False
            for leaf, delay in hops:
                got = down_leaf(leaf, dep + delay)
                useful = useful or got
                w.cross(spine, leaf, to_leaf, got)
            return useful

        def core(node: str, t: float, size_in: int) -> bool:
            w.visit(node, 1)
            dep = t + sw_s + (1 - 1) * pass_s
            down = down_nb[node]
            hops = [down[i] for i in _bits(header.core or 0) if i < len(down)]
            if not hops:
                w.drops += 1
            useful = False
            for spine, delay in hops:
                got = down_spine(spine, dep + delay)
                useful = useful or got
                w.cross(node, spine, eth + size_in - lay.core_bytes, got)
            return useful

        def upstream(node: str, t: float, size_in: int) -> bool:
            """The sender's leaf (upstream leaf p-rule) or the spine it picked."""
            leaf = fab.switches[node].tier == "leaf"
            if leaf:
                rule, width, pop = header.up_leaf, lay.leaf_down, lay.up_leaf_bytes
            else:
                rule, width, pop = header.up_spine, lay.spine_down, lay.up_spine_bytes
            assert rule is not None
            w.visit(node, 1)
            dep = t + sw_s + (1 - 1) * pass_s
            down, up = down_nb[node], up_nb[node]
            sent, useful = False, False
            for i in _bits(upstream_bits(rule, gid, width)):
                if i < width:
                    if i >= len(down):
                        continue
                    sent = True
                    nb, delay = down[i]
                    if leaf:
                        got = hosts_of(node, dep, (down[i],))
                    else:
                        got = down_leaf(nb, dep + delay)
                        w.cross(node, nb, to_leaf, got)
                else:
                    if i - width >= len(up):
                        continue
                    sent = True
                    nb, delay = up[i - width]
                    got = (upstream(nb, dep + delay, size_in - pop) if leaf
                           else core(nb, dep + delay, size_in - pop))
                    w.cross(node, nb, eth + size_in - pop, got)
                useful = useful or got
            if not sent:
                w.drops += 1
            return useful

        leaf = fab.leaf_of(pub)
        useful = upstream(leaf, 1 * d.feed_in_s + fab.topology.ports(pub)[1].link.delay_s,
                          size0)
        w.cross(pub, leaf, eth + size0, useful)
        return w

    def _row(self, w: _Walk, receivers: frozenset[str], got: tuple[ElmoHeader | None],
             payload_bytes: int) -> dict[str, Any]:
        header = got[0]
        hit = sum(1 for h in receivers if h in w.delivered)
        times = [w.first[h] for h in receivers if h in w.first]
        return {
            "delivered": len(w.delivered), "false_positives": len(w.delivered) - hit,
            "false_negatives": len(receivers) - hit,
            "duplicates": sum(c - 1 for c in w.delivered.values()),
            "header_entries": header.entries if header is not None else 0,
            "header_bytes": self.layout.header_bytes(header) if header is not None else 0,
            "packets_sent": 1 if header is not None else 0,
            "frames": w.frames, "bytes": w.bytes,
            "passes": sum(w.passes.values()), "recirculations": 0,
            "lookups": sum(w.lookups.values()), "circulations_simplified": 0,
            "max_switch_passes": max(w.passes.values(), default=0),
            "delay_worst_ms": (max(times) if times else 0.0) * 1e3,
            "link_false_positives": w.waste,
        }


def _first_match(rules: tuple[PRule, ...]) -> dict[int, int]:
    """Switch id -> the bitmap of the first p-rule naming it (what
    :func:`~sim.dataplanes.elmo.reference.match_rule` finds)."""
    out: dict[int, int] = {}
    for rule in rules:
        for i in rule.ids:
            out.setdefault(i, rule.bitmap)
    return out


def _bits(value: int) -> list[int]:
    """Indices of the set bits of ``value``, ascending."""
    out = []
    while value:
        low = value & -value
        out.append(low.bit_length() - 1)
        value ^= low
    return out
