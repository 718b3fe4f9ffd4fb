"""Experiment specs (TOML) and their expansion into cells.

A spec names a grid; every combination is a :class:`Cell` with a stable id and
seed derived from its canonical parameters (SHA-256 of sorted JSON, never
``hash()``), so a cell gives identical rows on every engine and machine.

Example::

    [experiment]
    name = "quickstart"
    description = "Baselines and label stacks on a small jellyfish"
    notifications = 20          # notifications per cell
    seeds = [1, 2]              # replications
    payload_bytes = [50]

    [grid]
    topology = ["jellyfish:switches=32,degree=4,seed=1"]
    strategy = ["unicast", "multicast", "broadcast"]
    receivers = ["uniform:percent=10", "uniform:percent=50"]

    [strategy_params.multicast]  # optional: lists are swept, scalars fixed
    tree = ["spt", "steiner"]

    [delays]                     # optional: analytic delay constants (seconds)
    feed_in_s = 1e-4

A timed spec adds ``engine = "timed"`` to ``[experiment]`` and a ``[timed]``
table of :func:`sim.engines.timed.config.timed_settings` keys (lists are swept, like
strategy parameters), e.g. ``rate_hz = [100, 1000]``, ``recirc_port_bps``.

The workload (publishers and receiver sets) of a cell depends only on its
topology, receiver model and seed, not on the strategy or payload, so every
strategy is measured on the same notifications (seed 000 §3.5.2: "fixed RNG
seed, so traffic is identical across strategies").

TOML is read here and nowhere else.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim.dataplanes.delivery import DelayModel
from sim.dataplanes.seeds import canonical_json, child_rng, stable_seed
from sim.workloads.receivers import receiver_model
from strategies.base import STRATEGIES, load_builtin_strategies, make_strategy
from topologies.model import LinkDefaults
from topologies.registry import SpecError, check, make_params
from topologies.specs import check_topology_size, load_topology

#: Notifications per cell accepted without ``--force`` (README "Limits"): a
#: static cell runs roughly 10^3 to 10^4 notifications per second per core.
MAX_NOTIFICATIONS = 1_000_000

#: The specs shipped with the package (``stackcast run NAME``).
SPEC_DIR = Path(__file__).resolve().parents[1] / "specs"

_EXPERIMENT_KEYS = {"name", "description", "notifications", "seeds", "payload_bytes", "engine"}
_TOP_KEYS = {"experiment", "grid", "strategy_params", "delays", "links", "timed", "report"}
#: ``[report]``: ``figures``, names of figure replicas (experiments/reports/figures.py).
_REPORT_KEYS = {"figures"}
ENGINES = ("static", "timed")
_GRID_KEYS = {"topology", "strategy", "receivers"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One point of the grid: everything needed to produce its rows."""

    experiment: str
    topology: str
    strategy: str
    params: tuple[tuple[str, Any], ...]
    receivers: str
    payload_bytes: int
    seed: int
    notifications: int
    delays: tuple[tuple[str, float], ...] = ()
    links: tuple[tuple[str, float], ...] = ()
    #: "static" or "timed"; a timed cell also carries its point of the [timed] grid.
    engine: str = "static"
    timed: tuple[tuple[str, Any], ...] = ()

    def canonical(self) -> dict[str, Any]:
        out = {
            "experiment": self.experiment, "topology": self.topology,
            "strategy": self.strategy, "params": dict(self.params),
            "receivers": self.receivers, "payload_bytes": self.payload_bytes,
            "seed": self.seed, "notifications": self.notifications,
            "delays": dict(self.delays), "links": dict(self.links),
        }
        if self.engine != "static":  # static cells keep their ids
            out["engine"] = self.engine
            out["timed"] = dict(self.timed)
        return out

    @property
    def cell_id(self) -> str:
        return format(stable_seed(self.canonical()), "016x")

    @property
    def cell_seed(self) -> int:
        """Root seed of the strategy's own randomness in this cell."""
        return stable_seed(["cell", self.canonical()])

    @property
    def workload_seed(self) -> int:
        """Root seed of the workload: independent of strategy and payload."""
        return stable_seed(["workload", self.topology, self.receivers, self.seed,
                            dict(self.links)])

    def workload_seed_for(self, model: Any) -> int:
        """The workload seed for receiver model ``model``.

        Models whose parameters include a level that must not reseed the
        workload (nested churn levels) name the parameters that fix it with
        ``params.workload_key()``.
        """
        key = getattr(model.params, "workload_key", None)
        if key is None:
            return self.workload_seed
        return stable_seed(["workload", self.topology, key(), self.seed, dict(self.links)])

    @property
    def params_json(self) -> str:
        return canonical_json(dict(self.params))

    def cost(self) -> float:
        """Rough relative cost, for balancing Spark partitions: switches x (notifications +
        :data:`SUBSCRIPTION_COST` x content subscriptions installed, ``subs=N``)."""
        topo = _numbers(self.topology.partition(":")[2])
        size = 64.0
        if "switches" in topo or "leaves" in topo:
            size = topo.get("switches", topo.get("leaves", size))
        elif "k" in topo:
            size = 1.25 * topo["k"] ** 2
        elif "depth" in topo and "fanout" in topo:  # a complete tree
            size = sum(topo["fanout"] ** i for i in range(int(topo["depth"])))  # levels
        subs = _numbers(self.receivers.partition(":")[2]).get("subs", 0.0)
        return size * (self.notifications + SUBSCRIPTION_COST * subs)


#: What installing one content subscription costs, in notifications (:meth:`Cell.cost`):
#: a flowlimit-pleroma cell takes about 0.7 s plus 1.6 s per 1,000 subscriptions at 300
#: notifications (docs/BENCHMARKS.md, 2026-12-07, branch h-flow3).
SUBSCRIPTION_COST = 0.7


def _numbers(params: str) -> dict[str, float]:
    """The integer-valued ``key=value`` items of a spec's parameter string."""
    out = {}
    for item in params.split(","):
        key, _, value = item.partition("=")
        if value.isdigit():
            out[key] = float(value)
    return out


@dataclass(frozen=True, kw_only=True)
class ExperimentSpec:
    """A validated experiment spec."""

    name: str
    description: str
    notifications: int
    seeds: tuple[int, ...]
    payload_bytes: tuple[int, ...]
    topologies: tuple[str, ...]
    strategies: tuple[str, ...]
    receivers: tuple[str, ...]
    strategy_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    delays: Mapping[str, float] = field(default_factory=dict)
    links: Mapping[str, float] = field(default_factory=dict)
    source: str = ""
    engine: str = "static"
    timed: Mapping[str, Any] = field(default_factory=dict)
    #: Figure replicas ``stackcast report`` draws for this experiment (``[report]
    #: figures``; names of :data:`experiments.reports.figures.FIGURES`, checked there).
    figures: tuple[str, ...] = ()

    def cells(self) -> list[Cell]:
        """All cells in a deterministic order."""
        return list(self._iter_cells())

    def _iter_cells(self) -> Iterator[Cell]:
        delays = tuple(sorted(self.delays.items()))
        links = tuple(sorted(self.links.items()))
        for topo, strat, recv, payload, seed in itertools.product(
                self.topologies, self.strategies, self.receivers, self.payload_bytes, self.seeds):
            for params in _param_points(self.strategy_params.get(strat, {})):
                for timed in _param_points(self.timed) if self.engine == "timed" else [()]:
                    yield Cell(experiment=self.name, topology=topo, strategy=strat,
                               params=params, receivers=recv, payload_bytes=payload, seed=seed,
                               notifications=self.notifications, delays=delays, links=links,
                               engine=self.engine, timed=timed)

    def canonical(self) -> dict[str, Any]:
        out = {
            "name": self.name, "description": self.description,
            "notifications": self.notifications, "seeds": list(self.seeds),
            "payload_bytes": list(self.payload_bytes), "topologies": list(self.topologies),
            "strategies": list(self.strategies), "receivers": list(self.receivers),
            "strategy_params": {k: dict(v) for k, v in self.strategy_params.items()},
            "delays": dict(self.delays), "links": dict(self.links),
        }
        if self.engine != "static":
            out["engine"] = self.engine
            out["timed"] = dict(self.timed)
        if self.figures:  # read back by the report (cell files' schema metadata)
            out["report"] = {"figures": list(self.figures)}
        return out


def _param_points(grid: Mapping[str, Any]) -> Iterator[tuple[tuple[str, Any], ...]]:
    keys = sorted(grid)
    values = [grid[k] if isinstance(grid[k], list) else [grid[k]] for k in keys]
    for combo in itertools.product(*values):
        yield tuple(zip(keys, combo, strict=True))


def _list(value: Any, where: str, typ: type) -> tuple[Any, ...]:
    items = value if isinstance(value, list) else [value]
    check(len(items) > 0, f"{where} must not be empty")
    for v in items:
        check(isinstance(v, typ) and not isinstance(v, bool),
              f"{where} must hold {typ.__name__} values; got {v!r}")
    return tuple(items)


def _unknown(keys: Any, allowed: set[str], where: str) -> None:
    extra = sorted(set(keys) - allowed)
    check(not extra, f"{where}: unknown key(s) {', '.join(extra)} "
                     f"(allowed: {', '.join(sorted(allowed))})")


def parse_spec_dict(data: Mapping[str, Any], source: str = "<spec>", *,
                    force: bool = False) -> ExperimentSpec:
    """Validate a spec already parsed from TOML; every problem names its field.

    ``force`` lifts the size limits (:data:`MAX_NOTIFICATIONS`,
    :func:`topologies.specs.check_topology_size`).
    """
    _unknown(data, _TOP_KEYS, source)
    exp = data.get("experiment")
    if not isinstance(exp, dict):
        raise SpecError(f"{source}: missing [experiment] table")
    grid = data.get("grid")
    if not isinstance(grid, dict):
        raise SpecError(f"{source}: missing [grid] table")
    _unknown(exp, _EXPERIMENT_KEYS, f"{source} [experiment]")
    _unknown(grid, _GRID_KEYS, f"{source} [grid]")
    name = exp.get("name")
    if not (isinstance(name, str) and name.replace("-", "").replace("_", "").isalnum()):
        raise SpecError(f"{source}: experiment.name must be a word of letters, digits, - or _; "
                        f"got {name!r}")
    notifications = exp.get("notifications", 10)
    check(isinstance(notifications, int) and not isinstance(notifications, bool)
          and notifications > 0,
          f"{source}: experiment.notifications must be a positive integer")
    check(force or notifications <= MAX_NOTIFICATIONS,
          f"{source}: experiment.notifications = {notifications:,} is beyond the limit of "
          f"{MAX_NOTIFICATIONS:,} per cell (README \"Limits\"); pass --force to run it anyway")
    engine = exp.get("engine", "static")
    check(engine in ENGINES, f"{source}: experiment.engine must be one of "
                             f"{', '.join(ENGINES)}; got {engine!r}")
    timed = data.get("timed", {})
    check(isinstance(timed, dict), f"{source}: [timed] must be a table")
    check(engine == "timed" or not timed,
          f"{source}: a [timed] table needs experiment.engine = \"timed\"")
    for key in ("strategy_params", "delays", "links"):
        check(isinstance(data.get(key, {}), dict), f"{source}: [{key}] must be a table")
    for strat, table in data.get("strategy_params", {}).items():
        check(isinstance(table, dict), f"{source}: [strategy_params.{strat}] must be a table")
    report = data.get("report", {})
    check(isinstance(report, dict), f"{source}: [report] must be a table")
    _unknown(report, _REPORT_KEYS, f"{source} [report]")
    figures = _list(report["figures"], f"{source}: report.figures", str) if report else ()
    check(len(set(figures)) == len(figures), f"{source}: report.figures names a figure twice")
    spec = ExperimentSpec(
        name=name,
        description=str(exp.get("description", "")),
        notifications=notifications,
        seeds=_list(exp.get("seeds", [1]), f"{source}: experiment.seeds", int),
        payload_bytes=_list(exp.get("payload_bytes", [50]), f"{source}: experiment.payload_bytes",
                            int),
        topologies=_list(grid.get("topology", []), f"{source}: grid.topology", str),
        strategies=_list(grid.get("strategy", []), f"{source}: grid.strategy", str),
        receivers=_list(grid.get("receivers", []), f"{source}: grid.receivers", str),
        strategy_params=dict(data.get("strategy_params", {})),
        delays=dict(data.get("delays", {})),
        links=dict(data.get("links", {})),
        source=source,
        engine=engine,
        timed=dict(timed),
        figures=figures,
    )
    for seed in spec.seeds:
        check(seed >= 0, f"{source}: experiment.seeds must be integers >= 0; got {seed}")
    validate(spec, force=force)
    return spec


def validate(spec: ExperimentSpec, *, force: bool = False) -> None:
    """Check every name and parameter before any work starts.

    Every cell is checked on the driver: each distinct topology is checked
    against the size limits and built once, each strategy point is made, each
    receiver model parsed, and :func:`validate_cells` checks that every
    strategy applies to every topology and workload of the grid, so a spec
    with one bad cell fails before any cell is written.
    """
    src = spec.source
    for p in spec.payload_bytes:
        check(0 <= p <= 9000, f"{src}: payload_bytes must be in [0, 9000]; got {p}")
    load_builtin_strategies()
    for name in spec.strategy_params:
        check(name in spec.strategies,
              f"{src}: [strategy_params.{name}] names a strategy not in grid.strategy")
    for name in spec.strategies:
        STRATEGIES.get(name)
        for point in _param_points(spec.strategy_params.get(name, {})):
            make_strategy(name, dict(point))
    for r in spec.receivers:
        receiver_model(r)
    make_params(DelayModel, spec.delays, f"{src} [delays]")
    links = make_params(LinkDefaults, spec.links, f"{src} [links]")
    for t in spec.topologies:
        check_topology_size(t, force=force)
    for t in spec.topologies:
        load_topology(t, links)
    validate_cells(spec)
    if spec.engine == "timed":
        from sim.engines.timed.config import timed_settings

        for point in _param_points(spec.timed):
            timed_settings(dict(point), f"{src} [timed]", spec.notifications)


def validate_cells(spec: ExperimentSpec) -> None:
    """Check that every strategy of the grid applies to every topology and workload.

    Asks each strategy point :meth:`strategies.base.Strategy.check_applicable`
    on each topology, the checks its install would make at run time (content
    receivers, the fabric topology, field widths, the workload's publishers
    and subscribers). The population a strategy looks at is built on demand,
    once per topology and receiver-model kind (what a strategy needs of it
    depends on the kind, not on its parameters), with the first seed and the
    same calls as the cell pipeline, so the check stays cheap.

    Raises
    ------
    SpecError
        Naming the first cell that cannot run.
    """
    links = make_params(LinkDefaults, spec.links, f"{spec.source} [links]")
    strategies = [make_strategy(name, dict(point)) for name in spec.strategies
                  for point in _param_points(spec.strategy_params.get(name, {}))]
    for t in spec.topologies:
        topology = load_topology(t, links)
        kinds: dict[str, str] = {}
        for r in spec.receivers:
            kinds.setdefault(receiver_model(r).kind.name, r)
        for r in kinds.values():
            workload = _LazyPopulation(spec, t, topology, r)
            for strategy in strategies:
                try:
                    strategy.check_applicable(topology, workload)
                except ValueError as exc:
                    raise SpecError(f"{spec.source}: cell {strategy.name} x {t} x {r}: "
                                    f"{exc}") from None


class _LazyPopulation:
    """The population of the first cell of (topology, receivers), built on first use.

    Attribute access is forwarded to that population (at run 0, for
    populations that change during a cell), so strategies' checks read it as
    the pipeline's knowledge.
    """

    def __init__(self, spec: ExperimentSpec, topology_spec: str, topology: Any,
                 receivers: str) -> None:
        self._args = (spec, topology_spec, topology, receivers)
        self._population: Any = None

    def _get(self) -> Any:
        if self._population is None:
            spec, t, topology, r = self._args
            model = receiver_model(r)
            cell = Cell(experiment=spec.name, topology=t, strategy="", params=(), receivers=r,
                        payload_bytes=0, seed=spec.seeds[0], notifications=spec.notifications,
                        links=tuple(sorted(spec.links.items())))
            population = model.population(topology, child_rng(cell.workload_seed_for(model),
                                                              "population"))
            at = getattr(population, "at", None)
            self._population = at(0) if at is not None else population
        return self._population

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


def _read_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read spec {str(p)!r}: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{p}: invalid TOML: {exc}") from None


def load_spec(path: str | Path, *, force: bool = False) -> ExperimentSpec:
    """Read and validate a TOML spec file (``force`` lifts the size limits)."""
    return parse_spec_dict(_read_toml(path), str(path), force=force)


def describe_spec(path: str | Path) -> str:
    """The description line of a spec, without validating it (for listings)."""
    exp = _read_toml(path).get("experiment", {})
    return str(exp.get("description", "")) if isinstance(exp, dict) else ""
