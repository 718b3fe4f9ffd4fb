"""Camus's remembering BDD compiler and its marked writes against the references.

:class:`strategies.camus.bdd_memo.BddCompiler` must give the pipeline
:func:`strategies.camus.bdd.compile_bdd` gives (same states, numbering,
entries and leaves) on every filter set of an update sequence, and the write
counts ``camus-bdd`` marks on its configurations must equal the writes
:func:`sim.dataplanes.control_state.diff` finds.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.control_state import count_writes, diff
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.camus.bdd import compile_bdd
from strategies.camus.bdd_memo import BddCompiler
from topologies.specs import load_topology

FIELDS = [("x", 4), ("y", 4), ("z", 3)]


def _same(a, b) -> bool:
    return (a.fields, a.tables, a.leaf, a.states, a.states_per_field) == \
        (b.fields, b.tables, b.leaf, b.states, b.states_per_field)


_rule = st.tuples(st.tuples(st.integers(0, 15), st.integers(0, 15)),
                  st.tuples(st.integers(0, 15), st.integers(0, 15)),
                  st.tuples(st.integers(0, 7), st.integers(0, 7)),
                  st.frozensets(st.integers(0, 3), min_size=1, max_size=2))


def _labelled(r):
    return (tuple((min(iv), max(iv)) for iv in r[:3]), r[3])


@settings(max_examples=150, deadline=None)
@given(st.lists(_rule, min_size=0, max_size=10),
       st.lists(st.tuples(st.booleans(), _rule, st.integers(0, 20)), min_size=1, max_size=8),
       st.sampled_from(["annotation", "constants"]), st.integers(1, 3))
def test_memo_compiler_equals_the_reference_along_updates(start, steps, order, rounds) -> None:
    """Each filter set of a random add/remove sequence compiles to the reference's
    pipeline, with partitions remembered from the earlier sets (and forgotten every
    ``rounds`` compilations)."""
    rules = sorted({_labelled(r) for r in start})
    comp = BddCompiler()
    for i, (add, r, pick) in enumerate([(True, None, 0), *steps]):
        if r is not None:
            if add or not rules:
                rules = sorted(set(rules) | {_labelled(r)})
            else:
                rules.pop(pick % len(rules))
        if i % rounds == 0:
            comp.next_round()
        assert _same(comp.compile(rules, FIELDS, order), compile_bdd(rules, FIELDS, order))
    # a second switch's filter set (other labels) compiled by the same compiler
    other = [(c, frozenset({p + 4 for p in lab})) for c, lab in rules]
    assert _same(comp.compile(other, FIELDS, order), compile_bdd(other, FIELDS, order))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["MR", "TR"]), st.sampled_from([1, 4]),
       st.sampled_from(["annotation", "constants"]))
def test_camus_updates_equal_the_reference_and_mark_true_writes(seed, policy, alpha,
                                                                order) -> None:
    """Installs and churn updates on a fat tree: the remembering compiler's states equal
    the reference compiler's, and the marked write counts equal the diff's."""
    topo = load_topology("fattree:k=4")
    pop = receiver_model("content:subs=14,publishers=3,dims=3,bits=5,width=0.3,churn=2"
                         ).population(topo, child_rng(seed, "population"))
    params = {"policy": policy, "alpha": alpha, "order": order}
    memo, ref = make_strategy("camus-bdd", params), make_strategy("camus-bdd", params)
    ref.compiler = None
    a = memo.install(topo, Knowledge(population=pop.at(0)))
    b = ref.install(topo, Knowledge(population=pop.at(0)))
    marked = 0
    for version in range(1, 6):
        view = pop.at(version)
        a2 = memo.update(topo, a, Knowledge(population=view))
        b2 = ref.update(topo, b, Knowledge(population=view))
        for sw in topo.switches:
            assert a2.config(sw).tables == b2.config(sw).tables
            assert a2.config(sw).multicast_groups == b2.config(sw).multicast_groups
            marked += "_writes_from" in a2.config(sw).__dict__
        assert count_writes(a, a2) == len(diff(a, a2)) == len(diff(b, b2))
        a, b = a2, b2
    assert marked > 0  # the marked counts were used, not only the full comparison
