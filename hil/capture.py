"""Raw-socket capture and injection on veths inside a run's namespace (issue 7).

One non-blocking AF_PACKET socket per interface gives the exact frame bytes
(no FCS, no padding on veths) and tells frames the interface received from
frames it sent (``PACKET_OUTGOING``). :meth:`Capture.collect` reads until no
frame arrived for ``quiet_s`` (quiescence), with an upper bound;
:meth:`Capture.collect_count` until a known number of frames arrived.

Every frame carries the kernel's software timestamp of its arrival at the
interface (``SO_TIMESTAMPNS``, taken when the sender's frame entered the
veth, not when Python read it), so latencies measured between two
interfaces exclude the reading process's scheduling (``hil calibrate``).
"""

from __future__ import annotations

import selectors
import socket
import struct
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from hil.netns import PACKET_OUTGOING, Namespace

_MAX_FRAME = 1 << 16
#: Linux ``SO_TIMESTAMPNS`` (= ``SCM_TIMESTAMPNS``): a ``struct timespec`` per frame
SO_TIMESTAMPNS = 35
_ANC_SPACE = socket.CMSG_SPACE(16)

#: What a capture names its interfaces by (a port number, a (node, port) pair, ...).
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Frame(Generic[K]):
    """A captured frame: where (capture key), which way, the exact bytes."""

    key: K
    outgoing: bool
    data: bytes
    #: the kernel's timestamp of the frame at the interface (``CLOCK_REALTIME``, s)
    stamp_s: float = 0.0


class Capture(Generic[K]):
    """Sockets on ``ifaces`` (key -> interface name in ``ns``); close() or ``with``."""

    def __init__(self, ns: Namespace, ifaces: Mapping[K, str]) -> None:
        self.socks: dict[K, socket.socket] = {}
        self._sel = selectors.DefaultSelector()
        try:
            for key, iface in ifaces.items():
                sock = ns.packet_socket(iface)
                self.socks[key] = sock
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                self._sel.register(sock, selectors.EVENT_READ, key)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Capture[K]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sel.close()
        for sock in self.socks.values():
            sock.close()
        self.socks.clear()

    def send(self, key: K, frame: bytes) -> None:
        """Transmit ``frame`` out of interface ``key``."""
        sent = self.socks[key].send(frame)
        if sent != len(frame):
            raise OSError(f"sent {sent} of {len(frame)} bytes on {key}")

    def _read_ready(self, timeout: float, out: list[Frame[K]]) -> int:
        got = 0
        for sel_key, _ in self._sel.select(timeout):
            sock = sel_key.fileobj
            while True:
                try:
                    data, anc, _, addr = sock.recvmsg(_MAX_FRAME,  # type: ignore[union-attr]
                                                      _ANC_SPACE)
                except BlockingIOError:
                    break
                out.append(Frame(sel_key.data, addr[2] == PACKET_OUTGOING, data, _stamp(anc)))
                got += 1
        return got

    def drain(self) -> int:
        """Discard whatever is queued; the number of frames dropped."""
        return self._read_ready(0.0, [])

    def pending(self) -> list[Frame[K]]:
        """Whatever is queued now (without waiting)."""
        out: list[Frame[K]] = []
        self._read_ready(0.0, out)
        return out

    def collect_count(self, count: int, max_s: float) -> list[Frame[K]]:
        """Frames until ``count`` frames not sent by the interfaces themselves
        (``outgoing`` False) arrived, or ``max_s`` passed; all frames read."""
        out: list[Frame[K]] = []
        deadline = time.monotonic() + max_s
        while sum(not f.outgoing for f in out) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._read_ready(left, out)
        return out

    def collect(self, quiet_s: float, max_s: float) -> list[Frame[K]]:
        """Frames until none arrived for ``quiet_s`` seconds (or ``max_s`` in total)."""
        out: list[Frame[K]] = []
        start = last = time.monotonic()
        while True:
            now = time.monotonic()
            if now - last >= quiet_s or now - start >= max_s:
                return out
            if self._read_ready(min(quiet_s - (now - last), max_s - (now - start)), out):
                last = time.monotonic()


def _stamp(ancillary: list[tuple[int, int, bytes]]) -> float:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec + nsec * 1e-9
    return 0.0
