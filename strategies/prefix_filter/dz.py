"""dz-expressions: PLEROMA's spatial indexing, its IP encodings and dz-set arithmetic.

A dz-expression is a bit string ``"0110..."`` naming a subspace: the empty
string is the whole event space, and bit ``j`` halves the cell along indexed
dimension ``j mod k`` (0 = lower half, 1 = upper half), so ``dz_B`` covers
``dz_A`` iff ``dz_B`` is a prefix of ``dz_A``. For domains ``[0, 2**b)`` an
event's dz is the Morton (Z-order) interleaving of its attributes' most
significant bits, truncated to ``L`` bits.

Encodings: IPv4 ``225.128.0.0/9`` followed by the dz (prefix length
``9 + |dz|``, so ``L <= 23``); IPv6 ``ff0e::/16`` followed by the dz
(``L <= 112``, seed 004's variant).

dz sets ("spaces") are tuples of dz; :func:`normalize` removes covered
members, after which members are pairwise disjoint and ``size`` is the sum of
``2**-|dz|`` (fractions of the whole space).

Deviations: 0 = lower half in every dimension (the digest's [BUG] note on
001's examples); subscriptions are decomposed by the digest's recursive
algorithm with an optional cap ``max_dz`` (refining the largest partial cells
first; cells left partial over-approximate). Dimension selection (indexing a
subset of the attributes) is offered as ``dims``.

References
----------
Seed 001 §2.2 (spatial indexing, dz containment, IPv4 225.128.0.0/9, the
conversion table), §2.3 (flows); seed 004 §2.1 (alternating bits, 0 = lower,
IPv6 ``ff0e``); digest seed001-004 A1 and its [I] decomposition.
"""

from __future__ import annotations

import ipaddress
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Sequence

from sim.dataplanes.content_space import AttributeSpace, Bounds, Box

IPV4_PREFIX = 0xE180_0000  # 225.128.0.0
IPV4_PREFIX_BITS = 9
IPV4_MAX_DZ = 32 - IPV4_PREFIX_BITS  # 23
IPV6_PREFIX = 0xFF0E
IPV6_PREFIX_BITS = 16
IPV6_MAX_DZ = 128 - IPV6_PREFIX_BITS  # 112


def _dims(space: AttributeSpace, dims: Sequence[int] | None) -> tuple[int, ...]:
    return tuple(range(space.d)) if dims is None else tuple(dims)


def max_length(space: AttributeSpace, dims: Sequence[int] | None = None) -> int:
    """The longest meaningful dz: one bit per indexed attribute bit."""
    return sum(space.bits[i] for i in _dims(space, dims))


def _bit_plan(space: AttributeSpace, dims: tuple[int, ...], length: int
              ) -> list[tuple[int, int]]:
    """(attribute, bit level from the MSB) of dz bits ``0..length-1``."""
    plan: list[tuple[int, int]] = []
    level = 0
    while len(plan) < length:
        progressed = False
        for a in dims:
            if level < space.bits[a] and len(plan) < length:
                plan.append((a, level))
                progressed = True
        if not progressed:
            break
        level += 1
    return plan


def bit_shifts(space: AttributeSpace, length: int, dims: Sequence[int] | None = None
               ) -> tuple[tuple[int, int], ...]:
    """Per dz bit ``j`` of an event's dz: (attribute, right shift), so that bit ``j`` is
    ``(event[attribute] >> shift) & 1`` (:func:`event_dz` as arithmetic)."""
    return tuple((a, space.bits[a] - 1 - lvl)
                 for a, lvl in _bit_plan(space, _dims(space, dims), length))


def event_dz(event: Sequence[int], space: AttributeSpace, length: int,
             dims: Sequence[int] | None = None) -> str:
    """The dz of maximum length ``length`` containing ``event``."""
    plan = _bit_plan(space, _dims(space, dims), length)
    return "".join(str((event[a] >> (space.bits[a] - 1 - lvl)) & 1) for a, lvl in plan)


def dz_box(dz: str, space: AttributeSpace, dims: Sequence[int] | None = None) -> Box:
    """The cell named by ``dz`` as an inclusive box."""
    lo = [0] * space.d
    hi = list(space.maxima)
    for bit, (a, lvl) in zip(dz, _bit_plan(space, _dims(space, dims), len(dz)), strict=True):
        half = 1 << (space.bits[a] - 1 - lvl)
        if bit == "1":
            lo[a] += half
        else:
            hi[a] -= half
    return Box(tuple(zip(lo, hi, strict=True)))


def decompose(box: Box, space: AttributeSpace, length: int, max_dz: int = 0,
              dims: Sequence[int] | None = None) -> tuple[str, ...]:
    """A disjoint dz set covering ``box`` (over-approximating where cells stay partial).

    Recursion of the digest: a cell inside the box, or of length ``length``,
    is kept; a cell meeting the box is split. ``max_dz`` > 0 caps the set
    size: partial cells are refined shortest first while the cap allows.

    :func:`decompose_reference` with plain bound tuples: the cells waiting to
    be split are already in order of length (a split cell is the shortest and
    its halves are one bit longer than every other), so a queue replaces the
    sort; a half meets the box iff it does along the attribute just halved
    (its parent met the box in every attribute; the whole space is checked
    once), and whether a cell lies inside the box is a count of the
    attributes it sticks out along, updated for the one just halved. Equal
    to the reference (``tests/strategies/test_dz.py``).
    """
    if not space.full.overlaps(box):
        return decompose_reference(box, space, length, max_dz, dims)
    plan = _bit_plan(space, _dims(space, dims), length)
    length = len(plan)
    want = box.bounds
    steps = [(a, 1 << (space.bits[a] - 1 - lvl)) for a, lvl in plan]
    full = space.full.bounds
    done: list[str] = []
    # (dz, bounds, attributes along which the cell still sticks out of the box)
    partial: deque[tuple[str, Bounds, int]] = deque([("", full, sum(
        1 for (wlo, whi), (lo, hi) in zip(want, full, strict=True) if lo < wlo or hi > whi))])
    while partial:
        dz, cell, out = partial.popleft()
        if not out or len(dz) == length:
            done.append(dz)
            continue
        a, half = steps[len(dz)]
        lo, hi = cell[a]
        wlo, whi = want[a]
        was = lo < wlo or hi > whi
        kids = [(dz + bit, cell[:a] + ((clo, chi),) + cell[a + 1:],
                 out - was + (clo < wlo or chi > whi))
                for bit, clo, chi in (("0", lo, lo + half - 1), ("1", lo + half, hi))
                if max(clo, wlo) <= min(chi, whi)]
        if max_dz and len(done) + len(partial) + len(kids) > max_dz and len(kids) > 1:
            done.append(dz)
            done.extend(p for p, _, _ in partial)
            break
        partial.extend(kids)
    return tuple(sorted(done))


def decompose_reference(box: Box, space: AttributeSpace, length: int, max_dz: int = 0,
              dims: Sequence[int] | None = None) -> tuple[str, ...]:
    """A disjoint dz set covering ``box`` (over-approximating where cells stay partial):
    the definition :func:`decompose` is tested against.

    Recursion of the digest: a cell inside the box, or of length ``length``,
    is kept; a cell meeting the box is split. ``max_dz`` > 0 caps the set
    size: partial cells are refined shortest first while the cap allows.
    """
    d = _dims(space, dims)
    plan = _bit_plan(space, d, length)
    length = len(plan)
    done: list[str] = []
    partial: list[tuple[str, Box]] = [("", space.full)]
    while partial:
        partial.sort(key=lambda item: len(item[0]))
        dz, cell = partial.pop(0)
        if box.covers(cell) or len(dz) == length:
            done.append(dz)
            continue
        kids = []
        a, lvl = plan[len(dz)]
        half = 1 << (space.bits[a] - 1 - lvl)
        lo, hi = cell.bounds[a]
        for bit, (clo, chi) in (("0", (lo, lo + half - 1)), ("1", (lo + half, hi))):
            bounds = list(cell.bounds)
            bounds[a] = (clo, chi)
            child = Box(tuple(bounds))
            if child.overlaps(box):
                kids.append((dz + bit, child))
        if max_dz and len(done) + len(partial) + len(kids) > max_dz and len(kids) > 1:
            done.append(dz)
            done.extend(p for p, _ in partial)
            break
        partial.extend(kids)
    return tuple(sorted(done))


# -- IP encodings ------------------------------------------------------------


def dz_to_ipv4(dz: str) -> tuple[int, int]:
    """(address, prefix length) of ``dz`` under 225.128.0.0/9."""
    if len(dz) > IPV4_MAX_DZ:
        raise ValueError(f"dz of {len(dz)} bits does not fit IPv4 (at most {IPV4_MAX_DZ})")
    value = int(dz, 2) << (IPV4_MAX_DZ - len(dz)) if dz else 0
    return IPV4_PREFIX | value, IPV4_PREFIX_BITS + len(dz)


def dz_to_ipv6(dz: str) -> tuple[int, int]:
    """(address, prefix length) of ``dz`` under ff0e::/16."""
    if len(dz) > IPV6_MAX_DZ:
        raise ValueError(f"dz of {len(dz)} bits does not fit IPv6 (at most {IPV6_MAX_DZ})")
    value = int(dz, 2) << (IPV6_MAX_DZ - len(dz)) if dz else 0
    return (IPV6_PREFIX << IPV6_MAX_DZ) | value, IPV6_PREFIX_BITS + len(dz)


def ipv4_cidr(dz: str) -> str:
    addr, plen = dz_to_ipv4(dz)
    return f"{ipaddress.IPv4Address(addr)}/{plen}"


def ipv6_cidr(dz: str) -> str:
    addr, plen = dz_to_ipv6(dz)
    return f"{ipaddress.IPv6Address(addr)}/{plen}"


def dz_from_address(addr: int, prefix_len: int, family: int = 4) -> str:
    """Inverse of :func:`dz_to_ipv4` / :func:`dz_to_ipv6`."""
    width, base = (32, IPV4_PREFIX_BITS) if family == 4 else (128, IPV6_PREFIX_BITS)
    n = prefix_len - base
    if n < 0:
        raise ValueError(f"prefix length {prefix_len} is shorter than the dz prefix")
    return format(addr >> (width - base - n), f"0{width}b")[-n:] if n else ""


# -- dz-set arithmetic -------------------------------------------------------


def covers(a: str, b: str) -> bool:
    """``a`` covers ``b`` (``a`` is a prefix of ``b``; equal dz cover each other)."""
    return b.startswith(a)


def related(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


def lcp(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


def size(dz: str) -> float:
    """Fraction of the whole event space covered by ``dz``."""
    return 2.0 ** -len(dz)


def normalize(dzs: Iterable[str]) -> tuple[str, ...]:
    """Sorted, with members covered by another member removed."""
    out: list[str] = []
    for dz in sorted(set(dzs)):  # a prefix sorts right before its extensions
        if out and dz.startswith(out[-1]):
            continue
        out.append(dz)
    return tuple(out)


def set_size(dzs: Iterable[str]) -> float:
    return sum(size(dz) for dz in normalize(dzs))


def with_prefix(sorted_dzs: Sequence[str], prefix: str) -> Sequence[str]:
    """Members of a sorted dz list that ``prefix`` covers."""
    lo = bisect_left(sorted_dzs, prefix)
    hi = bisect_left(sorted_dzs, prefix + "2")  # '2' sorts after '0' and '1'
    return sorted_dzs[lo:hi]


def contains_point(norm: Sequence[str], dz: str) -> bool:
    """True if the normalised set ``norm`` covers the (longer) dz ``dz``."""
    i = bisect_left(norm, dz)
    if i < len(norm) and norm[i] == dz:
        return True
    return i > 0 and dz.startswith(norm[i - 1])


def intersect(a: Iterable[str], b: Iterable[str]) -> tuple[str, ...]:
    """Intersection of two spaces (of two related dz: the longer one)."""
    na, nb = normalize(a), normalize(b)
    out = []
    for x in na:
        if contains_point(nb, x):
            out.append(x)
        else:
            out.extend(with_prefix(nb, x))
    return normalize(out)


def intersect_size(norm_a: Sequence[str], norm_b: Sequence[str]) -> float:
    """``size(a ∩ b)`` of two normalised spaces."""
    total = 0.0
    for x in norm_a:
        if contains_point(norm_b, x):
            total += size(x)
        else:
            total += sum(size(y) for y in with_prefix(norm_b, x))
    return total


def difference(dz: str, space_set: Iterable[str], max_len: int) -> tuple[str, ...]:
    """``region(dz)`` minus the space ``space_set`` as a disjoint dz set."""
    norm = normalize(space_set)

    def rec(cell: str) -> list[str]:
        if contains_point(norm, cell):
            return []
        inside = with_prefix(norm, cell)
        if not inside:
            return [cell]
        if len(cell) >= max_len:
            return []
        return rec(cell + "0") + rec(cell + "1")

    return tuple(rec(dz))
