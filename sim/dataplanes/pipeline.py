"""The contract between engines and data-plane reference models.

A data plane is the Python reference model of one P4 program family. Given a
switch's installed :class:`~sim.dataplanes.control_state.SwitchConfig`, an arriving packet and
its ingress port, :meth:`DataPlane.process` runs the program pass by pass and
returns a :class:`PipelineResult`: how many pipeline passes ran, how many of
them were recirculations, how many table applies happened, and which frames
left on which ports (each with the number of sequential passes it waited, so
a timed engine can place it in time).

Data planes register by family name in :data:`DATAPLANES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sim.dataplanes.control_state import SwitchConfig
from sim.dataplanes.packet import Packet
from topologies.registry import Registry


@dataclass(frozen=True, slots=True)
class Emit:
    """A frame leaving the switch on ``port``.

    ``depth`` is the number of pipeline passes on this copy's own chain from
    arrival to departure (1 = left after the first pass), so its departure is
    ``depth`` pass-times after arrival when passes do not queue.
    """

    port: int
    packet: Packet
    depth: int = 1
    #: Index (into ``PipelineResult.pass_parents``) of the pass after which this
    #: copy leaves; -1 when the model does not record a pass trace.
    after_pass: int = -1


@dataclass(frozen=True, slots=True)
class PipelineResult:
    """What one switch did with one arriving packet.

    Attributes
    ----------
    passes : int
        Pipeline passes (ingress + egress) of every packet instance.
    recirculations : int
        Passes that were recirculations.
    lookups : int
        Table applies, hit or miss (seed 000 digest §7.7).
    emitted : tuple of Emit
        Frames sent out, in the order the switch emits them.
    dropped : int
        Packet instances dropped (the exhausted original counts).
    circulations_simplified : int
        The thesis's simplified circulation count ("equal to the number of
        switch ports used for forwarding", seed 000 §3.3.3), where a family
        defines it; 0 otherwise.
    pass_parents : tuple of int
        The pass trace (see the attribute comment), or empty.
    """

    passes: int
    recirculations: int
    lookups: int
    emitted: tuple[Emit, ...]
    dropped: int = 0
    circulations_simplified: int = 0
    #: Optional pass trace for timed engines: entry j is the index of the pass
    #: that spawned pass j (a recirculation of, or a clone made in, that pass),
    #: -1 for the pass that began on arrival. Empty when not recorded; then an
    #: engine may only assume each copy waited ``depth`` sequential passes.
    pass_parents: tuple[int, ...] = ()


class DataPlane(Protocol):
    """A P4 program family's reference model."""

    @property
    def name(self) -> str:
        """The family name (also the P4 program's base name)."""
        ...

    def process(self, switch: str, config: SwitchConfig, packet: Packet,
                in_port: int) -> PipelineResult:
        """Run the program on ``packet`` arriving on ``in_port`` of ``switch``."""
        ...


DATAPLANES: Registry[DataPlane] = Registry("data plane")


def get_dataplane(name: str) -> DataPlane:
    """The registered data plane ``name`` (importing the built-in families first)."""
    import sim.dataplanes.catalog  # noqa: F401  (registers the families)

    return DATAPLANES.get(name)
