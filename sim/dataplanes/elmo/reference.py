"""Elmo: reference model of ``p4/elmo.p4``, pass by pass on the exact bytes.

One program for every tier; what a switch does depends on its
``MyIngress.elmo_switch`` rule and on which p-rules the header still holds
(Elmo §3.1; Elmo-MCast/p4-programs ``elmo_{leaf,spine,core}_switch.p4``
``control ingress``):

1. ``MyIngress.elmo_switch`` (key ``hdr.ethernet.etherType`` exact, one rule
   per switch) -> ``MyIngress.set_switch(role, switch_id, <layout widths>)``:
   the switch's tier (1 core, 2 spine, 3 leaf), its Elmo id (leaf id, pod,
   core index) and the header widths the program was compiled with
   (:class:`~sim.dataplanes.elmo.codec.ElmoLayout`; a P4 program holds them
   as constants and this rule repeats them so that one model serves every
   network). A miss (not an Elmo frame) drops the packet. The parser
   (:func:`~sim.dataplanes.elmo.codec.decode_header`) rejects malformed
   headers: dropped.
2. The port bitmap to replicate to:

   - a leaf holding the upstream leaf p-rule, a spine holding the upstream
     spine p-rule: its down bitmap plus its up bitmap, of which a multipath
     p-rule keeps one bit (:func:`~sim.dataplanes.elmo.headers.multipath_choice`);
   - a core: the core p-rule (no core p-rule: dropped);
   - otherwise (downstream) a leaf or spine takes the first shared p-rule of
     its layer that names its id; else ``MyIngress.elmo_srule`` (key
     ``hdr.elmo.group_id`` exact -> ``MyIngress.srule_forward(mcast_grp)``,
     its s-rule: the PRE replicates to that multicast group); else the
     layer's default p-rule; else the packet is dropped.

3. Replication: a bitmap goes to multicast group :data:`ALL_PORTS_GROUP`,
   which holds every port of the switch with instance (``egress_rid``) = its
   bit in the switch's complete bitmap (down ports first, then up ports at
   offset ``down`` of the tier's layout width, :mod:`sim.dataplanes.elmo.fabric`);
   the egress keeps a replica only if its bit is set, which is Elmo's
   "bitmap-based output port selection" (§3, ``bitmap_port_select``) in
   v1model terms. Replicas of an s-rule group all leave. Pruned replicas are
   not counted as drops (a PRE that replicates by bitmap makes none).
4. Egress pops what the copy no longer needs (Elmo's
   ``elmo_invalidate_*_p_rules_tbl``, keyed by the egress direction): towards
   a host the whole header goes (EtherType :data:`~sim.dataplanes.elmo.codec.ETHERTYPE_EVENT`);
   a leaf's up copy loses the upstream leaf p-rule; a spine's up copy the
   upstream spine p-rule; a spine's down copy keeps only the leaf p-rules
   (and the leaf default); a core's copies lose the core p-rule.

One pass per switch (no recirculation), every copy leaves after it (pass
trace ``(-1,)``); lookups: ``elmo_switch``, plus ``elmo_srule`` when a
downstream switch finds no p-rule naming it. A packet that leaves on no port
counts one drop.

``p4/elmo.p4`` is this model on BMv2, one build per header layout
(``elmo_l<Dl>u<Ul>_s<Ds>u<Us>_c<Dc>_i<Il>p<Ip>_k<K>``, picked by
``hil/programs.py`` from the ``elmo_switch`` rule); its p-rule stacks hold 30
leaf and 2 spine p-rules (the strategy's H_max defaults), and the modulo of
the multipath choice is v1model's identity hash with ``max`` = popcount.

References
----------
Elmo SIGCOMM 2019 §3.1-3.2 (p-rules, s-rules, default p-rule, multipath),
§3.3 (popping used p-rules); Elmo-MCast/p4-programs (P4_14 ingress and egress
controls of the three switch programs).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import cast

from sim.dataplanes.control_state import SwitchConfig, TableEntry
from sim.dataplanes.elmo.codec import (
    ETHERTYPE_EVENT,
    LAYOUT_FIELDS,
    ElmoDecodeError,
    ElmoHeader,
    ElmoLayout,
    PRule,
    UpRule,
    decode_header,
    encode_header,
)
from sim.dataplanes.elmo.fabric import ROLE_CORE, ROLE_LEAF, ROLE_SPINE
from sim.dataplanes.elmo.headers import multipath_choice
from sim.dataplanes.packet import Packet
from sim.dataplanes.pipeline import DATAPLANES, DataPlane, Emit, PipelineResult

SWITCH_TABLE = "MyIngress.elmo_switch"
SET_SWITCH = "MyIngress.set_switch"
KEY_ETHERTYPE = "hdr.ethernet.etherType"
SRULE_TABLE = "MyIngress.elmo_srule"
SRULE_FORWARD = "MyIngress.srule_forward"
KEY_GROUP = "hdr.elmo.group_id"
#: The multicast group of every port (instance = bit), used for bitmap replication.
ALL_PORTS_GROUP = 1
#: Multicast group ids an s-rule may use (16-bit ``mcast_grp``, group 1 excluded).
SRULE_GROUPS = range(2, 1 << 16)

_DROP = PipelineResult(passes=1, recirculations=0, lookups=1, emitted=(), dropped=1,
                       pass_parents=(-1,))


@lru_cache(maxsize=256)
def _layout(params: tuple[tuple[str, int], ...]) -> ElmoLayout:
    values = dict(params)
    return ElmoLayout(**{f: values[f] for f in LAYOUT_FIELDS})


def switch_layout(entry: TableEntry) -> ElmoLayout:
    """The header layout an ``elmo_switch`` rule carries."""
    return _layout(entry.params)


def match_rule(rules: tuple[PRule, ...], my_id: int) -> int | None:
    """The bitmap of the first shared p-rule naming ``my_id``, or None."""
    for rule in rules:
        if my_id in rule.ids:
            return rule.bitmap
    return None


def upstream_bits(rule: UpRule, group_id: int, down_width: int) -> int:
    """The complete bitmap of an upstream p-rule (down bits, then the up bits, of
    which multipath keeps one)."""
    up = rule.up
    if rule.multipath and up:
        up = 1 << multipath_choice(up, group_id)
    return rule.down | (up << down_width)


class ElmoDataPlane:
    """The Elmo program's reference model (module docstring)."""

    name = "elmo"

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        ident = config.lookup(SWITCH_TABLE, packet.ethertype)
        if ident is None or ident.action != SET_SWITCH:
            return _DROP
        role, my_id = ident.param("role"), ident.param("switch_id")
        layout = switch_layout(ident)
        body = packet.header + packet.payload
        try:
            header, used = decode_header(body, layout)
        except ElmoDecodeError:
            return _DROP
        payload = body[used:]
        lookups = 1
        group = config.multicast_groups.get(ALL_PORTS_GROUP)
        bits: int | None = None  # None: every replica of ``group`` leaves
        if role == ROLE_LEAF:
            down_width = layout.leaf_down
            if header.up_leaf is not None:
                bits = upstream_bits(header.up_leaf, header.group_id, down_width)
                mode = "up"
            else:
                bits = match_rule(header.leaf_rules, my_id)
                mode = "down"
        elif role == ROLE_SPINE:
            down_width = layout.spine_down
            if header.up_spine is not None:
                bits = upstream_bits(header.up_spine, header.group_id, down_width)
                mode = "up"
            else:
                bits = match_rule(header.spine_rules, my_id)
                mode = "down"
        elif role == ROLE_CORE:
            down_width, mode, bits = layout.core_down, "core", header.core
            if bits is None:
                return _DROP
        else:
            raise LookupError(f"{switch}: {SET_SWITCH} has unknown role {role}")
        if bits is None:  # downstream, no p-rule names this switch: s-rule, else default
            lookups += 1
            srule = config.lookup(SRULE_TABLE, header.group_id)
            if srule is not None:
                group = config.multicast_groups.get(srule.param("mcast_grp"))
                if group is None:
                    raise LookupError(f"{switch}: s-rule group {srule.param('mcast_grp')} of "
                                      f"Elmo group {header.group_id} not installed")
            else:
                bits = header.leaf_default if role == ROLE_LEAF else header.spine_default
                if bits is None:
                    return PipelineResult(passes=1, recirculations=0, lookups=lookups,
                                          emitted=(), dropped=1, pass_parents=(-1,))
        emitted = []
        frames: dict[bool, Packet] = {}
        for port, rid in group.replicas if group is not None else ():
            if bits is not None and not (bits >> rid) & 1:
                continue  # egress prune: this port's bit is not set
            down = rid < down_width
            out = frames.get(down)
            if out is None:
                out = frames[down] = _egress(packet, header, payload, layout, role, mode, down)
            emitted.append(Emit(port, out, after_pass=0))
        return PipelineResult(passes=1, recirculations=0, lookups=lookups,
                              emitted=tuple(emitted), dropped=0 if emitted else 1,
                              pass_parents=(-1,))


def _egress(packet: Packet, header: ElmoHeader, payload: bytes, layout: ElmoLayout, role: int,
            mode: str, down: bool) -> Packet:
    """The copy leaving in direction ``down`` after the egress pops (module docstring)."""
    if role == ROLE_LEAF and down:  # to a host: the hypervisor gets the plain frame
        return Packet(packet.dst_mac, packet.src_mac, ETHERTYPE_EVENT, b"", payload)
    if role == ROLE_LEAF:
        rest = replace(header, up_leaf=None)
    elif role == ROLE_CORE:
        rest = replace(header, core=None)
    elif mode == "up" and not down:
        rest = replace(header, up_spine=None)
    else:  # a spine's copy down to its leaves keeps only the leaf section
        rest = ElmoHeader(header.group_id, leaf_rules=header.leaf_rules,
                          leaf_default=header.leaf_default)
    return Packet(packet.dst_mac, packet.src_mac, packet.ethertype,
                  encode_header(rest, layout), payload)


DATAPLANES.add(ElmoDataPlane.name, cast(DataPlane, ElmoDataPlane()))
