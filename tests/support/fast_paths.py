"""What the fast-path property tests share: random strategy parameters, link delays and
every implementation of a fast path."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from hypothesis import strategies as st

from strategies.base import STRATEGIES, load_builtin_strategies
from topologies.model import Topology


def with_delays(topo: Topology, delays: list[float]) -> Topology:
    """``topo`` with link ``i`` given the delay ``delays[i % len(delays)]``."""
    links = tuple(dataclasses.replace(lk, delay_s=delays[i % len(delays)])
                  for i, lk in enumerate(topo.links))
    return Topology(name=topo.name + ",delays", switches=topo.switches, hosts=topo.hosts,
                    links=links, node_attrs=topo.node_attrs)


@st.composite
def strategy_parameters(draw: st.DrawFn, name: str, field_values: dict[str, list[Any]],
                        one_in: int) -> dict[str, Any]:
    """Random parameters of strategy ``name``: each ``Literal`` field and each field of
    ``field_values`` takes a drawn value once in ``one_in`` cases, else keeps its default."""
    load_builtin_strategies()
    params_cls = STRATEGIES.get(name).Params
    hints = typing.get_type_hints(params_cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(params_cls):
        if typing.get_origin(hints[f.name]) is typing.Literal:
            values = list(typing.get_args(hints[f.name]))
        elif f.name in field_values:
            values = field_values[f.name]
        else:
            continue
        if draw(st.integers(0, one_in - 1)) == 0:
            out[f.name] = draw(st.sampled_from(values))
    return out


def implementations(fast: Any) -> list[Any]:
    """``fast`` in each of its implementations (those it lists, else itself)."""
    names = getattr(fast, "implementations", (fast.impl,))
    return [fast if impl == fast.impl else fast.using(impl)  # listed, so it has using()
            for impl in names]
