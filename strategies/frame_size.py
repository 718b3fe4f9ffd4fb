"""What every header-stack strategy shares: the frame-size policy.

Oversized stacks are never truncated (seed 000 §3.4.1). ``on_oversize``:

- ``error``: raise :class:`OversizeError` naming the notification and size;
- ``split``: the strategy sends one packet per subtree (its own splitter);
- ``jumbo``: allow frames up to 9000 B, then error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from sim.dataplanes.packet import Notification, Packet

OnOversize = Literal["error", "split", "jumbo"]
JUMBO_MTU_BYTES = 9000
DEFAULT_MTU_BYTES = 1500
ETHERTYPE_STACK = 0x9999  # seed 000 ch. 5 P4_16 parser; ch. 3-4 give none


class OversizeError(ValueError):
    """A frame would exceed the MTU and the policy does not allow splitting."""


def frame_limit(mtu_bytes: int, on_oversize: OnOversize) -> int:
    """Largest allowed Ethernet payload (header stack + event) in bytes."""
    return JUMBO_MTU_BYTES if on_oversize == "jumbo" else mtu_bytes


def enforce_mtu(packets: Sequence[Packet], mtu_bytes: int, on_oversize: OnOversize,
                notification: Notification,
                split: Callable[[], Sequence[Packet]] | None = None) -> tuple[Packet, ...]:
    """Return ``packets`` if they fit, else apply the oversize policy.

    The MTU bounds what follows the Ethernet header (stack + payload), as the
    standard 1500 B MTU does (seed 000 §3.4.1).
    """
    limit = frame_limit(mtu_bytes, on_oversize)
    too_big = [p for p in packets if len(p.header) + len(p.payload) > limit]
    if not too_big:
        return tuple(packets)
    if on_oversize == "split" and split is not None:
        parts = tuple(split())
        if all(len(p.header) + len(p.payload) <= limit for p in parts):
            return parts
    size = max(len(p.header) + len(p.payload) for p in too_big)
    raise OversizeError(
        f"notification {notification.notification_id} from {notification.publisher}: "
        f"{size} B of stack + payload exceed the {limit} B MTU (on_oversize={on_oversize})")
