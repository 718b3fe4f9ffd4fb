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
from topologies.registry import Registry, make_params, parse_spec


@dataclass(frozen=True, slots=True)
class Generator:
    """A registered topology kind: its parameter class and its builder."""

    name: str
    params: type
    build: Callable[[Any, LinkDefaults, str], Topology]
    summary: str


TOPOLOGIES: Registry[Generator] = Registry("topology generator")

#: Link properties used when a caller gives none.
DEFAULT_LINKS = LinkDefaults()


def register_topology(name: str, params: type, summary: str) -> Callable[[Callable], Callable]:
    """Decorator: register ``build(params, defaults, spec) -> Topology`` under ``name``."""

    def deco(fn: Callable[[Any, LinkDefaults, str], Topology]) -> Callable:
        TOPOLOGIES.add(name, Generator(name, params, fn, summary))
        return fn

    return deco


def load_topology(spec: str, defaults: LinkDefaults = DEFAULT_LINKS) -> Topology:
    """Build the topology named by ``spec`` (cached: topologies are immutable)."""
    _ensure_loaded()
    return _load(spec.strip(), defaults)


@lru_cache(maxsize=64)
def _load(spec: str, defaults: LinkDefaults) -> Topology:
    kind, raw = parse_spec(spec)
    gen = TOPOLOGIES.get(kind)
    if "" in raw:  # positional argument (zoo:NAME, file:PATH) -> the first field
        raw[dataclasses.fields(gen.params)[0].name] = raw.pop("")
    params: Any = make_params(gen.params, raw, f"topology {spec!r}")
    return gen.build(params, defaults, spec)


def _ensure_loaded() -> None:
    # Importing the modules registers their generators.
    from topologies import files, generators, tree_generators, zoo  # noqa: F401
