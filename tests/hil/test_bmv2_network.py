"""Network mode against real BMv2: one BMv2 per switch, one strategy per family.

Needs ``simple_switch_grpc`` on PATH and root (``PATH=/opt/p4/bin:$PATH``).
"""

from __future__ import annotations

import os

import pytest
from support.bmv2 import BMV2_MODULE

from hil.netns import PREFIX, namespaces
from hil.validate import validate

pytestmark = BMV2_MODULE

SMALL = "jellyfish:switches=6,degree=3,seed=3"
CONTENT = "content:subs=40,publishers=3,subscribers=8,dims=2,bits=12,width=0.2,dist=zipf,churn=0"
UNIFORM = "uniform:percent=40"

CASES = [
    ("broadcast", UNIFORM),        # l2
    ("vt-broadcast", UNIFORM),     # virtual_tree
    ("destinations", UNIFORM),     # neighbor_labels
    ("switch-mcgroup", UNIFORM),   # source_routing
    ("pleroma-dz", CONTENT),       # prefix_filter
    ("range-boxes", CONTENT),      # range_filter
    ("kundel-bitmask", CONTENT),   # kundel
    ("bier", UNIFORM),             # bier_bsl64
]


def _mine() -> list[str]:
    return [n for n in namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]


@pytest.mark.parametrize("strategy,receivers", CASES, ids=[c[0] for c in CASES])
def test_network_mode_agrees_with_the_model(strategy, receivers):
    report = validate(SMALL, strategy, 3, mode="network", receivers=receivers)
    assert report.notifications == 3 and report.delivery_checks == 3
    assert report.switch_visits > 0 and report.frames > 0
    assert report.mismatches == [], report.format_text()
    assert report.match_rate == 1.0
    assert _mine() == []


def test_brokers_need_hop_mode():
    with pytest.raises(ValueError, match="use --mode hop"):
        validate(SMALL, "alm-fork", 1, mode="network")


def test_too_many_switches_for_network_mode():
    with pytest.raises(ValueError, match="at most 32 allowed"):
        validate("jellyfish:switches=40,degree=3,seed=1", "unicast", 1, mode="network")
    assert _mine() == []
