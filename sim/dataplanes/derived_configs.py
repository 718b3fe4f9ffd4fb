"""Switch configurations that installs make themselves on a base state, shared.

Receiver-scoped installs (``multicast``'s trees, :mod:`strategies.l2.tree_groups`;
``bier``'s local groups, :mod:`strategies.bier.bift`) give a few switches of a
base state one more table and a multicast group per notification. Rather than
a :class:`~sim.dataplanes.control_state.StateBuilder` per notification, they
make those configurations with a :class:`ConfigExtension` (equal to the
builder's, property-tested by the installs against their reference) and keep
them in the :class:`DerivedConfigs` of the base, so installs that give a
switch equal rules share one object, which control-write counting and the
lookup memos skip; the state is then
:func:`~sim.dataplanes.control_state.derived_state`.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from sim.dataplanes.caches import Identity, Store
from sim.dataplanes.control_state import (
    EMPTY_SWITCH,
    ControlState,
    MulticastGroup,
    SwitchConfig,
    TableEntry,
)


class ConfigExtension:
    """``kept`` plus ``tables`` it does not have, and the configurations that also add
    multicast groups (:meth:`config`).

    For installs that make a switch's configuration themselves: a configuration
    from :meth:`config` is the one a :class:`StateBuilder` on a base holding
    ``kept`` gives the switch when the entries of ``tables`` (in order) and the
    groups are added there. All configurations of one extension share its table
    mapping (so :func:`count_writes` compares their groups only) and ``kept``'s
    lookup indexes, as the builder does (none for the empty configuration); each
    is marked with its writes from ``kept`` (:func:`mark_writes`) and knows its
    entry count.

    Raises
    ------
    ValueError
        If ``kept`` has one of the tables already (a builder would extend it).
    """

    __slots__ = ("kept", "tables", "_from", "_writes", "_entries", "_indexes")

    def __init__(self, kept: SwitchConfig, tables: Mapping[str, tuple[TableEntry, ...]]
                 ) -> None:
        if any(t in kept.tables for t in tables):
            raise ValueError("ConfigExtension: the configuration has one of these tables")
        self.kept = kept
        self.tables: Mapping[str, tuple[TableEntry, ...]] = MappingProxyType(
            {**kept.tables, **tables})
        self._from = weakref.ref(kept)
        # from kept: an INSERT per added key (its own tables are kept's)
        self._writes = sum(len(es) if len(es) < 2 else len({e.key for e in es})
                           for es in tables.values())
        self._entries = kept._entries + sum(len(es) for es in tables.values())
        self._indexes = None if kept is EMPTY_SWITCH else \
            kept.__dict__.setdefault("_shared_indexes", {})

    def config(self, groups: Mapping[int, MulticastGroup]) -> SwitchConfig:
        """``kept`` with the tables and ``groups``, which it does not have.

        Raises
        ------
        ValueError
            If ``kept`` has one of the groups already (a builder refuses it).
        """
        kept = self.kept
        have = kept.multicast_groups
        if have and not have.keys().isdisjoint(groups):
            raise ValueError("ConfigExtension: the configuration has one of these groups")
        # the fields as SwitchConfig(...) sets them (read-only views; the shared ones as
        # they are), without its constructor; then what its memos would compute or share
        config = object.__new__(SwitchConfig)
        memo = config.__dict__
        memo["tables"] = self.tables
        memo["multicast_groups"] = MappingProxyType({**have, **groups})
        memo["clone_sessions"] = kept.clone_sessions
        if self._indexes is not None:
            memo["_shared_indexes"] = self._indexes
        memo["_entries"] = self._entries
        memo["_writes_from"] = (self._from, self._writes + len(groups))
        return config


class DerivedConfigs:
    """The switch configurations installs make on one base state, shared between them.

    ``kept`` maps each switch of ``base`` to its configuration as an
    :class:`~sim.dataplanes.caches.Identity` (one key object per configuration
    object, so keys naming it compare by identity), to key what is made on it;
    :meth:`get` and :meth:`put` remember made objects under such keys, up to
    ``limit`` of them (then forgotten at once: a hit returns what a miss makes).
    """

    __slots__ = ("base", "kept", "_made", "limit")

    def __init__(self, base: ControlState, limit: int = 1 << 14) -> None:
        self.base = base
        one: dict[int, Identity] = {}  # many switches share one configuration object
        self.kept: Mapping[str, Identity] = {
            sw: one.setdefault(id(c), Identity(c)) for sw, c in base.switches.items()}
        self._made: dict[tuple[Any, ...], Any] = {}
        self.limit = limit

    def get(self, key: tuple[Any, ...]) -> Any:
        return self._made.get(key)

    def put(self, key: tuple[Any, ...], value: Any) -> Any:
        made = self._made
        if len(made) >= self.limit:
            made.clear()
        made[key] = value
        return value


def derived_configs(base: ControlState, store: Store[tuple[Any, ...], Any]) -> DerivedConfigs:
    """The :class:`DerivedConfigs` of ``base``, kept in ``store``."""
    key = ("derived configs", Identity(base))
    got = store.get(key)
    if got is None:
        got = store.put(key, DerivedConfigs(base))
    return got  # type: ignore[no-any-return]
