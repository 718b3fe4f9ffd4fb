"""What hop mode and network mode share: options, start-up and guaranteed clean-up.

A :class:`Testbed` is a context manager: entering it builds the set-up
(namespace, veths, BMv2 processes, P4Runtime clients, capture sockets);
leaving it — normally, after an exception, or on Ctrl-C turned into
``KeyboardInterrupt`` by :func:`hil.netns.signals_as_interrupt` — removes
everything, each step even when an earlier one failed.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, Self, TypeVar

from hil.capture import Capture, K
from hil.netns import Namespace
from hil.programs import Program
from sim.dataplanes.control_state import SwitchConfig, Write

log = logging.getLogger(__name__)

T = TypeVar("T")


class P4Client(Protocol):
    """What a test bed asks of a P4Runtime client (:class:`hil.p4rt.SwitchClient`)."""

    def push_pipeline(self) -> None: ...

    def write_config(self, config: SwitchConfig) -> int: ...

    def apply(self, writes: list[Write]) -> None: ...

    def read_counter(self) -> int: ...

    def close(self) -> None: ...


#: ``(grpc_addr, device_id, program) -> client``
ClientFactory = Callable[[str, int, Program], P4Client]


class Stoppable(Protocol):
    def stop(self) -> None: ...


class Testbed(Generic[K]):
    """Base of :class:`hil.hop.HopSwitch` and :class:`hil.network.Network`.

    ``K`` names the capture's interfaces (a port number; a (node, port) pair).

    Parameters
    ----------
    quiet_s : float
        A check is complete when no frame arrived for this long.
    retry_quiet_s : float
        The longer window of the one replay of a disagreeing check.
    max_s : float
        Upper bound of one check's capture.
    startup_timeout_s : float
        How long a BMv2 may take to answer P4Runtime.
    log_level : str
        BMv2's log level (its logs live in the run's temporary directory).
    client_factory : callable, optional
        ``(grpc_addr, device_id, program) -> client``; default
        :class:`hil.p4rt.SwitchClient` (tests pass fakes).
    """

    #: prefix of the run's temporary directory
    kind = "testbed"

    def __init__(self, program: Program, *, quiet_s: float, retry_quiet_s: float,
                 max_s: float, startup_timeout_s: float, log_level: str = "off",
                 client_factory: ClientFactory | None = None) -> None:
        self.program = program
        self.quiet_s = quiet_s
        self.retry_quiet_s = retry_quiet_s
        self.max_s = max_s
        self.startup_timeout_s = startup_timeout_s
        self.log_level = log_level
        self._client_factory = client_factory
        self._ns: Namespace | None = None
        self._capture: Capture[K] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Self:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Remove everything :meth:`_start` built (subclasses: :meth:`_cleanup`)."""
        raise NotImplementedError

    def _started(self, value: T | None, what: str) -> T:
        if value is None:
            raise RuntimeError(f"{self.kind} test bed has no {what}: use it as a context "
                               "manager (`with`)")
        return value

    @property
    def ns(self) -> Namespace:
        """The run's network namespace (inside ``with`` only)."""
        return self._started(self._ns, "namespace")

    @property
    def capture(self) -> Capture[K]:
        """The capture sockets (inside ``with`` only)."""
        return self._started(self._capture, "capture")

    def _begin(self) -> str:
        """Create the run's temporary directory and namespace; the directory's path."""
        self._tmp = tempfile.TemporaryDirectory(prefix=f"stackcast-{self.kind}-")
        self._ns = Namespace()
        self._ns.create()
        return self._tmp.name

    def _new_client(self, grpc_addr: str, device_id: int) -> P4Client:
        if self._client_factory is None:
            from hil.p4rt import SwitchClient

            self._client_factory = SwitchClient
        return self._client_factory(grpc_addr, device_id, self.program)

    def _cleanup(self, clients: Iterable[P4Client], switches: Iterable[Stoppable]) -> None:
        """Close clients and capture, stop the switches, remove namespace and directory;
        every step runs even when an earlier one failed."""
        steps: list[Callable[[], None]] = [c.close for c in clients]
        if self._capture is not None:
            steps.append(self._capture.close)
        steps += [sw.stop for sw in switches]
        if self._ns is not None:
            steps.append(self._ns.delete)
        if self._tmp is not None:
            steps.append(self._tmp.cleanup)
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001  (clean up the rest regardless)
                log.exception("%s clean-up step failed", self.kind)
        self._capture = self._ns = self._tmp = None
