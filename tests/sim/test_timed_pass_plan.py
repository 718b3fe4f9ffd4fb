""":func:`~sim.engines.timed.switch.pass_plan` (shapes cached per pass trace) equals the
plain construction it replaced (issue 16).

The reference is the function before, verbatim, with ``PassPlan``'s ``steps`` and
``plains`` as its ``__post_init__`` works them out. Random results: pass traces valid
and not, chains without a trace, copies after any pass (or out of range).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.pipeline import Emit, PipelineResult
from sim.engines.timed.switch import EngineError, PassPlan, pass_plan


def reference_pass_plan(result: PipelineResult) -> PassPlan:
    """:func:`pass_plan` before issue 16 (commit 6b62a33)."""
    n = max(result.passes, 1)
    parents = result.pass_parents
    traced = bool(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    if traced:
        if len(parents) != result.passes or parents[0] != -1:
            raise EngineError(f"inconsistent pass trace {parents} for {result.passes} passes")
        for j in range(1, n):
            p = parents[j]
            if not 0 <= p < j:
                raise EngineError(f"inconsistent pass trace {parents} for {result.passes} "
                                  "passes")
            children[p].append(j)
    else:  # one sequential chain
        for j in range(1, n):
            children[j - 1].append(j)
    emits: list[list[Emit]] = [[] for _ in range(n)]
    for e in result.emitted:
        after = e.after_pass if traced else min(max(e.depth, 1), n) - 1
        if not 0 <= after < n:
            raise EngineError(f"copy to port {e.port} leaves after pass {after} of {n}")
        emits[after].append(e)
    return PassPlan(tuple(map(tuple, children)), tuple(map(tuple, emits)), traced)


@st.composite
def results(draw: st.DrawFn) -> PipelineResult:
    passes = draw(st.integers(0, 12))
    kind = draw(st.sampled_from(["trace", "trace", "chain", "bad"]))
    if kind == "trace" and passes:
        parents = (-1, *(draw(st.integers(0, j - 1)) for j in range(1, passes)))
    elif kind == "bad":
        parents = tuple(draw(st.lists(st.integers(-2, 12), min_size=1, max_size=13)))
    else:
        parents = ()
    emitted = tuple(Emit(port=k, packet=None, depth=draw(st.integers(-1, passes + 2)),  # type: ignore[arg-type]
                         after_pass=draw(st.integers(-1, passes + 1)))
                    for k in range(draw(st.integers(0, 5))))
    return PipelineResult(passes=passes, recirculations=max(passes - 1, 0), lookups=passes,
                          emitted=emitted, pass_parents=parents)


def outcome(result: PipelineResult, plan_of: object) -> object:
    try:
        plan = plan_of(result)  # type: ignore[operator]
    except EngineError as exc:
        return ("error", str(exc))
    return (plan, plan.steps, plan.plains)


@settings(max_examples=400, deadline=None)
@given(results())
def test_pass_plan_equals_the_construction_before(result):
    want = outcome(result, reference_pass_plan)
    assert outcome(result, pass_plan) == want
    assert outcome(result, pass_plan) == want  # again, from the cached shape


def test_a_plain_recirculation_chain_and_its_copies():
    """Passes 0 -> 1 -> 2 -> 3, pass 1 also clones pass 4; copies after passes 3 and 4."""
    result = PipelineResult(passes=5, recirculations=4, lookups=5,
                            emitted=(Emit(1, None, 4, 3), Emit(2, None, 3, 4)),  # type: ignore[arg-type]
                            pass_parents=(-1, 0, 1, 2, 1))
    plan = pass_plan(result)
    assert plan.children == ((1,), (2, 4), (3,), (), ())
    assert [len(e) for e in plan.emits] == [0, 0, 0, 1, 1]
    assert [step[2] for step in plan.steps] == [1, -1, 3, -1, -1]  # 1 spawns two
    assert plan.plains == (-1, -1, 3, -1, -1)  # pass 0 takes the general path
