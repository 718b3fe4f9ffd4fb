"""The committed P4Info of each P4 program matches what the Python state writes.

For every data-plane family with a committed program (``p4/<prog>.p4info.txtpb``,
built by ``p4/Makefile``), the real strategies of that family install state on
small topologies; every table entry they produce must be writable through
P4Runtime against the program:

- its table exists, with exactly the entry's match fields (names, order,
  match kinds), and lists the entry's action;
- the action exists with exactly the entry's parameter names;
- every match value and parameter value fits its P4Info bit width.

And the reverse: every table and action of the program is written by some
strategy, or is named in :data:`HELPER_ONLY` (default actions); actions no
table lists (called as statements inside the program) are internal and not
checked. Each program also exposes the per-switch pass counter, and ternary
entries carry a positive priority (P4Runtime rejects 0 there).

Runs without p4c or BMv2: it reads the committed P4Info text with a small
parser of the protobuf text format (the p4runtime protos are not in the base
environment).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest
from support.hil_states import knowledge as receiver_knowledge

from hil.programs import P4_DIR, PASS_COUNTER, PROGRAMS
from hil.programs import program_name as program_for
from sim.dataplanes.control_state import ControlState, Exact, Lpm, Range, TableEntry, Ternary
from strategies.base import STRATEGIES, Knowledge, load_builtin_strategies, make_strategy
from topologies.model import Topology
from topologies.registry import SpecError
from topologies.specs import load_topology

#: Families not in PROGRAMS have no P4 program yet; their strategies are not
#: checked here.

#: Tables and actions of a program that no strategy writes, with the reason.
_NOACTION = "default action of the exact-match tables (a miss)"
HELPER_ONLY: dict[str, dict[str, str]] = {
    "l2_multicast": {"MyIngress.drop": "default action of l2_forward (a miss drops)"},
    "virtual_tree": {
        "MyIngress.drop": "default action of extract_port (a miss is a control-plane bug)",
        "NoAction": _NOACTION,
    },
    "neighbor_labels": {"NoAction": _NOACTION},
    "source_routing_port": {"NoAction": _NOACTION},
    "source_routing_bitmask": {"NoAction": _NOACTION},
    "source_routing_mcgroup": {"NoAction": _NOACTION},
    "source_routing_mcgroup_subsets": {"NoAction": _NOACTION},
    "source_routing_mixed": {"NoAction": _NOACTION},
    "prefix_filter": {"MyIngress.drop": "default action of dz_forward(_v6) (a miss drops)"},
    "alm": {"NoAction": "default action of l2_forward (a miss tries broker_group) and "
                        "replica_dst (a miss leaves the replica as is)",
            "MyIngress.drop": "default action of broker_group (a miss in both tables drops)"},
    **{f"range_filter_{layout}": {"MyIngress._drop": "default action of publish_subscribe"}
       for layout in ("1x16", "2x16", "3x16", "1x32", "2x32", "3x32")},
    **{f"kundel_{variant}_s{slots}": {"MyIngress.drop": "default action of event"}
       for variant in ("id_k8", "bitmask_m32") for slots in (1, 2, 3)},
    **{f"camus_{kind}_{fields}x32_up1": {
        "NoAction": "default action of the field, port_role and up_ecmp tables (a miss)",
        "MyIngress.drop": "default action of query_actions / query_flat (a miss drops)"}
       for kind in ("bdd", "flat") for fields in (1, 2, 3)},
    **{f"camus_{kind}_{fields}x32_up2": {
        "NoAction": "default action of the field, port_role and up_ecmp tables (a miss)",
        "MyIngress.drop": "default action of query_actions / query_flat (a miss drops)"}
       for kind in ("bdd", "flat") for fields in (1, 2, 3)},
    **{f"bier_bsl{bits}": {"MyIngress.drop": "default action of bift and local_group (a miss "
                                             "drops)"} for bits in (64, 128, 256)},
    **{f"elmo_{layout}": {"MyIngress.drop": "default action of elmo_switch (a miss drops)",
                          "NoAction": "default action of elmo_srule (a miss: default p-rule)"}
       for layout in ("l2u2_s2u1_c2_i2p1_k3", "l2u2_s2u2_c4_i3p2_k3", "l48u4_s48u1_c12_i10p4_k3")},
}


#: Extra strategy parameters so every action and program variant is exercised.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "tree": [{}, {"variant": "mcgroup"}],
    "switch-mcgroup": [{}, {"groups": "subsets", "subsets": 2}],
    "pleroma-dz": [{}, {"encoding": "ipv6"}, {"flow_limit": 6, "algorithm": "history"}],
    "range-boxes": [{}, {"value_bits": 32}],
    "kundel-id": [{}, {"slots": 3}],
    "kundel-bitmask": [{}, {"slots": 3}],
    "camus-bdd": [{}, {"table": "one-big-table"}],
    "bier": [{}, {"bsl_bits": 128}, {"bsl_bits": 256}],
    "elmo": [{}, {"leaf_prules": 1, "spine_prules": 1}],  # the second installs s-rules
}

TOPOLOGIES = ("jellyfish:switches=8,degree=3,seed=1",)
#: Extra topologies per family (camus: two up ports per switch on a fat tree).
FAMILY_TOPOLOGIES = {"camus": ("fattree:k=4",),
                     "elmo": ("fattree:k=4", "elmo:pods=2,leaves=2,hosts=2,spines=2,cores=2",
                              "elmo")}  # elmo: one build per header layout

#: Content workloads for the content-filter families (their strategies install
#: from subscriptions and advertisements; their header layouts follow the
#: event space, so each workload selects a program build).
CONTENT_FAMILIES = ("prefix_filter", "range_filter", "kundel", "camus")
CONTENT_WORKLOADS = tuple(f"content:subs=12,publishers=2,dims={d},bits=8,width=0.3"
                          for d in (1, 2, 3))
#: camus: Siena-like filters with equalities, so the exact field tables get entries
FAMILY_WORKLOADS = {"camus": CONTENT_WORKLOADS + tuple(
    f"content:subs=12,publishers=2,dims={d},bits=8,dist=siena,preds={p},ops=2/1/1/1,values=8"
    for d in (1, 2, 3) for p in range(1, d + 1))}

MATCH_KIND = {Exact: "EXACT", Ternary: "TERNARY", Lpm: "LPM", Range: "RANGE"}


# -- a small parser of the protobuf text format ---------------------------------

_TOKEN = re.compile(r"""
    \s+ | \#[^\n]* |                        # blanks and comments
    (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*') |
    (?P<punct>[{}:<>\[\],;]) |
    (?P<word>[^\s{}:<>\[\],;"']+)
""", re.VERBOSE)


def _tokens(text: str) -> Iterator[str]:
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"cannot tokenize P4Info text at {text[pos:pos + 40]!r}")
        pos = m.end()
        tok = m.group("str") or m.group("punct") or m.group("word")
        if tok:
            yield tok


def parse_textproto(text: str) -> dict[str, list[Any]]:
    """Parse protobuf text format into ``{field: [value, ...]}`` (messages are dicts).

    Scalars stay strings (quotes removed); repeated fields keep file order.
    """
    toks = list(_tokens(text))
    pos = 0

    def message(end: str | None) -> dict[str, list[Any]]:
        nonlocal pos
        out: dict[str, list[Any]] = {}
        while pos < len(toks):
            tok = toks[pos]
            if tok == end:
                pos += 1
                return out
            if tok in (",", ";"):
                pos += 1
                continue
            name = tok
            pos += 1
            if toks[pos] == ":":
                pos += 1
            if toks[pos] in ("{", "<"):
                close = "}" if toks[pos] == "{" else ">"
                pos += 1
                value: Any = message(close)
            else:
                value = toks[pos]
                pos += 1
                if value[0] in "\"'":
                    value = value[1:-1]
            out.setdefault(name, []).append(value)
        if end is not None:
            raise ValueError("unbalanced braces in P4Info text")
        return out

    return message(None)


# -- P4Info ---------------------------------------------------------------------


@dataclass
class P4Info:
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    actions: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> param widths
    counters: dict[str, int] = field(default_factory=dict)  # name -> size


@cache
def load_p4info(program: str) -> P4Info:
    path = P4_DIR / f"{program}.p4info.txtpb"
    raw = parse_textproto(path.read_text())
    info = P4Info()
    action_names: dict[str, str] = {}
    for a in raw.get("actions", []):
        pre = a["preamble"][0]
        name = pre["name"][0]
        action_names[pre["id"][0]] = name
        info.actions[name] = {p["name"][0]: int(p["bitwidth"][0]) for p in a.get("params", [])}
    for t in raw.get("tables", []):
        pre = t["preamble"][0]
        info.tables[pre["name"][0]] = {
            "match": [(m["name"][0], m.get("match_type", ["?"])[0], int(m["bitwidth"][0]))
                      for m in t.get("match_fields", [])],
            "actions": {action_names[r["id"][0]] for r in t.get("action_refs", [])},
        }
    for c in raw.get("counters", []):
        info.counters[c["preamble"][0]["name"][0]] = int(c.get("size", ["0"])[0])
    return info


# -- the Python side ------------------------------------------------------------


def _content_knowledge(topology: Topology, workload: str) -> Knowledge:
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model

    pop = receiver_model(workload).population(topology, child_rng(5, "population"))
    return Knowledge(population=pop.at(0))


def _knowledges(family: str, topology: Topology) -> list[tuple[str, Knowledge]]:
    if family in CONTENT_FAMILIES:
        return [(w, _content_knowledge(topology, w))
                for w in FAMILY_WORKLOADS.get(family, CONTENT_WORKLOADS)]
    return [("", receiver_knowledge(topology))]


@cache
def all_states() -> tuple[tuple[str, str, ControlState], ...]:
    """(program, label, state) for every strategy that installs on the small topologies."""
    load_builtin_strategies()
    import strategies.virtual_tree.datacenter  # noqa: F401
    import strategies.virtual_tree.installation  # noqa: F401  (register the virtual-tree strategies)

    out = []
    for name in sorted(STRATEGIES.names()):
        family = STRATEGIES.get(name).dataplane
        if family not in PROGRAMS:
            continue
        for params in VARIANTS.get(name, [{}]):
            for spec in TOPOLOGIES + FAMILY_TOPOLOGIES.get(family, ()):
                topology = load_topology(spec)
                for workload, knowledge in _knowledges(family, topology):
                    strategy = make_strategy(name, params)
                    try:
                        state = strategy.install(topology, knowledge)
                    except SpecError:
                        continue  # needs another topology or workload (fabric, population)
                    # builds per header layout follow the installed model; camus
                    # builds are per switch (their up-port count)
                    label = f"{name}{params or ''}@{spec}" + (f" {workload}" if workload else "")
                    model = strategy.model()
                    by_program: dict[str, dict[str, Any]] = {}
                    for sw, config in state.switches.items():
                        program = program_for(family, name, params, model, config)
                        assert program is not None, f"no P4 program for {name}{params or ''}"
                        by_program.setdefault(program, {})[sw] = config
                    for program, configs in sorted(by_program.items()):
                        out.append((program, label, ControlState(switches=configs)))
    return tuple(out)


def program_states(program: str) -> list[tuple[str, ControlState]]:
    return [(label, state) for p, label, state in all_states() if p == program]


def program_entries(program: str) -> dict[tuple[str, str, tuple[str, ...],
                                                tuple[tuple[str, str], ...]],
                                          tuple[str, TableEntry]]:
    """One example entry per distinct (table, action, params, match fields and kinds)."""
    seen: dict[Any, tuple[str, TableEntry]] = {}
    for label, state in program_states(program):
        for config in state.switches.values():
            for entries in config.tables.values():
                for e in entries:
                    shape = (e.table, e.action, tuple(k for k, _ in e.params),
                             tuple((f, MATCH_KIND[type(m)]) for f, m in e.match))
                    seen.setdefault(shape, (label, e))
    return seen


def _fits(value: int, width: int) -> bool:
    return 0 <= value < 1 << width


def _match_values(m: Any) -> list[int]:
    if isinstance(m, Exact):
        return [m.value]
    if isinstance(m, Ternary):
        return [m.value, m.mask]
    if isinstance(m, Lpm):
        return [m.value]
    return [m.low, m.high]


# -- tests ----------------------------------------------------------------------

ALL_PROGRAMS = sorted(HELPER_ONLY)


def test_textproto_parser_handles_nesting_repeats_and_strings():
    text = '''# comment
    pkg_info { arch: "v1model" }
    tables { preamble { id: 1 name: "MyIngress.t" alias: "t" }
             match_fields { id: 1 name: "meta.x" bitwidth: 16 match_type: EXACT }
             action_refs { id: 7 } action_refs { id: 8 annotations: "@defaultonly" } size: 4 }
    '''
    raw = parse_textproto(text)
    t = raw["tables"][0]
    assert raw["pkg_info"][0]["arch"] == ["v1model"]
    assert t["preamble"][0]["name"] == ["MyIngress.t"]
    assert [r["id"][0] for r in t["action_refs"]] == ["7", "8"]
    assert t["match_fields"][0]["match_type"] == ["EXACT"]


def test_every_program_is_exercised_by_some_strategy():
    assert {p for p, _, _ in all_states()} == set(ALL_PROGRAMS)


@pytest.mark.parametrize("program", ALL_PROGRAMS)
def test_program_outputs_are_committed(program):
    # builds of one source with -D flags (p4/Makefile) are named <source>_<variant>
    source = next((base for base in ("source_routing", "range_filter", "kundel", "camus",
                                     "bier", "elmo")
                   if program.startswith(base + "_")), program)
    assert (P4_DIR / f"{source}.p4").is_file(), f"p4/{source}.p4 missing"
    for suffix in (".json", ".p4info.txtpb"):
        assert (P4_DIR / f"{program}{suffix}").is_file(), f"p4/{program}{suffix} missing"


@pytest.mark.parametrize("program", ALL_PROGRAMS)
def test_strategy_entries_exist_in_p4info(program):
    info = load_p4info(program)
    entries = program_entries(program)
    assert entries, f"no strategy for {program} installed any entry"
    problems = []
    for (table, action, params, match), (who, e) in sorted(entries.items()):
        where = f"{who}: {table} / {action}"
        t = info.tables.get(table)
        if t is None:
            problems.append(f"{where}: table {table} not in p4/{program}.p4info.txtpb")
            continue
        expected = [(name, kind) for name, kind, _ in t["match"]]
        if list(match) != expected:
            problems.append(f"{where}: match fields {list(match)} != P4Info {expected}")
        else:
            for (_, m), (name, _, width) in zip(e.match, t["match"], strict=True):
                if not all(_fits(v, width) for v in _match_values(m)):
                    problems.append(f"{where}: {name} value {m} does not fit {width} bits")
        if action not in info.actions:
            problems.append(f"{where}: action {action} not in P4Info")
            continue
        if action not in t["actions"]:
            problems.append(f"{where}: action {action} not allowed in table {table}")
        widths = info.actions[action]
        if set(params) != set(widths):
            problems.append(f"{where}: params {sorted(params)} != P4Info {sorted(widths)}")
        else:
            for name, value in e.params:
                if not _fits(value, widths[name]):
                    problems.append(f"{where}: param {name}={value} does not fit "
                                    f"{widths[name]} bits")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("program", ALL_PROGRAMS)
def test_every_p4info_table_and_action_is_used_or_helper(program):
    info = load_p4info(program)
    entries = program_entries(program)
    used_tables = {table for table, _, _, _ in entries}
    used_actions = {action for _, action, _, _ in entries}
    helpers = HELPER_ONLY.get(program, {})
    # actions no table lists (called as statements, e.g. remove_entry) are
    # internal to the program: a control plane can never write them
    table_actions = set().union(*(t["actions"] for t in info.tables.values()))
    unused = sorted((set(info.tables) - used_tables) | (table_actions - used_actions)
                    - set(helpers))
    assert not unused, (f"p4/{program}.p4 has tables/actions no strategy writes: {unused}; "
                        "use them or list them in HELPER_ONLY with a reason")
    stale = sorted(set(helpers) - set(info.tables) - set(info.actions))
    assert not stale, f"HELPER_ONLY names missing from the P4Info of {program}: {stale}"
    written_helpers = sorted(set(helpers) & (used_tables | used_actions))
    assert not written_helpers, f"HELPER_ONLY names that strategies do write: {written_helpers}"


@pytest.mark.parametrize("program", ALL_PROGRAMS)
def test_pass_counter_is_exposed(program):
    info = load_p4info(program)
    assert info.counters.get(PASS_COUNTER, 0) >= 1


@pytest.mark.parametrize("program", ALL_PROGRAMS)
def test_ternary_entries_have_positive_priority(program):
    """P4Runtime rejects priority 0 in tables with ternary/range/optional fields."""
    bad = sorted({f"{who}: {e.table} / {e.action}"
                  for who, state in program_states(program)
                  for config in state.switches.values()
                  for entries in config.tables.values()
                  for e in entries
                  if e.priority <= 0 and any(isinstance(m, (Ternary, Range)) for _, m in e.match)})
    assert not bad, "\n".join(bad)
