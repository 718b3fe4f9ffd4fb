"""The per-visit latency model of ``stackcast hil calibrate``: terms, fit, held-out error.

Pure (numpy only). :mod:`hil.calibrate` measures, for every switch visit of
its workload, the latency on BMv2 and what BMv2 did (:class:`hil.bmv2_work.Work`,
counted from BMv2's trace log of the same visit); this module turns a visit
into the terms of the model, fits them and evaluates the fit on strategies
and program families it was not fitted on.

The model (one line per term, :data:`TERMS`)::

    latency = sum over terms of coefficient x amount

The amounts are what BMv2 did; the coefficients are fitted by non-negative
least squares on relative errors (a negative cost has no meaning, and a
visit of 100 µs matters as much as one of 2 ms). The terms and why BMv2
needs them (simple_switch 1.15.5, read from its source and a ``perf``
profile):

* a fixed cost per visit and per frame sent (reception, the transmit
  thread, the wake-ups between them);
* the passes on the chain of the last copy to leave: every such pass is
  handed from the ingress thread to an egress thread and back (recirculation),
  so the chain's length, not the number of passes, sets the latency when
  clones run side by side (the model's pass trace gives the chain:
  ``Emit.depth``);
* per parser run, a cost per header instance of the program's PHV (every
  parse marks every header invalid first), and per copy the replication
  engine makes, a cost per header instance too (``PHV::copy_headers`` visits
  every header and copies its validity; the fields only of valid and metadata
  headers, few next to the PHV's header count; docs/FIDELITY.md, Timing);
* fields swapped by header-stack pops and pushes (every element of the
  stack moves, valid or not);
* table applies by kind (keyless, exact, ternary, LPM, range) and the
  entries BMv2 scans for ternary and range tables (linear match units);
* primitives executed and bytes parsed or sent.

References
----------
Seed 000 §3.5.4 (the per-pass delay the timed engine models); BMv2
``targets/simple_switch/simple_switch.cpp`` (threads, cloning,
recirculation), ``src/bm_sim/phv.cpp`` and ``headers.cpp`` (PHV reset, copy
and stack shifts).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hil.bmv2_work import ProgramShape, Work

#: The model's terms: name (the coefficient's name, in seconds per unit) and unit.
TERMS: tuple[tuple[str, str], ...] = (
    ("visit_s", "visit"),
    ("chain_pass_s", "pass on the chain of the last copy"),
    ("copy_s", "frame sent"),
    ("replica_s", "copy made by the replication engine (multicast replica or clone)"),
    ("phv_reset_s", "parser run x 1,000 PHV header instances"),
    ("phv_copy_s", "replication-engine copy x 1,000 PHV header instances"),
    ("stack_shift_s", "1,000 header-stack fields shifted by pops and pushes"),
    ("keyless_s", "apply of a table without key"),
    ("exact_s", "apply of an exact table"),
    ("ternary_s", "apply of a ternary table"),
    ("lpm_s", "apply of an LPM table"),
    ("range_s", "apply of a range table"),
    ("scan_entry_s", "entry scanned in a ternary or range table"),
    ("primitive_s", "primitive statement executed"),
    ("byte_s", "byte parsed or sent"),
)
TERM_NAMES: tuple[str, ...] = tuple(name for name, _ in TERMS)


def amounts(work: Work, shape: ProgramShape, chain: int) -> tuple[float, ...]:
    """The amount of every term (:data:`TERMS` order) of one visit.

    ``chain`` is the number of passes on the chain of the visit's last copy
    (the largest ``Emit.depth`` of the model's result).
    """
    if chain < 1:
        raise ValueError(f"chain must be >= 1 pass, got {chain}")
    copies = work.replicas
    return (1.0, float(chain), float(work.transmitted), float(copies),
            work.parses * shape.headers / 1000, copies * shape.headers / 1000,
            work.stack_shifts / 1000, float(work.keyless), float(work.exact),
            float(work.ternary), float(work.lpm), float(work.range),
            float(work.scanned_entries), float(work.primitives),
            float(work.parsed_bytes + work.transmitted_bytes))


@dataclass(frozen=True, slots=True)
class Sample:
    """One timed visit: where it comes from, its term amounts, its latency."""

    strategy: str
    family: str
    notification: int
    switch: str
    x: tuple[float, ...]
    latency_s: float
    program: str = ""
    passes: int = 1

    def __post_init__(self) -> None:
        if len(self.x) != len(TERMS):
            raise ValueError(f"a sample needs {len(TERMS)} term amounts, got {len(self.x)}")
        if not self.latency_s > 0:
            raise ValueError(f"latency_s must be > 0, got {self.latency_s}")


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """Non-negative least squares: argmin ||a x - b|| subject to x >= 0.

    Lawson and Hanson's active-set algorithm (Solving Least Squares
    Problems, 1974, ch. 23), on columns scaled to unit norm.
    """
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    m, n = a.shape
    norms = np.linalg.norm(a, axis=0)
    scale = np.where(norms > 0, norms, 1.0)
    a = a / scale
    x = np.zeros(n)
    passive = np.zeros(n, bool)
    usable = norms > 0
    tol = 10 * np.finfo(float).eps * max(m, n)
    w = a.T @ (b - a @ x)
    for _ in range(max_iter or 3 * n + 10):
        candidates = usable & ~passive & (w > tol)
        if not candidates.any():
            break
        passive[np.argmax(np.where(candidates, w, -np.inf))] = True
        while True:
            s = np.zeros(n)
            s[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (s[passive] > tol).all():
                break
            bad = passive & (s <= tol)
            step = x[bad] - s[bad]  # > 0: x > 0 on the passive set, s <= 0 here
            alpha = float(np.min(np.where(step > 0, x[bad] / np.where(step > 0, step, 1.0),
                                          0.0)))
            x = x + alpha * (s - x)
            passive &= x > tol
        x = s
        w = a.T @ (b - a @ x)
    return x / scale


@dataclass(frozen=True, slots=True)
class Fit:
    """Coefficients (seconds per unit of each term) fitted on ``fitted`` visits."""

    coefficients: Mapping[str, float]
    fitted: int

    def predict(self, x: Sequence[float]) -> float:
        return float(sum(self.coefficients[n] * v for n, v in zip(TERM_NAMES, x, strict=True)))


def fit(samples: Sequence[Sample]) -> Fit:
    """Fit every term on ``samples`` (minimising the squared relative error)."""
    if len(samples) < len(TERMS):
        raise ValueError(f"need at least {len(TERMS)} timed visits to fit, got {len(samples)}")
    x = np.array([s.x for s in samples])
    y = np.array([s.latency_s for s in samples])
    coef = nnls(x / y[:, None], np.ones(len(y)))
    return Fit(dict(zip(TERM_NAMES, (float(c) for c in coef), strict=True)), len(samples))


def held_out_predictions(samples: Sequence[Sample], group: Callable[[Sample], str]
                         ) -> list[float]:
    """For every sample, the latency predicted by a fit on the samples of the
    *other* groups (``group``: a strategy, a program family)."""
    groups = sorted({group(s) for s in samples})
    if len(groups) < 2:
        raise ValueError(f"held-out prediction needs at least two groups, got {groups}")
    out = [0.0] * len(samples)
    for g in groups:
        train = [s for s in samples if group(s) != g]
        model = fit(train)
        for i, s in enumerate(samples):
            if group(s) == g:
                out[i] = model.predict(s.x)
    return out


def relative_errors(samples: Sequence[Sample], predicted: Sequence[float]) -> list[float]:
    return [abs(p - s.latency_s) / s.latency_s for s, p in zip(samples, predicted, strict=True)]


def notification_errors(samples: Sequence[Sample], predicted: Sequence[float]) -> list[float]:
    """Relative error of the summed switch time of each (strategy, notification)."""
    measured: dict[tuple[str, int], float] = {}
    model: dict[tuple[str, int], float] = {}
    for s, p in zip(samples, predicted, strict=True):
        key = (s.strategy, s.notification)
        measured[key] = measured.get(key, 0.0) + s.latency_s
        model[key] = model.get(key, 0.0) + p
    return [abs(model[k] - measured[k]) / measured[k] for k in measured]


@dataclass(frozen=True, slots=True)
class HeldOut:
    """Errors of fits that did not see the visits they predict."""

    #: what was held out: "strategy" or "family"
    by: str
    median_rel_error: float
    notification_median_rel_error: float
    #: strategy -> median relative error of its visits
    per_strategy: Mapping[str, float]


def evaluate(samples: Sequence[Sample], by: str) -> HeldOut:
    """Leave-one-group-out evaluation, holding out one ``by`` ("strategy" or
    "family") at a time."""
    group: Callable[[Sample], str]
    if by == "strategy":
        group = _strategy_of
    elif by == "family":
        group = _family_of
    else:
        raise ValueError(f"by must be 'strategy' or 'family', got {by!r}")
    predicted = held_out_predictions(samples, group)
    errors = relative_errors(samples, predicted)
    per: dict[str, list[float]] = {}
    for s, e in zip(samples, errors, strict=True):
        per.setdefault(s.strategy, []).append(e)
    return HeldOut(by, statistics.median(errors),
                   statistics.median(notification_errors(samples, predicted)),
                   {k: statistics.median(v) for k, v in per.items()})


def _strategy_of(s: Sample) -> str:
    return s.strategy


def _family_of(s: Sample) -> str:
    return s.family


#: Terms the timed engine charges per pass (``pass_s``) and per copy
#: (``pre_delay_s``) when it runs a program as BMv2 does (:func:`engine_keys`).
PER_PASS = ("phv_reset_s", "stack_shift_s", "keyless_s", "exact_s", "ternary_s", "lpm_s",
            "range_s", "scan_entry_s", "primitive_s", "byte_s")
PER_COPY = ("copy_s", "replica_s", "phv_copy_s")


def engine_keys(samples: Sequence[Sample], model: Fit) -> dict[str, dict[str, float]]:
    """Per program, the timed engine's ``[timed]`` keys that reproduce the fit.

    The engine (:class:`sim.engines.timed.config.TimedConfig`) charges
    ``switch_latency_s`` per arriving frame, ``pass_s`` per pass (serialised in
    the pipeline, as BMv2's one ingress thread serialises them),
    ``pass_delay_s`` after every pass before what it made moves on (BMv2's
    hand-offs between threads: the chain term) and ``i x pre_delay_s`` for the
    i-th of several copies of one pass. The fit's per-pass terms (PHV,
    tables, primitives, bytes) become the program's ``pass_s`` (their time
    over its visits divided by its passes), its per-copy terms its
    ``pre_delay_s``; one copy's time is part of ``switch_latency_s``.
    """
    c = model.coefficients
    index = {n: i for i, n in enumerate(TERM_NAMES)}
    per: dict[str, list[Sample]] = {}
    for s in samples:
        per.setdefault(s.program, []).append(s)
    out = {}
    for program, group in sorted(per.items()):
        passes = sum(s.passes for s in group)
        copies = sum(s.x[index["copy_s"]] for s in group)
        pass_time = sum(c[n] * s.x[index[n]] for s in group for n in PER_PASS)
        copy_time = sum(c[n] * s.x[index[n]] for s in group for n in PER_COPY)
        per_copy = copy_time / copies if copies else 0.0
        out[program] = {"switch_latency_s": c["visit_s"] + per_copy,
                        "pass_s": pass_time / passes if passes else 0.0,
                        "pass_delay_s": c["chain_pass_s"], "pre_delay_s": per_copy}
    return out


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of repeated estimates; 0 when all are 0."""
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid if mid > 0 else 0.0
