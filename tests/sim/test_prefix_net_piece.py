"""The prefix filter's reference-flow pieces, compiled per port, equal the whole compile.

:meth:`PrefixFamily.net_piece` compiles each ingress port's unlimited flows
once per flow table (pleroma-dz's unlimited flows change a port at a time,
seed 001 §6.2) and concatenates them; :func:`net_piece_reference` compiles the
switch's flows in one go (the definition). Hypothesis draws switches as random
port -> flow-table maps, some tables shared between switches (as unchanged
ports are between states), and random dz lengths; every array of the two
pieces must be equal.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.content_fast_path import ContentState
from sim.dataplanes.prefix_filter.fast_path import DzKey, PrefixFamily, net_piece_reference
from strategies.prefix_filter.flow_limits import PrefixTable

TABLE = st.dictionaries(st.text(alphabet="01", max_size=7),
                        st.frozensets(st.integers(1, 5), min_size=1, max_size=3),
                        max_size=8).map(PrefixTable)
#: switches as (port, index of a table) lists over one shared pool of tables
SWITCHES = st.lists(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 5)), max_size=4,
                             unique_by=lambda p: p[0]), min_size=1, max_size=6)


def _info(length: int) -> ContentState:
    key = DzKey(4, length, tuple((0, 15 - j) for j in range(length)), 1)
    return ContentState(model=None, latency_us=np.zeros(0), header=(1, 0, 0), event_key=key)


def _arrays(piece) -> tuple:
    return (piece.n_fields, [a.tolist() for a in (piece.lo, piece.hi, piece.mask, piece.value)],
            [a.shape for a in (piece.lo, piece.hi, piece.mask, piece.value)],
            list(piece.rule_action), piece.segments, piece.port_segment, piece.actions)


@settings(max_examples=200, deadline=None)
@given(st.lists(TABLE, min_size=6, max_size=6), SWITCHES, st.lists(st.integers(0, 7),
                                                                  min_size=1, max_size=3))
def test_net_piece_equals_the_reference(pool: list, switches: list, lengths: list) -> None:
    family = PrefixFamily()
    for length in lengths:
        info = _info(length)
        for ports in switches:
            flows = {port: pool[i] for port, i in ports}
            assert _arrays(family.net_piece(flows, info)) == _arrays(
                net_piece_reference(flows, info))
