"""What Elmo's controller tells a sender's hypervisor, and the header it pushes.

Elmo's controller computes, per group, the downstream p-rules (shared by all
senders of the group) and hands each sender's hypervisor switch the header to
push; the upstream p-rules depend on where the sender sits (Elmo §3.1-3.3).
:class:`GroupRules` is that per-group record; ``ControlState.publisher_info``
holds it as a :class:`PackedGroup` (the layers' bytes, plain values) under
the group's :func:`hosts_key`, all groups of an install in one compact table
(:mod:`sim.dataplanes.elmo.published`).
:func:`sender_header` adds the upstream part for one sender and keeps only
the layers its packet will cross:

- upstream leaf p-rule: the group's other hosts on the sender's leaf, and, if
  any member sits on another leaf, all up ports with the multipath flag;
- upstream spine p-rule (when the packet leaves the leaf): the pod's other
  member leaves, and, if any member sits in another pod, all up ports of the
  spine the leaf's multipath choice picks, with the multipath flag;
- core p-rule (when the packet leaves the pod): one bit per other member pod;
- the group's downstream spine p-rules (when it leaves the pod) and leaf
  p-rules (when it leaves the leaf).

Multipath (Elmo §3.1: "forward on any upstream port", ECMP by flow in
hardware): the switch takes the ``j``-th set bit of the up bitmap, ``j =
group_id mod popcount(up)`` (:func:`multipath_choice`), a hash-free,
deterministic stand-in for a flow hash that keeps all packets of a group on
one path.

References
----------
Elmo SIGCOMM 2019 §3.1 (upstream p-rules with the multipath flag, downstream
p-rules), §3.3 (the controller computes headers, the hypervisor pushes them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from sim.dataplanes.elmo.codec import (
    LEAF_DEFAULT,
    SPINE_DEFAULT,
    ElmoHeader,
    ElmoLayout,
    PRule,
    UpRule,
    decode_layer,
    encode_layer,
)
from sim.dataplanes.elmo.fabric import ElmoFabric

#: ``publisher_info`` keys: :func:`hosts_key` -> gid, and gid -> :class:`PackedGroup`.
INFO_GIDS = "elmo_gids"
INFO_GROUPS = "elmo_groups"


class GroupRules(NamedTuple):
    """One group's downstream encoding, as the controller computes it.

    ``hosts`` are the group's hosts (in ``topology.hosts`` order); the
    defaults are None when the group has no default p-rule in that layer.
    """

    gid: int
    hosts: tuple[str, ...]
    spine_rules: tuple[PRule, ...]
    spine_default: int | None
    leaf_rules: tuple[PRule, ...]
    leaf_default: int | None


class PackedGroup(NamedTuple):
    """A :class:`GroupRules` as the controller publishes it (``publisher_info``): what a
    sender's hypervisor holds, compact enough for a million groups.

    ``hosts`` is :func:`hosts_key`; ``spine`` and ``leaf`` are the layers' bytes
    (:func:`~sim.dataplanes.elmo.codec.encode_layer`); ``shape`` packs the p-rule
    counts and default flags: ``n_spine | n_leaf << 8 | flags << 16``.
    """

    gid: int
    hosts: bytes
    spine: bytes
    leaf: bytes
    shape: int


def index_bytes(hosts: int) -> int:
    """Bytes of one host index in :func:`hosts_key` for a network of ``hosts`` hosts."""
    return 2 if hosts <= 1 << 16 else 4


def hosts_key(hosts: Iterable[str], host_index: Mapping[str, int]) -> bytes:
    """A host set as the key of ``publisher_info[INFO_GIDS]``: the hosts' indices in
    ``topology.hosts``, ascending, big endian, :func:`index_bytes` each."""
    width = index_bytes(len(host_index))
    return b"".join(i.to_bytes(width, "big")
                    for i in sorted(map(host_index.__getitem__, hosts)))


def indices_key(indices: Sequence[int] | np.ndarray, hosts: int) -> bytes:
    """:func:`hosts_key` of hosts given by their indices in ``topology.hosts`` (distinct,
    ascending) in a network of ``hosts`` hosts."""
    return np.asarray(indices, dtype=">u2" if index_bytes(hosts) == 2 else ">u4").tobytes()


def pack_group(rules: GroupRules, layout: ElmoLayout, host_index: Mapping[str, int]
               ) -> PackedGroup:
    """The published form of ``rules``."""
    return pack_layers(rules.gid, hosts_key(rules.hosts, host_index), rules.spine_rules,
                       rules.spine_default, rules.leaf_rules, rules.leaf_default, layout)


def pack_layers(gid: int, key: bytes, spine_rules: Sequence[PRule], spine_default: int | None,
                leaf_rules: Sequence[PRule], leaf_default: int | None, layout: ElmoLayout
                ) -> PackedGroup:
    """The published form of a group given its :func:`hosts_key` and its two layers."""
    flags = ((SPINE_DEFAULT if spine_default is not None else 0)
             | (LEAF_DEFAULT if leaf_default is not None else 0))
    return PackedGroup(gid, key, encode_layer(spine_rules, spine_default, layout, "spine"),
                       encode_layer(leaf_rules, leaf_default, layout, "leaf"),
                       len(spine_rules) | len(leaf_rules) << 8 | flags << 16)


def unpack_layers(packed: PackedGroup, layout: ElmoLayout
                  ) -> tuple[tuple[PRule, ...], int | None, tuple[PRule, ...], int | None]:
    """The spine p-rules, spine default, leaf p-rules and leaf default of a published group."""
    flags = packed.shape >> 16
    spine, spine_default, _ = decode_layer(packed.spine, packed.shape & 0xFF,
                                           bool(flags & SPINE_DEFAULT), layout, "spine")
    leaf, leaf_default, _ = decode_layer(packed.leaf, (packed.shape >> 8) & 0xFF,
                                         bool(flags & LEAF_DEFAULT), layout, "leaf")
    return spine, spine_default, leaf, leaf_default


def unpack_group(packed: PackedGroup, layout: ElmoLayout, hosts: Sequence[str]) -> GroupRules:
    """:class:`GroupRules` back from its published form (``hosts``: ``topology.hosts``)."""
    spine, spine_default, leaf, leaf_default = unpack_layers(packed, layout)
    raw, w = packed.hosts, index_bytes(len(hosts))
    names = tuple(hosts[int.from_bytes(raw[i:i + w], "big")] for i in range(0, len(raw), w))
    return GroupRules(packed.gid, names, spine, spine_default, leaf, leaf_default)


def group_for(info: Mapping[str, Any], publisher: str, receivers: frozenset[str],
              host_index: Mapping[str, int]) -> PackedGroup:
    """The installed group of a notification: the one whose hosts are the receivers
    and the publisher (a sending member), else exactly the receivers.

    Raises
    ------
    LookupError
        If neither host set is an installed group (or a host is unknown).
    """
    gids = info.get(INFO_GIDS, {})
    try:
        gid = gids.get(hosts_key(receivers | {publisher}, host_index))
        if gid is None and publisher not in receivers:
            gid = gids.get(hosts_key(receivers, host_index))
    except KeyError as exc:
        raise LookupError(f"unknown host {exc}") from None
    if gid is None:
        raise LookupError(f"no Elmo group installed for {publisher} -> "
                          f"{len(receivers)} receivers")
    return info[INFO_GROUPS][gid]  # type: ignore[no-any-return]


def multipath_choice(up: int, group_id: int) -> int:
    """The up bit a multipath p-rule takes: the ``group_id mod popcount(up)``-th set
    bit, counting from bit 0 (``up`` must be non-zero)."""
    j = group_id % up.bit_count()
    while True:
        low = up & -up
        if j == 0:
            return low.bit_length() - 1
        up ^= low
        j -= 1


def _all(count: int) -> int:
    return (1 << count) - 1


def sender_header(fabric: ElmoFabric, rules: GroupRules, publisher: str) -> ElmoHeader | None:
    """The header ``publisher`` pushes for group ``rules`` (module docstring), or None
    when no other host of the group is reachable (nothing to send)."""
    leaf = fabric.leaf_of(publisher)
    pod = fabric.pod_of[leaf]
    host_bit, pod_of, leaf_bit = fabric.host_bit, fabric.pod_of, fabric.leaf_bit
    local = 0
    pod_leaves = 0
    other_pods: set[int] = set()
    leaf_of = fabric.topology.host_switch
    for h in rules.hosts:
        if h == publisher:
            continue
        lf = leaf_of(h)
        if lf == leaf:
            local |= 1 << host_bit[h]
        elif pod_of[lf] == pod:
            pod_leaves |= 1 << leaf_bit[lf]
        else:
            other_pods.add(pod_of[lf])
    need_up = bool(pod_leaves or other_pods)
    if not (local or need_up):
        return None
    ports = fabric.switches[leaf]
    up_leaf = UpRule(local, _all(len(ports.up)) if need_up else 0, need_up)
    if not need_up:
        return ElmoHeader(rules.gid, up_leaf=up_leaf)
    topo = fabric.topology
    spine = topo.ports(leaf)[ports.up[multipath_choice(up_leaf.up, rules.gid)]].neighbor
    need_core = bool(other_pods)
    up_spine = UpRule(pod_leaves, _all(len(fabric.switches[spine].up)) if need_core else 0,
                      need_core)
    if not need_core:
        return ElmoHeader(rules.gid, up_leaf=up_leaf, up_spine=up_spine,
                          leaf_rules=rules.leaf_rules, leaf_default=rules.leaf_default)
    core = 0
    seen: set[int] = set()
    for bit, p in enumerate(fabric.core_pods):
        if p in other_pods and p not in seen:  # one port per pod
            seen.add(p)
            core |= 1 << bit
    return ElmoHeader(rules.gid, up_leaf=up_leaf, up_spine=up_spine, core=core,
                      spine_rules=rules.spine_rules, spine_default=rules.spine_default,
                      leaf_rules=rules.leaf_rules, leaf_default=rules.leaf_default)
