"""Real strategy states for every P4 program (HIL writer tests).

Mirrors tests/hil/test_p4info_names.py: every registered strategy whose
data-plane family has a program, with the parameter variants that select each
program variant, installed on a small jellyfish topology; the content-filter
strategies, which need a content population, on ``fattree:k=4``. Each case
carries a second :class:`Knowledge` for realistic churn (``strategy.update``).
Strategies whose program build depends on more than the strategy's model
(camus: per switch) or is not committed are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from hil.programs import PROGRAMS, Program, program_name
from sim.dataplanes.control_state import ControlState
from strategies.base import STRATEGIES, Knowledge, Strategy, load_builtin_strategies, make_strategy
from topologies.model import Topology
from topologies.registry import SpecError
from topologies.specs import load_topology

VARIANTS: dict[str, list[dict[str, Any]]] = {
    "tree": [{}, {"variant": "mcgroup"}],
    "switch-mcgroup": [{}, {"groups": "subsets", "subsets": 2}],
}
TOPOLOGY = "jellyfish:switches=8,degree=3,seed=1"
CONTENT_TOPOLOGY = "fattree:k=4"
CONTENT_RECEIVERS = "content:subs=20,publishers=2,subscribers=6,dims=2,bits=16,width=0.25"


@dataclass(frozen=True, eq=False)  # hashed by identity (cached per case)
class Case:
    program: str
    label: str
    strategy: Strategy
    topology: Topology
    state: ControlState
    churn: Knowledge  # what the controller learns next (strategy.update)
    population: Any = None  # content cases: the population (draw() gives events)


def knowledge(topology: Topology, variant: int = 0) -> Knowledge:
    """Receiver sets for two publishers; ``variant`` 1 shifts the sets (churn)."""
    hosts = sorted(topology.hosts)
    pubs = hosts[variant:variant + 2]
    receivers = {p: (frozenset(h for h in hosts if h != p),
                     frozenset(h for h in hosts[variant::2] if h != p)) for p in pubs}
    stable = {p: frozenset([h for h in hosts if h != p][variant:variant + 3]) for p in pubs}
    return Knowledge(receiver_sets=receivers, stable=stable)


def content_knowledge(topology: Topology, seed: int) -> Knowledge:
    """A content population (events with attribute values) drawn with ``seed``."""
    from sim.dataplanes.seeds import child_rng
    from sim.workloads.receivers import receiver_model

    model = receiver_model(CONTENT_RECEIVERS)
    return Knowledge(population=model.population(topology, child_rng(seed, "population")),
                     seed=seed)


@cache
def cases() -> tuple[Case, ...]:
    """The cases, built once per process (strategies keep per-state memory: tests that
    update or encode should not share them with each other; see :func:`build_cases`)."""
    return build_cases()


def build_cases() -> tuple[Case, ...]:
    """Fresh cases: new strategy instances and states."""
    load_builtin_strategies()
    import strategies.virtual_tree.datacenter  # noqa: F401
    import strategies.virtual_tree.installation  # noqa: F401  (register the virtual-tree strategies)

    topology = load_topology(TOPOLOGY)
    fattree = load_topology(CONTENT_TOPOLOGY)
    out = []
    for name in sorted(STRATEGIES.names()):
        family = STRATEGIES.get(name).dataplane
        if family not in PROGRAMS:
            continue
        for params in VARIANTS.get(name, [{}]):
            strategy = make_strategy(name, params)
            try:
                topo, churn = topology, knowledge(topology, 1)
                state = strategy.install(topo, knowledge(topo))
                population = None
            except SpecError:
                try:  # the content filters need a content population
                    topo, churn = fattree, content_knowledge(fattree, 2)
                    first = content_knowledge(fattree, 1)
                    state = strategy.install(topo, first)
                    population = first.population
                except SpecError:
                    continue  # needs another topology or workload (fabric, ...)
            try:
                program = program_name(family, name, params, strategy.model())
            except ValueError:
                continue  # the build depends on more than the model (camus: per switch)
            if program is None or not Program(program).p4info.is_file():
                continue
            out.append(Case(program, f"{name}{params or ''}", strategy, topo, state, churn,
                            population))
    return tuple(out)
