"""p4/bier.p4 against real BMv2: edge frames, every BitString length, sets, TTL.

Beyond the generic cases of test_bmv2_hop.py / test_bmv2_network.py (default
parameters): one switch of a real BIER state is fed hand-made variants of a
frame it receives in the simulation (every bit set, TTL 0/1/2, headers the
parser must refuse, a BIFT miss after served bits, plain frames, no
continuation session), and each variant's frames per port and passes on BMv2
must equal the reference model's (sim/dataplanes/bier/reference.py). The
128- and 256-bit builds, a domain of two sets and an expiring TTL are run
through ``hil validate``.

Needs ``simple_switch_grpc`` on PATH and root (``PATH=/opt/p4/bin:$PATH``).
"""

from __future__ import annotations

import dataclasses
import os

import pytest
from support.bmv2 import BMV2_MODULE

from hil.compare import Report
from hil.hop import HopSwitch, Visit, max_port, model_visits
from hil.netns import PREFIX, namespaces
from hil.programs import program_for
from hil.validate import strategy_params, validate
from sim.dataplanes.bier.codec import (
    ETHERTYPE_BIER,
    BierHeader,
    bift_id,
    decapsulate,
    encapsulate,
)
from sim.dataplanes.bier.reference import CONTINUE_SESSION
from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.packet import ETH_HEADER_BYTES, Packet

pytestmark = BMV2_MODULE

SMALL = "jellyfish:switches=8,degree=3,seed=2"
NETWORK = "jellyfish:switches=6,degree=3,seed=3"
ELMO = "elmo:pods=2,leaves=4,hosts=4,spines=2,cores=2"
#: 74 switches, every one a BFER: two sets of the 64-bit BitString
ELMO_SETS = "elmo:pods=4,leaves=16,hosts=1,spines=2,cores=2"
UNIFORM = "uniform:percent=40"


def _mine() -> list[str]:
    return [n for n in namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]


def _setup():
    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell

    cell = Cell(experiment="t", topology=SMALL, strategy="bier", params=(), receivers=UNIFORM,
                payload_bytes=50, seed=1, notifications=1)
    topo, strategy, _ = cell_setup(cell)
    item = next(cell_notifications(cell, topo, strategy))
    _, visits = model_visits(topo, strategy, item)
    return topo, strategy, max(visits, key=lambda v: v.passes)


def _raw(header: BierHeader, inner: Packet, cut: int | None = None) -> Packet:
    """A BIER frame with any header values (no codec checks), cut to ``cut`` bytes."""
    frame = Packet(inner.dst_mac, inner.src_mac, ETHERTYPE_BIER,
                   header.to_bytes() + inner.to_bytes()).to_bytes()
    return Packet.from_bytes(frame[:cut], 0)


def _variants(strategy, topo, v: Visit) -> dict[str, tuple[Packet, SwitchConfig]]:
    header, inner = decapsulate(Packet.from_bytes(v.frame, 0))
    n = len(strategy.domain(topo).bfers)
    served = (1 << n) - 1
    bad = dataclasses.replace
    no_session = SwitchConfig(tables=v.config.tables, multicast_groups=v.config.multicast_groups)
    assert CONTINUE_SESSION in v.config.clone_sessions and n < 64
    return {
        "as sent": (encapsulate(header, inner), v.config),
        "every bit": (encapsulate(header.with_bits(served, header.ttl), inner), v.config),
        "ttl 2": (encapsulate(header.with_bits(served, 2), inner), v.config),
        "ttl 1": (encapsulate(header.with_bits(served, 1), inner), v.config),
        "ttl 0": (encapsulate(header.with_bits(served, 0), inner), v.config),
        "served bits, then a miss": (encapsulate(header.with_bits(served | 1 << 63, 9), inner),
                                     v.config),
        "unknown BIFT-id": (encapsulate(bad(header, bift_id=bift_id(64, 0, 7)), inner), v.config),
        "nibble 0100": (_raw(bad(header, nibble=4), inner), v.config),
        "version 1": (_raw(bad(header, version=1), inner), v.config),
        "BSL 128": (_raw(bad(header, bsl=2), inner), v.config),
        "Proto 4": (_raw(bad(header, proto=4), inner), v.config),
        "truncated header": (_raw(header, inner, ETH_HEADER_BYTES + 10), v.config),
        "no carried frame": (_raw(header, inner, ETH_HEADER_BYTES + 26), v.config),
        "plain frame": (inner, v.config),
        "plain frame, unknown MAC": (dataclasses.replace(inner, dst_mac=0x0100_5E7F_FFFF),
                                     v.config),
        "no continuation session": (encapsulate(header.with_bits(served, 9), inner),
                                    no_session),
    }


def test_edge_frames_agree_with_the_model():
    topo, strategy, v = _setup()
    model = strategy.model()
    program = program_for("bier", "bier", strategy_params(strategy), model)
    report = Report("hop", SMALL, "bier", program.name)
    expected: dict[str, tuple[int, int]] = {}
    with HopSwitch(program, max_port(topo), retry_quiet_s=0.5) as hop:
        for name, (packet, config) in _variants(strategy, topo, v).items():
            result = model.process(v.switch, config, packet, v.in_port)
            visit = Visit(0, v.switch, v.in_port, packet.to_bytes(), config,
                          tuple((e.port, e.packet.to_bytes()) for e in result.emitted),
                          result.passes)
            expected[name] = (result.passes, len(result.emitted))
            hop.load(config)
            hop.check(visit, report)
    assert report.mismatches == [], report.format_text()
    assert report.switch_visits == report.visits_matched == len(expected)
    # the cases do what their names say (on the model; BMv2 agreed with each)
    for name in ("nibble 0100", "version 1", "BSL 128", "Proto 4", "truncated header",
                 "no carried frame", "unknown BIFT-id", "plain frame, unknown MAC"):
        assert expected[name] == (1, 0), name
    every, ttl1 = expected["every bit"], expected["ttl 1"]
    # the first pass only (plus its local delivery if that pass was a decap)
    assert expected["no continuation session"][0] in (1, 2)
    assert expected["no continuation session"][0] < every[0]
    assert every[0] > 2 and every[1] > ttl1[1] and ttl1[0] == every[0]
    assert expected["ttl 0"] == ttl1 and expected["ttl 2"] == every
    assert expected["served bits, then a miss"][0] == every[0] + 1
    assert _mine() == []


def _packets_per_notification(topology: str, params: dict) -> tuple[int, list[int]]:
    """(sets of the domain, BIER packets each of the 3 notifications sends) on the model."""
    from experiments.cells.pipeline import cell_notifications, cell_setup
    from experiments.cells.spec import Cell

    cell = Cell(experiment="t", topology=topology, strategy="bier",
                params=tuple(sorted(params.items())), receivers=UNIFORM, payload_bytes=50,
                seed=1, notifications=3)
    topo, strategy, _ = cell_setup(cell)
    return strategy.domain(topo).sets, [
        len(model_visits(topo, strategy, item)[0].encoding.packets)
        for item in cell_notifications(cell, topo, strategy)]


@pytest.mark.parametrize("topology, params", [
    (ELMO, {"bsl_bits": 128}),
    (ELMO, {"bsl_bits": 256}),
    (ELMO_SETS, {"bfers": "all"}),
], ids=["bsl128", "bsl256", "two-sets"])
def test_hop_mode_builds_and_sets(topology, params):
    if topology == ELMO_SETS:  # the case is one: receivers in both sets, two BIER packets
        sets, packets = _packets_per_notification(topology, params)
        assert sets == 2 and max(packets) == 2
    report = validate(topology, "bier", 3, mode="hop", receivers=UNIFORM, params=params)
    assert report.program == f"bier_bsl{params.get('bsl_bits', 64)}"
    assert report.notifications == 3 and report.switch_visits > 0
    assert report.mismatches == [], report.format_text()
    assert report.match_rate == 1.0
    assert _mine() == []


def test_network_mode_with_an_expiring_ttl():
    """TTL 2: copies are dropped two hops from the publisher's switch, on BMv2 too."""
    report = validate(NETWORK, "bier", 3, mode="network", receivers=UNIFORM,
                      params={"ttl": 2})
    assert report.notifications == 3 and report.delivery_checks == 3
    assert report.mismatches == [], report.format_text()
    assert report.match_rate == 1.0
    assert _mine() == []
