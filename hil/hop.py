"""Hop mode: one BMv2 reconfigured switch by switch, fed the exact packets each
switch receives in the simulation (issue 7).

The static engine (:func:`sim.engines.static.run_notification`, observer
``on_switch``) records every switch visit: the switch, the ingress port, the
exact frame and the model's :class:`~sim.dataplanes.pipeline.PipelineResult`. One
``simple_switch_grpc`` with ports 1..P (P = the largest port number of any
switch) then replays them: visits are grouped by switch and installed
configuration; the program is pushed once and each group's
:class:`~sim.dataplanes.control_state.SwitchConfig` reached by P4Runtime writes (deletes of
the previous configuration, then inserts and modifies); each
visit's frame goes in on its ingress port, the frames leaving every port are
captured until quiescence, and the ``pass_counter`` delta is read. Because
every visit is checked on its own, any topology size works.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hil.bmv2 import Bmv2Switch, crash_check
from hil.capture import Capture
from hil.compare import Report, compare_switch, port_frames
from hil.programs import Program
from hil.testbed import ClientFactory, P4Client, Testbed
from sim.dataplanes.control_state import ControlState, SwitchConfig, Write, diff
from sim.dataplanes.delivery import Delivery
from sim.dataplanes.pipeline import PipelineResult
from sim.engines.static import run_notification

#: The name of the one BMv2 in hop mode (in logs and in the writes).
HOP = "hop"


@dataclass(frozen=True, slots=True)
class Visit:
    """One switch handling one arriving frame in the model."""

    notification: int
    switch: str
    in_port: int
    frame: bytes
    config: SwitchConfig
    emits: tuple[tuple[int, bytes], ...]
    passes: int
    #: the model's whole result (visits from :func:`model_visits`; ``hil calibrate``)
    result: PipelineResult | None = field(default=None, compare=False, repr=False)

    @property
    def chain(self) -> int:
        """Passes on the chain of the last copy to leave (the largest ``Emit.depth``;
        0 without a model result or when nothing leaves)."""
        if self.result is None:
            return 0
        return max((e.depth for e in self.result.emitted), default=0)


def model_visits(topology, strategy, item) -> tuple[Delivery, list[Visit]]:  # noqa: ANN001
    """Run ``item`` (a :class:`experiments.cells.pipeline.CellNotification`) through
    the static engine; its delivery and every switch visit in order."""
    visits: list[Visit] = []
    note = item.notification

    def on_switch(switch, in_port, packet, result) -> None:  # noqa: ANN001
        visits.append(Visit(note.notification_id, switch, in_port, packet.to_bytes(),
                            item.state.config(switch),
                            tuple((e.port, e.packet.to_bytes()) for e in result.emitted),
                            result.passes, result))

    delivery = run_notification(topology, strategy, item.state, note, item.receivers,
                                item.payload, on_switch=on_switch)
    return delivery, visits


def group_visits(visits: Iterable[Visit]) -> list[tuple[str, SwitchConfig, list[Visit]]]:
    """Visits grouped by (switch, equal configuration), in first-seen order."""
    groups: dict[str, list[tuple[SwitchConfig, list[Visit]]]] = {}
    order: list[tuple[str, int]] = []
    for v in visits:
        per_switch = groups.setdefault(v.switch, [])
        for config, members in per_switch:
            if config is v.config or config == v.config:
                members.append(v)
                break
        else:
            per_switch.append((v.config, [v]))
            order.append((v.switch, len(per_switch) - 1))
    return [(sw, *groups[sw][i]) for sw, i in order]


class HopSwitch(Testbed[int]):
    """One BMv2 with ports 1..``ports`` on veths in a fresh namespace.

    Use as a context manager; everything (process, namespace, veths) is
    removed on exit, also after errors (:class:`hil.testbed.Testbed`).
    ``realtime`` and ``cpus`` go to :class:`hil.bmv2.Bmv2Switch` (scheduling
    of the BMv2 process, for ``hil calibrate``).
    """

    kind = "hop"

    def __init__(self, program: Program, ports: int, *, quiet_s: float = 0.02,
                 retry_quiet_s: float = 0.5, max_s: float = 10.0,
                 startup_timeout_s: float = 20.0,
                 log_level: str = "off", client_factory: ClientFactory | None = None,
                 realtime: int | None = None, cpus: str | None = None) -> None:
        if ports < 1:
            raise ValueError(f"ports must be >= 1, got {ports}")
        super().__init__(program, quiet_s=quiet_s, retry_quiet_s=retry_quiet_s, max_s=max_s,
                         startup_timeout_s=startup_timeout_s, log_level=log_level,
                         client_factory=client_factory)
        self.ports = ports
        self.realtime, self.cpus = realtime, cpus
        self._loaded: SwitchConfig | None = None
        self._bmv2: Bmv2Switch | None = None
        self._client: P4Client | None = None

    @property
    def bmv2(self) -> Bmv2Switch:
        """The BMv2 process (inside ``with`` only)."""
        return self._started(self._bmv2, "BMv2 switch")

    @property
    def client(self) -> P4Client:
        """The P4Runtime client of :attr:`bmv2` (inside ``with`` only)."""
        return self._started(self._client, "P4Runtime client")

    def _start(self) -> None:
        workdir = self._begin()
        ns = self.ns
        for p in range(1, self.ports + 1):
            ns.add_veth(f"p{p}", f"q{p}")
        bmv2 = self._bmv2 = Bmv2Switch(ns, HOP, {p: f"p{p}" for p in range(1, self.ports + 1)},
                                       Path(workdir), log_level=self.log_level,
                                       realtime=self.realtime, cpus=self.cpus)
        bmv2.start(self.startup_timeout_s)
        self._capture = Capture(ns, {p: f"q{p}" for p in range(1, self.ports + 1)})
        self._client = self._new_client(bmv2.grpc_addr, bmv2.device_id)

    def close(self) -> None:
        self._cleanup([self._client] if self._client else [], [self._bmv2] if self._bmv2 else [])
        self._client = self._bmv2 = None

    def load(self, config: SwitchConfig) -> None:
        """Make ``config`` the installed state.

        The program is pushed once; later configurations are reached by writes
        (:func:`reconfigure_writes`), because BMv2 1.15.5 sends every frame
        once more per extra SetForwardingPipelineConfig it received.
        """
        if config is self._loaded:
            return
        previous, self._loaded = self._loaded, None
        with crash_check([self.bmv2]):
            if previous is None:
                self.client.push_pipeline()
                self.client.write_config(config)
            else:
                self.client.apply(reconfigure_writes(previous, config))
        self._loaded = config

    def run(self, in_port: int, frame: bytes, quiet_s: float | None = None
            ) -> tuple[dict[int, Counter[bytes]], int]:
        """Inject ``frame`` on ``in_port``; the frames out of each port and the passes.

        Reads until no frame arrived for ``quiet_s`` (default ``self.quiet_s``),
        then the counter. A switch still busy after that shows up as missing
        frames or passes; :meth:`check` retries such visits with a long window.
        """
        if not 1 <= in_port <= self.ports:
            raise ValueError(f"in_port {in_port} outside 1..{self.ports}")
        bmv2, client, capture = self.bmv2, self.client, self.capture
        with crash_check([bmv2]):
            capture.drain()
            before = client.read_counter()
            capture.send(in_port, frame)
            got = capture.collect(quiet_s or self.quiet_s, self.max_s)
            passes = client.read_counter() - before
            bmv2.check_alive()
        return port_frames((f.key, f.data) for f in got if not f.outgoing), passes

    def check(self, v: Visit, report: Report) -> None:
        """Replay visit ``v`` and add the comparison to ``report``.

        A visit that disagrees is replayed once more with ``retry_quiet_s``
        (late frames of a loaded machine are not a model error); the second
        result is the one reported.
        """
        expected = port_frames(v.emits)
        detail = f"in_port {v.in_port}, frame {v.frame.hex()}"
        frames, passes = self.run(v.in_port, v.frame)
        found = compare_switch(v.notification, v.switch, expected, frames, v.passes, passes,
                               detail)
        if found:
            report.retried(found)
            time.sleep(self.retry_quiet_s)
            frames, passes = self.run(v.in_port, v.frame, self.retry_quiet_s)
            found = compare_switch(v.notification, v.switch, expected, frames, v.passes,
                                   passes, detail)
        report.frames += sum(sum(c.values()) for c in frames.values())
        report.passes += passes
        report.add_visit(found)


def reconfigure_writes(old: SwitchConfig, new: SwitchConfig) -> list[Write]:
    """The writes turning one installed configuration into another, deletes first
    (so table capacity is never exceeded on the way)."""
    writes = diff(ControlState({HOP: old}), ControlState({HOP: new}))
    return [w for w in writes if w.type == "DELETE"] + [w for w in writes if w.type != "DELETE"]


def max_port(topology) -> int:  # noqa: ANN001
    """The largest port number of any switch."""
    return max((p for s in topology.switches for p in topology.ports(s)), default=1)


def run_hop(topology, strategy, program: Program, items: Iterable, report: Report, *,
            progress: bool = False, **switch_options) -> Report:  # noqa: ANN001
    """Validate every notification of ``items`` in hop mode; fills ``report``."""
    start = time.monotonic()
    visits: list[Visit] = []
    for item in items:
        _, item_visits = model_visits(topology, strategy, item)
        visits += item_visits
        report.notifications += 1
    groups = group_visits(visits)
    from tqdm import tqdm

    bar = tqdm(total=len(visits), unit="visit", disable=not progress, leave=False,
               desc=f"hop {strategy.name}")
    # broker ports (ALM) lie beyond the topology's ports
    ports = max([max_port(topology)] + [max([v.in_port, *(p for p, _ in v.emits)])
                                         for v in visits])
    with HopSwitch(program, ports, **switch_options) as hop:
        for _switch, config, members in groups:
            hop.load(config)
            for v in members:
                hop.check(v, report)
                bar.update()
    bar.close()
    report.seconds += time.monotonic() - start
    return report
