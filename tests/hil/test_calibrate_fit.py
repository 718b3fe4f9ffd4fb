"""The timing fit of ``stackcast hil calibrate`` (pure part, no BMv2)."""

from __future__ import annotations

import numpy as np
import pytest

from hil.calibrate_fit import Sample, fit_timing, split


def _samples(base: float, per_pass: float, per_copy: float, noise: float, n: int = 80):
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        passes, copies = 1 + i % 5, 1 + (i // 5) % 4
        lat = base + passes * per_pass + (copies - 1) * per_copy
        out.append(Sample(passes, copies, max(0.0, lat + rng.normal(0, noise))))
    return out


def test_exact_linear_latencies_are_recovered():
    fit = fit_timing(*split(_samples(50e-6, 12e-6, 3e-6, 0.0)))
    assert fit.switch_latency_s == pytest.approx(50e-6)
    assert fit.pass_s == pytest.approx(12e-6)
    assert fit.pre_delay_s == pytest.approx(3e-6)
    assert fit.max_abs_error_s == pytest.approx(0.0, abs=1e-12)
    assert fit.fitted + fit.held_out == 80 and fit.held_out == 20


def test_noise_shows_up_as_held_out_error():
    fit = fit_timing(*split(_samples(50e-6, 12e-6, 3e-6, 2e-6)))
    assert fit.pass_s == pytest.approx(12e-6, rel=0.15)
    assert 0 < fit.mean_abs_error_s < 5e-6
    assert fit.predict(3, 1) == pytest.approx(fit.switch_latency_s + 3 * fit.pass_s)


def test_negative_coefficients_are_clamped_and_refitted():
    # latency falls with copies: a negative per-copy cost has no meaning
    fit = fit_timing(*split(_samples(50e-6, 10e-6, -4e-6, 0.0)))
    assert fit.pre_delay_s == 0.0
    assert fit.pass_s > 0 and fit.switch_latency_s > 0
    assert set(fit.timed_params()) == {"switch_latency_s", "pass_s", "pre_delay_s"}


def test_split_is_deterministic_and_disjoint():
    s = _samples(1e-5, 1e-5, 0.0, 0.0, n=10)
    train, held = split(s, 4)
    assert held == [s[3], s[7]] and len(train) == 8


@pytest.mark.parametrize("bad, field", [
    (lambda: Sample(0, 1, 1e-5), "passes"),
    (lambda: Sample(1, 0, 1e-5), "copies"),
    (lambda: Sample(1, 1, -1.0), "latency_s"),
    (lambda: fit_timing(*split(_samples(1e-5, 1e-5, 0, 0, n=3))), "at least"),
    (lambda: fit_timing(*split([Sample(2, 1, 1e-5)] * 12)), "two different"),
])
def test_bad_input_names_the_problem(bad, field):
    with pytest.raises(ValueError, match=field):
        bad()
