"""The Elmo header codec: round trips, sizes, a worked example by hand, bad input.

References
----------
Elmo SIGCOMM 2019 §3.1-3.2; sim/dataplanes/elmo/codec.py (the layout).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.elmo.codec import (
    FIXED_BYTES,
    ElmoDecodeError,
    ElmoHeader,
    ElmoLayout,
    PRule,
    UpRule,
    decode_header,
    encode_header,
)

#: elmo:pods=2,leaves=4,hosts=4 (4 spines per pod, 4 cores: one per plane): 4 hosts and
#: 4 spines per leaf, 4 leaves and 1 core per spine, 2 pods per core, 8 leaves, 2 pods.
SMALL = ElmoLayout(leaf_down=4, leaf_up=4, spine_down=4, spine_up=1, core_down=2, leaf_id=3,
                   pod_id=1, max_ids=3)
#: Elmo's evaluation network: 12 pods x 48 leaves x 48 hosts, 4 spines per pod, 4 cores.
PAPER = ElmoLayout(leaf_down=48, leaf_up=4, spine_down=48, spine_up=1, core_down=12,
                   leaf_id=10, pod_id=4, max_ids=3)


@st.composite
def layouts(draw) -> ElmoLayout:
    w = st.integers(1, 70)
    return ElmoLayout(leaf_down=draw(w), leaf_up=draw(st.integers(1, 9)), spine_down=draw(w),
                      spine_up=draw(st.integers(1, 9)), core_down=draw(w),
                      leaf_id=draw(st.integers(1, 16)), pod_id=draw(st.integers(1, 8)),
                      max_ids=draw(st.integers(1, 16)))


@st.composite
def headers(draw, layout: ElmoLayout) -> ElmoHeader:
    def bitmap(width: int):
        return st.integers(0, (1 << width) - 1)

    def maybe(s):
        return st.one_of(st.none(), s)

    def up(down: int, up_: int):
        return st.builds(UpRule, bitmap(down), bitmap(up_), st.booleans())

    def prules(bits: int, id_bits: int):
        rule = st.builds(PRule, st.lists(bitmap(id_bits), min_size=1,
                                         max_size=layout.max_ids).map(tuple), bitmap(bits))
        return st.lists(rule, max_size=6).map(tuple)

    lay = layout
    return ElmoHeader(
        group_id=draw(st.integers(0, 2**32 - 1)),
        up_leaf=draw(maybe(up(lay.leaf_down, lay.leaf_up))),
        up_spine=draw(maybe(up(lay.spine_down, lay.spine_up))),
        core=draw(maybe(bitmap(lay.core_down))),
        spine_rules=draw(prules(lay.spine_down, lay.pod_id)),
        spine_default=draw(maybe(bitmap(lay.spine_down))),
        leaf_rules=draw(prules(lay.leaf_down, lay.leaf_id)),
        leaf_default=draw(maybe(bitmap(lay.leaf_down))))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_round_trip_and_size(data):
    layout = data.draw(layouts())
    header = data.draw(headers(layout))
    raw = encode_header(header, layout)
    assert len(raw) == layout.header_bytes(header)
    payload = data.draw(st.binary(max_size=20))
    got, used = decode_header(raw + payload, layout)
    assert (got, used) == (header, len(raw))
    assert got.entries == (len(header.spine_rules) + len(header.leaf_rules) + sum(
        x is not None for x in (header.up_leaf, header.up_spine, header.core,
                                header.spine_default, header.leaf_default)))


def test_worked_example_bytes_by_hand():
    """Group 0 = {h2, h6, h7, h18, h31} sent by h1 on elmo:pods=2,leaves=4,hosts=4 with two
    shared leaf p-rules (tests/strategies/test_elmo.py derives the p-rules). Field by field:

    - fixed: group 0, flags UP_LEAF|UP_SPINE|CORE = 0xe0, 2 spine and 2 leaf p-rules;
    - up leaf: multipath 1, up 1111, down 0010 (h2) -> 1 1111 0010 + 7 pad = f9 00;
    - up spine: multipath 1, up 1, down 0010 (leaf s10) -> 1 1 0010 + 2 pad = c8;
    - core: 10 (pod 1) + 6 pad = 80;
    - spine p-rules: k-1 = 00, bitmap 0011, id 0 -> 00 0011 0 + 1 pad = 0c;
      00, 1001, id 1 -> 00 1001 1 + 1 pad = 26;
    - leaf p-rules: k-1 = 01, bitmap 0010, ids 000 100 -> 0100 1000 0100 + 4 pad = 48 40;
      01, 0110, ids 001 111 -> 58 f0.
    """
    header = ElmoHeader(0, up_leaf=UpRule(0b0010, 0b1111, True),
                        up_spine=UpRule(0b0010, 0b1, True), core=0b10,
                        spine_rules=(PRule((0,), 0b0011), PRule((1,), 0b1001)),
                        leaf_rules=(PRule((0, 4), 0b0010), PRule((1, 7), 0b0110)))
    raw = encode_header(header, SMALL)
    assert raw.hex(" ") == "00 00 00 00 e0 02 02 f9 00 c8 80 0c 26 48 40 58 f0"
    assert header.entries == 7
    assert decode_header(raw, SMALL) == (header, 17)


def test_paper_sizes():
    """At Elmo's network a leaf p-rule naming three leaves is 2 + 48 + 30 = 80 bits, and a
    header with 30 of them, 2 spine p-rules, both defaults and every upstream p-rule is
    7 + 7 + 7 + 2 + 2 x 8 + 6 + 300 + 6 = 351 B (the paper's bit-packed maximum: 325 B)."""
    assert PAPER.leaf_rule_bytes(3) == 10 and PAPER.leaf_rule_bytes(1) == 8
    assert PAPER.spine_rule_bytes(3) == 8
    assert (PAPER.up_leaf_bytes, PAPER.up_spine_bytes, PAPER.core_bytes) == (7, 7, 2)
    full = ElmoHeader(1, UpRule(1, 1, True), UpRule(1, 1, True), 1,
                      (PRule((1, 2, 3), 1),) * 2, 1, (PRule((1, 2, 3), 1),) * 30, 1)
    assert len(encode_header(full, PAPER)) == PAPER.header_bytes(full) == 351
    assert FIXED_BYTES == 7


@pytest.mark.parametrize("header,needle", [
    (ElmoHeader(2**32), "group_id"),
    (ElmoHeader(1, core=4), "core bitmap"),
    (ElmoHeader(1, up_leaf=UpRule(16, 0, False)), "upstream leaf down bitmap"),
    (ElmoHeader(1, leaf_rules=(PRule((8,), 1),)), "leaf id"),
    (ElmoHeader(1, spine_rules=(PRule((0, 1, 0, 1), 1),)), "names 4 switches"),
    (ElmoHeader(1, leaf_rules=(PRule((), 1),)), "names 0 switches"),
    (ElmoHeader(1, leaf_rules=(PRule((1,), 1),) * 256), "8-bit count"),
])
def test_values_that_do_not_fit_name_the_field(header, needle):
    with pytest.raises(ValueError, match=needle):
        encode_header(header, SMALL)


def test_malformed_bytes_are_decode_errors():
    raw = encode_header(ElmoHeader(5, leaf_rules=(PRule((1, 2), 3),), leaf_default=1), SMALL)
    for cut in range(len(raw)):
        with pytest.raises(ElmoDecodeError, match="truncated"):
            decode_header(raw[:cut], SMALL)
    with pytest.raises(ElmoDecodeError, match="reserved"):
        decode_header(raw[:4] + bytes([raw[4] | 0x01]) + raw[5:], SMALL)
    # the first leaf p-rule's 2-bit count says k - 1 = 3: four ids, more than max_ids = 3
    with pytest.raises(ElmoDecodeError, match="more than max_ids=3"):
        decode_header(raw[:7] + bytes([0b1100_0000 | raw[7] & 0x3F]) + raw[8:], SMALL)


def test_layout_rejects_zero_widths():
    with pytest.raises(ValueError, match="leaf_id must be >= 1 bit"):
        ElmoLayout(leaf_down=1, leaf_up=1, spine_down=1, spine_up=1, core_down=1, leaf_id=0,
                   pod_id=1)
    with pytest.raises(ValueError, match="max_ids must be in 1..16"):
        ElmoLayout(leaf_down=1, leaf_up=1, spine_down=1, spine_up=1, core_down=1, leaf_id=1,
                   pod_id=1, max_ids=17)
