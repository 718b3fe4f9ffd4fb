"""One BMv2 ``simple_switch_grpc`` process: start, health checks, stop (issue 7).

The switch starts with no program (``--no-p4``; P4Runtime pushes it), its
ports bound to veths inside a :class:`hil.netns.Namespace`, and its gRPC
server on a unix socket in the run's work directory, so the driver reaches it
from outside the namespace. Thrift and nanomsg addresses are per switch too,
so several switches (and several runs) coexist.

Failures raise :class:`Bmv2Error` with the tail of the switch's log: the
binary missing, the process exiting, gRPC not answering within the start-up
timeout.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from hil.netns import Namespace

log = logging.getLogger(__name__)

BINARY = "simple_switch_grpc"


class Bmv2Error(RuntimeError):
    """A BMv2 switch could not start, crashed or stopped answering."""


def find_binary() -> str | None:
    """Path of ``simple_switch_grpc`` on PATH, or None."""
    return shutil.which(BINARY)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text[-lines:]) or "(empty log)"


class Bmv2Switch:
    """A ``simple_switch_grpc`` process in ``ns``.

    Parameters
    ----------
    ns : Namespace
        Where its interfaces live.
    name : str
        Label used in file names and errors (a topology switch name).
    ports : mapping
        Port number -> interface name inside ``ns``.
    workdir : Path
        Directory for the gRPC socket and the logs.
    index : int
        Small integer unique within the run (device id, Thrift port offset).
    log_level : str
        BMv2 log level written to ``<workdir>/<name>.log`` ("off" for speed).
    realtime : int or None
        Run every BMv2 thread under ``SCHED_FIFO`` with this priority (1-99,
        ``chrt``), so other work on a loaded machine does not delay it
        (``hil calibrate``; BMv2 sleeps when idle, so it takes no CPU then).
    cpus : str or None
        CPU list to pin BMv2 to (``taskset -c``), e.g. ``"1"``.
    """

    def __init__(self, ns: Namespace, name: str, ports: Mapping[int, str], workdir: Path,
                 *, index: int = 0, log_level: str = "warn", realtime: int | None = None,
                 cpus: str | None = None) -> None:
        if realtime is not None and not 1 <= realtime <= 99:
            raise ValueError(f"realtime priority must be 1-99, got {realtime}")
        self.ns = ns
        self.name = name
        self.ports = dict(ports)
        self.workdir = Path(workdir)
        self.index = index
        self.log_level = log_level
        self.realtime = realtime
        self.cpus = cpus
        safe = "".join(c if c.isalnum() else "_" for c in name)
        self.socket_path = self.workdir / f"{safe}.grpc"
        self.log_base = self.workdir / f"{safe}.log"
        self.out_path = self.workdir / f"{safe}.out"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        """The log file BMv2 writes (its rotating sink appends ``.txt`` to ``--log-file``)."""
        txt = self.log_base.with_name(self.log_base.name + ".txt")
        return txt if txt.exists() or not self.log_base.exists() else self.log_base

    @property
    def grpc_addr(self) -> str:
        return f"unix:{self.socket_path}"

    @property
    def device_id(self) -> int:
        return self.index

    def argv(self, binary: str) -> list[str]:
        args = ["taskset", "-c", self.cpus] if self.cpus else []
        if self.realtime is not None:
            args += ["chrt", "-f", str(self.realtime)]
        args += [binary, "--no-p4", "--device-id", str(self.index),
                "--thrift-port", str(9090 + self.index),
                "--notifications-addr", f"ipc://{self.workdir}/notify-{self.index}.ipc",
                "--log-file", str(self.log_base), "--log-flush", "--log-level", self.log_level]
        for port, iface in sorted(self.ports.items()):
            args += ["-i", f"{port}@{iface}"]
        return args + ["--", "--grpc-server-addr", self.grpc_addr]

    def start(self, timeout_s: float = 20.0) -> None:
        """Start the process and wait until its gRPC server answers."""
        proc = self.launch()
        self.wait_ready(timeout_s)
        log.debug("BMv2 %s up (pid %d, %s)", self.name, proc.pid, self.grpc_addr)

    def launch(self) -> subprocess.Popen[bytes]:
        """Start the process without waiting (then :meth:`wait_ready`); the process."""
        binary = find_binary()
        if binary is None:
            raise Bmv2Error(f"{BINARY} is not on PATH")
        with open(self.out_path, "wb") as out:
            proc = subprocess.Popen(self.ns.exec_argv(self.argv(binary)), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.proc = proc
        self.ns.track(proc.pid)
        return proc

    def wait_ready(self, timeout_s: float) -> None:
        import grpc

        deadline = time.monotonic() + timeout_s
        while not self.socket_path.exists():
            self.check_alive()
            if time.monotonic() > deadline:
                raise self.error(f"gRPC socket did not appear within {timeout_s:g} s")
            time.sleep(0.02)
        channel = grpc.insecure_channel(self.grpc_addr)
        try:
            while True:
                self.check_alive()
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self.error(f"gRPC server did not answer within {timeout_s:g} s")
                try:
                    grpc.channel_ready_future(channel).result(timeout=min(left, 0.5))
                    return
                except grpc.FutureTimeoutError:
                    continue
        finally:
            channel.close()

    def check_alive(self) -> None:
        """Raise :class:`Bmv2Error` if the process has exited."""
        if self.proc is None:
            raise Bmv2Error(f"BMv2 {self.name} was never started")
        rc = self.proc.poll()
        if rc is not None:
            raise self.error(f"process exited with status {rc}")

    def error(self, what: str) -> Bmv2Error:
        return Bmv2Error(f"BMv2 switch {self.name}: {what}\n--- {self.out_path.name} ---\n"
                         f"{_tail(self.out_path)}\n--- {self.log_path.name} ---\n"
                         f"{_tail(self.log_path)}")

    def stop(self) -> None:
        """Terminate the process (kill after 5 s); idempotent."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def crash_check(switches: Iterable[Bmv2Switch]) -> Iterator[None]:
    """Turn any error in the body into :class:`Bmv2Error` (with the log tail)
    when one of ``switches`` has exited: a crash explains a failed RPC better
    than the RPC error does."""
    try:
        yield
    except Bmv2Error:
        raise
    except Exception as exc:
        for sw in switches:
            if sw.proc is not None and sw.proc.poll() is not None:
                raise sw.error(f"process exited with status {sw.proc.returncode}") from exc
        raise
