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
from typing import Any

from hil.capture import Capture
from hil.netns import Namespace
from hil.programs import Program

log = logging.getLogger(__name__)


class Testbed:
    """Base of :class:`hil.hop.HopSwitch` and :class:`hil.network.Network`.

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
                 client_factory: Callable[..., Any] | None = None) -> None:
        self.program = program
        self.quiet_s = quiet_s
        self.retry_quiet_s = retry_quiet_s
        self.max_s = max_s
        self.startup_timeout_s = startup_timeout_s
        self.log_level = log_level
        self._client_factory = client_factory
        self.ns: Namespace | None = None
        self.capture: Capture | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Any:
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

    def _begin(self) -> str:
        """Create the run's temporary directory and namespace; the directory's path."""
        self._tmp = tempfile.TemporaryDirectory(prefix=f"stackcast-{self.kind}-")
        self.ns = Namespace()
        self.ns.create()
        return self._tmp.name

    def _client(self, grpc_addr: str, device_id: int) -> Any:
        if self._client_factory is None:
            from hil.p4rt import SwitchClient

            self._client_factory = SwitchClient
        return self._client_factory(grpc_addr, device_id, self.program)

    def _cleanup(self, clients: Iterable[Any], switches: Iterable[Any]) -> None:
        """Close clients and capture, stop the switches, remove namespace and directory;
        every step runs even when an earlier one failed."""
        steps: list[Callable[[], object]] = [c.close for c in clients]
        steps.append(lambda: self.capture and self.capture.close())
        steps += [sw.stop for sw in switches]
        steps += [lambda: self.ns and self.ns.delete(), lambda: self._tmp and self._tmp.cleanup()]
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001  (clean up the rest regardless)
                log.exception("%s clean-up step failed", self.kind)
        self.capture = self.ns = self._tmp = None
