"""table_index.lookup (numpy first match) equals SwitchConfig.lookup on random tables."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import Lpm, Range, StateBuilder, TableEntry, Ternary
from sim.dataplanes.table_index import lookup


@st.composite
def _match(draw, width):
    kind = draw(st.sampled_from(["range", "ternary", "lpm"]))
    top = (1 << width) - 1
    if kind == "range":
        a, b = draw(st.integers(0, top)), draw(st.integers(0, top))
        return Range(min(a, b), max(a, b))
    if kind == "ternary":
        return Ternary(draw(st.integers(0, top)), draw(st.integers(0, top)))
    return Lpm(draw(st.integers(0, top)), draw(st.integers(0, width)), width)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([8, 64, 128]), st.data())
def test_vectorised_lookup_equals_the_config_lookup(width, data) -> None:
    """Ranges, ternaries and prefixes, values that fit int64 and ones that do not
    (width 64 and 128 keep Python ints): the same first match in precedence order."""
    n = data.draw(st.integers(32, 60))
    b = StateBuilder()
    for i in range(n):
        match = (("f0", data.draw(_match(width))), ("f1", data.draw(_match(width))))
        entry = TableEntry("t", match, "a", (("x", i),), priority=data.draw(st.integers(0, 5)))
        if ("s", entry.key) not in b._seen:  # one entry per key
            b.add_entry("s", entry)
    cfg = b.build(["s"]).config("s")
    for _ in range(20):
        key = (data.draw(st.integers(0, (1 << width) - 1)),
               data.draw(st.integers(0, (1 << width) - 1)))
        assert lookup(cfg, "t", *key) == cfg.lookup("t", *key)
