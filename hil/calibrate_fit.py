"""Fit the timed engine's switch timing to latencies measured on BMv2.

``stackcast hil calibrate`` (:mod:`hil.calibrate`) sends frames whose
programs need a known number of pipeline passes and emit a known number of
egress copies through one ``simple_switch_grpc`` and records, per frame, the
time from injection to the last copy leaving. This module is the pure part:
it fits the per-visit latency model of :class:`sim.engines.timed.config.TimedConfig`

    latency = switch_latency_s + passes x pass_s + (copies - 1) x pre_delay_s

by least squares (coefficients clamped at zero: a negative service time has
no meaning, so a clamped coefficient is refitted without it), and reports
the model's error on held-out samples. The timed engine's own use of these
three fields is documented in :mod:`sim.engines.timed.config` (seed 000 §3.5.4 gives
the analytic defaults: 10 µs per pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: The TimedConfig fields the fit sets, in the order of the design matrix.
FIELDS = ("switch_latency_s", "pass_s", "pre_delay_s")


@dataclass(frozen=True, slots=True)
class Sample:
    """One measured switch visit: passes run, copies emitted, latency seen."""

    passes: int
    copies: int
    latency_s: float

    def __post_init__(self) -> None:
        if self.passes < 1:
            raise ValueError(f"passes must be >= 1, got {self.passes}")
        if self.copies < 1:
            raise ValueError(f"copies must be >= 1, got {self.copies}")
        if not self.latency_s >= 0:
            raise ValueError(f"latency_s must be >= 0, got {self.latency_s}")


@dataclass(frozen=True, slots=True)
class Fit:
    """Fitted timing and its error on the samples held out of the fit."""

    switch_latency_s: float
    pass_s: float
    pre_delay_s: float
    fitted: int
    held_out: int
    mean_abs_error_s: float
    median_rel_error: float
    max_abs_error_s: float

    def predict(self, passes: int, copies: int) -> float:
        return self.switch_latency_s + passes * self.pass_s + (copies - 1) * self.pre_delay_s

    def timed_params(self) -> dict[str, float]:
        """The ``[timed]`` spec keys this fit sets (see sim.engines.timed.config)."""
        return {f: getattr(self, f) for f in FIELDS}


def _design(samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[1.0, s.passes, s.copies - 1] for s in samples])
    y = np.array([s.latency_s for s in samples])
    return x, y


def _nonneg_lstsq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with coefficients >= 0 (drop a negative one and refit)."""
    active = list(range(x.shape[1]))
    coef = np.zeros(x.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(x[:, active], y, rcond=None)
        if (sol >= 0).all():
            coef[active] = sol
            return coef
        active.pop(int(np.argmin(sol)))
    return coef


def split(samples: Sequence[Sample], hold_every: int = 4) -> tuple[list[Sample], list[Sample]]:
    """Deterministic split: every ``hold_every``-th sample is held out."""
    if hold_every < 2:
        raise ValueError(f"hold_every must be >= 2, got {hold_every}")
    held = [s for i, s in enumerate(samples) if i % hold_every == hold_every - 1]
    fit = [s for i, s in enumerate(samples) if i % hold_every != hold_every - 1]
    return fit, held


def fit_timing(train: Sequence[Sample], held: Sequence[Sample]) -> Fit:
    """Fit on ``train``; report the error on ``held`` (see :func:`split`)."""
    if len(train) < 3 or not held:
        raise ValueError(f"need at least 3 samples to fit and 1 held out, got {len(train)} "
                         f"and {len(held)}")
    if len({(s.passes, s.copies) for s in train}) < 2:
        raise ValueError("samples need at least two different (passes, copies) shapes")
    coef = _nonneg_lstsq(*_design(train))
    x, y = _design(held)
    err = x @ coef - y
    rel = np.abs(err) / np.maximum(y, 1e-12)
    timing = dict(zip(FIELDS, (float(c) for c in coef), strict=True))
    return Fit(switch_latency_s=timing["switch_latency_s"], pass_s=timing["pass_s"],
               pre_delay_s=timing["pre_delay_s"], fitted=len(train), held_out=len(held),
               mean_abs_error_s=float(np.mean(np.abs(err))),
               median_rel_error=float(np.median(rel)),
               max_abs_error_s=float(np.max(np.abs(err))))
