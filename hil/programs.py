"""Which committed P4 program runs which strategy (hardware-in-the-loop, issue 7).

Each data-plane family of :mod:`sim.dataplanes` has one P4_16 program in
``p4/``; the compiler outputs sit beside it (``p4/<prog>.json`` for BMv2 and
``p4/<prog>.p4info.txtpb`` for P4Runtime, see ``p4/README.md``). Families
compiled in several variants map a strategy (name and parameters) to its
variant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

P4_DIR = Path(__file__).resolve().parents[1] / "p4"

#: The per-switch packet counter every program counts its ingress passes in.
PASS_COUNTER = "MyIngress.pass_counter"


def _source_routing(name: str, params: Mapping[str, Any]) -> str:
    if name == "switch-mcgroup":
        subsets = params.get("groups") == "subsets" and params.get("subsets", 2) > 1
        return "source_routing_mcgroup_subsets" if subsets else "source_routing_mcgroup"
    return {
        "switch-port": "source_routing_port",
        "switch-bitmask": "source_routing_bitmask",
        "mixed": "source_routing_mixed",
    }[name]


#: data-plane family -> program base name, or a function of (strategy name,
#: parameters) for families compiled in several variants.
PROGRAMS: dict[str, str | Callable[[str, Mapping[str, Any]], str]] = {
    "l2": "l2_multicast",
    "virtual_tree": "virtual_tree",
    "neighbor_labels": "neighbor_labels",
    "source_routing": _source_routing,
}


@dataclass(frozen=True)
class Program:
    """One compiled P4 program: its base name and the two committed outputs."""

    name: str

    @property
    def bmv2_json(self) -> Path:
        return P4_DIR / f"{self.name}.json"

    @property
    def p4info(self) -> Path:
        return P4_DIR / f"{self.name}.p4info.txtpb"


def program_name(family: str, strategy: str, params: Mapping[str, Any]) -> str | None:
    """The program base name for a strategy of data-plane ``family`` (None: no program yet)."""
    target = PROGRAMS.get(family)
    return target(strategy, params) if callable(target) else target


def program_for(family: str, strategy: str, params: Mapping[str, Any]) -> Program:
    """The compiled program for a strategy; a clear error when its family has none."""
    name = program_name(family, strategy, params)
    if name is None:
        have = ", ".join(sorted(PROGRAMS))
        raise ValueError(f"strategy {strategy!r}: data-plane family {family!r} has no P4 "
                         f"program (families with one: {have})")
    return Program(name)
