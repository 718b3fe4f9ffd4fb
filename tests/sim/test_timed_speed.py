"""Speed changes of issue 9 (timed engine): same schedule, same lookups."""

from __future__ import annotations

import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import Exact, SwitchConfig, TableEntry, Ternary, _build_index
from sim.engines.timed.engine import events_scheduled
from sim.engines.timed.metrics import TimeWeighted
from sim.engines.timed.switch import FifoServer, call_later


def test_call_later_orders_and_counts_like_env_timeout():
    env = simpy.Environment()
    log: list[tuple[float, str]] = []
    for k, d in enumerate([2.0, 1.0, 1.0, 0.0, 2.0]):
        if k % 2:
            call_later(env, d, lambda _e, k=k: log.append((env.now, f"w{k}")))
        else:
            env.timeout(d).callbacks.append(lambda _e, k=k: log.append((env.now, f"t{k}")))
    env.run()
    assert log == [(0.0, "w3"), (1.0, "w1"), (1.0, "t2"), (2.0, "t0"), (2.0, "t4")]
    assert events_scheduled(env) == 5


class _Echo(FifoServer):
    def __init__(self, env, buffer=None):
        super().__init__(env, "echo", buffer)
        self.log: list[tuple[float, int]] = []

    def service(self, item):
        return item

    def done(self, item):
        self.log.append((self.env.now, item))


class _Reference:
    """The FIFO server as it was before the speed work: env.timeout + TimeWeighted.set."""

    def __init__(self, env, buffer=None):
        self.env, self.buffer, self.queue, self.busy = env, buffer, [], False
        self.occupancy = TimeWeighted(t0=env.now)
        self.log: list[tuple[float, int]] = []

    def offer(self, item):
        if self.buffer is not None and len(self.queue) >= self.buffer:
            return False
        self.queue.append(item)
        self.occupancy.set(self.env.now, len(self.queue))
        if not self.busy:
            self.busy = True
            self.env.timeout(self.queue[0]).callbacks.append(self.finish)
        return True

    def finish(self, _e):
        item = self.queue.pop(0)
        self.occupancy.set(self.env.now, len(self.queue))
        self.log.append((self.env.now, item))
        if self.queue:
            self.env.timeout(self.queue[0]).callbacks.append(self.finish)
        else:
            self.busy = False


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=12),
       st.one_of(st.none(), st.integers(1, 3)))
def test_fifo_server_matches_the_reference_exactly(arrivals, buffer):
    runs = []
    for cls in (_Echo, _Reference):
        env = simpy.Environment()
        srv = cls(env, buffer)
        refused: list[int] = []
        for t, s in arrivals:
            env.timeout(t).callbacks.append(
                lambda _e, s=s, srv=srv, r=refused: srv.offer(s) or r.append(s))
        env.run()
        tw = srv.occupancy
        runs.append((srv.log, refused, tw.mean(env.now + 1.0), tw.peak, tw.level,
                     events_scheduled(env)))
    assert runs[0] == runs[1]


def test_lookup_memo_and_shared_index_agree_with_the_index():
    rules = tuple(TableEntry(table="t", match=(("k", Exact(i)),), action=f"a{i}")
                  for i in range(40))
    tern = (TableEntry(table="u", match=(("k", Ternary(0, 1)),), action="even", priority=2),
            TableEntry(table="u", match=(("k", Ternary(0, 0)),), action="any", priority=1))
    a, b = SwitchConfig(tables={"t": rules, "u": tern}), SwitchConfig(tables={"t": rules})
    assert a._index["t"] is b._index["t"]  # one index for the shared tuple
    c = SwitchConfig(tables={"t": tuple(reversed(rules))})  # equal content, other tuple
    for cfg in (a, b, c):
        for k in range(45):
            exact, buckets = _build_index(cfg.tables["t"])
            want = buckets.get((k,), [None])[0]
            assert cfg.lookup("t", k) == want
            assert cfg.lookup("t", k) == want  # memoized
    assert [a.lookup("u", k).action for k in range(4)] == ["even", "any", "even", "any"]
    assert a.lookup("missing", 1) is None
