"""What BMv2 did for one switch visit, counted from its trace log (issue 16).

``stackcast hil calibrate`` (:mod:`hil.calibrate`) explains BMv2's per-visit
latency by the work BMv2 actually did. That work is read from
``simple_switch_grpc``'s own log at level ``trace`` (one line per parser
state, table apply, action, primitive, clone, replica, recirculation and
transmission; BMv2 1.15.5's message texts) on a profiling switch that is
not timed (logging costs far more than the work it logs). This module is the
pure part: the table kinds of a compiled program and the counting.

Table kinds are those of the program's BMv2 JSON (``match_type``): ``exact``,
``ternary``, ``lpm``, ``range``, and ``keyless`` for tables without a key
(the ``tbl_*`` wrappers p4c makes of straight-line actions, which BMv2 still
applies as tables).

Two costs of BMv2 grow with the program's packet header vector (PHV), not
with the packet: every parser run first marks every header instance of the
PHV invalid (``PHV::reset``), and a header-stack ``pop_front`` / ``push_front``
swaps the fields of *every* element of the stack, valid or not
(``HeaderStack::pop_front``; 26 % of BMv2's CPU time in a ``perf`` profile of
``source_routing_mcgroup``, whose stack has 500 elements). :class:`ProgramShape`
holds these sizes, read from the BMv2 JSON.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

#: Table kinds, in the order of :attr:`Work.tables`.
TABLE_KINDS = ("keyless", "exact", "ternary", "lpm", "range")


@dataclass(frozen=True, slots=True)
class ProgramShape:
    """What a compiled program's BMv2 JSON says about the cost of its operations.

    Attributes
    ----------
    name : str
        The program (for messages).
    tables : mapping
        Table name -> kind (:data:`TABLE_KINDS`).
    stack_shifts : mapping
        Action name -> fields swapped by its header-stack pops and pushes
        (elements of the stack x fields of an element, per pop/push).
    headers, fields : int
        Header instances (metadata included) and their fields in the PHV.
    """

    name: str
    tables: Mapping[str, str]
    stack_shifts: Mapping[str, int]
    headers: int
    fields: int

    @classmethod
    def from_json(cls, name: str, bmv2_json: Mapping[str, Any] | Path) -> ProgramShape:
        """The shape of a compiled program (its BMv2 JSON, parsed or a path)."""
        spec = (json.loads(Path(bmv2_json).read_text()) if isinstance(bmv2_json, Path)
                else bmv2_json)
        tables = {}
        for pipeline in spec.get("pipelines", ()):
            for table in pipeline.get("tables", ()):
                kind = "keyless" if not table.get("key") else table["match_type"]
                if kind not in TABLE_KINDS:
                    raise ValueError(f"{name}: table {table['name']!r} has match type "
                                     f"{kind!r} (known: {', '.join(TABLE_KINDS)})")
                tables[table["name"]] = kind
        n_fields = {t["name"]: len(t["fields"]) for t in spec.get("header_types", ())}
        stack_fields = {s["name"]: len(s["header_ids"]) * n_fields[s["header_type"]]
                        for s in spec.get("header_stacks", ())}
        shifts = {}
        for action in spec.get("actions", ()):
            n = sum(stack_fields[p["parameters"][0]["value"]]
                    for p in action.get("primitives", ()) if p["op"] in ("pop", "push"))
            if n:
                shifts[action["name"]] = n
        headers = spec.get("headers", ())
        return cls(name, tables, shifts, len(headers),
                   sum(n_fields[h["header_type"]] for h in headers))


@dataclass(frozen=True, slots=True)
class Work:
    """Counts of what BMv2 did for one visit (every packet instance together).

    Attributes
    ----------
    ingress, egress : int
        Ingress and egress pipeline runs (an ingress run is a pass: the
        arrival and every recirculation; an egress run per copy reaching egress).
    parses, parsed_headers, parsed_bytes : int
        Parser runs (arrivals, recirculations and the re-parse of every
        ingress clone), headers extracted and bytes parsed over all of them.
    deparses, deparsed_headers : int
        Deparser runs and the headers they emitted.
    keyless, exact, ternary, lpm, range : int
        Table applies by kind (:data:`TABLE_KINDS`).
    scanned_entries : int
        Entries installed in the ternary and range tables applied, summed over
        their applies: BMv2 matches those kinds by a linear scan of the entries.
    actions, primitives, conditions : int
        Actions run, primitive statements executed, conditions evaluated.
    stack_shifts : int
        Fields swapped by the header-stack pops and pushes of the actions run
        (:attr:`ProgramShape.stack_shifts`).
    clones : int
        Clones made (ingress-to-egress and egress-to-egress).
    replicas : int
        Copies the replication engine made (multicast groups and clone sessions).
    recirculations : int
        Packets sent back to the ingress queue.
    transmitted, transmitted_bytes : int
        Frames sent out of ports and their bytes.
    dropped : int
        Packet instances dropped at the end of ingress or egress.
    """

    ingress: int = 0
    egress: int = 0
    parses: int = 0
    parsed_headers: int = 0
    parsed_bytes: int = 0
    deparses: int = 0
    deparsed_headers: int = 0
    keyless: int = 0
    exact: int = 0
    ternary: int = 0
    lpm: int = 0
    range: int = 0
    scanned_entries: int = 0
    actions: int = 0
    primitives: int = 0
    conditions: int = 0
    stack_shifts: int = 0
    clones: int = 0
    replicas: int = 0
    recirculations: int = 0
    transmitted: int = 0
    transmitted_bytes: int = 0
    dropped: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: The text after BMv2's ``[cxt N]`` prefix that each count looks for.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(text)) for name, text in (
        ("ingress", r"Pipeline 'ingress': start"),
        ("egress", r"Pipeline 'egress': start"),
        ("parsed_headers", r"Extracting (header '|to header stack)"),
        ("deparses", r"Deparser '[^']+': start"),
        ("deparsed_headers", r"Deparsing header '"),
        ("primitives", r"Primitive "),
        ("conditions", r"Condition "),
        ("clones", r"Cloning packet at (ingress|egress)"),
        ("replicas", r"Replicating packet on port"),
        ("recirculations", r"Recirculating packet"),
        ("dropped", r"Dropping packet at the end of"),
    ))
_TABLE = re.compile(r"Applying table '([^']+)'")
_ACTION = re.compile(r"Action (?!entry )(\S+)$")
_PARSER_START = re.compile(r"Parser '[^']+': start")
_BYTES_PARSED = re.compile(r"Bytes parsed: (\d+)")
_TRANSMIT = re.compile(r"Transmitting packet of size (\d+) out of port")


#: Table kinds BMv2 matches by scanning every entry (``MatchUnitTernary``, ``MatchUnitRange``).
SCANNED_KINDS = frozenset({"ternary", "range"})


def count_work(lines: Iterable[str], shape: ProgramShape,
               entries: Mapping[str, int] | None = None) -> Work:
    """Count the work in BMv2 trace-log ``lines`` (one visit's lines) of ``shape``'s program.

    ``entries`` gives the entries installed per table (for
    :attr:`Work.scanned_entries`). An applied table the program does not
    have raises ``ValueError`` (a log of another program). Bytes parsed are
    the last ``Bytes parsed`` figure of each parser run.
    """
    entries = entries or {}
    counts: Counter[str] = Counter()
    # bytes parsed so far per packet instance ("[id.copy]") in its current parser run
    parsing: dict[str, int] = {}
    for line in lines:
        _, sep, text = line.partition("] [cxt ")
        if not sep:
            continue
        text = text.split("] ", 1)[-1]
        m = _TABLE.search(text)
        if m:
            kind = shape.tables.get(m.group(1))
            if kind is None:
                raise ValueError(f"BMv2 applied table {m.group(1)!r}, which {shape.name} "
                                 "does not have")
            counts[kind] += 1
            if kind in SCANNED_KINDS:
                counts["scanned_entries"] += entries.get(m.group(1), 0)
            continue
        m = _ACTION.search(text)
        if m:
            counts["actions"] += 1
            counts["stack_shifts"] += shape.stack_shifts.get(m.group(1), 0)
            continue
        instance = line[:line.find("] [cxt ")].rsplit("[", 1)[-1]
        if _PARSER_START.search(text):
            counts["parses"] += 1
            counts["parsed_bytes"] += parsing.pop(instance, 0)
            parsing[instance] = 0
            continue
        m = _BYTES_PARSED.search(text)
        if m:
            parsing[instance] = int(m.group(1))
            continue
        m = _TRANSMIT.search(text)
        if m:
            counts["transmitted"] += 1
            counts["transmitted_bytes"] += int(m.group(1))
            continue
        for name, rule in _RULES:
            if rule.search(text):
                counts[name] += 1
                break
    counts["parsed_bytes"] += sum(parsing.values())
    return Work(**counts)
