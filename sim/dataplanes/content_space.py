"""Content model: attribute space, boxes, subscriptions, events and their distributions.

Pure numpy code. A content-based workload has ``d`` integer attributes with
domains ``[0, 2**bits)``; an *event* is a point (one value per attribute);
a *subscription* or *advertisement* is a conjunction of range and equality
predicates, i.e. a box of inclusive ``(low, high)`` bounds per attribute
(an unconstrained attribute spans its whole domain).

Named distributions (:class:`ContentParams` ``dist``):

- ``uniform``: box centres and events uniform (seed 001 §6 "uniform").
- ``zipf``: boxes and events around ``hotspots`` centres; the hotspot index
  follows Zipf(``zipf``) over the ranks, the offset per attribute is Gaussian
  with standard deviation ``spread`` x domain (seed 001 "Zipfian", digest
  A5.9). ``hotspot_mode="per_host"`` gives every subscriber its own hotspot
  for its subscriptions (seed 004 B4).
- ``mixed``: uniform subscriptions and advertisements, Zipf events (seed 001).
- ``drift``: ``zipf`` whose hotspot centres move by up to ``drift`` x domain
  per attribute every ``drift_every`` events (seed 001 Fig. 6.13).
- ``siena``: a Siena-like generator with explicit knobs (seed 003 D14):
  ``preds`` predicates per subscription on distinct attributes, operator
  mix ``ops`` = weights of (=, <, >, range), constants from a pool of
  ``values`` evenly spaced values per attribute drawn with Zipf(``zipf``);
  event values are drawn from the same pool.

Box sides of the geometric distributions are ``U(0, 2 width)`` x domain
(mean ``width``); ``preds`` > 0 constrains only that many attributes
(chosen uniformly), the others are wildcards.

Deviations: the Zipf/hotspot construction, the box widths and the Siena-like
knobs are the digests' recommendations (the seeds leave them open).

References
----------
Seed 001 §2 (event space, boxes), §6.1 (6 dimensions, [0, 4096], uniform /
Zipf with 5 hotspots / mixed), Fig. 6.13 (drift); seed 004 §5 (uniform and
per-subscriber Zipf subscriptions); seed 003 §7.4 (Siena generator);
digests seed001-004 A4, A5.9, B6.1 and seed002-003 D14.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from topologies.registry import check

Bounds = tuple[tuple[int, int], ...]
Event = tuple[int, ...]
Op = Literal["==", "<", ">"]

DISTRIBUTIONS = ("uniform", "zipf", "mixed", "drift", "siena")


@dataclass(frozen=True, slots=True)
class AttributeSpace:
    """``d`` integer attributes; attribute ``i`` ranges over ``[0, 2**bits[i])``."""

    names: tuple[str, ...]
    bits: tuple[int, ...]

    def __post_init__(self) -> None:
        check(len(self.names) == len(self.bits) > 0, "attribute space: one width per name")
        check(all(1 <= b <= 32 for b in self.bits), "attribute widths must be in [1, 32] bits")

    @classmethod
    def regular(cls, dims: int, bits: int) -> AttributeSpace:
        """``dims`` attributes ``a0..`` of ``bits`` bits each."""
        return cls(tuple(f"a{i}" for i in range(dims)), (bits,) * dims)

    @property
    def d(self) -> int:
        return len(self.names)

    @property
    def maxima(self) -> tuple[int, ...]:
        return tuple((1 << b) - 1 for b in self.bits)

    @property
    def full(self) -> Box:
        return Box(tuple((0, m) for m in self.maxima))

    @property
    def volume(self) -> int:
        return 1 << sum(self.bits)


@dataclass(frozen=True, slots=True)
class Box:
    """Inclusive integer bounds per attribute: a subscription's subspace."""

    bounds: Bounds

    def contains(self, event: Sequence[int]) -> bool:
        return all(lo <= v <= hi for (lo, hi), v in zip(self.bounds, event, strict=True))

    def intersect(self, other: Box) -> Box | None:
        """The common sub-box, or None if the boxes share no point."""
        out = []
        for (a, b), (c, e) in zip(self.bounds, other.bounds, strict=True):
            lo, hi = max(a, c), min(b, e)
            if lo > hi:
                return None
            out.append((lo, hi))
        return Box(tuple(out))

    def covers(self, other: Box) -> bool:
        """True if ``other`` lies inside this box (equal boxes cover each other)."""
        return all(a <= c and e <= b for (a, b), (c, e) in
                   zip(self.bounds, other.bounds, strict=True))

    def overlaps(self, other: Box) -> bool:
        return all(max(a, c) <= min(b, e) for (a, b), (c, e) in
                   zip(self.bounds, other.bounds, strict=True))

    @property
    def volume(self) -> int:
        v = 1
        for lo, hi in self.bounds:
            v *= hi - lo + 1
        return v

    def predicates(self, space: AttributeSpace) -> tuple[tuple[int, Op, int], ...]:
        """Atomic predicates ``(attribute, op, constant)`` whose conjunction is the box.

        ``lo == hi`` gives ``==``; otherwise ``> lo-1`` when ``lo > 0`` and
        ``< hi+1`` when ``hi`` is below the maximum (strict, as Camus reads
        them, seed 003 D4).
        """
        out: list[tuple[int, Op, int]] = []
        for i, ((lo, hi), top) in enumerate(zip(self.bounds, space.maxima, strict=True)):
            if lo == hi:
                out.append((i, "==", lo))
                continue
            if lo > 0:
                out.append((i, ">", lo - 1))
            if hi < top:
                out.append((i, "<", hi + 1))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Subscription:
    """One subscription: its id (arrival order), subscriber host and box."""

    sub_id: int
    host: str
    box: Box


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentParams:
    """Parameters of a content workload (see the module docstring).

    Parameters
    ----------
    dims, bits : int
        Number of attributes and their width (domain ``[0, 2**bits)``).
    dist : str
        One of ``uniform``, ``zipf``, ``mixed``, ``drift``, ``siena``.
    width : float
        Mean box side as a fraction of the domain (geometric distributions).
    preds : int
        Constrained attributes per subscription (0 = all).
    hotspots, zipf, spread : int, float, float
        Number of hotspots, Zipf exponent over their ranks (or over the
        Siena constants), Gaussian offset around a hotspot (domain fraction).
    hotspot_mode : str
        ``shared`` (seed 001) or ``per_host`` (seed 004: each subscriber's
        subscriptions cluster around its own hotspot).
    drift, drift_every : float, int
        Hotspot shift (domain fraction per attribute) every ``drift_every``
        events (``drift`` distribution).
    ops : tuple of float
        Siena operator weights for ``=``, ``<``, ``>``, range.
    values : int
        Siena constants per attribute.
    adv_width : float
        Advertisement side as a fraction of the domain (1 = whole space).
    """

    dims: int = 2
    bits: int = 12
    dist: Literal["uniform", "zipf", "mixed", "drift", "siena"] = "uniform"
    width: float = 0.2
    preds: int = 0
    hotspots: int = 5
    zipf: float = 1.0
    spread: float = 0.05
    hotspot_mode: Literal["shared", "per_host"] = "shared"
    drift: float = 0.1
    drift_every: int = 10_000
    ops: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)
    values: int = 100
    adv_width: float = 1.0

    def __post_init__(self) -> None:
        check(1 <= self.dims <= 16, f"dims must be in [1, 16]; got {self.dims}")
        check(1 <= self.bits <= 32, f"bits must be in [1, 32]; got {self.bits}")
        check(0 < self.width <= 1, f"width must be in (0, 1]; got {self.width}")
        check(0 <= self.preds <= self.dims, f"preds must be in [0, dims]; got {self.preds}")
        check(self.hotspots >= 1, "hotspots must be >= 1")
        check(self.zipf >= 0, "zipf must be >= 0")
        check(self.spread > 0, "spread must be > 0")
        check(0 <= self.drift <= 1, "drift must be in [0, 1]")
        check(self.drift_every >= 1, "drift_every must be >= 1")
        check(len(self.ops) == 4 and all(w >= 0 for w in self.ops) and sum(self.ops) > 0,
              "ops must be four non-negative weights (=, <, >, range), not all 0")
        check(self.values >= 2, "values must be >= 2")
        check(0 < self.adv_width <= 1, "adv_width must be in (0, 1]")

    @property
    def space(self) -> AttributeSpace:
        return AttributeSpace.regular(self.dims, self.bits)


def zipf_weights(n: int, exponent: float) -> np.ndarray:
    """Normalised Zipf weights ``1/k**s`` over ranks ``1..n``."""
    w = 1.0 / np.arange(1, n + 1, dtype=float) ** exponent
    return w / w.sum()


class ContentGenerator:
    """Draws boxes and events of one workload.

    Parameters
    ----------
    params : ContentParams
    rng : numpy.random.Generator
        Fixes the hotspots and the Siena constant pool.
    """

    def __init__(self, params: ContentParams, rng: np.random.Generator) -> None:
        self.params = params
        self.space = params.space
        self.domain = 1 << params.bits
        self.hotspot_centres = rng.integers(0, self.domain, size=(params.hotspots, params.dims))
        self.hotspot_p = zipf_weights(params.hotspots, params.zipf)
        pool = np.linspace(0, self.domain - 1, params.values).round().astype(np.int64)
        self.pool = pool
        self.pool_p = zipf_weights(params.values, params.zipf)
        # the constant of rank k differs per attribute: one permutation each
        self.pool_order = np.stack([rng.permutation(params.values) for _ in range(params.dims)])
        drift_seed = int(rng.integers(1 << 62))
        self._drift_rng_seed = drift_seed
        self._drift_cache: dict[int, np.ndarray] = {0: self.hotspot_centres}

    # -- hotspots -----------------------------------------------------------
    def centres_at(self, t: int) -> np.ndarray:
        """Hotspot centres after ``t`` events (moves only under ``drift``)."""
        if self.params.dist != "drift":
            return self.hotspot_centres
        epoch = t // self.params.drift_every
        if epoch not in self._drift_cache:
            prev = self.centres_at((epoch - 1) * self.params.drift_every)
            rng = np.random.Generator(np.random.PCG64([self._drift_rng_seed, epoch]))
            step = rng.uniform(-self.params.drift, self.params.drift, size=prev.shape)
            moved = np.clip(prev + np.round(step * self.domain).astype(np.int64),
                            0, self.domain - 1)
            self._drift_cache[epoch] = moved
        return self._drift_cache[epoch]

    def _around(self, centre: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        off = rng.normal(0.0, self.params.spread * self.domain, size=centre.shape)
        return np.clip(np.round(centre + off).astype(np.int64), 0, self.domain - 1)

    def _hotspot_point(self, rng: np.random.Generator, t: int = 0) -> np.ndarray:
        k = int(rng.choice(self.params.hotspots, p=self.hotspot_p))
        return self._around(self.centres_at(t)[k], rng)

    # -- boxes --------------------------------------------------------------
    def _attrs(self, rng: np.random.Generator) -> list[int]:
        p = self.params
        if p.preds == 0:
            return list(range(p.dims))
        return sorted(int(a) for a in rng.choice(p.dims, size=p.preds, replace=False))

    def _box_at(self, centre: np.ndarray | None, rng: np.random.Generator,
                attrs: Iterable[int], width: float) -> Box:
        top = self.domain - 1
        bounds = [(0, top)] * self.params.dims
        for a in attrs:
            side = max(1, int(round(rng.uniform(0.0, 2.0 * width) * self.domain)))
            side = min(side, self.domain)
            if centre is None:
                lo = int(rng.integers(0, self.domain - side + 1))
            else:
                lo = int(np.clip(int(centre[a]) - side // 2, 0, self.domain - side))
            bounds[a] = (lo, lo + side - 1)
        return Box(tuple(bounds))

    def subscription_box(self, rng: np.random.Generator, host_hotspot: int | None = None) -> Box:
        """One subscription box under the workload's distribution."""
        p = self.params
        if p.dist == "siena":
            return self._siena_box(rng)
        attrs = self._attrs(rng)
        if p.dist in ("uniform", "mixed"):
            return self._box_at(None, rng, attrs, p.width)
        if p.hotspot_mode == "per_host" and host_hotspot is not None:
            centre = self._around(self.hotspot_centres[host_hotspot % p.hotspots], rng)
        else:
            centre = self._hotspot_point(rng)
        return self._box_at(centre, rng, attrs, p.width)

    def advertisement_box(self, rng: np.random.Generator) -> Box:
        p = self.params
        if p.adv_width >= 1.0:
            return self.space.full
        centre = None if p.dist in ("uniform", "mixed", "siena") else self._hotspot_point(rng)
        return self._box_at(centre, rng, range(p.dims), p.adv_width / 2)

    def _const(self, attr: int, rng: np.random.Generator) -> int:
        rank = int(rng.choice(self.params.values, p=self.pool_p))
        return int(self.pool[self.pool_order[attr, rank]])

    def _siena_box(self, rng: np.random.Generator) -> Box:
        p = self.params
        top = self.domain - 1
        bounds = [(0, top)] * p.dims
        weights = np.asarray(p.ops, dtype=float) / sum(p.ops)
        for a in self._attrs(rng):
            op = int(rng.choice(4, p=weights))
            c = self._const(a, rng)
            if op == 0:
                bounds[a] = (c, c)
            elif op == 1:
                bounds[a] = (0, max(c - 1, 0))
            elif op == 2:
                bounds[a] = (min(c + 1, top), top)
            else:
                c2 = self._const(a, rng)
                bounds[a] = (min(c, c2), max(c, c2))
        return Box(tuple(bounds))

    # -- events -------------------------------------------------------------
    def event(self, rng: np.random.Generator, adv: Box, t: int = 0) -> Event:
        """One event inside advertisement ``adv`` at event time ``t``."""
        p = self.params
        lo = np.asarray([b[0] for b in adv.bounds])
        hi = np.asarray([b[1] for b in adv.bounds])
        if p.dist == "uniform":
            point = rng.integers(lo, hi + 1)
        elif p.dist == "siena":
            point = np.asarray([self._const(a, rng) for a in range(p.dims)])
        else:
            point = self._hotspot_point(rng, t)
        return tuple(int(v) for v in np.clip(point, lo, hi))

    def events(self, rng: np.random.Generator, adv: Box, count: int, t: int = 0
               ) -> list[Event]:
        return [self.event(rng, adv, t) for _ in range(count)]


class SubscriptionIndex:
    """Vectorised matching of events against a fixed list of subscriptions."""

    def __init__(self, subscriptions: Sequence[Subscription], dims: int) -> None:
        self.subscriptions = tuple(subscriptions)
        n = len(self.subscriptions)
        self.lo = np.zeros((n, dims), dtype=np.int64)
        self.hi = np.zeros((n, dims), dtype=np.int64)
        for i, s in enumerate(self.subscriptions):
            self.lo[i] = [b[0] for b in s.box.bounds]
            self.hi[i] = [b[1] for b in s.box.bounds]
        self.hosts = np.asarray([s.host for s in self.subscriptions], dtype=object)

    def matching(self, event: Sequence[int]) -> np.ndarray:
        """Indices of the subscriptions that contain ``event``."""
        if not self.subscriptions:
            return np.zeros(0, dtype=np.int64)
        e = np.asarray(event, dtype=np.int64)
        hit = np.all((self.lo <= e) & (e <= self.hi), axis=1)
        return np.flatnonzero(hit)

    def hosts_matching(self, event: Sequence[int]) -> frozenset[str]:
        return frozenset(self.hosts[self.matching(event)].tolist())
