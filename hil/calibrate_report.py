"""The JSON and text reports of ``stackcast hil calibrate`` (:mod:`hil.calibrate`).

Figures over repeats: a coefficient or error is the median of the repeats'
values, with every repeat's value and the spread ``(max - min) / median``
(:func:`hil.calibrate_fit.spread`).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from hil.calibrate_fit import TERMS, engine_keys, relative_errors, spread

if TYPE_CHECKING:
    from hil.calibrate import Calibration, Repeat


def _over_repeats(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "per_repeat": values,
            "spread": spread(values)}


def _held_out(repeats: list[Repeat], by: str) -> dict[str, Any]:
    runs = [r.held_out[by] for r in repeats]
    strategies = runs[0].per_strategy
    return {
        "visit_median_rel_error": _over_repeats([h.median_rel_error for h in runs]),
        "notification_median_rel_error": _over_repeats(
            [h.notification_median_rel_error for h in runs]),
        "per_strategy_median_rel_error": {
            s: statistics.median(h.per_strategy[s] for h in runs) for s in strategies},
    }


def _in_sample(r: Repeat) -> float:
    return statistics.median(relative_errors(r.samples, [r.fit.predict(s.x) for s in r.samples]))


def calibration_json(cal: Calibration) -> dict[str, Any]:
    reps = cal.repeats
    out: dict[str, Any] = {
        "settings": cal.settings,
        "strategies": cal.strategies,
        "disagreements": [d.to_json() for d in cal.disagreements],
        "visits_timed": [len(r.samples) for r in reps],
        "load_average": [list(r.load_average) for r in reps],
    }
    if not reps:
        return out
    out["terms"] = {
        name: {"unit": f"seconds per {unit}",
               **_over_repeats([r.fit.coefficients[name] for r in reps])}
        for name, unit in TERMS}
    out["in_sample_median_rel_error"] = _over_repeats([_in_sample(r) for r in reps])
    out["held_out"] = {by: _held_out(reps, by) for by in ("family", "strategy")}
    keys = [engine_keys(r.samples, r.fit) for r in reps]
    out["timed"] = {program: {k: statistics.median(run[program][k] for run in keys)
                              for k in keys[0][program]} for program in keys[0]}
    return out


def _us(v: float) -> str:
    return f"{v * 1e6:.3g}"


def calibration_text(cal: Calibration) -> str:
    j = calibration_json(cal)
    s = cal.settings
    lines = [f"hil calibrate: {len(cal.strategies)} strategies, {s['notifications']} "
             f"notifications each; {s['rounds']} rounds x {s['reps']} sends per visit, "
             f"quantile {s['quantile']}, {s['repeat']} repeat(s); visits timed "
             f"{j['visits_timed']}; {len(cal.disagreements)} disagreeing visits left out"]
    lines += [f"  disagreement: {d.strategy} notification {d.notification} {d.switch} "
              f"({d.during}): {d.detail}" for d in cal.disagreements]
    if "terms" not in j:
        return "\n".join(lines)
    lines.append("term             coefficient (us per unit)  spread   unit")
    for name, t in j["terms"].items():
        lines.append(f"  {name:15s} {_us(t['median']):>10s}  {t['spread']:8.0%}   "
                     f"{t['unit'].removeprefix('seconds per ')}")
    for by in ("family", "strategy"):
        h = j["held_out"][by]
        v, n = h["visit_median_rel_error"], h["notification_median_rel_error"]
        lines.append(f"held out by {by}: median relative error per visit {v['median']:.1%} "
                     f"(repeats {', '.join(f'{x:.1%}' for x in v['per_repeat'])}), per "
                     f"notification {n['median']:.1%}")
        lines.append("  " + ", ".join(f"{k} {e:.1%}" for k, e in
                                      h["per_strategy_median_rel_error"].items()))
    lines.append(f"in sample: median relative error per visit "
                 f"{j['in_sample_median_rel_error']['median']:.1%}")
    lines.append("[timed] keys per program (us): switch_latency_s, pass_s, pass_delay_s, "
                 "pre_delay_s")
    lines += [f"  {p}: " + ", ".join(_us(v) for v in k.values()) for p, k in j["timed"].items()]
    return "\n".join(lines)
