"""Static engine: one notification through the network, no time, zero load.

The engine never looks at a delivery tree. The publisher's encoded packets
enter its switch; at every switch the strategy's data-plane model decides
what leaves on which port; links carry the frames to the next node; hosts
accept them (or send new ones). Everything is counted on the way:
deliveries and copies, false positives/negatives, duplicates, frames and bytes
per directed link (host links included), passes/recirculations/lookups per
switch, and the analytic worst-case delay of seed 000 §3.5.4.

Delay model (seed 000 §3.5.4, digest §7.16): the publisher feeds packets in
one after another (``feed_in_s`` each); a switch adds ``switch_s`` plus
``pass_s`` per recirculation the copy waited for; an attached broker adds
``broker_s`` plus sequential feed-in (below), a replying host the delay its
:class:`~strategies.base.HostAction` gives; links add their propagation
delay. Worst-case delay = the latest first arrival at any intended receiver.

Brokers (application-layer multicast, seed 000 §2.3 (i), §3.5.4) are not
topology nodes. A strategy that implements :class:`BrokerHost` hangs one
broker off a spare port of some switches; a frame the switch emits on that
port crosses the directed link ``(switch, "b:<switch>")``, the broker answers
with its packets in sending order, and each answer crosses
``("b:<switch>", switch)`` back into the switch on the same port. Both
directions are counted like any other link. The i-th answer (from 0) leaves
``broker_s + (i + 1) * feed_in_s`` after the frame reached the broker: the
software processing time, then sequential feed-in of every copy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from sim.dataplanes.control_state import ControlState
from sim.dataplanes.delivery import DelayModel, Delivery, SwitchCount, broker_node
from sim.dataplanes.fast_path import FastPath
from sim.dataplanes.packet import Notification, Packet
from sim.dataplanes.pipeline import PipelineResult
from strategies.base import Strategy
from topologies.model import Topology


class EngineError(RuntimeError):
    """The network misbehaved (forwarding loop, port that does not exist)."""


@runtime_checkable
class BrokerHost(Protocol):
    """Optional strategy hook: software brokers attached to switches.

    References
    ----------
    Seed 000 §1 (Fig. 1.1 switch-broker pair) and §3.5.4 (ALM variants);
    digest §7.16.
    """

    def broker_ports(self, topology: Topology, state: ControlState) -> Mapping[str, int]:
        """Switch -> the port its broker is attached to (a port the topology does not use)."""
        ...

    def broker_receive(self, topology: Topology, state: ControlState, switch: str,
                       packet: Packet, notification: Notification,
                       receivers: frozenset[str]) -> tuple[Packet, ...]:
        """The packets the broker of ``switch`` sends back, in sending order.

        ``receivers`` stands in for the broker's software matching of the
        event against its subscriptions (matching is abstracted away).
        """
        ...


def run_notification(
    topology: Topology,
    strategy: Strategy,
    state: ControlState,
    notification: Notification,
    receivers: frozenset[str],
    payload: bytes,
    delays: DelayModel = DelayModel(),
    max_frames: int | None = None,
    *,
    on_switch: Callable[[str, int, Packet, PipelineResult], None] | None = None,
) -> Delivery:
    """Walk one notification through the network and count everything.

    ``on_switch(switch, in_port, packet, result)``, if given, is called after
    every switch visit with the exact packet the switch received and what its
    data plane did (hardware-in-the-loop hop mode replays these on BMv2); it
    does not change the walk.

    Raises
    ------
    EngineError
        If more than ``max_frames`` frames cross links (a forwarding loop;
        default 64 x links x (hosts + 1)), or a frame leaves on a port that
        does not exist.
    """
    dataplane = strategy.model()
    publisher = notification.publisher
    encoding = strategy.encode(topology, state, notification, receivers, payload)
    out = Delivery(publisher=publisher, receivers=receivers, encoding=encoding)
    limit = max_frames or 64 * len(topology.links) * (len(topology.hosts) + 1)
    # queue items: (node, in_port, packet, time of arrival)
    queue: deque[tuple[str, int, Packet, float]] = deque()
    links = out.links
    broker_ports = (strategy.broker_ports(topology, state) if isinstance(strategy, BrokerHost)
                    else {})
    broker_switch = {broker_node(sw): sw for sw in broker_ports}

    def tally(src: str, dst: str, packet: Packet) -> None:
        rec = links.setdefault((src, dst), [0, 0])
        rec[0] += 1
        rec[1] += packet.frame_bytes
        if rec[0] > limit:
            raise EngineError(f"forwarding loop: more than {limit} frames on {src}->{dst}")

    def send(node: str, port: int, packet: Packet, t: float) -> None:
        info = topology.ports(node).get(port)
        if info is None:
            if broker_ports.get(node) != port:
                raise EngineError(f"{node} sent a frame out of port {port}, which does not exist")
            tally(node, broker_node(node), packet)
            queue.append((broker_node(node), 1, packet, t))
            return
        tally(node, info.neighbor, packet)
        queue.append((info.neighbor, info.neighbor_port, packet, t + info.link.delay_s))

    for i, packet in enumerate(encoding.packets):
        send(publisher, 1, packet, (i + 1) * delays.feed_in_s)
    while queue:
        node, in_port, packet, t = queue.popleft()
        if node in broker_switch:
            sw = broker_switch[node]
            replies = strategy.broker_receive(  # type: ignore[attr-defined]
                topology, state, sw, packet, notification, receivers)
            for i, reply in enumerate(replies):
                tally(node, sw, reply)
                queue.append((sw, broker_ports[sw], reply,
                              t + delays.broker_s + (i + 1) * delays.feed_in_s))
            continue
        if topology.is_host(node):
            out.delivered[node] = out.delivered.get(node, 0) + 1
            out.first_arrival_s.setdefault(node, t)
            action = strategy.host_receive(topology, node, packet, notification)
            for reply, delay in action.send:
                send(node, 1, reply, t + delay)
            continue
        result = dataplane.process(node, state.config(node), packet, in_port)
        if on_switch is not None:
            on_switch(node, in_port, packet, result)
        count = out.switches.setdefault(node, SwitchCount())
        count.passes += result.passes
        count.recirculations += result.recirculations
        count.lookups += result.lookups
        count.circulations_simplified += result.circulations_simplified
        out.drops += result.dropped
        for emit in result.emitted:
            send(node, emit.port, emit.packet,
                 t + delays.switch_s + (emit.depth - 1) * delays.pass_s)
    return out


STATIC_PATHS = ("auto", "fast", "reference")


def choose_static_path(topology: Topology, strategy: Strategy, delays: DelayModel,
                       path: str = "auto") -> FastPath | None:
    """The engine a static cell uses: the strategy's fast path where it has one.

    The fast path comes from the strategy's hook
    (:meth:`strategies.base.Strategy.fast_path`); this engine names no
    strategy. ``path`` is ``"auto"`` (the fast path if the hook returns one,
    else the reference), ``"reference"`` (always :func:`run_notification`) or
    ``"fast"`` (the fast path; an error if the hook returns none).
    Notifications a fast path declines (``None`` from
    :meth:`~sim.dataplanes.fast_path.FastPath.metrics`) run on the reference
    in every mode.

    Raises
    ------
    ValueError
        If ``path`` is not one of :data:`STATIC_PATHS`, or ``"fast"`` was asked
        for a strategy without a fast path for these parameters and topology.

    References
    ----------
    shared/DESIGN.md "Data planes" (fast paths proven equal to the reference).
    """
    if path not in STATIC_PATHS:
        raise ValueError(f"static_path must be one of {', '.join(STATIC_PATHS)}; got {path!r}")
    if path == "reference":
        return None
    fast = strategy.fast_path(topology, delays)
    if fast is None and path == "fast":
        raise ValueError(f"static_path='fast': strategy {strategy.name!r} has no fast path "
                         f"with these parameters on topology {topology.name!r}")
    return fast
