"""Elmo's compact published groups: the same mapping as the dictionaries they replace.

``publisher_info`` used to hold ``{gid: PackedGroup}`` and ``{hosts key: first gid}``
dictionaries; :mod:`sim.dataplanes.elmo.published` holds them in arrays. These
properties build both from random records and compare every read, across
membership versions (copy-on-write overlays), compaction and digest collisions.

References
----------
Elmo SIGCOMM 2019 §3.3 (the controller publishes each group's header to the
hypervisors), §5.1 (1 million groups).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.dataplanes.elmo import published as pub
from sim.dataplanes.elmo.headers import PackedGroup
from sim.dataplanes.elmo.published import PublishedGroups


def packed(gid: int, hosts: tuple[int, ...], spine: bytes, leaf: bytes, shape: int
           ) -> PackedGroup:
    return PackedGroup(gid, b"".join(h.to_bytes(2, "big") for h in sorted(set(hosts))),
                       spine, leaf, shape)


#: a group's fields: hosts from a small pool (so keys repeat), layer bytes, shape
FIELDS = st.tuples(st.lists(st.integers(0, 6), max_size=4).map(tuple), st.binary(max_size=6),
                   st.binary(max_size=9), st.integers(0, 0x1F_FFFF))


def records(fields: list[tuple]) -> list[PackedGroup]:
    return [packed(gid, *f) for gid, f in enumerate(fields)]


def as_dicts(groups: list[PackedGroup]) -> tuple[dict[int, PackedGroup], dict[bytes, int]]:
    """The dictionaries the table replaces (first gid of each hosts key)."""
    by_gid = {g.gid: g for g in groups}
    by_hosts: dict[bytes, int] = {}
    for g in groups:
        by_hosts.setdefault(g.hosts, g.gid)
    return by_gid, by_hosts


def check_reads(table: PublishedGroups, groups: list[PackedGroup], probes: list[bytes]) -> None:
    by_gid, by_hosts = as_dicts(groups)
    assert len(table) == len(by_gid) and list(table) == list(by_gid)
    assert {g: table[g] for g in table} == by_gid
    assert dict(table.by_hosts) == by_hosts and len(table.by_hosts) == len(by_hosts)
    for key in [*by_hosts, *probes]:
        assert table.by_hosts.get(key) == by_hosts.get(key)
        assert (key in table.by_hosts) == (key in by_hosts)
    with pytest.raises(KeyError):
        table[len(groups)]


@settings(max_examples=80, deadline=None)
@given(st.lists(FIELDS, max_size=40), st.lists(st.binary(max_size=8), max_size=5))
def test_table_reads_like_the_dictionaries(fields, probes):
    groups = records(fields)
    check_reads(PublishedGroups.build(groups), groups, probes)


@settings(max_examples=60, deadline=None)
@given(st.lists(FIELDS, min_size=1, max_size=30), st.data(), st.booleans())
def test_versions_read_like_fresh_tables_and_leave_the_old_ones_alone(fields, data,
                                                                      compact_soon):
    """Random change sets applied one version after another (some versions derived from
    an older one: a branch); every version reads as a table built from its records."""
    groups = records(fields)
    versions = [(PublishedGroups.build(groups), groups)]
    limit = pub.compact_after
    if compact_soon:
        pub.compact_after = lambda n: 2  # compaction on almost every version
    try:
        for _ in range(data.draw(st.integers(1, 6))):
            parent, now = versions[data.draw(st.integers(0, len(versions) - 1))]
            gids = data.draw(st.lists(st.integers(0, len(now) - 1), max_size=6))
            changes = [packed(g, *data.draw(FIELDS)) for g in gids]
            table = parent.with_groups(changes)
            after = list(now)
            for g in changes:
                after[g.gid] = g
            versions.append((table, after))
        for table, content in versions:
            check_reads(table, content, [])
            assert table == PublishedGroups.build(content)
            assert table.by_hosts == PublishedGroups.build(content).by_hosts
    finally:
        pub.compact_after = limit


@settings(max_examples=40, deadline=None)
@given(st.lists(FIELDS, max_size=30), st.lists(FIELDS, max_size=8))
def test_digest_collisions_never_return_a_wrong_group(fields, changes):
    """With a 2-valued digest nearly every lookup meets colliding keys: the keys
    themselves decide."""
    digest = pub.key_digest
    pub.key_digest = lambda key: len(key) % 2
    try:
        groups = records(fields)
        table = PublishedGroups.build(groups)
        check_reads(table, groups, [b"\x00\x07", b""])
        if groups:
            new = [packed(i % len(groups), *f) for i, f in enumerate(changes)]
            after = list(groups)
            for g in new:
                after[g.gid] = g
            check_reads(table.with_groups(new), after, [b"\x00\x07"])
    finally:
        pub.key_digest = digest


def test_gids_must_come_in_order():
    with pytest.raises(ValueError, match="gid 1 appended at position 0"):
        PublishedGroups.build([packed(1, (1,), b"", b"", 0)])
    table = PublishedGroups.build([packed(0, (1,), b"", b"", 0)])
    with pytest.raises(ValueError, match="gid 3 out of 0..0"):
        table.with_groups([packed(3, (1,), b"", b"", 0)])
    assert table.with_groups([]) is table
