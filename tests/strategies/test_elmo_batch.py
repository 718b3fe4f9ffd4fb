"""Elmo's install in batches equals the group-by-group definition.

:func:`strategies.elmo.fuzzy_batch.cluster_layers` (the fuzzy match of many
groups in one compiled loop) against :func:`strategies.elmo.prules.cluster_layer`
group by group; :meth:`~strategies.elmo.assignment.Controller.build_batches`
against :meth:`~strategies.elmo.assignment.Controller.build` and
:func:`~strategies.elmo.prules.plan_groups`; the fast layer encoder against
:func:`~sim.dataplanes.elmo.codec.encode_layer_reference`; a ``tenants``
install (batched) against the same groups installed one by one. Random Clos
networks, groups and limits (tight s-rule capacities, header budgets).

References
----------
Elmo SIGCOMM 2019 §3.2, §4; Elmo-MCast/numerical-evals ``pseudocodes/fuzzy_match.algo``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.caches import Caches
from sim.dataplanes.elmo.codec import ElmoLayout, PRule, encode_layer, encode_layer_reference
from sim.dataplanes.elmo.headers import INFO_GROUPS, pack_group
from sim.dataplanes.seeds import child_rng
from sim.workloads.receivers import receiver_model
from strategies.base import Knowledge, make_strategy
from strategies.elmo import elmo as elmo_module
from strategies.elmo import fuzzy_batch
from strategies.elmo.elmo import _table_hosts
from strategies.elmo.prules import cluster_layer
from topologies.model import Topology
from topologies.registry import SpecError
from topologies.specs import load_topology


@st.composite
def layers(draw) -> list[list[tuple[int, int]]]:
    """Groups of one layer: switch ids ascending, bitmaps narrow (ties) or up to 63 bits."""
    width = draw(st.sampled_from([3, 6, 63]))
    out = []
    for _ in range(draw(st.integers(0, 8))):
        ids = sorted(draw(st.sets(st.integers(0, 60), max_size=14)))
        out.append([(i, draw(st.integers(1, (1 << width) - 1))) for i in ids])
    return out


def as_arrays(groups: list[list[tuple[int, int]]]) -> tuple[np.ndarray, ...]:
    starts = np.zeros(len(groups) + 1, np.int64)
    np.cumsum([len(g) for g in groups], out=starts[1:])
    ids = np.array([i for g in groups for i, _ in g], np.int64)
    bits = np.array([b for g in groups for _, b in g], np.int64)
    return starts, ids, bits


@pytest.mark.skipif(fuzzy_batch.fuzzy_labels is None, reason="numba absent or disabled")
@settings(max_examples=300, deadline=None)
@given(groups=layers(), max_prules=st.integers(0, 5), max_ids=st.integers(1, 4),
       redundancy=st.integers(0, 6), compiled=st.booleans())
def test_batched_fuzzy_match_is_cluster_layer(groups, max_prules, max_ids, redundancy,
                                              compiled):
    """The compiled kernel (and its Python body) gives every group cluster_layer's layer."""
    kernel = fuzzy_batch.fuzzy_labels if compiled else fuzzy_batch._fuzzy_labels.py_func
    got = fuzzy_batch.cluster_layers(*as_arrays(groups), max_prules, max_ids, redundancy,
                                     labels_of=kernel)
    assert got == [cluster_layer(g, max_prules, max_ids, redundancy) for g in groups]


@pytest.mark.skipif(fuzzy_batch.encode_rules is None, reason="numba absent or disabled")
@settings(max_examples=300, deadline=None)
@given(data=st.data(), max_prules=st.integers(0, 5), redundancy=st.integers(0, 6),
       layer=st.sampled_from(["spine", "leaf"]), bitmap_bits=st.integers(1, 64),
       id_bits=st.integers(1, 7), max_ids=st.integers(1, 6))
def test_encoded_layers_are_cluster_layer_encoded(data, max_prules, redundancy, layer,
                                                  bitmap_bits, id_bits, max_ids):
    """Each group's encoded p-rules are encode_layer's bytes of cluster_layer's p-rules
    (no default), with their count and the rest; None when a value does not fit."""
    layout = ElmoLayout(leaf_down=bitmap_bits, leaf_up=2, spine_down=bitmap_bits, spine_up=2,
                        core_down=2, leaf_id=id_bits, pod_id=id_bits, max_ids=max_ids)
    top = min(1 << bitmap_bits, 1 << 63) - 1
    high = top + 2 if top + 2 < 1 << 63 else top  # some values too wide when they can be
    groups = []
    for _ in range(data.draw(st.integers(0, 6))):
        ids = sorted(data.draw(st.sets(st.integers(0, (1 << id_bits) + 1), max_size=12)))
        groups.append([(i, data.draw(st.integers(1, high))) for i in ids])
    got = fuzzy_batch.encode_layers(*as_arrays(groups), max_prules, max_ids, redundancy,
                                    layout, layer)
    if any(b > top or i >= 1 << id_bits for g in groups for i, b in g):
        assert got is None
        return
    want = []
    for g in groups:
        ref = cluster_layer(g, max_prules, max_ids, redundancy)
        want.append((encode_layer_reference(ref.prules, None, layout, layer), len(ref.prules),
                     list(ref.rest)))
    assert got == want


@st.composite
def clos(draw) -> Topology:
    return load_topology(
        f"elmo:pods={draw(st.integers(1, 4))},leaves={draw(st.integers(1, 6))},"
        f"hosts={draw(st.integers(1, 5))},spines={draw(st.integers(1, 2))},cores=2")


def tight_params() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({
        "redundancy": st.sampled_from([0, 1, 3, 12]),
        "spine_redundancy": st.sampled_from([0, 2, 6]),
        "leaf_prules": st.integers(0, 4),
        "spine_prules": st.integers(0, 2),
        "switches_per_prule": st.integers(1, 3),
        "leaf_srules": st.integers(0, 3),
        "spine_srules": st.integers(0, 2),
        "default_prule": st.booleans(),
        "header_bytes_max": st.sampled_from([0, 0, 0, 0, 14, 20, 40])})


@settings(max_examples=250, deadline=None)
@given(data=st.data())
def test_build_batches_is_build_and_plan_groups(data):
    """Batched builds (random cuts, compiled or group by group) equal build and the
    definition: the same queues, rests and published headers."""
    topo = data.draw(clos())
    raw = data.draw(tight_params())
    n = len(topo.hosts)
    groups = [sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
              for _ in range(data.draw(st.integers(1, 12)))]
    cuts = sorted(data.draw(st.sets(st.integers(1, len(groups)), max_size=3)) | {len(groups)})
    strategy = make_strategy("elmo", raw)
    ref = strategy.controller(topo)
    try:
        ref.build(enumerate(groups))
    except SpecError:
        with pytest.raises(SpecError):
            strategy.controller(topo).build_batches(batches(groups, cuts))
        return
    with pytest.MonkeyPatch.context() as patch:
        if data.draw(st.integers(0, 3)) == 0:  # group by group (no kernels)
            patch.setattr(fuzzy_batch, "fuzzy_labels", None)
        got = strategy.controller(topo)
        got.build_batches(batches(groups, cuts))
    assert (got.leaf.gids, got.leaf.bits, got.pod.gids, got.pod.bits, got.rests) == \
        (ref.leaf.gids, ref.leaf.bits, ref.pod.gids, ref.pod.bits, ref.rests)
    assert list(got.published.values()) == list(ref.published.values())
    names = [tuple(topo.hosts[i] for i in g) for g in groups]
    plans = strategy.plan(topo, list(enumerate(names)))
    index = {h: i for i, h in enumerate(topo.hosts)}
    layout = strategy.layout(topo)
    assert list(got.published.values()) == [pack_group(p.rules, layout, index) for p in plans]


def batches(groups: list[list[int]], cuts: list[int]):
    start = 0
    for end in cuts:
        part = groups[start:end]
        offsets = np.zeros(len(part) + 1, np.int64)
        np.cumsum([len(g) for g in part], out=offsets[1:])
        yield start, offsets, np.array([h for g in part for h in g], np.int64)
        start = end


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), params=tight_params(), churn=st.booleans(),
       batch=st.integers(1, 80))
def test_tenants_install_in_batches_is_the_install_group_by_group(seed, params, churn, batch):
    """A tenants install (batched host indices, batched clustering, ``batch`` groups at a
    time) equals the groups installed one by one from their host indices."""
    topo = load_topology("elmo:pods=3,leaves=4,hosts=4,spines=2,cores=2")
    spec = ("tenants-churn:groups=70,tenants=9,vms_max=60,events_per_step=20" if churn
            else "tenants:groups=70,tenants=9,vms_max=60")
    pop = receiver_model(spec).population(topo, child_rng(seed, "pop"))
    if churn:
        pop = pop.at(3)
    strategy = make_strategy("elmo", params)
    strategy.use_caches(Caches())
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(elmo_module, "_BATCH", batch)
            state = strategy.install(topo, Knowledge(population=pop, seed=seed,
                                                     caches=strategy.caches))
    except SpecError:
        return
    one_by_one, _ = make_strategy("elmo", params)._install(
        strategy.fabric(topo), _table_hosts(pop.groups(), topo))
    assert state.switches == one_by_one.switches
    assert list(state.publisher_info[INFO_GROUPS].values()) == \
        list(one_by_one.publisher_info[INFO_GROUPS].values())


LAYOUT = ElmoLayout(leaf_down=5, leaf_up=2, spine_down=3, spine_up=2, core_down=2, leaf_id=4,
                    pod_id=2, max_ids=3)


@settings(max_examples=300, deadline=None)
@given(rules=st.lists(st.builds(PRule, st.lists(st.integers(-1, 17), max_size=4).map(tuple),
                                st.integers(-1, 40)), max_size=5),
       default=st.none() | st.integers(-1, 40), layer=st.sampled_from(["spine", "leaf"]))
def test_encode_layer_is_the_reference(rules, default, layer):
    """The same bytes, or the same error, as encode_layer_reference."""
    try:
        want = encode_layer_reference(rules, default, LAYOUT, layer)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc).replace("(", r"\(").replace(")", r"\)")):
            encode_layer(rules, default, LAYOUT, layer)
        return
    assert encode_layer(rules, default, LAYOUT, layer) == want

