"""Camus's subscription language and its compiler to one table per field plus an action table.

Language (the repository's grammar, seed 003 B.2)::

    rule_list ::= (rule ";")*
    rule      ::= query ":" action ("," action)*
    query     ::= and_expr ("or" query)?            # no parentheses
    and_expr  ::= rel ("and" and_expr)?
    rel       ::= ["!"] field op const               # op: < > = <= >= !=
    const     ::= integer | "string" | a.b.c.d
    action    ::= fwd(port, ...)

so a query is already a disjunction of conjunctions; negation is pushed into
the atoms (``!(a < c)`` = ``a > c - 1``; ``!(a = c)`` = ``a < c or a > c``).
Every conjunction becomes one interval per field (``<``/``>`` strict, seed
003 D4); unsatisfiable conjunctions are dropped.

Compiler (:func:`compile_bdd`): the ordered, reduced multi-terminal BDD of
the rules, emitted as Algorithm 2's pipeline: for each field in the
variable order one table keyed by (BDD state, field value) whose action
sets the next state, then a leaf table state -> action set. The BDD's nodes
entering field ``f``'s component are its *residual functions* (the rules
left to decide on the remaining fields, with their labels); two such nodes
are equal iff their residual functions are (hash-consing, reduction 1),
implied tests never appear (reduction 3: the value partition already
decides them) and a component that does not test ``f`` keeps its state
(reduction 2, the repository's ``NoAction`` miss). Each state's field table
maps the maximal intervals of the value domain to the next state (the
false edges refine the intervals, digest D10); the most frequent target
(or the empty residual) becomes the state's miss entry, single values
become exact (SRAM) entries, other intervals range (TCAM) entries.

Variable order (``order``): ``annotation`` (the given field order, the
repository's default) or ``constants`` (fewest distinct constants first,
digest D9).

Deviations: adjacent intervals with the same next state are one entry (so
at most the paper's per-path count); states are numbered globally and the
empty residual is one shared dead state with no entries (a miss keeps it,
and the leaf table has no entry for it: the default action drops).

References
----------
Seed 003 §3 (Fig. 1 language), §5.2 (BDD, reductions, Algorithm 2, TCAM/SRAM
split), repository camus-compiler (grammar, exact/range/miss tables);
digest seed002-003 B.2, B.5, B.6, D4, D9, D10, D18.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Interval = tuple[int, int]
Conj = tuple[Interval, ...]


class FilterSyntaxError(ValueError):
    """A subscription rule that does not parse (the message names the token)."""


@dataclass(frozen=True, slots=True)
class Atom:
    field: str
    op: str
    value: int
    negated: bool = False


_TOKEN = re.compile(r'\s*(?:(?P<str>"[^"]*")|(?P<num>\d+\.\d+\.\d+\.\d+|\d+)|'
                    r'(?P<op><=|>=|!=|[<>=!:;,()])|(?P<id>[A-Za-z_][\w.]*))')


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise FilterSyntaxError(f"unexpected input at {text[pos:pos + 20]!r}")
        out.append(m.group(0).strip())
        pos = m.end()
    return [t for t in out if t]


def _const(tok: str, width: int) -> int:
    if tok.startswith('"'):
        raw = tok[1:-1].encode()
        n = width // 8
        if len(raw) > n:
            raise FilterSyntaxError(f"string {tok} longer than {n} bytes")
        return int.from_bytes(raw.ljust(n, b" "), "big")
    if tok.count(".") == 3:
        return int.from_bytes(bytes(int(x) for x in tok.split(".")), "big")
    if tok.isdigit():
        return int(tok)
    raise FilterSyntaxError(f"expected a constant, got {tok!r}")


def parse_rules(text: str, widths: Mapping[str, int]
                ) -> list[tuple[list[list[Atom]], frozenset[int]]]:
    """Parse a rule list into (DNF of atoms, forwarding ports) per rule."""
    toks = _tokens(text)
    i = 0
    rules = []

    def peek() -> str:
        return toks[i] if i < len(toks) else ""

    def take(expected: str | None = None) -> str:
        nonlocal i
        if i >= len(toks):
            raise FilterSyntaxError(f"unexpected end, expected {expected or 'more input'}")
        tok = toks[i]
        if expected is not None and tok != expected:
            raise FilterSyntaxError(f"expected {expected!r}, got {tok!r}")
        i += 1
        return tok

    while i < len(toks):
        disj: list[list[Atom]] = [[]]
        while True:
            neg = False
            if peek() == "!":
                take()
                neg = True
            name = take()
            if name not in widths:
                raise FilterSyntaxError(f"unknown field {name!r} (known: {', '.join(widths)})")
            op = take()
            if op not in ("<", ">", "=", "<=", ">=", "!="):
                raise FilterSyntaxError(f"unknown operator {op!r}")
            disj[-1].append(Atom(name, op, _const(take(), widths[name]), neg))
            nxt = peek()
            if nxt == "and":
                take()
            elif nxt == "or":
                take()
                disj.append([])
            else:
                break
        take(":")
        ports: set[int] = set()
        while True:
            if take() != "fwd":
                raise FilterSyntaxError("only fwd(port, ...) actions are supported")
            take("(")
            while True:
                ports.add(int(take()))
                if peek() == ",":
                    take()
                    continue
                break
            take(")")
            if peek() == ",":
                take()
                continue
            break
        if peek() == ";":
            take()
        rules.append((disj, frozenset(ports)))
    return rules


def _atom_sets(a: Atom, top: int) -> list[Interval]:
    """The value set of an atom as disjoint intervals (negation applied)."""
    v = a.value
    op = a.op
    if a.negated:
        op = {"<": ">=", ">": "<=", "=": "!=", "<=": ">", ">=": "<", "!=": "="}[op]
    if op == "<":
        return [(0, v - 1)] if v > 0 else []
    if op == "<=":
        return [(0, min(v, top))]
    if op == ">":
        return [(v + 1, top)] if v < top else []
    if op == ">=":
        return [(v, top)] if v <= top else []
    if op == "=":
        return [(v, v)] if 0 <= v <= top else []
    return [iv for iv in ((0, v - 1), (v + 1, top)) if iv[0] <= iv[1]]  # !=


def conjunctions(dnf: Sequence[Sequence[Atom]], fields: Sequence[tuple[str, int]]) -> list[Conj]:
    """Interval conjunctions (one interval per field) of a DNF; unsatisfiable ones dropped."""
    index = {name: k for k, (name, _) in enumerate(fields)}
    tops = [(1 << w) - 1 for _, w in fields]
    out: list[Conj] = []
    for conj in dnf:
        partial: list[list[Interval]] = [[(0, t) for t in tops]]
        for atom in conj:
            k = index[atom.field]
            nxt = []
            for ivs in partial:
                for lo, hi in _atom_sets(atom, tops[k]):
                    a, b = max(ivs[k][0], lo), min(ivs[k][1], hi)
                    if a <= b:
                        nxt.append(ivs[:k] + [(a, b)] + ivs[k + 1:])
            partial = nxt
        out.extend(tuple(ivs) for ivs in partial)
    return list(dict.fromkeys(out))


def round_alpha(conj: Conj, alpha: int, tops: Sequence[int]) -> Conj:
    """Discretise bounds to multiples of ``alpha``, widening (equalities unchanged, D12)."""
    if alpha <= 1:
        return conj
    out = []
    for (lo, hi), top in zip(conj, tops, strict=True):
        if lo == hi or (lo, hi) == (0, top):
            out.append((lo, hi))
            continue
        out.append((lo // alpha * alpha, min(-(-(hi + 1) // alpha) * alpha - 1, top)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class FieldEntry:
    """One entry of a field table: (state, [lo, hi]) -> next state; kind exact/range/miss."""

    state: int
    kind: Literal["exact", "range", "miss"]
    lo: int
    hi: int
    next: int


@dataclass
class Pipeline:
    """The compiled tables: one per field in order, then the leaf (action) table."""

    fields: tuple[tuple[str, int], ...]
    tables: list[list[FieldEntry]]
    leaf: dict[int, frozenset[int]]
    root: int = 0
    dead: int = 1
    states: int = 2
    states_per_field: list[int] = field(default_factory=list)

    @property
    def state_bits(self) -> int:
        return max(1, (self.states - 1).bit_length())

    def entry_counts(self) -> dict[str, int]:
        out = {"exact": 0, "range": 0, "miss": 0, "leaf": len(self.leaf)}
        for t in self.tables:
            for e in t:
                out[e.kind] += 1
        return out

    @property
    def entries(self) -> int:
        return sum(self.entry_counts().values())

    def evaluate(self, values: Sequence[int]) -> frozenset[int]:
        """Run the pipeline (exact -> range -> miss per field, then the leaf)."""
        state = self.root
        for t, v in zip(self.tables, values, strict=True):
            hit = None
            for kind in ("exact", "range", "miss"):
                hit = next((e for e in t if e.state == state and e.kind == kind
                            and (kind == "miss" or e.lo <= v <= e.hi)), None)
                if hit is not None:
                    break
            if hit is not None:
                state = hit.next
        return self.leaf.get(state, frozenset())


def field_order(conjs: Sequence[Conj], fields: Sequence[tuple[str, int]],
                order: Literal["annotation", "constants"]) -> list[int]:
    """Field indices in BDD variable order."""
    if order == "annotation":
        return list(range(len(fields)))
    tops = [(1 << w) - 1 for _, w in fields]
    consts = []
    for k in range(len(fields)):
        s: set[int] = set()
        for c in conjs:
            lo, hi = c[k]
            if (lo, hi) != (0, tops[k]):
                s.update((lo, hi))
        consts.append(len(s))
    return sorted(range(len(fields)), key=lambda k: (consts[k], k))


def _mix64(level: int, q: int) -> int:
    """A fixed 64-bit Zobrist key for projection ``q`` of ``level`` beyond the drawn table.

    splitmix64 of ``(level, q)``: the same on every run and machine (never ``hash()``).
    """
    mask = (1 << 64) - 1
    z = (((level << 32) ^ q) + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def compile_bdd(rules: Sequence[tuple[Conj, frozenset[int]]],
                fields: Sequence[tuple[str, int]],
                order: Literal["annotation", "constants"] = "annotation",
                seed: int = 0) -> Pipeline:
    """Compile labelled interval conjunctions to Algorithm 2's pipeline.

    ``fields`` are (name, width) in annotation order; the pipeline's fields
    follow the chosen variable order.
    """
    perm = field_order([c for c, _ in rules], fields, order)
    ofields = tuple(fields[k] for k in perm)
    tops = [(1 << w) - 1 for _, w in ofields]
    n = len(ofields)
    # projections per level: (intervals of fields level.., labels) -> id
    proj: list[dict[tuple[Conj, frozenset[int]], int]] = [{} for _ in range(n + 1)]
    rows: list[list[tuple[Conj, frozenset[int]]]] = [[] for _ in range(n + 1)]

    def pid(level: int, conj: Conj, label: frozenset[int]) -> int:
        key = (conj, label)
        hit = proj[level].get(key)
        if hit is None:
            hit = proj[level][key] = len(rows[level])
            rows[level].append(key)
        return hit

    root_set = frozenset(pid(0, tuple(c[k] for k in perm), lab) for c, lab in rules)
    rng = np.random.default_rng(seed)
    zob = [rng.integers(1, 1 << 62, size=max(len(rules), 1), dtype=np.int64).tolist()
           for _ in range(n + 1)]
    next_id = 2  # 0 = root, 1 = dead
    level_states: dict[frozenset[int], int] = {root_set: 0} if root_set else {}
    pipe = Pipeline(fields=ofields, tables=[], leaf={})
    for level in range(n):
        nxt_states: dict[frozenset[int], int] = {}
        by_hash: dict[int, frozenset[int]] = {}
        table: list[FieldEntry] = []
        top = tops[level]
        for residual, u in sorted(level_states.items(), key=lambda kv: kv[1]):
            events: dict[int, list[tuple[int, int]]] = {}
            for p in residual:
                conj, lab = rows[level][p]
                q = pid(level + 1, conj[1:], lab)
                lo, hi = conj[0]
                events.setdefault(lo, []).append((q, 1))
                events.setdefault(hi + 1, []).append((q, -1))
            counts: dict[int, int] = {}
            h = 0
            parts: list[tuple[int, int, int]] = []  # (lo, hi, hash) maximal runs
            points = sorted(events)
            if not points or points[0] != 0:
                points = [0, *points]
            for j, x in enumerate(points):
                if x > top:
                    break
                for q, delta in events.get(x, ()):
                    before = counts.get(q, 0)
                    counts[q] = before + delta
                    if (before == 0) != (counts[q] == 0):
                        h ^= zob[level + 1][q] if q < len(zob[level + 1]) else _mix64(level, q)
                end = (points[j + 1] - 1) if j + 1 < len(points) else top
                end = min(end, top)
                if h not in by_hash:
                    by_hash[h] = frozenset(q for q, c in counts.items() if c > 0)
                if parts and parts[-1][2] == h:
                    parts[-1] = (parts[-1][0], end, h)
                else:
                    parts.append((x, end, h))
            targets = []
            for lo, hi, hh in parts:
                res = by_hash[hh]
                if not res:
                    targets.append((lo, hi, 1))
                    continue
                if res not in nxt_states:
                    if len(parts) == 1:  # the field is not tested here: keep the state
                        nxt_states[res] = u
                    else:
                        nxt_states[res] = next_id
                        next_id += 1
                targets.append((lo, hi, nxt_states[res]))
            table.extend(_entries_for(u, targets))
        pipe.tables.append(table)
        pipe.states_per_field.append(len(level_states))
        level_states = nxt_states
    for residual, u in level_states.items():
        label: set[int] = set()
        for p in residual:
            label |= rows[n][p][1]
        if label:
            pipe.leaf[u] = frozenset(label)
    pipe.states = next_id
    return pipe


def _entries_for(u: int, targets: list[tuple[int, int, int]]) -> list[FieldEntry]:
    """A state's entries: a miss entry for the commonest target, exact/range for the rest."""
    if len(targets) == 1 and targets[0][2] == u:
        return []  # reduction 2: the field is not tested, the miss keeps the state
    freq: dict[int, int] = {}
    for _, _, v in targets:
        freq[v] = freq.get(v, 0) + 1
    default: int | None = max(freq, key=lambda v: (freq[v], v == 1, -v))
    if default is not None and freq[default] < 2 and default != 1 and len(targets) > 1:
        default = None
    out = []
    if default is not None and default != u:
        out.append(FieldEntry(u, "miss", 0, 0, default))
    for lo, hi, v in targets:
        if v == default:
            continue
        out.append(FieldEntry(u, "exact" if lo == hi else "range", lo, hi, v))
    return out
