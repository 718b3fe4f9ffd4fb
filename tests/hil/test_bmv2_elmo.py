"""p4/elmo.p4 against the Elmo reference model on real BMv2: every forwarding path.

The generic hop- and network-mode tests (test_bmv2_hop.py, test_bmv2_network.py)
run one Elmo case each through ``stackcast hil validate``. Here each path of
sim/dataplanes/elmo/reference.py is shown to be taken and to agree on
BMv2: upstream p-rules with a multipath choice over two up ports, core
p-rules, shared p-rules naming 1..3 switches, s-rules, default p-rules, and
hand-made frames the codec rejects or no rule serves.

s-rules. The strategy numbers an s-rule's multicast group ``2 + crc32(gid)
mod 65534`` (16-bit ``mcast_grp``, so a group keeps its id under churn);
BMv2's replication engine holds ids 0..4095 (hil/validate.py
``check_group_ids``, docs/FIDELITY.md). :func:`bmv2_group_ids` renumbers each
switch's s-rule groups 2, 3, ... (entries and groups together) before the
model and BMv2 see the state; a group id only names a group, so the
renumbered state forwards as the original does.

Needs ``simple_switch_grpc`` on PATH and root (``PATH=/opt/p4/bin:$PATH``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from support.bmv2 import BMV2_MODULE

from hil.compare import Report
from hil.hop import HopSwitch, Visit, model_visits, run_hop
from hil.network import Network
from hil.programs import program_for
from hil.validate import check_group_ids, strategy_params
from sim.dataplanes.control_state import ControlState, MulticastGroup, SwitchConfig
from sim.dataplanes.elmo.codec import (
    ETHERTYPE_ELMO,
    ElmoDecodeError,
    ElmoHeader,
    PRule,
    UpRule,
    decode_header,
    encode_header,
)
from sim.dataplanes.elmo.fabric import ROLE_CORE, ROLE_LEAF, ROLE_SPINE
from sim.dataplanes.elmo.reference import (
    ALL_PORTS_GROUP,
    SRULE_TABLE,
    SWITCH_TABLE,
    ElmoDataPlane,
    switch_layout,
)
from sim.dataplanes.packet import Packet

pytestmark = BMV2_MODULE

FATTREE = "fattree:k=4"
ELMO = "elmo:pods=2,leaves=2,hosts=2,spines=2,cores=2"
UNIFORM = "uniform:percent=40"
#: Elmo's tenants at toy size: many small groups (varied group ids, so both
#: multipath choices; groups inside one pod, so upstream p-rules without it).
TENANTS = ("tenants:groups=40,tenants=3,vms_min=8,vms_max=24,max_vms_per_host=4,"
           "hosts_per_leaf=2,min_group_size=3")
#: One shared leaf p-rule and one spine p-rule per header: the other leaves and
#: pods get s-rules (or, with no s-rule room, the default p-rules).
FEW_PRULES = {"leaf_prules": 1, "spine_prules": 1}
NO_SRULES = {**FEW_PRULES, "leaf_srules": 0, "spine_srules": 0}
#: p-rules shared only by switches with equal bitmaps (R = 0): more s-rules.
EXACT_PRULES = {**FEW_PRULES, "redundancy": 0, "spine_redundancy": 0}


def bmv2_group_ids(state: ControlState) -> ControlState:
    """``state`` with every switch's s-rule groups renumbered 2, 3, ... in id order
    (module docstring); the ``elmo_srule`` entries follow their groups."""
    switches = {}
    for sw, config in state.switches.items():
        old = sorted(g for g in config.multicast_groups if g != ALL_PORTS_GROUP)
        new = {g: ALL_PORTS_GROUP + 1 + i for i, g in enumerate(old)}
        if all(g == n for g, n in new.items()):
            switches[sw] = config
            continue
        groups = {new.get(g, g): MulticastGroup(new.get(g, g), mg.replicas)
                  for g, mg in config.multicast_groups.items()}
        entries = tuple(dataclasses.replace(e, params=tuple(
            (k, new[v] if k == "mcast_grp" else v) for k, v in e.params))
            for e in config.tables.get(SRULE_TABLE, ()))
        switches[sw] = SwitchConfig(tables={**config.tables, SRULE_TABLE: entries},
                                    multicast_groups=groups,
                                    clone_sessions=config.clone_sessions)
    return ControlState(switches=switches, publisher_info=state.publisher_info)


def cell_items(topology: str, params: dict, notifications: int, receivers: str = UNIFORM):
    """(topology, strategy, program, items) of a one-cell run, states renumbered."""
    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell

    cell = Cell(experiment="elmo-bmv2", topology=topology, strategy="elmo",
                params=tuple(sorted(params.items())), receivers=receivers, payload_bytes=50,
                seed=1, notifications=notifications)
    topo, strategy, _ = cell_setup(cell)
    items = [dataclasses.replace(item, state=bmv2_group_ids(item.state))
             for item in cell_notifications(cell, topo, strategy)]
    check_group_ids("elmo", items[0].state)
    program = program_for("elmo", "elmo", strategy_params(strategy), strategy.model(),
                          items[0].state)
    return topo, strategy, program, items


def path_of(v: Visit) -> str:
    """Which branch of the reference model a visit takes (its frame and rules)."""
    ident = v.config.tables[SWITCH_TABLE][0]
    role, me = ident.param("role"), ident.param("switch_id")
    try:
        header, _ = decode_header(v.frame[14:], switch_layout(ident))
    except ElmoDecodeError:
        return "rejected"
    if role == ROLE_CORE:
        return "core" if header.core is not None else "miss"
    up = header.up_leaf if role == ROLE_LEAF else header.up_spine
    if up is not None:
        return (f"multipath {header.group_id % up.up.bit_count()}/{up.up.bit_count()}"
                if up.multipath and up.up.bit_count() > 1 else "up")
    rules = header.leaf_rules if role == ROLE_LEAF else header.spine_rules
    for rule in rules:
        if me in rule.ids:
            return f"p-rule k={len(rule.ids)}"
    if v.config.lookup(SRULE_TABLE, header.group_id) is not None:
        return "s-rule"
    default = header.leaf_default if role == ROLE_LEAF else header.spine_default
    return "default" if default is not None else "miss"


def _visits(topo, strategy, items) -> list[Visit]:  # noqa: ANN001
    return [v for item in items for v in model_visits(topo, strategy, item)[1]]


@pytest.mark.parametrize("topology,params,receivers,paths", [
    (FATTREE, FEW_PRULES, UNIFORM, {"s-rule", "p-rule k=2", "p-rule k=3", "core"}),
    (FATTREE, NO_SRULES, UNIFORM, {"default", "p-rule k=3", "core"}),
    (FATTREE, FEW_PRULES, TENANTS, {"multipath 0/2", "multipath 1/2", "up", "p-rule k=2"}),
], ids=["s-rules", "default-p-rules", "tenants"])
def test_hop_mode_agrees_on_every_path(topology, params, receivers, paths):
    topo, strategy, program, items = cell_items(topology, params, 25, receivers)
    taken = Counter(path_of(v) for v in _visits(topo, strategy, items))
    assert paths <= set(taken), f"paths not taken: {paths - set(taken)} ({taken})"
    report = run_hop(topo, strategy, program, items, Report("hop", topology, "elmo",
                                                            program.name))
    assert report.notifications == 25 and report.switch_visits == sum(taken.values())
    assert report.mismatches == [], report.format_text()
    assert report.match_rate == 1.0


@pytest.mark.parametrize("params,receivers,paths", [
    (EXACT_PRULES, UNIFORM, {"s-rule", "p-rule k=1", "p-rule k=2", "core", "multipath 0/2"}),
    (FEW_PRULES, TENANTS, {"multipath 0/2", "multipath 1/2", "up", "p-rule k=2"}),
], ids=["uniform", "tenants"])
def test_network_mode_agrees(params, receivers, paths):
    topo, strategy, program, items = cell_items(ELMO, params, 10, receivers)
    taken = Counter(path_of(v) for v in _visits(topo, strategy, items))
    assert paths <= set(taken), f"paths not taken: {paths - set(taken)} ({taken})"
    report = Report("network", ELMO, "elmo", program.name)
    with Network(topo, program) as net:
        for item in items:
            net.check(item, strategy, report)
    assert report.notifications == 10 and report.delivery_checks == 10
    assert report.mismatches == [], report.format_text()
    assert report.match_rate == 1.0


# -- hand-made frames -----------------------------------------------------------

PAYLOAD = bytes(range(24))


def _packet(header: ElmoHeader | bytes, layout, ethertype: int = ETHERTYPE_ELMO,  # noqa: ANN001
            payload: bytes = PAYLOAD) -> Packet:
    raw = header if isinstance(header, bytes) else encode_header(header, layout)
    return Packet(0x01005E000001, 0x020000000001, ethertype, raw, payload)


#: Frames the leaf model drops, and frames it forwards (see _edge_packets).
LEAF_DROPS = ("not elmo", "reserved flag", "count above K", "truncated", "no rule, no default",
              "empty bitmap")
LEAF_FORWARDS = ("default", "last id of three", "up, no multipath", "named by p-rule 9",
                 "named by p-rule 30")


def _edge_packets(layout, me: int) -> dict[str, Packet]:  # noqa: ANN001
    """Frames no workload sends: rejected, unserved or pruned ones, and rare shapes
    (``me``: the switch's Elmo id, used as a leaf id and as a pod)."""
    mine = PRule((me ^ 1, me ^ 2, me), 0b01)
    other = PRule(((me + 3) % 8,), 0b11)
    ok = encode_header(ElmoHeader(7, leaf_rules=(other, mine)), layout)
    # p-rules naming other leaves, then one naming this switch (the stack holds 30)
    others = tuple(PRule(((me + 1 + j % 7) % 8,), 0b10) for j in range(29))
    return {
        "not elmo": _packet(ok, layout, ethertype=0x0800),
        "reserved flag": _packet(ok[:4] + bytes([ok[4] | 0x01]) + ok[5:], layout),
        "count above K": _packet(ok[:7] + bytes([ok[7] | 0xC0]) + ok[8:], layout),
        "truncated": _packet(ok[:-1], layout, payload=b""),
        "no rule, no default": _packet(ElmoHeader(9, leaf_rules=(other,)), layout),
        "default": _packet(ElmoHeader(9, leaf_rules=(other,), leaf_default=0b10), layout),
        "last id of three": _packet(ok, layout),
        "named by p-rule 9": _packet(ElmoHeader(6, leaf_rules=(*others[:8], mine)), layout),
        "named by p-rule 30": _packet(ElmoHeader(6, leaf_rules=(*others, mine),
                                                 leaf_default=0b10), layout),
        "empty bitmap": _packet(ElmoHeader(7, leaf_rules=(PRule((me,), 0),)), layout),
        "up, no multipath": _packet(ElmoHeader(5, up_leaf=UpRule(0b10, 0b11, False),
                                               leaf_rules=(other,)), layout),
        "core without core p-rule": _packet(ElmoHeader(
            4, spine_rules=(PRule((me % 4,), 0b01),), leaf_rules=(other,)), layout),
        "spine down, others popped": _packet(ElmoHeader(
            3, core=0b0110, spine_rules=(PRule(((me ^ 1) % 4, me % 4), 0b10),),
            spine_default=0b01, leaf_rules=(other, mine), leaf_default=0b01), layout),
    }


def test_hand_made_frames_agree():
    topo, strategy, program, items = cell_items(FATTREE, NO_SRULES, 1)
    state = items[0].state
    role_of = {sw: c.tables[SWITCH_TABLE][0].param("role") for sw, c in state.switches.items()}
    picks = {role: next(sw for sw, r in role_of.items() if r == role)
             for role in (ROLE_LEAF, ROLE_SPINE, ROLE_CORE)}
    model = ElmoDataPlane()
    report = Report("hop", FATTREE, "elmo", program.name)
    emitted: dict[tuple[int, str], int] = {}
    with HopSwitch(program, 4) as hop:
        for role, sw in picks.items():
            config = state.config(sw)
            ident = config.tables[SWITCH_TABLE][0]
            hop.load(config)
            for i, (name, packet) in enumerate(_edge_packets(switch_layout(ident),
                                                             ident.param("switch_id")).items()):
                result = model.process(sw, config, packet, 1)
                emitted[(role, name)] = len(result.emitted)
                hop.check(Visit(i, f"{sw} ({name})", 1, packet.to_bytes(), config,
                                tuple((e.port, e.packet.to_bytes()) for e in result.emitted),
                                result.passes), report)
    assert report.switch_visits == 3 * 13
    assert report.mismatches == [], report.format_text()
    # the frames are what their names say (on the leaf; spine and core for their cases)
    assert [emitted[(ROLE_LEAF, n)] for n in LEAF_DROPS] == [0] * len(LEAF_DROPS)
    assert all(emitted[(ROLE_LEAF, n)] > 0 for n in LEAF_FORWARDS)
    assert emitted[(ROLE_CORE, "core without core p-rule")] == 0
    assert emitted[(ROLE_CORE, "spine down, others popped")] == 2
    assert emitted[(ROLE_SPINE, "spine down, others popped")] == 1
