"""Topology spec strings: ``jellyfish:switches=255,degree=4,seed=1``, ``zoo:Dfn``, ``file:PATH``.

Each generator registers in :data:`TOPOLOGIES` with a frozen parameter
dataclass; :func:`load_topology` parses a spec, validates its parameters and
builds (and caches) the immutable :class:`~topologies.model.Topology`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from topologies.model import LinkDefaults, Topology
from topologies.registry import Registry, SpecError, make_params, parse_spec

#: Size limits of a topology built without ``--force`` (README "Limits"):
#: switches + hosts, and links (host links included). A 20,000-switch,
#: 80,000-host Jellyfish (160,000 links) takes ~13 s and ~350 MB to build,
#: before any strategy installs a rule.
MAX_NODES = 50_000
MAX_LINKS = 200_000
#: Approximate driver memory per node and per link of a built topology (bytes).
_BYTES_PER_ELEMENT = 1_500


@dataclass(frozen=True, slots=True)
class TopologySize:
    """Estimated size of a topology before it is built.

    ``port_entries`` (one forwarding entry per switch port: the least state a
    strategy installs) and ``memory_bytes`` are rough, for the limit message.
    """

    switches: int
    hosts: int
    links: int

    @property
    def nodes(self) -> int:
        return self.switches + self.hosts

    @property
    def port_entries(self) -> int:
        return 2 * self.links

    @property
    def memory_bytes(self) -> int:
        return _BYTES_PER_ELEMENT * (self.nodes + self.links)


@dataclass(frozen=True, slots=True)
class Generator:
    """A registered topology kind: its parameter class and its builder."""

    name: str
    params: type
    build: Callable[[Any, LinkDefaults, str], Topology]
    summary: str
    #: ``estimate(params) -> TopologySize`` without building (None: not estimated).
    estimate: Callable[[Any], TopologySize] | None = None


TOPOLOGIES: Registry[Generator] = Registry("topology generator")

#: Link properties used when a caller gives none.
DEFAULT_LINKS = LinkDefaults()


def register_topology(name: str, params: type, summary: str,
                      estimate: Callable[[Any], TopologySize] | None = None
                      ) -> Callable[[Callable], Callable]:
    """Decorator: register ``build(params, defaults, spec) -> Topology`` under ``name``.

    ``estimate(params)`` gives the size without building, for the limits of
    :func:`check_topology_size`.
    """

    def deco(fn: Callable[[Any, LinkDefaults, str], Topology]) -> Callable:
        TOPOLOGIES.add(name, Generator(name, params, fn, summary, estimate))
        return fn

    return deco


def load_topology(spec: str, defaults: LinkDefaults = DEFAULT_LINKS) -> Topology:
    """Build the topology named by ``spec`` (cached: topologies are immutable)."""
    _ensure_loaded()
    return _load(spec.strip(), defaults)


def _split_positional(spec: str) -> tuple[str, str | None]:
    """``"zoo:Dfn,preprocess=table61"`` -> ``("zoo:preprocess=table61", "Dfn")``.

    A first item without ``=`` followed by ``key=value`` items is the
    positional first parameter (``zoo:NAME,...``); other specs are unchanged.
    """
    kind, sep, rest = spec.partition(":")
    head, comma, tail = rest.partition(",")
    if sep and comma and head.strip() and "=" not in head and "=" in tail:
        return f"{kind}:{tail}", head.strip()
    return spec, None


def _parse(spec: str) -> tuple[Generator, Any]:
    rest, positional = _split_positional(spec)
    kind, raw = parse_spec(rest)
    if positional is not None:
        raw[""] = positional
    gen = TOPOLOGIES.get(kind)
    first = dataclasses.fields(gen.params)[0]
    if "" in raw and first.name in raw:
        raise SpecError(f"topology {spec!r}: {first.name} given twice")
    if "" in raw:  # positional argument (zoo:NAME, file:PATH) -> the first field
        raw[first.name] = raw.pop("")
    elif (not raw and first.default is dataclasses.MISSING
          and first.default_factory is dataclasses.MISSING):
        raise SpecError(f"topology {spec!r}: missing the {first.name} "
                        f"(write {kind}:{first.name.upper()})")
    return gen, make_params(gen.params, raw, f"topology {spec!r}")


@lru_cache(maxsize=64)
def _load(spec: str, defaults: LinkDefaults) -> Topology:
    gen, params = _parse(spec)
    return gen.build(params, defaults, spec)


def estimate_topology(spec: str) -> TopologySize | None:
    """The size of ``spec``'s topology without building it (None: not estimated,
    as for ``zoo:`` and ``file:``, which are as large as their file).

    Raises
    ------
    SpecError
        If the spec or its parameters are invalid.
    """
    _ensure_loaded()
    gen, params = _parse(spec.strip())
    return gen.estimate(params) if gen.estimate is not None else None


def check_topology_size(spec: str, *, force: bool = False) -> None:
    """Refuse, before building, a topology beyond :data:`MAX_NODES` / :data:`MAX_LINKS`.

    Raises
    ------
    SpecError
        One line naming the estimate, the limit and ``--force`` (unless ``force``).
    """
    size = estimate_topology(spec)
    if force or size is None or (size.nodes <= MAX_NODES and size.links <= MAX_LINKS):
        return
    raise SpecError(
        f"topology {spec.strip()!r} is too large: about {size.switches:,} switches, "
        f"{size.hosts:,} hosts, {size.links:,} links (~{size.memory_bytes / 1e9:.1f} GB, "
        f"{size.port_entries:,} port entries); the limit is {MAX_NODES:,} switches + hosts "
        f"and {MAX_LINKS:,} links (README \"Limits\"); pass --force to build it anyway")


def _ensure_loaded() -> None:
    # Importing the modules registers their generators.
    from topologies import clos3, files, generators, tree_generators, zoo  # noqa: F401
