"""Fast path of the virtual-tree label program: the static walk without packets.

The pass-by-pass reference (:func:`sim.engines.static.run_notification` with
:class:`~sim.dataplanes.virtual_tree.reference.VirtualTreeDataPlane`) stays
the definition. :class:`VirtualTreeFastPath` (a
:class:`~sim.dataplanes.fast_path.FastPath`) walks the same copies through
the network in the same order (the engine's FIFO queue, so first arrivals
are the same floats), but never serialises a packet: a copy is the
publisher's label stack plus a bitmask of the hop labels consumed so far
(hop labels are the only ones a switch removes), and a switch visit is
counted from the stack's *active* labels only (those that hit ``check_hop``
or ``check_tree`` of the switch) instead of one pass at a time.

What one visit counts (derived from the reference's loop, module docstring
of :mod:`~sim.dataplanes.virtual_tree.reference`):

- an inactive label costs one pass and two lookups (``check_hop`` and
  ``check_tree`` miss); the original is dropped after its last label;
- a hop label costs one pass and two lookups (``check_hop``,
  ``extract_port``), clones to its port unless served or the ingress port,
  and is removed from the stack (the clone's too) unless it is the last one;
- a tree label with a port mask costs one pass per extracted port
  (``check_hop`` + ``check_tree`` + ``extract_port`` on the first, one
  ``extract_port`` on the others), one clone per new port; it stays in the
  stack; a tree label naming a multicast group (``set_tree_group``) costs one
  pass and two lookups, replicates to the group's ports (minus the ingress
  and served ports, each such replica a drop) and ends the original;
- a clone (or replica) made at label ``i`` recirculates once per label after
  ``i`` (one ``check_stop`` lookup each) until the stop label of its port,
  which drops it; otherwise it leaves after its last pass (depth = the pass
  that made it + its recirculations); copies leave in order of depth;
- a copy with no label left is rejected by the parser: one pass, a drop.

Frames carry the Ethernet header, the ``Size`` field, the remaining labels
(stop labels stay) and the payload. Table answers are read once per switch
configuration into dictionaries (cached in ``caches.vt_lookups`` next to the
memoised model's, keyed by the configuration object) and ``extract_port``
answers are asked of the installed table itself, so nothing is assumed about
which ports a mask selects.

:meth:`VirtualTreeFastPath.delivery` is that walk in Python.
:meth:`VirtualTreeFastPath.metrics` computes the row metrics of the same walk
without building a delivery: the strategy's encoder, then the kernel of
:mod:`~sim.dataplanes.virtual_tree.walk_kernel` over the installed tables laid
out as arrays once per state (:mod:`~sim.dataplanes.virtual_tree.walk_tables`),
compiled by numba (``impl="jit"``) or interpreted (``impl="python"``);
``walk_metrics`` is the walk alone on encodings made beforehand.

Declined (``None``, the reference runs and raises what it raises): an
encoding the strategy's encoder rejects, a publisher that is not a host, a stack with
a repeated label, a switch whose ``check_hop`` / ``check_tree`` /
``check_stop`` entries do not all match exactly, a missing clone session,
multicast group or ``extract_port`` entry, a port outside the bitmask, a hop
mask that does not extract to exactly its port, a frame sent out of a port
that does not exist, and a forwarding loop (more frames on a link than the
engine allows). The installed state must be the one the notification runs on:
:meth:`VirtualTreeFastPath.metrics` takes it per notification (``states``;
``needs_states`` tells callers so).

References
----------
Seed 000 §5.2.6 (Listings 5.1-5.5), §3.5.4 (delay model); digest ch. 5-7
§1.2-1.5.4, A27 (stop labels stay in emitted copies); shared/DESIGN.md
"Data planes" (fast paths must be property-tested against the pass-by-pass
model).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from sim.dataplanes.caches import Caches, Identity, or_fresh
from sim.dataplanes.control_state import ControlState, Exact, SwitchConfig
from sim.dataplanes.delivery import DelayModel, Delivery, SwitchCount, row_metrics
from sim.dataplanes.fast_path import Encoder, KernelChoice
from sim.dataplanes.packet import ETH_HEADER_BYTES, Encoding, Notification, payload_for
from sim.dataplanes.virtual_tree.codec import FieldRangeError, LabelFormat, count_labels
from sim.dataplanes.virtual_tree.reference import (
    CHECK_HOP,
    CHECK_STOP,
    CHECK_TREE,
    EXTRACT_PORT,
    SET_TREE_GROUP,
)
from sim.dataplanes.virtual_tree.walk_batch import LABEL_FIELDS, WalkBatch
from sim.dataplanes.virtual_tree.walk_kernel import compiled
from topologies.model import Topology

#: The implementations of :meth:`VirtualTreeFastPath.metrics` (:mod:`.walk_kernel`).
IMPLS = ("jit", "python")


def available_impls() -> tuple[str, ...]:
    """The walk kernel's implementations on this machine ("jit" needs numba)."""
    return IMPLS if compiled() is not None else ("python",)


class _Decline(Exception):
    """The notification is not covered exactly: the reference must run."""


class _SwitchIndex:
    """The tables of one :class:`SwitchConfig` as dictionaries (see the module docstring).

    ``hop``: label -> port; ``tree``: label -> ``("ports", mask)`` or ``("group",
    ports)``; ``stop``: clone port -> labels that stop it; ``keys``: labels
    that hit ``check_hop`` or ``check_tree``; ``seqs``: port mask -> the
    ``(port, bit)`` answers of ``extract_port`` until the mask is empty;
    ``sessions``: port -> clone-session egress port.
    """

    __slots__ = ("config", "fmt", "hop", "tree", "stop", "keys", "seqs", "sessions")

    def __init__(self, config: SwitchConfig, fmt: LabelFormat) -> None:
        self.config = config
        self.fmt = fmt
        hops = _exact(config, CHECK_HOP, 1)
        trees = _exact(config, CHECK_TREE, 1)
        stops = _exact(config, CHECK_STOP, 2)
        if hops is None or trees is None or stops is None:
            raise _Decline
        self.hop: dict[int, int] = {k[0]: e.param("port") for k, e in hops.items()}
        self.tree: dict[int, tuple[str, Any]] = {}
        for k, e in trees.items():
            if e.action == SET_TREE_GROUP:
                self.tree[k[0]] = ("group", e.param("group"))
            else:
                self.tree[k[0]] = ("ports", e.param("ports"))
        sets: dict[int, set[int]] = {}
        for label, port in stops:
            sets.setdefault(port, set()).add(label)
        self.stop: dict[int, frozenset[int]] = {p: frozenset(s) for p, s in sets.items()}
        self.keys: frozenset[int] = frozenset(self.hop) | frozenset(self.tree)
        self.seqs: dict[int, tuple[tuple[int, int], ...]] = {}
        self.sessions: dict[int, int] = {}

    def seq(self, mask: int) -> tuple[tuple[int, int], ...]:
        """What ``extract_port`` answers pass after pass for ``mask`` (memoised)."""
        got = self.seqs.get(mask)
        if got is not None:
            return got
        out = []
        rem = mask
        while rem:
            hit = self.config.lookup(EXTRACT_PORT, rem)
            if hit is None:
                raise _Decline  # the reference raises LookupError
            port = hit.param("port")
            try:
                bit = self.fmt.port_bit(port)
            except FieldRangeError:
                raise _Decline from None
            if not rem & bit:
                raise _Decline  # the mask would never empty
            rem &= ~bit
            out.append((port, bit))
        self.seqs[mask] = got = tuple(out)
        return got

    def session(self, port: int) -> int:
        """Egress port of the clone session of ``port``."""
        got = self.sessions.get(port)
        if got is None:
            session = self.config.clone_sessions.get(port)
            if session is None:
                raise _Decline  # the reference raises LookupError
            self.sessions[port] = got = session.port
        return got

    def group_ports(self, group_id: int) -> tuple[int, ...]:
        group = self.config.multicast_groups.get(group_id)
        if group is None:
            raise _Decline
        return tuple(group.ports)


def _exact(config: SwitchConfig, table: str, width: int) -> dict[tuple[Any, ...], Any] | None:
    """Key -> first entry of ``table`` if every entry matches exactly on ``width``
    fields (what ``config.lookup`` answers), else None."""
    out: dict[tuple[Any, ...], Any] = {}
    for entry in config.tables.get(table, ()):
        if len(entry.match) != width or not all(type(m) is Exact for _, m in entry.match):
            return None
        out.setdefault(tuple(m.value for _, m in entry.match), entry)  # type: ignore[union-attr]
    return out


class VirtualTreeFastPath(KernelChoice):
    """Packet-free static walk of the virtual-tree label program on one topology.

    A :class:`~sim.dataplanes.fast_path.FastPath` (see the module docstring).
    ``impl`` names what computes :meth:`metrics` (the walk kernel compiled or
    interpreted); :meth:`delivery` is the Python walk either way.

    Parameters
    ----------
    topology : Topology
    delays : DelayModel
        Analytic delay constants (seed 000 §3.5.4).
    encode : Encoder
        The strategy's encoder (its packets are what the walk starts from).
    fmt : LabelFormat
        The strategy's label widths.
    caches : Caches, optional
        Where the per-configuration table indices live (``caches.vt_lookups``).
    """

    #: :meth:`metrics` needs the installed state of every notification.
    needs_states = True

    def __init__(self, topology: Topology, delays: DelayModel, encode: Encoder,
                 fmt: LabelFormat, caches: Caches | None = None, impl: str = "auto") -> None:
        self.choose_kernels(impl, IMPLS, available_impls())
        self.topology = topology
        self.delays = delays
        self.encode = encode
        self.fmt = fmt
        self.caches = or_fresh(caches)
        self._hosts = frozenset(topology.hosts)
        # node -> port -> (neighbour, neighbour port, link delay), made by the first walk
        self._links: dict[str, dict[int, tuple[str, int, float]]] = {}
        self._limit = 64 * len(topology.links) * (len(topology.hosts) + 1)
        #: the state of the last walk and its switches' indices (a state is immutable)
        self._state: ControlState | None = None
        self._by_node: dict[str, _SwitchIndex] = {}
        self._batch: WalkBatch | None = None

    def using(self, impl: str) -> VirtualTreeFastPath:
        """The same fast path computed by implementation ``impl``."""
        return VirtualTreeFastPath(self.topology, self.delays, self.encode, self.fmt,
                                   self.caches, impl)

    # -- public API -------------------------------------------------------------
    def metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                payload_bytes: int, states: Sequence[ControlState] | None = None
                ) -> list[dict[str, Any] | None]:
        """Row metrics (:data:`~sim.dataplanes.delivery.METRIC_KEYS`, then the header's
        tree, stop and hop label counts) per notification; None where the reference
        must run, and for every notification when ``states`` is not given."""
        if states is None:
            return [None] * len(publishers)
        return self.walk_metrics(publishers, receiver_sets,
                                 self.encodings(publishers, receiver_sets, payload_bytes, states),
                                 states)

    def encodings(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                  payload_bytes: int, states: Sequence[ControlState]
                  ) -> list[Encoding | None]:
        """What the publishers send (the strategy's encoder, as :meth:`delivery` calls
        it); None where the publisher is no host or the encoder raises."""
        out: list[Encoding | None] = []
        for pub, receivers, state in zip(publishers, receiver_sets, states, strict=True):
            note = Notification(0, pub)
            out.append(self._encoding(state, note, receivers, payload_for(note, payload_bytes)))
        return out

    def walk_metrics(self, publishers: Sequence[str], receiver_sets: Sequence[frozenset[str]],
                     encodings: Sequence[Encoding | None], states: Sequence[ControlState]
                     ) -> list[dict[str, Any] | None]:
        """:meth:`metrics` of notifications already encoded (:meth:`encodings`): the walk
        alone, through the kernel of :mod:`~sim.dataplanes.virtual_tree.walk_kernel`
        (labels wider than 62 bits, and walks that outgrow its scratch, on the
        Python walk)."""

        def python(i: int) -> dict[str, Any] | None:
            return self._python_metrics(publishers[i], receiver_sets[i], encodings[i],
                                        states[i])

        if self.fmt.label_bits > 62:
            return [python(i) for i in range(len(publishers))]
        if self._batch is None:
            self._batch = WalkBatch(self.topology, self.delays, self.fmt, self.caches,
                                    self._impl)
        return self._batch.metrics(publishers, receiver_sets, encodings, states, python)

    def delivery(self, state: ControlState, notification: Notification,
                 receivers: frozenset[str], payload: bytes) -> Delivery | None:
        """The full :class:`~sim.dataplanes.delivery.Delivery` of one notification, or None
        where the reference must run."""
        encoding = self._encoding(state, notification, receivers, payload)
        if encoding is None:
            return None
        try:
            return self._walk(state, notification.publisher, receivers, encoding)
        except _Decline:
            return None

    # -- internals --------------------------------------------------------------
    def _encoding(self, state: ControlState, notification: Notification,
                  receivers: frozenset[str], payload: bytes) -> Encoding | None:
        if notification.publisher not in self._hosts:
            return None
        try:
            return self.encode(self.topology, state, notification, receivers, payload)
        except Exception:  # noqa: BLE001 - the reference raises it again
            return None

    def _python_metrics(self, pub: str, receivers: frozenset[str], encoding: Encoding | None,
                        state: ControlState) -> dict[str, Any] | None:
        """Row metrics from the Python walk's :class:`Delivery` (labels that do not fit the
        kernel, walks that outgrow its scratch)."""
        if encoding is None:
            return None
        try:
            d = self._walk(state, pub, receivers, encoding)
            counts = count_labels(self.fmt, (p.header for p in encoding.packets))
        except (_Decline, ValueError):  # the reference (its extra metrics) raises again
            return None
        m = row_metrics(d)
        m.update(zip(LABEL_FIELDS, (counts.tree, counts.stop, counts.hop), strict=True))
        return m

    def _index(self, config: SwitchConfig) -> _SwitchIndex:
        store = self.caches.vt_lookups
        key = (Identity(config), ("fast", self.fmt))
        got = store.get(key)
        if got is None:
            got = store.put(key, _SwitchIndex(config, self.fmt))
        return got  # type: ignore[no-any-return]

    def _walk(self, state: ControlState, pub: str, receivers: frozenset[str],
              encoding: Any) -> Delivery:
        if not self._links:
            topology = self.topology
            self._links = {node: {p: (i.neighbor, i.neighbor_port, i.link.delay_s)
                                  for p, i in topology.ports(node).items()}
                           for node in (*topology.switches, *topology.hosts)}
        fmt, delays, links_of, limit = self.fmt, self.delays, self._links, self._limit
        hosts = self._hosts
        out = Delivery(publisher=pub, receivers=receivers, encoding=encoding)
        links = out.links
        switches = out.switches
        delivered, first = out.delivered, out.first_arrival_s
        lbytes = fmt.label_bytes
        # one stack per packet: (labels, label -> position, frame bytes without labels)
        stacks: list[tuple[tuple[int, ...], dict[int, int], int]] = []
        # queue items: (node, in_port, stack number, consumed-hop mask, frame bytes, time)
        queue: deque[tuple[str, int, int, int, int, float]] = deque()

        def send(node: str, port: int, k: int, mask: int, size: int, t: float) -> None:
            hop = links_of[node].get(port)
            if hop is None:
                raise _Decline  # the reference raises EngineError
            nb, nb_port, delay = hop
            rec = links.get((node, nb))
            if rec is None:
                links[(node, nb)] = [1, size]
            else:
                rec[0] += 1
                rec[1] += size
                if rec[0] > limit:
                    raise _Decline  # forwarding loop: the reference raises EngineError
            queue.append((nb, nb_port, k, mask, size, t + delay))

        for i, packet in enumerate(encoding.packets):
            parsed = fmt.parse(packet)
            labels: tuple[int, ...] = parsed[0] if parsed is not None else ()
            pos = {lab: q for q, lab in enumerate(labels)}
            if len(pos) != len(labels):
                raise _Decline  # a repeated label
            rest = (packet.frame_bytes - len(labels) * lbytes if parsed is None
                    else ETH_HEADER_BYTES + fmt.size_bytes + len(parsed[1]))
            stacks.append((labels, pos, rest))
            send(pub, 1, i, 0, packet.frame_bytes, (i + 1) * delays.feed_in_s)
        switch_s, pass_s = delays.switch_s, delays.pass_s
        if self._state is not state:
            self._state, self._by_node = state, {}
        by_node = self._by_node
        while queue:
            node, in_port, k, mask, _, t = queue.popleft()
            if node in hosts:
                delivered[node] = delivered.get(node, 0) + 1
                if node not in first:
                    first[node] = t
                continue
            labels, pos, rest = stacks[k]
            idx = by_node.get(node)
            if idx is None:
                idx = by_node[node] = self._index(state.config(node))
            passes, lookups, drops, emitted = self._visit(idx, in_port, labels, pos, mask)
            count = switches.get(node)
            if count is None:
                count = switches[node] = SwitchCount()
            count.passes += passes
            count.recirculations += passes - 1
            count.lookups += lookups
            out.drops += drops
            n0 = len(labels)
            for depth, port, cmask in emitted:
                send(node, port, k, cmask, rest + (n0 - cmask.bit_count()) * lbytes,
                     t + switch_s + (depth - 1) * pass_s)
        return out

    def _visit(self, idx: _SwitchIndex, in_port: int, labels: tuple[int, ...],
               pos: dict[int, int], removed: int
               ) -> tuple[int, int, int, list[tuple[int, int, int]]]:
        """(passes, lookups, drops, emitted (depth, port, consumed-hop mask)) of one visit."""
        n0 = len(labels)
        n = n0 - removed.bit_count()
        if n == 0:
            return 1, 0, 1, []  # the parser rejects an empty stack
        keys = idx.keys
        if len(keys) <= n0:
            act = [q for q in map(pos.get, keys) if q is not None and not removed >> q & 1]
        else:
            act = [q for q, lab in enumerate(labels) if lab in keys and not removed >> q & 1]
        act.sort()
        hops, trees, port_bit = idx.hop, idx.tree, self.fmt.port_bit
        passes = lookups = drops = served = shift = cur = 0
        n_cur, cmask = n, removed
        clones: list[tuple[int, int, int, int]] = []  # (made, port, mask, first label)
        done = False
        for q in act:
            lab = labels[q]
            j = q - (removed & ((1 << q) - 1)).bit_count() - shift  # index now
            gap = j - cur
            passes += gap
            lookups += 2 * gap
            port = hops.get(lab)
            if port is not None:
                try:
                    seq = idx.seq(port_bit(port))
                except FieldRangeError:
                    raise _Decline from None
                if len(seq) != 1:
                    raise _Decline
                passes += 1
                lookups += 2
                p, b = seq[0]
                if not served & b and p != in_port:
                    served |= b
                    clones.append((passes, idx.session(p), cmask | (1 << q), j))
                if j + 1 >= n_cur:
                    drops += 1
                    done = True
                    break
                n_cur -= 1
                cmask |= 1 << q
                shift += 1
                cur = j
                continue
            kind, value = trees[lab]
            if kind == "group":
                passes += 1
                lookups += 2
                for p in idx.group_ports(value):
                    try:
                        b = port_bit(p)
                    except FieldRangeError:
                        raise _Decline from None
                    if p == in_port or served & b:
                        drops += 1
                    else:
                        clones.append((passes, p, cmask, j + 1))
                done = True
                break
            seq = idx.seq(value) if value else ()
            lookups += 2
            if not seq:
                passes += 1
            for p, b in seq:
                passes += 1
                lookups += 1
                if not served & b and p != in_port:
                    served |= b
                    clones.append((passes, idx.session(p), cmask, j + 1))
            if j + 1 >= n_cur:
                drops += 1
                done = True
                break
            cur = j + 1
        if not done:
            gap = n_cur - cur
            passes += gap
            lookups += 2 * gap
            drops += 1  # the original, after its last label
        emitted: list[tuple[int, int, int]] = []
        stop = idx.stop
        for made, port, mask, start in clones:
            end = n0 - mask.bit_count()
            dropped = False
            stopping = stop.get(port)
            if stopping:
                best = end
                for lab in stopping:
                    at = pos.get(lab)
                    if at is not None and not mask >> at & 1:
                        c = at - (mask & ((1 << at) - 1)).bit_count()
                        if start <= c < best:
                            best, dropped = c, True
                if dropped:
                    end = best + 1
            k = max(0, end - start)
            passes += k
            lookups += k
            if dropped:
                drops += 1
            else:
                emitted.append((made + k, port, mask))
        emitted.sort(key=_depth)
        return passes, lookups, drops, emitted


def _depth(e: tuple[int, int, int]) -> int:
    return e[0]
