"""Raw-socket capture and injection on veths inside a run's namespace (issue 7).

One non-blocking AF_PACKET socket per interface gives the exact frame bytes
(no FCS, no padding on veths) and tells frames the interface received from
frames it sent (``PACKET_OUTGOING``). :meth:`Capture.collect` reads until no
frame arrived for ``quiet_s`` (quiescence), with an upper bound.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from hil.netns import PACKET_OUTGOING, Namespace

_MAX_FRAME = 1 << 16

#: What a capture names its interfaces by (a port number, a (node, port) pair, ...).
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Frame(Generic[K]):
    """A captured frame: where (capture key), which way, the exact bytes."""

    key: K
    outgoing: bool
    data: bytes
    #: ``time.perf_counter()`` when the frame was read (for ``hil calibrate``)
    read_s: float = 0.0


class Capture(Generic[K]):
    """Sockets on ``ifaces`` (key -> interface name in ``ns``); close() or ``with``."""

    def __init__(self, ns: Namespace, ifaces: Mapping[K, str]) -> None:
        self.socks: dict[K, socket.socket] = {}
        self._sel = selectors.DefaultSelector()
        try:
            for key, iface in ifaces.items():
                sock = ns.packet_socket(iface)
                self.socks[key] = sock
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
                    data, addr = sock.recvfrom(_MAX_FRAME)  # type: ignore[union-attr]
                except BlockingIOError:
                    break
                out.append(Frame(sel_key.data, addr[2] == PACKET_OUTGOING, data,
                                 time.perf_counter()))
                got += 1
        return got

    def drain(self) -> int:
        """Discard whatever is queued; the number of frames dropped."""
        return self._read_ready(0.0, [])

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
