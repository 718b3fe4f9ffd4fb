"""Link crossings that reached no receiver, for any strategy (from the links a notification used).

The content filters compute their link false positives from their own
routes (``strategies.content_filter``). Label stacks, stored trees and
virtual trees do not, so the unified comparison of content filters with
them (``experiments/specs/unified-content.toml``) needs a definition that
works from what the static engine records for every strategy: the frames
per directed link.

A directed link ``(u, v)`` that carried frames is *useful* if a receiver of
the notification can be reached from ``v`` over links that carried frames
of this notification (``v`` itself counts when it is a receiver); the frames
on the other links are wasted. The publisher's own access link is never
counted (no filter in the network can avoid it). For forwarding along a
tree (every strategy here except unicast and the ALM overlays) this equals
"crossings from which no receiver was reached", the content filters'
definition; where several frames share a link it can only be lower (a link
shared by a useful and a useless frame counts as useful).

References
----------
Seed 001 §6.2 (a link forwarding is a false positive if the link is on no
route from the event's origin to an interested subscriber); digest
seed001-004 A2 "Network FP".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def wasted_link_frames(links: Mapping[tuple[str, str], Sequence[int]], publisher: str,
                       receivers: Iterable[str]) -> int:
    """Frames on directed links from which no receiver is reachable over used links.

    Parameters
    ----------
    links : mapping
        Directed link ``(u, v)`` -> ``[frames, bytes]`` (``sim.engines.static.Delivery.links``).
    publisher : str
        The publishing host (its outgoing access link is never wasted).
    receivers : iterable of str
        The hosts that should get the notification.
    """
    incoming: dict[str, list[str]] = {}
    for (u, v), fb in links.items():
        if fb[0]:
            incoming.setdefault(v, []).append(u)
    useful_nodes = set()
    stack = [r for r in receivers if r in incoming]
    while stack:  # walk backwards from the receivers over used links
        node = stack.pop()
        if node in useful_nodes:
            continue
        useful_nodes.add(node)
        stack.extend(incoming.get(node, ()))
    return sum(fb[0] for (u, v), fb in links.items()
               if fb[0] and v not in useful_nodes and u != publisher)
