"""The per-visit latency model of ``stackcast hil calibrate`` (pure part, no BMv2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hil.bmv2_work import ProgramShape, Work
from hil.calibrate_fit import (
    PER_COPY,
    PER_PASS,
    TERM_NAMES,
    TERMS,
    Sample,
    amounts,
    engine_keys,
    evaluate,
    fit,
    held_out_predictions,
    nnls,
    notification_errors,
    spread,
)


def _brute_force_nnls(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest residual of any least-squares solution on a column subset that
    is non-negative: the NNLS optimum (its support is such a subset)."""
    best = float(np.linalg.norm(b))
    for k in range(1, a.shape[1] + 1):
        for cols in itertools.combinations(range(a.shape[1]), k):
            x = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
            if (x >= -1e-12).all():
                best = min(best, float(np.linalg.norm(a[:, cols] @ x - b)))
    return best


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 5).flatmap(lambda n: st.tuples(
    arrays(np.float64, (n + 3, n), elements=st.floats(-10, 10, width=32)),
    arrays(np.float64, n + 3, elements=st.floats(-10, 10, width=32)))))
def test_nnls_reaches_the_best_non_negative_solution(case):
    a, b = case
    x = nnls(a, b)
    assert (x >= 0).all()
    assert np.linalg.norm(a @ x - b) <= _brute_force_nnls(a, b) + 1e-7 * (1 + np.linalg.norm(b))


def test_nnls_ignores_empty_columns_and_keeps_scale():
    a = np.array([[1.0, 0.0, 1e-6], [2.0, 0.0, 0.0], [0.0, 0.0, 3e-6]])
    x = nnls(a, a @ np.array([2.0, 0.0, 5e5]))
    assert x == pytest.approx([2.0, 0.0, 5e5])


def _samples(coef: dict[str, float], n: int = 120, seed: int = 3,
             groups: int = 4) -> list[Sample]:
    rng = np.random.default_rng(seed)
    c = np.array([coef.get(name, 0.0) for name in TERM_NAMES])
    out = []
    for i in range(n):
        x = rng.integers(0, 9, len(TERMS)).astype(float)
        x[0] = 1.0
        x[1] = max(x[1], 1.0)
        out.append(Sample(f"st{i % groups}", f"fam{i % 2}", i // groups, f"s{i}", tuple(x),
                          float(x @ c), f"prog{i % 2}", int(x[1]) + i % 3))
    return out


TRUE = {"visit_s": 80e-6, "chain_pass_s": 100e-6, "copy_s": 15e-6, "phv_reset_s": 40e-6,
        "keyless_s": 1e-6, "ternary_s": 4e-6, "byte_s": 0.2e-6}


def test_exact_latencies_are_recovered_and_predicted_held_out():
    samples = _samples(TRUE)
    model = fit(samples)
    for name in TERM_NAMES:
        assert model.coefficients[name] == pytest.approx(TRUE.get(name, 0.0), abs=1e-12)
    for by in ("strategy", "family"):
        h = evaluate(samples, by)
        assert h.median_rel_error == pytest.approx(0.0, abs=1e-9)
        assert set(h.per_strategy) == {"st0", "st1", "st2", "st3"}


def test_held_out_groups_are_predicted_by_fits_without_them():
    samples = _samples(TRUE)
    # strategy st0 costs twice as much per chain pass: only a fit that saw it can know
    samples = [s if s.strategy != "st0" else Sample(
        s.strategy, s.family, s.notification, s.switch, s.x,
        s.latency_s + s.x[1] * TRUE["chain_pass_s"]) for s in samples]
    predicted = held_out_predictions(samples, lambda s: s.strategy)
    others = fit([s for s in samples if s.strategy != "st0"])
    for s, p in zip(samples, predicted, strict=True):
        if s.strategy == "st0":
            assert p == pytest.approx(others.predict(s.x))
    h = evaluate(samples, "strategy")
    assert h.per_strategy["st0"] > 0.1
    assert evaluate(samples, "strategy").median_rel_error > 0


def test_notification_errors_sum_the_visits_of_each_notification():
    a = Sample("x", "f", 1, "s1", (1.0,) * len(TERMS), 1.0)
    b = Sample("x", "f", 1, "s2", (1.0,) * len(TERMS), 3.0)
    c = Sample("y", "f", 1, "s1", (1.0,) * len(TERMS), 2.0)
    errors = notification_errors([a, b, c], [2.0, 3.0, 1.0])
    assert sorted(errors) == pytest.approx([0.25, 0.5])


def test_amounts_follow_the_work_and_the_program_shape():
    shape = ProgramShape("p", {}, {}, headers=500, fields=1000)
    work = Work(ingress=3, egress=4, parses=4, replicas=2, transmitted=2, stack_shifts=3000,
                keyless=10, exact=3, ternary=1, lpm=0, range=2, scanned_entries=50,
                primitives=40, parsed_bytes=100, transmitted_bytes=140)
    x = dict(zip(TERM_NAMES, amounts(work, shape, chain=2), strict=True))
    assert x == {"visit_s": 1, "chain_pass_s": 2, "copy_s": 2, "replica_s": 2,
                 "phv_reset_s": 2.0, "phv_copy_s": 1.0, "stack_shift_s": 3.0,
                 "keyless_s": 10, "exact_s": 3, "ternary_s": 1, "lpm_s": 0, "range_s": 2,
                 "scan_entry_s": 50, "primitive_s": 40, "byte_s": 240}
    with pytest.raises(ValueError, match="chain"):
        amounts(work, shape, chain=0)


def test_engine_keys_split_the_fit_into_per_pass_and_per_copy_time():
    samples = _samples(TRUE, n=40)
    model = fit(samples)
    keys = engine_keys(samples, model)
    assert set(keys) == {"prog0", "prog1"}
    idx = {n: i for i, n in enumerate(TERM_NAMES)}
    group = [s for s in samples if s.program == "prog0"]
    pass_time = sum(TRUE.get(n, 0) * s.x[idx[n]] for s in group for n in PER_PASS)
    copy_time = sum(TRUE.get(n, 0) * s.x[idx[n]] for s in group for n in PER_COPY)
    copies = sum(s.x[idx["copy_s"]] for s in group)
    k = keys["prog0"]
    assert k["pass_s"] == pytest.approx(pass_time / sum(s.passes for s in group))
    assert k["pre_delay_s"] == pytest.approx(copy_time / copies)
    assert k["switch_latency_s"] == pytest.approx(TRUE["visit_s"] + k["pre_delay_s"])
    assert k["pass_delay_s"] == pytest.approx(TRUE["chain_pass_s"])


def test_spread_is_range_over_median():
    assert spread([1.0, 1.1, 0.9]) == pytest.approx(0.2)
    assert spread([0.0, 0.0]) == 0.0


@pytest.mark.parametrize("bad, message", [
    (lambda: Sample("s", "f", 0, "s1", (1.0,), 1e-5), "term amounts"),
    (lambda: Sample("s", "f", 0, "s1", (1.0,) * len(TERMS), 0.0), "latency_s"),
    (lambda: fit(_samples(TRUE, n=5)), "at least"),
    (lambda: evaluate(_samples(TRUE, groups=1), "strategy"), "two groups"),
    (lambda: evaluate(_samples(TRUE), "switch"), "strategy' or 'family"),
])
def test_bad_input_names_the_problem(bad, message):
    with pytest.raises(ValueError, match=message):
        bad()
