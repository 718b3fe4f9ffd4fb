"""Network namespaces and veth pairs for hardware-in-the-loop runs (issue 7).

Every run gets its own namespace, named ``stackcast-<pid>-<random>`` so
concurrent runs never collide, with IPv6 disabled (no router solicitations or
DAD frames on the veths: a capture sees only what the switches send). The
namespace and every veth in it are removed when the :class:`Namespace`
context exits, also on exceptions; :func:`signals_as_interrupt` turns SIGTERM
into :class:`KeyboardInterrupt` so a ``kill`` unwinds the same way as Ctrl-C.
:func:`remove_stale` removes namespaces left by runs whose process died
(SIGKILL) before they could clean up.

The driver itself stays in the caller's namespace (BMv2's gRPC server listens
on a unix socket, which namespaces do not isolate); raw sockets are opened
inside the namespace with :meth:`Namespace.entered` (``setns(2)`` on the
calling thread only) and stay bound to it afterwards.
"""

from __future__ import annotations

import ctypes
import logging
import os
import secrets
import signal
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "stackcast-"
NETNS_DIR = Path("/run/netns")
_CLONE_NEWNET = 0x4000_0000
_ETH_P_ALL = 0x0003
#: ``sll_pkttype`` of a frame the interface sent (linux/if_packet.h).
PACKET_OUTGOING = 4


class NetnsError(RuntimeError):
    """A namespace or veth command failed."""


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise NetnsError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip()}")


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsError(f"setns failed: {os.strerror(err)}")


def namespaces() -> list[str]:
    """Names of the existing named network namespaces."""
    return sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []


def unique_name() -> str:
    return f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}"


class Namespace:
    """A network namespace made for one run; a context manager that removes it.

    Parameters
    ----------
    name : str, optional
        Default: :func:`unique_name`. Must not exist yet.
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = name or unique_name()
        self.interfaces: list[str] = []
        self._pids: list[int] = []
        self._created = False

    def __enter__(self) -> Namespace:
        self.create()
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()

    def create(self) -> None:
        if self.name in namespaces():
            raise NetnsError(f"network namespace {self.name!r} already exists")
        _ip("netns", "add", self.name)
        self._created = True
        try:
            _ip("-n", self.name, "link", "set", "lo", "up")
            for key in ("all", "default"):
                self.disable_ipv6(key)
        except BaseException:
            self.delete()
            raise

    def exec_argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` prefixed to run inside the namespace (``ip netns exec``)."""
        return ["ip", "netns", "exec", self.name, *argv]

    def track(self, pid: int) -> None:
        """Remember a process started in the namespace, to kill it on delete."""
        self._pids.append(pid)

    def add_veth(self, a: str, b: str) -> None:
        """A veth pair ``a`` <-> ``b`` inside the namespace, both up, IPv6 off."""
        for n in (a, b):
            if not 0 < len(n) <= 15:
                raise NetnsError(f"interface name {n!r} must have 1 to 15 characters")
        _ip("-n", self.name, "link", "add", a, "type", "veth", "peer", "name", b)
        self.interfaces += [a, b]
        for n in (a, b):
            self.disable_ipv6(n)
            _ip("-n", self.name, "link", "set", n, "up")

    def disable_ipv6(self, conf: str) -> None:
        """``net.ipv6.conf.<conf>.disable_ipv6 = 1`` in the namespace (no-op without IPv6)."""
        with self.entered():  # /proc/sys/net is resolved in the opening thread's namespace
            path = Path(f"/proc/sys/net/ipv6/conf/{conf}/disable_ipv6")
            if path.exists():
                path.write_text("1\n")

    @contextmanager
    def entered(self) -> Iterator[None]:
        """Run the body with the calling thread inside the namespace."""
        with open("/proc/thread-self/ns/net") as home, open(NETNS_DIR / self.name) as target:
            _setns(target.fileno())
            try:
                yield
            finally:
                _setns(home.fileno())

    def packet_socket(self, iface: str) -> socket.socket:
        """A non-blocking raw AF_PACKET socket on ``iface`` (all EtherTypes)."""
        with self.entered():
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(_ETH_P_ALL))
            try:
                sock.bind((iface, 0))
            except OSError:
                sock.close()
                raise
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.setblocking(False)
        return sock

    def delete(self) -> None:
        """Kill the tracked processes, then remove the namespace (idempotent)."""
        for pid in self._pids:
            _kill(pid)
        self._pids.clear()
        if not self._created:
            return
        for pid in _pids_in(self.name):  # anything else started in our namespace
            _kill(pid)
        if self.name in namespaces():
            _ip("netns", "del", self.name)
        self._created = False
        log.debug("removed network namespace %s", self.name)


def _pids_in(name: str) -> list[int]:
    proc = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(p) for p in proc.stdout.split()] if proc.returncode == 0 else []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def remove_stale() -> list[str]:
    """Remove ``stackcast-<pid>-*`` namespaces whose process no longer exists."""
    removed = []
    for name in namespaces():
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            ns = Namespace(name)
            ns._created = True
            ns.delete()
            removed.append(name)
    return removed


@contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """Within the body, SIGTERM raises :class:`KeyboardInterrupt` (main thread only)."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
