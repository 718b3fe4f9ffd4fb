"""Named registries and ``kind:key=value,...`` spec strings.

Strategies, topology generators and receiver models register under a name;
a duplicate name raises, an unknown name raises with the known ones (and the
closest matches). Parameters arrive as strings (CLI, spec strings) or TOML
values and are coerced into a frozen dataclass whose field types say what is
allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class SpecError(ValueError):
    """Bad name or parameter: the message is one line that names the problem."""


class Registry(Generic[T]):
    """A name -> object map that refuses duplicates and explains misses."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj
        return deco

    def add(self, name: str, obj: T) -> None:
        if name in self._items:
            raise SpecError(f"{self.what} {name!r} is already registered")
        self._items[name] = obj

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise SpecError(unknown_name_message(self.what, name, self._items)) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def unknown_name_message(what: str, name: str, known: Any) -> str:
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    listed = ", ".join(names) if len(names) <= 40 else f"{len(names)} names"
    return f"unknown {what} {name!r}{hint} (known: {listed})"


def parse_spec(text: str) -> tuple[str, dict[str, str]]:
    """Split ``"kind:a=1,b=x"`` into ``("kind", {"a": "1", "b": "x"})``.

    ``file:PATH`` and ``zoo:NAME`` keep their argument under the key ``""``.
    """
    text = text.strip()
    if not text:
        raise SpecError("empty spec string")
    kind, sep, rest = text.partition(":")
    kind = kind.strip()
    params: dict[str, str] = {}
    if not sep or not rest.strip():
        return kind, params
    if "=" not in rest:
        return kind, {"": rest.strip()}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise SpecError(f"bad parameter {item!r} in {text!r}: expected key=value")
        key = key.strip()
        if key in params:
            raise SpecError(f"parameter {key!r} given twice in {text!r}")
        params[key] = value.strip()
    return kind, params


def _coerce(value: Any, typ: Any, where: str) -> Any:
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() == "none"):
            return None
        return _coerce(value, args[0], where)
    if origin is typing.Literal:
        allowed = typing.get_args(typ)
        if value not in allowed:
            raise SpecError(f"{where} must be one of {', '.join(map(str, allowed))}; got {value!r}")
        return value
    if origin is tuple:
        (inner, *_rest) = typing.get_args(typ)
        items = value.split("/") if isinstance(value, str) else list(value)
        return tuple(_coerce(v, inner, where) for v in items)
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "false", "0", "no"):
            return value.lower() in ("true", "1", "yes")
        raise SpecError(f"{where} must be true or false; got {value!r}")
    if typ is int:
        if isinstance(value, bool):
            raise SpecError(f"{where} must be an integer; got {value!r}")
        try:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value) if not isinstance(value, str) else int(value, 0)
        except (TypeError, ValueError):
            raise SpecError(f"{where} must be an integer; got {value!r}") from None
    if typ is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise SpecError(f"{where} must be a number; got {value!r}") from None
    if typ is str:
        return str(value)
    return value


@functools.lru_cache(maxsize=256)
def _type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)`` (slow: it evaluates every annotation), once per class."""
    return typing.get_type_hints(cls)


def make_params(cls: type[T], raw: Mapping[str, Any], where: str) -> T:
    """Build the frozen dataclass ``cls`` from ``raw``, coercing each field.

    Unknown keys raise naming the allowed ones; the dataclass's own
    ``__post_init__`` validates ranges.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = _type_hints(cls)  # type: ignore[arg-type]
    kwargs = {}
    for key, value in raw.items():
        if key not in fields:
            allowed = ", ".join(sorted(fields)) or "none"
            raise SpecError(f"{where}: unknown parameter {key!r} (allowed: {allowed})")
        kwargs[key] = _coerce(value, hints[key], f"{where}: parameter {key!r}")
    missing = [name for name, f in fields.items()
               if name not in kwargs and f.init and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise SpecError(f"{where}: missing parameter(s) {', '.join(map(repr, missing))}")
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field is missing
        raise SpecError(f"{where}: {exc}") from None
    except ValueError as exc:  # __post_init__ checks: prefix where the value came from
        raise SpecError(f"{where}: {exc}") from None


def check(cond: bool, message: str) -> None:
    """Raise :class:`SpecError` with ``message`` unless ``cond`` (config validation)."""
    if not cond:
        raise SpecError(message)
