"""What the ch. 4 label strategies share: field-width parameters, packets, trees.

*hops*, *destinations*, *tree* and *hybrid* all put a ``Size`` field and
16-bit typed labels after the Ethernet header (EtherType 0x9999). Their
parameters therefore share the widths of
:class:`~sim.dataplanes.virtual_tree.codec.LabelFormat` and the MTU policy of
:mod:`strategies.frame_size`.

References
----------
Seed 000 §3.2 (frame layout, preorder stacks), §3.4.1 (MTU, split, jumbo),
§4.2-4.3; digest ch. 1-4 §2, §7.11.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from sim.dataplanes.packet import BROADCAST_MAC, Notification, Packet, host_mac
from sim.dataplanes.trees import Tree
from sim.dataplanes.virtual_tree.codec import LabelFormat, validate_widths
from strategies.base import Encoding
from strategies.frame_size import (
    DEFAULT_MTU_BYTES,
    ETHERTYPE_STACK,
    OnOversize,
    enforce_mtu,
)
from topologies.model import Topology
from topologies.registry import check


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelParams:
    """Field widths and MTU policy of a label-stack strategy.

    Parameters
    ----------
    label_bits, type_bits, size_bits, bitmask_bits : int
        Label width (16), its type tag (2; the id gets the rest, 14), the
        ``Size`` field (16) and the port bitmasks (64).
    ethertype : int
        EtherType of the stack (0x9999).
    mtu_bytes : int
        Largest stack + payload in bytes (1500).
    on_oversize : {"error", "split", "jumbo"}
        What to do when a packet exceeds the MTU: raise, send one packet per
        subtree of the publisher's switch, or allow 9000 B frames.
    """

    label_bits: int = 16
    type_bits: int = 2
    size_bits: int = 16
    bitmask_bits: int = 64
    ethertype: int = ETHERTYPE_STACK
    mtu_bytes: int = DEFAULT_MTU_BYTES
    on_oversize: OnOversize = "error"

    def __post_init__(self) -> None:
        validate_label_params(self)


def validate_label_params(params: LabelParams) -> None:
    """Validate the fields of :class:`LabelParams` (subclasses call it from their own
    ``__post_init__``)."""
    validate_widths(params.label_bits, params.type_bits, params.size_bits, params.bitmask_bits,
                    params.ethertype)
    check(params.mtu_bytes >= 46, f"mtu_bytes must be >= 46, got {params.mtu_bytes}")
    check(params.on_oversize in ("error", "split", "jumbo"),
          f"on_oversize must be one of error, split, jumbo; got {params.on_oversize!r}")


def label_format(params: LabelParams) -> LabelFormat:
    return LabelFormat(label_bits=params.label_bits, type_bits=params.type_bits,
                       size_bits=params.size_bits, bitmask_bits=params.bitmask_bits,
                       ethertype=params.ethertype)


def check_receivers(publisher: str, receivers: frozenset[str]) -> None:
    """Receiver sets never contain the publisher (digest §7.4)."""
    if publisher in receivers:
        raise ValueError(f"receivers must not include the publisher {publisher}")


def stack_packet(topology: Topology, publisher: str, fmt: LabelFormat, labels: Sequence[int],
                 payload: bytes) -> Packet:
    """The frame a publisher injects: broadcast MAC, its own MAC, 0x9999, stack, payload.

    The MAC header is kept so hosts can use ordinary sockets (seed 000 §3.2).
    """
    return Packet(dst_mac=BROADCAST_MAC, src_mac=host_mac(topology, publisher),
                  ethertype=fmt.ethertype, header=fmt.encode(labels), payload=payload)


def encode_stacks(topology: Topology, params: LabelParams, fmt: LabelFormat,
                  notification: Notification, payload: bytes, labels: Sequence[int],
                  split: Callable[[], Iterable[Sequence[int]]] | None = None) -> Encoding:
    """One packet with ``labels``, or the ``split`` stacks if it exceeds the MTU.

    Raises
    ------
    strategies.frame_size.OversizeError
        If a packet does not fit and the policy (or the split) does not help.
    """
    pub = notification.publisher
    whole = stack_packet(topology, pub, fmt, labels, payload)
    splitter = None if split is None else partial(_split_packets, topology, pub, fmt, payload,
                                                  split)
    packets = enforce_mtu([whole], params.mtu_bytes, params.on_oversize, notification, splitter)
    entries = sum((len(p.header) - fmt.size_bytes) // fmt.label_bytes for p in packets)
    return Encoding(packets, header_entries=entries)


def _split_packets(topology: Topology, publisher: str, fmt: LabelFormat, payload: bytes,
                   split: Callable[[], Iterable[Sequence[int]]]) -> list[Packet]:
    return [stack_packet(topology, publisher, fmt, part, payload) for part in split()]


def subtree_preorder(tree: Tree, node: str) -> list[str]:
    """``node`` and its descendants in preorder (children in port order)."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(tree.children.get(n, ())))
    return out


def edge_id(topology: Topology, a: str, b: str) -> int:
    """The ``edge_id`` of the link between adjacent nodes ``a`` and ``b``."""
    return topology.ports(a)[topology.port_to(a, b)].link.edge_id


def tree_key(publisher: str, receivers: Iterable[str]) -> str:
    """Key under which a receiver set's stored tree is published to encoders."""
    return publisher + ":" + ",".join(sorted(receivers))


def round_half_up(numerator: int, denominator: int) -> int:
    """``round(numerator / denominator)`` with halves rounded up, in integers."""
    return (2 * numerator + denominator) // (2 * denominator)
