"""Network mode: one BMv2 per switch, wired like the topology (issue 7).

Every topology link becomes a veth pair in one namespace made for the run:
switch ``s<i>`` port ``p`` is interface ``s<i>p<p>``; a host's end of its
access link is ``h<j>`` (``i``, ``j`` the topology's switch and host ids).
Each switch runs its own ``simple_switch_grpc``; the program is pushed once
per switch and every notification's :class:`~sim.dataplanes.control_state.ControlState`
reached by P4Runtime writes (deletes first). The publisher's encoded packets
go in at its host interface; a raw socket on every switch interface records
what the switch sends (``PACKET_OUTGOING``), so each directed link is
captured once, at its sending end; the run waits for quiescence and reads
every switch's ``pass_counter``.

Compared per notification with the static engine: the hosts reached with
copy counts, and per switch the frames sent on each port (exact bytes, as
multisets: this fixes frames and bytes of every link) and the passes.
Suited to small topologies (up to ~16 switches: one process each).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from hil.bmv2 import Bmv2Switch, crash_check
from hil.capture import Capture
from hil.compare import Report, compare_delivered, compare_switch, port_frames
from hil.hop import model_visits, reconfigure_writes
from hil.programs import Program
from hil.testbed import ClientFactory, P4Client, Testbed
from sim.dataplanes.control_state import ControlState, SwitchConfig

#: More switches than this take long to start and exceed small machines.
MAX_SWITCHES = 32


def iface_names(topology) -> dict[tuple[str, int], str]:  # noqa: ANN001
    """(node, port) -> interface name, for every switch port and host port."""
    names: dict[tuple[str, int], str] = {}
    for s in topology.switches:
        for p in topology.ports(s):
            names[(s, p)] = f"s{topology.switch_id(s)}p{p}"
    for h in topology.hosts:
        names[(h, 1)] = f"h{topology.host_id(h)}"
    return names


class Network(Testbed[tuple[str, int]]):
    """BMv2 switches wired as ``topology``; a context manager that removes it all
    (:class:`hil.testbed.Testbed`)."""

    kind = "net"

    def __init__(self, topology, program: Program, *, quiet_s: float = 0.1,  # noqa: ANN001
                 retry_quiet_s: float = 1.0, max_s: float = 30.0,
                 startup_timeout_s: float = 30.0, log_level: str = "off",
                 client_factory: ClientFactory | None = None) -> None:
        if len(topology.switches) > MAX_SWITCHES:
            raise ValueError(f"network mode runs one BMv2 per switch: {topology.name} has "
                             f"{len(topology.switches)} switches, at most {MAX_SWITCHES} "
                             "allowed (use --mode hop)")
        super().__init__(program, quiet_s=quiet_s, retry_quiet_s=retry_quiet_s, max_s=max_s,
                         startup_timeout_s=startup_timeout_s, log_level=log_level,
                         client_factory=client_factory)
        self.topology = topology
        self.names = iface_names(topology)
        self.switches: dict[str, Bmv2Switch] = {}
        self.clients: dict[str, P4Client] = {}
        self._loaded: dict[str, SwitchConfig] = {}

    def _start(self) -> None:
        topo = self.topology
        workdir = self._begin()
        ns = self.ns
        done: set[tuple[str, int]] = set()
        for s in topo.switches:
            for p, info in topo.ports(s).items():
                if (s, p) in done:
                    continue
                far = (info.neighbor, info.neighbor_port)
                ns.add_veth(self.names[(s, p)], self.names[far])
                done |= {(s, p), far}
        for s in topo.switches:
            ports = {p: self.names[(s, p)] for p in topo.ports(s)}
            sw = Bmv2Switch(ns, s, ports, Path(workdir),
                            index=topo.switch_id(s), log_level=self.log_level)
            sw.launch()
            self.switches[s] = sw
        for sw in self.switches.values():
            sw.wait_ready(self.startup_timeout_s)
        for s, sw in self.switches.items():
            client = self._new_client(sw.grpc_addr, sw.device_id)
            self.clients[s] = client
            client.push_pipeline()
        keys = {(s, p): self.names[(s, p)] for s in topo.switches for p in topo.ports(s)}
        keys |= {(h, 1): self.names[(h, 1)] for h in topo.hosts}
        self._capture = Capture(ns, keys)

    def close(self) -> None:
        self._cleanup(self.clients.values(), self.switches.values())
        self.clients, self.switches = {}, {}

    def load(self, state: ControlState) -> int:
        """Install ``state`` (a ControlState) on every switch; the writes made."""
        writes = 0
        for s, client in self.clients.items():
            new = state.config(s)
            old = self._loaded.get(s)
            if old is new:
                continue
            self._loaded.pop(s, None)
            if old is None:
                writes += client.write_config(new)
            else:
                ops = reconfigure_writes(old, new)
                client.apply(ops)
                writes += len(ops)
            self._loaded[s] = new
        return writes

    def counters(self) -> dict[str, int]:
        return {s: c.read_counter() for s, c in self.clients.items()}

    def inject(self, publisher: str, frames: Iterable[bytes], quiet_s: float
               ) -> tuple[dict[str, dict[int, Counter[bytes]]], dict[str, int]]:
        """Send ``frames`` from ``publisher``; per switch the frames per port and passes."""
        capture = self.capture
        with crash_check(self.switches.values()):
            capture.drain()
            before = self.counters()
            for frame in frames:
                capture.send((publisher, 1), frame)
            got = capture.collect(quiet_s, self.max_s)
            after = self.counters()
            for sw in self.switches.values():
                sw.check_alive()
        sent: dict[str, list[tuple[int, bytes]]] = {}
        for f in got:
            node, port = f.key
            if f.outgoing and node in self.switches:
                sent.setdefault(node, []).append((port, f.data))
        return ({s: port_frames(v) for s, v in sent.items()},
                {s: after[s] - before[s] for s in self.switches})

    def check(self, item, strategy, report: Report) -> None:  # noqa: ANN001
        """Validate one notification (a CellNotification) and add it to ``report``."""
        delivery, visits = model_visits(self.topology, strategy, item)
        self.check_expected(
            item.notification.notification_id, item.notification.publisher,
            [p.to_bytes() for p in delivery.encoding.packets], item.state,
            [(v.switch, v.emits) for v in visits],
            {s: c.passes for s, c in delivery.switches.items()}, delivery.delivered, report)

    def check_expected(self, note: int, publisher: str, frames: list[bytes],
                       state: ControlState, emits: Iterable[tuple[str, Iterable]],
                       passes: Mapping[str, int], delivered: Mapping[str, int],
                       report: Report) -> None:
        """Install ``state``, inject ``frames`` at ``publisher`` and compare with what
        the model expects: the frames each switch emits (``emits``: (switch, (port,
        bytes) pairs) per visit), passes per switch and copies per host."""
        topo = self.topology
        expected: dict[str, list[tuple[int, bytes]]] = {}
        for s, pairs in emits:
            expected.setdefault(s, []).extend(pairs)
        want = {s: port_frames(v) for s, v in expected.items()}
        with crash_check(self.switches.values()):
            self.load(state)

        def compare(quiet_s: float) -> tuple[list, list, dict, dict]:
            got, counted = self.inject(publisher, frames, quiet_s)
            per_switch = [compare_switch(note, s, want.get(s, {}), got.get(s, {}),
                                         passes.get(s, 0), counted[s])
                          for s in topo.switches if s in want or s in got or counted[s]]
            reached: dict[str, int] = {}
            for s, ports in got.items():
                for p, counter in ports.items():
                    info = topo.ports(s)[p]
                    if topo.is_host(info.neighbor):
                        reached[info.neighbor] = reached.get(info.neighbor, 0) + sum(
                            counter.values())
            return per_switch, compare_delivered(note, delivered, reached), got, counted

        per_switch, found, got, counted = compare(self.quiet_s)
        if found or any(per_switch):
            report.retried(found + [m for f in per_switch for m in f])
            time.sleep(self.retry_quiet_s)
            per_switch, found, got, counted = compare(self.retry_quiet_s)
        report.notifications += 1
        report.frames += len(frames) + sum(sum(c.values()) for ports in got.values()
                                           for c in ports.values())
        report.passes += sum(counted.values())
        for f in per_switch:
            report.add_visit(f)
        report.add_delivery(found)


def run_network(topology, strategy, program: Program, items: Iterable, report: Report, *,
                total: int | None = None, progress: bool = False, **options) -> Report:  # noqa: ANN001
    """Validate every notification of ``items`` in network mode; fills ``report``."""
    from tqdm import tqdm

    start = time.monotonic()
    with Network(topology, program, **options) as net:
        for item in tqdm(items, total=total, unit="notification", disable=not progress,
                         leave=False, desc=f"network {strategy.name}"):
            net.check(item, strategy, report)
    report.seconds += time.monotonic() - start
    return report
