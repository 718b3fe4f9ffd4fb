"""The timed engine's recirculation ports equal their pass-by-pass reference.

The reference is the engine before this change (issue 16): a
:class:`~sim.engines.timed.switch.RecircPort` finishes a pass through
:meth:`FifoServer._finish <sim.engines.timed.switch.FifoServer._finish>` with
``service`` worked out per pass and ``done`` handing it to
:meth:`SwitchNode.enqueue <sim.engines.timed.switch.SwitchNode.enqueue>`, and the
least-loaded port is picked with ``min()`` (:func:`reference_recirculate_now`,
verbatim). The inlined completion, the per-frame service time and the explicit
least-loaded scan must give the same run: event trace (times and order), records,
counts, drops, queue metrics and event count, on random networks, loads,
strategies, port rates, port counts and buffers, also when a run stops at ``until``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.random_topologies import random_topology
from support.timed_runs import summary

from experiments.cells.spec import parse_spec_dict
from experiments.cells.timed import simulate_cell
from sim.engines.timed.config import TimedConfig
from sim.engines.timed.engine import TimedEngine
from sim.engines.timed.switch import FifoServer, RecircPort, SwitchNode, _Packet
from strategies.base import Knowledge, load_builtin_strategies, make_strategy

load_builtin_strategies()

US = 1e-6
#: strategies whose visits recirculate (and one that does not)
STRATEGIES = ("switch-port", "hops", "switch-bitmask", "switch-mcgroup", "source-routed",
              "vt-random", "tree", "hybrid", "unicast")


def reference_service(self: RecircPort, item: tuple[_Packet, int]) -> float:
    return 8.0 * item[0].frame[0].frame_bytes / self.bps


def reference_done(self: RecircPort, item: tuple[_Packet, int]) -> None:
    self.switch.enqueue(item)


def reference_recirculate_now(self: SwitchNode, pkt: _Packet, children: tuple[int, ...]
                              ) -> None:
    if not self.recirc:
        for c in children:
            self.enqueue((pkt, c))
        return
    ports = self.recirc[pkt.pipe]
    for c in children:
        port = min(ports, key=lambda p: len(p.queue)) if len(ports) > 1 else ports[0]
        if not port.offer((pkt, c)):
            self.recorder.drop(self.env.now, "recirc", self.name, pkt.pipe, pkt.frame[1])


@contextlib.contextmanager
def reference() -> Iterator[None]:
    """Engines built inside run their recirculation ports as before."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RecircPort, "_finish", FifoServer._finish)
        mp.setattr(RecircPort, "service", reference_service)
        mp.setattr(RecircPort, "done", reference_done)
        mp.setattr(SwitchNode, "_recirculate_now", reference_recirculate_now)
        yield


@st.composite
def runs(draw: st.DrawFn) -> tuple[Any, ...]:
    n = draw(st.integers(2, 9))
    topo = random_topology(n, draw(st.integers(0, n)), draw(st.integers(0, 2**16)),
                           hosts=draw(st.integers(1, 2)))
    name = draw(st.sampled_from(STRATEGIES))
    # times on a coarse grid, so that completions, arrivals and publications tie often
    grid = draw(st.sampled_from([US, 2.5 * US, 10 * US]))
    pass_s = draw(st.sampled_from([0.0, US, 2.5 * US, 10 * US]))
    # or a rate at which frames of one size take exactly a pass on the port, so that
    # port and pipeline completions tie (and their order in the schedule shows)
    tie = 8.0 * draw(st.integers(40, 110)) / pass_s if pass_s else 1e9
    cfg = TimedConfig(
        pass_s=pass_s,
        switch_latency_s=draw(st.sampled_from([0.0, 0.0, US])),
        pipelines=draw(st.integers(1, 2)),
        pipeline_buffer_frames=draw(st.sampled_from([None, 1, 2, 4, 64])),
        recirc_port_bps=draw(st.sampled_from([1e7, 1e9, 1e10, tie, tie])),
        recirc_ports=draw(st.integers(1, 3)),
        recirc_buffer_frames=draw(st.sampled_from([None, 1, 2, 64])),
        pre_delay_s=draw(st.sampled_from([0.0, 0.0, US])),
        pass_delay_s=draw(st.sampled_from([0.0, 0.0, US])),
        buffer_frames=draw(st.sampled_from([None, 4, 64])),
        feed_in_s=draw(st.sampled_from([0.0, US, 5 * US])),
    )
    hosts = list(topo.hosts)
    notes = draw(st.lists(st.tuples(
        st.integers(0, 40).map(lambda k: k * grid), st.sampled_from(hosts),
        st.sets(st.sampled_from(hosts), max_size=len(hosts))), min_size=1, max_size=16))
    until = draw(st.one_of(st.none(), st.integers(1, 300).map(lambda k: k * grid)))
    return topo, name, cfg, notes, until


def run(case: tuple[Any, ...]) -> dict[str, object]:
    topo, name, cfg, notes, until = case
    strategy = make_strategy(name)
    sent = [(t, pub, frozenset(receivers) - {pub}) for t, pub, receivers in notes]
    sets: dict[str, list[frozenset[str]]] = {}
    for _, pub, receivers in sent:  # what receiver-scoped strategies install for
        sets.setdefault(pub, []).append(receivers)
    knowledge = Knowledge() if strategy.scope == "topology" else dataclasses.replace(
        Knowledge(), receiver_sets={p: tuple(dict.fromkeys(rs)) for p, rs in sets.items()})
    engine = TimedEngine(topo, strategy, strategy.install(topo, knowledge), cfg,
                         payload_bytes=20, trace=True)
    for t, pub, receivers in sent:
        engine.publish_at(t, pub, receivers)
    return summary(engine.run(until))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_recirculation_ports_give_the_reference_run(case):
    got = run(case)
    with reference():
        assert RecircPort._finish is FifoServer._finish  # not vacuous
        want = run(case)
    assert got == want


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 2**16), st.sampled_from(["switch-bitmask", "hybrid", "tree"]),
       st.integers(1, 2), st.sampled_from([None, 68, 78, 82, 84, 86, 87]), st.sampled_from([1, 8]))
def test_loaded_cells_with_recirculation_ports_equal_the_reference(seed, strategy, ports,
                                                                   tie_bytes, buffer):
    """A small recirculation-capacity cell (drops at every buffer, both port counts), at
    1e7 bps or at a rate where frames of ``tie_bytes`` take exactly a pass on the port."""
    bps = 1e7 if tie_bytes is None else 8.0 * tie_bytes / (10 * US)
    cell = parse_spec_dict({
        "experiment": {"name": "t", "engine": "timed", "seeds": [seed]},
        "grid": {"topology": ["jellyfish:switches=12,degree=3,hosts=1,seed=1"],
                 "strategy": [strategy], "receivers": ["uniform:percent=40"]},
        "timed": {"rate_hz": 3200.0, "duration_s": 0.004, "publishers": 4,
                  "arrival": "poisson", "pass_s": 10 * US, "buffer_frames": 8,
                  "pipeline_buffer_frames": buffer, "recirc_buffer_frames": 4,
                  "recirc_port_bps": bps, "recirc_ports": ports},
    }).cells()[0]
    got = summary(simulate_cell(cell, trace=True)[1])
    with reference():
        want = summary(simulate_cell(cell, trace=True)[1])
    assert got == want
    assert got["recirc"]  # the ports carried passes
