"""dz-expressions: seed 001's conversions and decomposition examples, dz-set arithmetic."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.content_space import AttributeSpace, Box
from strategies.prefix_filter.dz import (
    decompose,
    decompose_reference,
    difference,
    dz_box,
    dz_from_address,
    dz_to_ipv4,
    dz_to_ipv6,
    event_dz,
    intersect,
    ipv4_cidr,
    ipv6_cidr,
    normalize,
    set_size,
)


@pytest.mark.parametrize(("dz", "cidr"), [
    ("", "225.128.0.0/9"), ("110", "225.224.0.0/12"), ("1101000", "225.232.0.0/16"),
    ("0011", "225.152.0.0/13")])
def test_seed001_ipv4_conversion_table(dz: str, cidr: str) -> None:
    assert ipv4_cidr(dz) == cidr
    addr, plen = dz_to_ipv4(dz)
    assert dz_from_address(addr, plen, 4) == dz


@pytest.mark.parametrize(("dz", "cidr"), [("101101", "ff0e:b400::/22"),
                                          ("101", "ff0e:a000::/19")])
def test_seed004_ipv6_examples(dz: str, cidr: str) -> None:
    assert ipv6_cidr(dz) == cidr
    addr, plen = dz_to_ipv6(dz)
    assert dz_from_address(addr, plen, 6) == dz


def test_ipv4_rejects_dz_longer_than_23_bits() -> None:
    with pytest.raises(ValueError, match="at most 23"):
        dz_to_ipv4("0" * 24)


# [0, 100]^2 of seed 001 A1 mapped onto 2-bit attributes (quarters of the domain)
Q = AttributeSpace.regular(2, 2)


def test_seed001_decomposition_examples_with_lower_half_zero() -> None:
    # {dim1=[0,25] ∧ dim2=[0,50]}: with 0 = lower half everywhere (digest [BUG]) -> {000}
    assert decompose(Box(((0, 0), (0, 1))), Q, 3) == ("000",)
    # {dim1=[0,25] ∧ dim2=[0,100]} -> {000, 010} (the thesis's own answer)
    assert decompose(Box(((0, 0), (0, 3))), Q, 3) == ("000", "010")


def test_seed001_inexact_filter_is_over_approximated_at_max_length() -> None:
    fine = AttributeSpace.regular(2, 7)  # [0, 128)
    # {dim1=[0,10] ∧ dim2=[50,100]} (scaled) at L = 3 -> one cell of length 3
    assert decompose(Box(((0, 12), (64, 127))), fine, 3) == ("010",)


def test_event_dz_is_morton_interleaving_and_dz_box_inverts_it() -> None:
    space = AttributeSpace.regular(2, 4)
    # 0b1001 -> dim1 bits 1,0 at levels 0,1; dim2 bits 0,1 (seed 004 example style)
    assert event_dz((0b1000, 0b0100), space, 4) == "1001"
    box = dz_box("1001", space)
    assert box.bounds == ((8, 11), (4, 7))
    for v in itertools.product(range(8, 12), range(4, 8)):
        assert event_dz(v, space, 4) == "1001"


def test_decompose_cap_limits_the_set_and_still_covers() -> None:
    space = AttributeSpace.regular(3, 6)
    box = Box(((3, 40), (5, 50), (10, 20)))
    capped = decompose(box, space, 18, max_dz=4)
    assert len(capped) <= 4
    for v in [(3, 5, 10), (40, 50, 20), (20, 30, 15)]:
        assert any(event_dz(v, space, 18).startswith(d) for d in capped)


@given(st.tuples(st.integers(0, 15), st.integers(0, 15)),
       st.tuples(st.integers(0, 15), st.integers(0, 15)), st.integers(0, 8),
       st.sampled_from([0, 3, 6]))
def test_decompose_never_misses_a_point_and_is_disjoint(a, b, length, cap) -> None:
    space = AttributeSpace.regular(2, 4)
    box = Box(((min(a[0], b[0]), max(a[0], b[0])), (min(a[1], b[1]), max(a[1], b[1]))))
    dzs = decompose(box, space, length, max_dz=cap)
    assert normalize(dzs) == dzs  # disjoint: nobody covers anybody
    for v in itertools.product(range(16), range(16)):
        inside = any(event_dz(v, space, 8).startswith(d) for d in dzs)
        if box.contains(v):
            assert inside
    if length == 8 and not cap:  # exact at full resolution
        assert set_size(dzs) * 256 == box.volume


def test_set_arithmetic() -> None:
    assert normalize(["0", "00", "011", "1"]) == ("0", "1")
    assert intersect(["0"], ["00", "11"]) == ("00",)
    assert intersect(["0000", "0011"], ["00"]) == ("0000", "0011")
    assert difference("00", ["0000", "0011"], 4) == ("0001", "0010")
    assert set_size(["00", "0000", "1"]) == 0.75


@st.composite
def _space_box(draw):
    bits = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    space = AttributeSpace(tuple(f"a{i}" for i in range(len(bits))), tuple(bits))
    bounds = []
    for b in bits:
        lo, hi = sorted(draw(st.tuples(st.integers(0, 2**b - 1), st.integers(0, 2**b - 1))))
        bounds.append((lo, hi))
    dims = draw(st.none() | st.lists(st.integers(0, len(bits) - 1), min_size=1,
                                     max_size=len(bits), unique=True).map(tuple))
    return space, Box(tuple(bounds)), dims


@settings(max_examples=400)
@given(_space_box(), st.integers(0, 26), st.integers(0, 12))
def test_decompose_equals_the_reference(space_box, length: int, cap: int) -> None:
    space, box, dims = space_box
    assert decompose(box, space, length, cap, dims) == decompose_reference(box, space, length,
                                                                           cap, dims)
