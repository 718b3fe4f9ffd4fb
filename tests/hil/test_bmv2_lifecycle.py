"""BMv2 process lifecycle: start-up timeout, crash detection, clean-up after errors.

Needs ``simple_switch_grpc`` on PATH and root (``PATH=/opt/p4/bin:$PATH``).
"""

from __future__ import annotations

import os
import re
import signal

import pytest
from support.bmv2 import BMV2_MODULE

from hil.bmv2 import Bmv2Error, Bmv2Switch
from hil.hop import HopSwitch
from hil.netns import PREFIX, Namespace, namespaces
from hil.programs import Program
from sim.dataplanes.control_state import SwitchConfig

pytestmark = BMV2_MODULE

L2 = Program("l2_multicast")


def _mine() -> list[str]:
    return [n for n in namespaces() if n.startswith(f"{PREFIX}{os.getpid()}-")]


def test_start_up_timeout_names_the_switch_and_shows_the_log(tmp_path):
    with Namespace() as ns:
        ns.add_veth("p1", "q1")
        sw = Bmv2Switch(ns, "s9", {1: "p1"}, tmp_path)
        with pytest.raises(Bmv2Error, match=r"BMv2 switch s9: gRPC .* within 0.001 s") as err:
            sw.start(timeout_s=0.001)
        assert "--- s9.out ---" in str(err.value)
        sw.stop()


class BadOptionSwitch(Bmv2Switch):
    """A switch started with an option BMv2 rejects: it exits at once."""

    def argv(self, binary: str) -> list[str]:
        return [binary, "--no-such-option", *super().argv(binary)[1:]]


def test_a_switch_that_exits_at_start_is_reported(tmp_path):
    with Namespace() as ns:
        ns.add_veth("p1", "q1")
        sw = BadOptionSwitch(ns, "s1", {1: "p1"}, tmp_path)
        with pytest.raises(Bmv2Error, match="BMv2 switch s1: process exited with status") as err:
            sw.start(timeout_s=20)
        assert "separate general bmv2 options" in str(err.value)  # tail of its output (usage)
    assert _mine() == []


def test_a_crash_during_a_run_is_reported_and_everything_is_removed():
    with pytest.raises(Bmv2Error, match="BMv2 switch hop: process exited") as err:
        with HopSwitch(L2, 2) as hop:
            hop.load(SwitchConfig())
            name = hop.ns.name
            os.kill(hop.bmv2.proc.pid, signal.SIGKILL)
            hop.bmv2.proc.wait()
            hop.run(1, bytes(64))
    # BMv2's rotating log sink appends ".txt" to --log-file (Bmv2Switch.log_path)
    assert re.search(r"--- hop\.log(\.txt)? ---", str(err.value))
    assert name not in namespaces()


def test_an_error_in_the_body_removes_namespace_and_process():
    with pytest.raises(RuntimeError, match="boom"):
        with HopSwitch(L2, 3) as hop:
            proc, name = hop.bmv2.proc, hop.ns.name
            raise RuntimeError("boom")
    assert proc.poll() is not None
    assert name not in namespaces()
    assert _mine() == []
