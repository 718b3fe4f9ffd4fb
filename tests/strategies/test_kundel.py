"""Kundel encodings (seed 002 Fig. 3-5), the flat table, and the table cost model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.dataplanes.kundel.reference import KundelFormat
from sim.dataplanes.packet import Notification, payload_for
from sim.dataplanes.seeds import child_rng
from sim.engines.static import run_notification
from sim.workloads.content import ContentPopulation
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.kundel.kundel import header_bits_model
from strategies.table_cost import LatencyModel, prefix_count, range_prefixes
from topologies.specs import load_topology


def test_id_encoding_bytes_follow_listing1() -> None:
    fmt = KundelFormat("id", 8)
    # e = [<temp (ID 1), 25>, <hum (ID 2), 30>]: first_id, (value, nextId)*, 0 terminator
    assert fmt.encode({1: 25, 2: 30}) == bytes([1]) + (25).to_bytes(4, "big") + bytes([2]) \
        + (30).to_bytes(4, "big") + bytes([0])
    # ID 0 (timestamp) may only come first
    assert fmt.encode({0: 7, 3: 9})[0] == 0


def test_bitmask_encoding_is_lsb_first_with_ascending_values() -> None:
    fmt = KundelFormat("bitmask", n_max=32)
    data = fmt.encode({6: 3, 0: 1, 2: 2})  # the paper's attributes 0, 2, 6
    assert int.from_bytes(data[:4], "big") == 0b1000101
    assert [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(3)] == [1, 2, 3]


@given(st.dictionaries(st.integers(0, 16), st.integers(0, 2**32 - 1), min_size=1, max_size=10),
       st.sampled_from(["id", "bitmask"]))
def test_encodings_round_trip_through_the_parser(values, encoding) -> None:
    fmt = KundelFormat(encoding)
    data = fmt.encode(values)
    valid, parsed, used = fmt.parse(data, 17)
    assert parsed == values and used == len(data) == fmt.header_bits(len(values)) // 8
    assert valid == sum(1 << i for i in values)


@pytest.mark.parametrize(("n", "id_bits", "mask_bits"), [
    (1, 48, 64), (3, 128, 128), (4, 168, 160), (8, 328, 288), (32, 1288, 1056)])
def test_header_overhead_table(n: int, id_bits: int, mask_bits: int) -> None:
    assert KundelFormat("id").header_bits(n) == id_bits
    assert KundelFormat("bitmask").header_bits(n) == mask_bits


def test_fig5_break_even_at_eight_attributes_for_k4() -> None:
    diff = [header_bits_model("id", n, k=4) - header_bits_model("bitmask", n) for n in (7, 8, 9)]
    assert diff[0] < 0 and diff[1] == 0 and diff[2] > 0


def test_range_to_prefix_expansion() -> None:
    assert range_prefixes(16, 47, 32) == [(16, 28), (32, 28)]  # the paper's [16,31] + [32,47]
    assert prefix_count(17, 46, 32) == 8                        # strict 16 < temp < 47 (D4)
    assert prefix_count(1, 2**16 - 2, 16) == 2 * 16 - 2         # the worst case 2w - 2
    assert prefix_count(0, 2**32 - 1, 32) == 1
    for lo, hi in [(0, 0), (5, 100), (1000, 4095)]:
        cover = range_prefixes(lo, hi, 12)
        vals = sorted(v for base, plen in cover for v in range(base, base + (1 << (12 - plen))))
        assert vals == list(range(lo, hi + 1))


def test_linear_latency_model_extrapolates_to_about_11ms_at_10000_entries() -> None:
    m = LatencyModel(kind="linear")
    assert m.lookup_us(10_000) == pytest.approx(11_204.3, rel=1e-3)
    assert m.lookup_us(1, multicast=True) - m.lookup_us(1) == pytest.approx(0.8)
    assert LatencyModel(kind="constant").lookup_us(10_000) == pytest.approx(6.4)


@pytest.mark.parametrize("name", ["kundel-id", "kundel-bitmask"])
def test_flat_table_is_exact_and_header_sizes_match(name: str) -> None:
    topology = load_topology("fattree:k=4")
    pop = receiver_model("content:subs=25,publishers=2,dims=3,bits=12,width=0.3").population(
        topology, child_rng(7, "population"))
    assert isinstance(pop, ContentPopulation)
    strategy = make_strategy(name)
    view = pop.at(0)
    state = strategy.install(topology, Knowledge(population=view))
    rng = np.random.default_rng(1)
    for run in range(100):
        pub = pop.publishers[run % 2]
        event, receivers = view.draw(pub, run, rng)
        note = Notification(run, pub, event=event)
        d = run_notification(topology, strategy, state, note, receivers, payload_for(note, 8))
        assert d.false_positives == 0 and d.false_negatives == 0
        assert d.encoding.header_bytes == (16 if name == "kundel-id" else 16)
    expanded = make_strategy(name, {"ranges": "expand"})
    st2 = expanded.install(topology, Knowledge(population=view))
    assert expanded.state_cost(topology, st2).tcam_entries > \
        strategy.state_cost(topology, state).tcam_entries
