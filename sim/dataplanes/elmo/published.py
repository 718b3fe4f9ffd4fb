"""What Elmo's controller published to the senders, held compactly for a million groups.

``ControlState.publisher_info`` of an ``elmo`` install holds, per group, the
:class:`~sim.dataplanes.elmo.headers.PackedGroup` a sender's hypervisor
pushes from (Elmo §3.3: the controller computes each group's header and
hands it to the hypervisor switches), and a map from a group's hosts to its
gid. As Python objects (a named tuple, three ``bytes`` and two dictionary
entries per group) that is about a kilobyte per group; here a table of
``n`` groups is:

- one byte arena with every group's record, ``hosts | spine | leaf``
  (:func:`~sim.dataplanes.elmo.headers.hosts_key` and the two layers' bytes),
  and the end offset of each part (an ``int64`` array of ``n x 3``), the
  ``shape`` of each group (``int32``);
- the hosts index: a 64-bit digest of every group's hosts key (BLAKE2b),
  sorted, with the gids in that order (ties in gid order); a lookup digests
  the key, finds the equal digests by binary search and compares the keys
  themselves, so a digest collision never returns a wrong group.

About 40 bytes per group beside the records (~200 bytes for Elmo's WVE
groups). Membership versions (join/leave churn) change a few groups at a
time, and every version's state stays valid while the runner holds it, so a
new version shares what did not change: :meth:`PublishedGroups.with_groups`
overlays the changed groups in copy-on-write chunks of :data:`CHUNK` gids
(a version costs ``n / CHUNK`` references plus its changes), and records the
new hosts keys in an index shared by the versions derived from one arena
(entries are verified against the version's own records on lookup). When
the overlays hold more than :func:`compact_after` groups, the next version
is written to a fresh arena.

Both views are read-only :class:`~collections.abc.Mapping` objects: the
table (``gid -> PackedGroup``) under ``INFO_GROUPS`` and its
:attr:`PublishedGroups.by_hosts` (``hosts key -> the lowest gid with those
hosts``) under ``INFO_GIDS``; equal tables compare equal however they were
built.

References
----------
Elmo SIGCOMM 2019 §3.3 (the controller hands each group's p-rules to the
hypervisor switches), §5.1 (1 million groups); RFC 7693 (BLAKE2).
"""

from __future__ import annotations

import hashlib
import operator
from array import array
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from sim.dataplanes.elmo.headers import PackedGroup

#: gids per copy-on-write chunk of a version's overlay
CHUNK_BITS = 10
CHUNK = 1 << CHUNK_BITS


def compact_after(groups: int) -> int:
    """Overlaid groups beyond which a new version gets its own arena."""
    return max(4096, groups // 16)


def key_digest(key: bytes) -> int:
    """The 64-bit digest of a hosts key (BLAKE2b, 8 bytes, little endian)."""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


class GroupArena:
    """The records of groups ``0..n-1`` in one byte arena (module docstring); immutable."""

    __slots__ = ("data", "ends", "shape", "digests", "by_digest")

    def __init__(self, data: np.ndarray, ends: np.ndarray, shape: np.ndarray,
                 digests: np.ndarray) -> None:
        self.data = data
        self.ends = ends
        self.shape = shape
        order = np.argsort(digests, kind="stable")
        self.digests = digests[order]
        self.by_digest = order
        for a in (self.data, self.ends, self.shape, self.digests, self.by_digest):
            a.setflags(write=False)

    def __len__(self) -> int:
        return len(self.shape)

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.data, self.ends, self.shape, self.digests,
                                      self.by_digest))

    def _start(self, gid: int) -> int:
        return int(self.ends[gid - 1, 2]) if gid else 0

    def hosts(self, gid: int) -> bytes:
        return self.data[self._start(gid):int(self.ends[gid, 0])].tobytes()

    def record(self, gid: int) -> PackedGroup:
        start = self._start(gid)
        h, s, e = self.ends[gid].tolist()
        raw = self.data[start:e].tobytes()
        return PackedGroup(gid, raw[:h - start], raw[h - start:s - start], raw[s - start:],
                           int(self.shape[gid]))

    def candidates(self, digest: int) -> list[int]:
        """Gids whose hosts key has ``digest``, ascending."""
        d = np.uint64(digest)
        lo = int(np.searchsorted(self.digests, d, side="left"))
        if lo == len(self.digests) or self.digests[lo] != d:
            return []
        hi = int(np.searchsorted(self.digests, d, side="right"))
        return self.by_digest[lo:hi].tolist()  # type: ignore[no-any-return]


class ArenaBuilder:
    """Appends the records of groups ``0, 1, ...`` in gid order; :meth:`finish` freezes them."""

    __slots__ = ("_data", "_ends", "_shape", "_digests")

    def __init__(self) -> None:
        self._data = bytearray()
        self._ends = array("q")
        self._shape = array("i")
        self._digests = array("Q")

    def __len__(self) -> int:
        return len(self._shape)

    def append(self, group: PackedGroup) -> None:
        """Add ``group``, whose gid must be the next one."""
        if group.gid != len(self._shape):
            raise ValueError(f"Elmo published groups: gid {group.gid} appended at position "
                             f"{len(self._shape)} (gids must be 0..n-1 in order)")
        data = self._data
        data += group.hosts
        self._ends.append(len(data))
        data += group.spine
        self._ends.append(len(data))
        data += group.leaf
        self._ends.append(len(data))
        self._shape.append(group.shape)
        self._digests.append(key_digest(group.hosts))

    def finish(self) -> GroupArena:
        data = np.frombuffer(self._data, dtype=np.uint8) if self._data else \
            np.zeros(0, dtype=np.uint8)
        ends = np.frombuffer(self._ends, dtype=np.int64).reshape(-1, 3) if self._ends else \
            np.zeros((0, 3), dtype=np.int64)
        shape = np.frombuffer(self._shape, dtype=np.int32) if self._shape else \
            np.zeros(0, dtype=np.int32)
        digests = np.frombuffer(self._digests, dtype=np.uint64) if self._digests else \
            np.zeros(0, dtype=np.uint64)
        return GroupArena(data, ends, shape, digests)


#: A version's overlay: per chunk of gids, the changed groups (None: none changed).
_Chunks = tuple[dict[int, PackedGroup] | None, ...]


class PublishedGroups(Mapping[int, PackedGroup]):
    """``gid -> PackedGroup`` of one install or membership version (module docstring).

    Build a first version with :meth:`build`, later ones with :meth:`with_groups`.
    """

    __slots__ = ("_arena", "_chunks", "_extra", "_overlaid", "_keys")

    def __init__(self, arena: GroupArena, chunks: _Chunks | None = None,
                 extra: dict[bytes, list[int]] | None = None, overlaid: int = 0) -> None:
        self._arena = arena
        self._chunks: _Chunks = chunks if chunks is not None else \
            (None,) * -(-len(arena) // CHUNK)
        #: hosts key -> gids that had it in a version derived from this arena (shared)
        self._extra: dict[bytes, list[int]] = extra if extra is not None else {}
        self._overlaid = overlaid
        self._keys: int | None = None  # distinct hosts keys (len of by_hosts), on demand

    @classmethod
    def build(cls, groups: Iterable[PackedGroup]) -> PublishedGroups:
        """The table of ``groups`` (gids 0..n-1, in order)."""
        builder = ArenaBuilder()
        for g in groups:
            builder.append(g)
        return cls(builder.finish())

    # -- Mapping -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._arena)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._arena)))

    def __contains__(self, gid: object) -> bool:
        try:
            return 0 <= operator.index(gid) < len(self._arena)  # type: ignore[arg-type]
        except TypeError:
            return False

    def __getitem__(self, gid: int) -> PackedGroup:
        if gid not in self:
            raise KeyError(gid)
        gid = operator.index(gid)
        chunk = self._chunks[gid >> CHUNK_BITS]
        if chunk is not None:
            got = chunk.get(gid)
            if got is not None:
                return got
        return self._arena.record(gid)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PublishedGroups):
            return super().__eq__(other)
        if other is self or (other._arena is self._arena and other._chunks == self._chunks):
            return True
        return len(self) == len(other) and all(self[g] == other[g] for g in self)

    __hash__ = None  # type: ignore[assignment]  # a mapping: unhashable, like dict

    def hosts(self, gid: int) -> bytes:
        """The hosts key of group ``gid``."""
        chunk = self._chunks[gid >> CHUNK_BITS]
        if chunk is not None:
            got = chunk.get(gid)
            if got is not None:
                return got.hosts
        return self._arena.hosts(gid)

    # -- hosts index ---------------------------------------------------------------
    def gid_of(self, key: bytes) -> int | None:
        """The lowest gid whose hosts key is ``key``, or None."""
        found = [g for g in self._arena.candidates(key_digest(key)) if self.hosts(g) == key]
        found += [g for g in self._extra.get(key, ()) if self.hosts(g) == key]
        return min(found, default=None)

    @property
    def by_hosts(self) -> HostsIndex:
        """``hosts key -> gid`` (the lowest gid of those hosts) as a mapping."""
        return HostsIndex(self)

    def distinct_keys(self) -> int:
        if self._keys is None:
            self._keys = len({self.hosts(g) for g in self})
        return self._keys

    # -- versions ------------------------------------------------------------------
    def with_groups(self, groups: Iterable[PackedGroup]) -> PublishedGroups:
        """A new version: this one with ``groups`` replacing those of their gids."""
        chunks = list(self._chunks)
        copied: set[int] = set()
        extra, overlaid = self._extra, self._overlaid
        changed = False
        for g in groups:
            if not 0 <= g.gid < len(self._arena):
                raise ValueError(f"Elmo published groups: gid {g.gid} out of 0..{len(self) - 1}")
            c = g.gid >> CHUNK_BITS
            chunk = chunks[c]
            if c not in copied:
                chunk = chunks[c] = dict(chunk) if chunk is not None else {}
                copied.add(c)
            assert chunk is not None
            if g.gid not in chunk:
                overlaid += 1
            chunk[g.gid] = g
            changed = True
            gids = extra.setdefault(g.hosts, [])
            if g.gid not in gids:
                gids.append(g.gid)
        if not changed:
            return self
        if overlaid > compact_after(len(self)):
            out = PublishedGroups(self._arena, tuple(chunks), extra, overlaid)
            return PublishedGroups.build(out[g] for g in out)
        return PublishedGroups(self._arena, tuple(chunks), extra, overlaid)

    def nbytes(self) -> int:
        """Bytes of the arena and its arrays (overlays not counted)."""
        return self._arena.nbytes()


class HostsIndex(Mapping[bytes, int]):
    """``hosts key -> gid`` of a :class:`PublishedGroups` (the lowest gid with those hosts)."""

    __slots__ = ("groups",)

    def __init__(self, groups: PublishedGroups) -> None:
        self.groups = groups

    def get(self, key: bytes, default: Any = None) -> Any:
        gid = self.groups.gid_of(key)
        return default if gid is None else gid

    def __getitem__(self, key: bytes) -> int:
        gid = self.groups.gid_of(key)
        if gid is None:
            raise KeyError(key)
        return gid

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.groups.gid_of(key) is not None

    def __iter__(self) -> Iterator[bytes]:
        seen: set[bytes] = set()
        for g in self.groups:
            key = self.groups.hosts(g)
            if key not in seen:
                seen.add(key)
                yield key

    def __len__(self) -> int:
        return self.groups.distinct_keys()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HostsIndex):
            return other.groups == self.groups
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]
