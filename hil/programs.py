"""Which committed P4 program runs which strategy (hardware-in-the-loop, issue 7).

Each data-plane family of :mod:`sim.dataplanes` has one P4_16 program in
``p4/``; the compiler outputs sit beside it (``p4/<prog>.json`` for BMv2 and
``p4/<prog>.p4info.txtpb`` for P4Runtime, see ``p4/README.md``). Families
compiled in several variants map a strategy (name and parameters) to its
variant.

Some builds depend on the data-plane model's configuration, which a
strategy derives from the workload at install time (the content filters'
header layouts: attributes, value widths, slots). Their entries take the
model (``strategy.model()`` after ``install``) as a third argument, and
``camus`` also the installed :class:`~sim.dataplanes.control_state.ControlState` or one
switch's :class:`~sim.dataplanes.control_state.SwitchConfig` (its ECMP modulus, the number of
up ports, is compiled in).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

P4_DIR = Path(__file__).resolve().parents[1] / "p4"

#: The per-switch packet counter every program counts its ingress passes in.
PASS_COUNTER = "MyIngress.pass_counter"


def _source_routing(name: str, params: Mapping[str, Any], model: Any = None,
                    config: Any = None) -> str:
    if name == "switch-mcgroup":
        subsets = params.get("groups") == "subsets" and params.get("subsets", 2) > 1
        return "source_routing_mcgroup_subsets" if subsets else "source_routing_mcgroup"
    return {
        "switch-port": "source_routing_port",
        "switch-bitmask": "source_routing_bitmask",
        "mixed": "source_routing_mixed",
    }[name]


def _need_model(family: str, name: str, model: Any, attribute: str) -> Any:
    value = getattr(model, attribute, None)
    if value is None:
        raise ValueError(f"strategy {name!r}: the {family} program is built per header layout; "
                         f"pass the strategy's data-plane model (strategy.model() after "
                         f"install) to choose the build")
    return value


def _range_filter(name: str, params: Mapping[str, Any], model: Any = None,
                  config: Any = None) -> str:
    """``range_filter_<dims>x<value_bits>`` (p4/range_filter.p4 -DDIMS -DVALUE_BITS)."""
    layout = _need_model("range_filter", name, model, "layout")
    return f"range_filter_{layout.dims}x{layout.value_bits}"


def _kundel(name: str, params: Mapping[str, Any], model: Any = None,
            config: Any = None) -> str:
    """``kundel_id_k<id_bits>_s<slots>`` / ``kundel_bitmask_m<n_max>_s<slots>`` (p4/kundel.p4)."""
    fmt = _need_model("kundel", name, model, "fmt")
    width = f"k{fmt.id_bits}" if fmt.encoding == "id" else f"m{fmt.n_max}"
    return f"kundel_{fmt.encoding}_{width}_s{model.slots}"


def _camus(name: str, params: Mapping[str, Any], model: Any = None,
           config: Any = None) -> str:
    """``camus_<bdd|flat>_<fields>x<value_bits>_up<n>`` (p4/camus.p4).

    ``n`` is the number of ``MyIngress.up_ecmp`` entries (the model's ECMP
    modulus) of the switch (``config`` a ``SwitchConfig``) or of every switch
    that has any (``config`` a ``ControlState``; they must agree, as on fat
    trees and spanning trees). A switch with none never sends up and runs
    any build (``up1`` when no switch has up ports).
    """
    layout = _need_model("camus", name, model, "layout")
    flat = params.get("table", "bdd") == "one-big-table"
    if not flat and (tuple(model.fields) != tuple(model.header_fields) or model.switch_fields):
        raise ValueError(f"strategy {name!r}: p4/camus.p4 applies the field tables in "
                         f"annotation order {tuple(model.header_fields)}; the model's BDD "
                         "order differs on some switches (order='constants' has no build)")
    if config is None:
        raise ValueError(f"strategy {name!r}: the camus build depends on the switches' up "
                         f"ports; pass the installed ControlState (or one SwitchConfig)")
    configs = config.switches.values() if hasattr(config, "switches") else (config,)
    counts = {len(c.tables.get("MyIngress.up_ecmp", ())) for c in configs} - {0}
    if len(counts) > 1:
        raise ValueError(f"strategy {name!r}: switches have {sorted(counts)} up ports; the "
                         f"camus builds compile the ECMP modulus in, so choose one per switch "
                         f"(pass each SwitchConfig)")
    up = max(counts, default=1)
    kind = "flat" if flat else "bdd"
    return f"camus_{kind}_{layout.dims}x{layout.value_bits}_up{up}"


def _bier(name: str, params: Mapping[str, Any], model: Any = None,
          config: Any = None) -> str:
    """``bier_bsl<bits>`` (p4/bier.p4 -DBSL_BITS): the model's BitString length, else
    the strategy's ``bsl_bits`` parameter (default 64)."""
    bits = getattr(model, "bsl_bits", None) or int(params.get("bsl_bits", 64))
    return f"bier_bsl{bits}"


#: p-rules per layer the ``elmo`` builds' header stacks hold (p4/elmo.p4
#: -DLEAF_PRULES, -DSPINE_PRULES): the strategy's H_max defaults.
ELMO_STACKS = {"leaf_prules": 30, "spine_prules": 2}


def _elmo(name: str, params: Mapping[str, Any], model: Any = None,
          config: Any = None) -> str:
    """``elmo_l<Dl>u<Ul>_s<Ds>u<Us>_c<Dc>_i<Il>p<Ip>_k<K>`` (p4/elmo.p4): the header
    layout (:class:`~sim.dataplanes.elmo.codec.ElmoLayout`) the installed
    ``MyIngress.elmo_switch`` rules carry (``config``: the ControlState or one
    SwitchConfig); the builds' p-rule stacks hold :data:`ELMO_STACKS`."""
    from sim.dataplanes.elmo.reference import SWITCH_TABLE, switch_layout

    for key, bound in ELMO_STACKS.items():
        if int(params.get(key, bound)) > bound:
            raise ValueError(f"strategy {name!r}: {key}={params[key]} exceeds the {bound} "
                             f"p-rules the elmo builds parse (p4/elmo.p4 "
                             f"-D{key.upper()}={params[key]} builds another)")
    if config is None:
        raise ValueError(f"strategy {name!r}: the elmo build follows the header layout; pass "
                         "the installed ControlState (or one SwitchConfig)")
    configs = config.switches.values() if hasattr(config, "switches") else (config,)
    layouts = {switch_layout(e) for c in configs for e in c.tables.get(SWITCH_TABLE, ())}
    if len(layouts) != 1:
        raise ValueError(f"strategy {name!r}: expected one Elmo header layout in the "
                         f"{SWITCH_TABLE} rules, found {len(layouts)}")
    lay = layouts.pop()
    return (f"elmo_l{lay.leaf_down}u{lay.leaf_up}_s{lay.spine_down}u{lay.spine_up}"
            f"_c{lay.core_down}_i{lay.leaf_id}p{lay.pod_id}_k{lay.max_ids}")


#: data-plane family -> program base name, or a function of (strategy name,
#: parameters, data-plane model, switch config) for families compiled in
#: several variants.
PROGRAMS: dict[str, str | Callable[[str, Mapping[str, Any], Any, Any], str]] = {
    "l2": "l2_multicast",
    "virtual_tree": "virtual_tree",
    "neighbor_labels": "neighbor_labels",
    "source_routing": _source_routing,
    "prefix_filter": "prefix_filter",
    "range_filter": _range_filter,
    "alm": "alm",
    "kundel": _kundel,
    "camus": _camus,
    "bier": _bier,
    "elmo": _elmo,
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


def program_name(family: str, strategy: str, params: Mapping[str, Any],
                 model: Any = None, config: Any = None) -> str | None:
    """The program base name for a strategy of data-plane ``family`` (None: no program yet).

    ``model`` is the strategy's data-plane model (``strategy.model()`` after
    install); families built per header layout need it. ``config`` is the
    installed ``ControlState`` or one switch's ``SwitchConfig``; ``camus``
    needs it (its up-port count is compiled in).
    """
    target = PROGRAMS.get(family)
    return target(strategy, params, model, config) if callable(target) else target


def program_for(family: str, strategy: str, params: Mapping[str, Any],
                model: Any = None, config: Any = None) -> Program:
    """The compiled program for a strategy; a clear error when its family has none
    or the build it needs is not committed."""
    name = program_name(family, strategy, params, model, config)
    if name is None:
        have = ", ".join(sorted(PROGRAMS))
        raise ValueError(f"strategy {strategy!r}: data-plane family {family!r} has no P4 "
                         f"program (families with one: {have})")
    program = Program(name)
    if not program.p4info.is_file():
        raise ValueError(f"strategy {strategy!r}: program build {name!r} is not committed "
                         f"(p4/{name}.p4info.txtpb missing); build it with "
                         f"`make -C p4 {name}.json` where p4c is installed")
    return program
