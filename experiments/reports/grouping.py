"""How reports group result rows: by parameter point, and the parameters of a
receiver-model spec (``uniform:percent=30`` -> ``{"percent": "30"}``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any


def group_rows(cols: dict[str, list[Any]], keys: Sequence[str]
               ) -> dict[tuple[Any, ...], list[int]]:
    """Row indexes by their values of ``keys`` (one group per parameter point)."""
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(*(cols[c] for c in keys), strict=True)):
        groups[key].append(i)
    return groups


def receiver_params(spec: str) -> dict[str, str]:
    """The ``key=value`` parameters of a receiver-model spec, as strings."""
    _, _, rest = spec.partition(":")
    return dict(item.partition("=")[::2] for item in rest.split(",") if "=" in item)
