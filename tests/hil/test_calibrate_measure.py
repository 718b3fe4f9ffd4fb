"""Timing and profiling of ``hil calibrate`` on fake captures and a fake switch (no BMv2)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from experiments.cli.main import main
from hil.bmv2_work import ProgramShape
from hil.calibrate_measure import (
    VisitTimer,
    describe_frames,
    profile_visit,
    quantile,
    time_round,
)
from hil.capture import Frame
from hil.compare import port_frames
from hil.hop import Visit
from sim.dataplanes.control_state import SwitchConfig

FRAME = bytes(range(40))
OUT1, OUT2 = b"\x01" * 30, b"\x02" * 31


def visit(emits=((1, OUT1), (2, OUT2)), note: int = 0) -> Visit:
    return Visit(note, "s1", 3, FRAME, SwitchConfig(), tuple(emits), 2)


class FakeSwitch:
    """Frames a switch sends for each frame it gets, with kernel-like timestamps.

    ``answer(frame) -> [(port, bytes)]``; every copy leaves ``latency_s`` after
    the frame's arrival (the last one of a visit: arrival + latency); ``late``
    frames show up only at the next read.
    """

    def __init__(self, answer, latency_s: float = 1e-4) -> None:
        self.answer = answer
        self.latency_s = latency_s
        self.t = 1000.0
        self.queue: list[Frame[int]] = []
        self.taps: list[Frame[int]] = []
        self.late: list[Frame[int]] = []
        self.sent = 0

    # the capture side (hosts' ends)
    def send(self, key: int, frame: bytes) -> None:
        self.sent += 1
        self.t += 1.0
        self.taps.append(Frame(key, False, frame, self.t))
        out = self.answer(frame)
        for i, (port, data) in enumerate(out):
            self.queue.append(Frame(port, False, data, self.t + self.latency_s * (i + 1)
                                    / len(out)))
        self.queue.append(Frame(key, True, frame, self.t))  # what the host end sent

    def pending(self) -> list[Frame[int]]:
        out, self.queue = self.queue + self.late, []
        self.late = []
        return out

    def collect_count(self, count: int, max_s: float) -> list[Frame[int]]:
        return self.pending()


class Tap:
    def __init__(self, switch: FakeSwitch) -> None:
        self.switch = switch

    def pending(self) -> list[Frame[int]]:
        out, self.switch.taps = self.switch.taps, []
        return out


def timer_for(switch: FakeSwitch) -> VisitTimer:
    return VisitTimer(switch, Tap(switch), max_s=0.1)


def test_latency_is_arrival_to_last_copy():
    v = visit()
    sw = FakeSwitch(lambda f: list(v.emits), latency_s=250e-6)
    latency, why = timer_for(sw).time("k", v, port_frames(v.emits))
    assert why == "" and latency == pytest.approx(250e-6, abs=1e-9)


def test_a_wrong_byte_is_a_disagreement_naming_port_and_byte():
    v = visit()
    wrong = OUT2[:7] + b"\x09" + OUT2[8:]
    sw = FakeSwitch(lambda f: [(1, OUT1), (2, wrong)])
    latency, why = timer_for(sw).time("k", v, port_frames(v.emits))
    assert latency is None
    assert why == "port 2: first difference at byte 7: model 0x02, bmv2 0x09 (frames of 31 " \
                  "and 31 bytes)"


def test_a_missing_copy_and_a_copy_on_the_wrong_port_are_disagreements():
    v = visit()
    _, why = timer_for(FakeSwitch(lambda f: [(1, OUT1)])).time("k", v, port_frames(v.emits))
    assert why == "port 2: model frame (31 bytes) not sent by bmv2"
    _, why = timer_for(FakeSwitch(lambda f: [(1, OUT1), (4, OUT2)])).time(
        "k", v, port_frames(v.emits))
    assert why.startswith("port 2: model frame") and "ports differing: [2, 4]" in why


def test_frames_after_a_complete_visit_are_charged_to_it():
    v, w = visit(), visit(note=1)
    sw = FakeSwitch(lambda f: list(v.emits))
    timer = timer_for(sw)
    assert timer.time("a", v, port_frames(v.emits))[1] == ""
    sw.late.append(Frame(1, False, OUT1, 0.0))
    assert timer.time("b", w, port_frames(w.emits))[1] == ""
    assert timer.late == {"a": 1}
    sw.late.append(Frame(2, False, OUT2, 0.0))
    timer.finish(0.0)
    assert timer.late == {"a": 1, "b": 1}


def test_round_interleaves_visits_and_stops_sending_a_disagreeing_one():
    good, bad = visit(), visit(emits=((1, OUT1),), note=1)
    answers = {FRAME: list(good.emits)}
    sw = FakeSwitch(lambda f: answers[f])
    latencies: dict = {}
    failed: dict = {}
    loads = []
    ticks = []
    time_round(timer_for(sw), [("cfg", [("g", good), ("b", bad)])], loads.append, 5,
               latencies, failed, quiet_s=0.0, tick=ticks.append)
    assert loads == ["cfg"]
    assert len(latencies["g"]) == 5 and "b" not in latencies
    assert failed == {"b": "port 2: bmv2 sent an unexpected frame (31 bytes) " + OUT2.hex()}
    assert sw.sent == 6 and ticks == [2] * 5


def test_quantile_matches_numpy():
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0]
    for q in (0.0, 0.1, 0.25, 0.5, 1.0):
        assert quantile(xs, q) == pytest.approx(np.quantile(xs, q))
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_describe_frames_is_empty_when_equal():
    assert describe_frames(port_frames([(1, OUT1)]), port_frames([(1, OUT1)])) == ""


SHAPE = ProgramShape("p", {"MyIngress.t": "exact"}, {}, headers=3, fields=9)


class FakeHop:
    """A trace-logging switch: ``run`` returns frames and passes and appends log lines."""

    retry_quiet_s = 0.0

    def __init__(self, tmp: Path, runs: list) -> None:
        self.runs = runs  # [(frames, passes, log lines)] per run
        self.bmv2 = SimpleNamespace(log_path=tmp / "hop.log.txt")
        self.bmv2.log_path.write_text("")

    def run(self, in_port, frame, quiet=None):  # noqa: ANN001
        frames, passes, lines = self.runs.pop(0)
        with open(self.bmv2.log_path, "a") as f:
            f.write("".join(line + "\n" for line in lines))
        return port_frames(frames), passes


def _log(ingress: int, sent: list[bytes]) -> list[str]:
    pre = "[t] [bmv2] [D] [thread 1] [0.0] [cxt 0] "
    return ([pre + "Pipeline 'ingress': start"] * ingress
            + [pre + "Applying table 'MyIngress.t'"]
            + [pre + f"Transmitting packet of size {len(b)} out of port 1" for b in sent])


def test_profile_counts_the_work_of_an_agreeing_visit(tmp_path):
    v = visit()
    hop = FakeHop(tmp_path, [(list(v.emits), 2, _log(2, [OUT1, OUT2]))])
    work, why = profile_visit(hop, v, SHAPE, "x")
    assert why is None and (work.ingress, work.exact, work.transmitted_bytes) == (2, 1, 61)


def test_profile_replays_once_then_reports_the_first_differing_byte(tmp_path):
    v = visit()
    wrong = OUT1[:3] + b"\x00" + OUT1[4:]
    hop = FakeHop(tmp_path, [([(1, wrong), (2, OUT2)], 2, []), ([(1, wrong), (2, OUT2)], 3, [])])
    work, why = profile_visit(hop, v, SHAPE, "x")
    assert work is None and not hop.runs
    assert (why.strategy, why.notification, why.switch, why.during) == ("x", 0, "s1", "profile")
    assert "first difference at byte 3: model 0x01, bmv2 0x00" in why.detail
    assert "passes differ: model 2, bmv2 3" in why.detail
    # a late frame on the first attempt only: the replay agrees and is profiled
    hop = FakeHop(tmp_path, [([(1, OUT1)], 2, []),
                             (list(v.emits), 2, _log(2, [OUT1, OUT2]))])
    assert profile_visit(hop, v, SHAPE, "x")[1] is None


def test_profile_refuses_a_log_of_another_visit(tmp_path):
    v = visit()
    hop = FakeHop(tmp_path, [(list(v.emits), 2, _log(1, [OUT1]))])
    with pytest.raises(RuntimeError, match="does not belong to this visit"):
        profile_visit(hop, v, SHAPE, "x")


@pytest.mark.parametrize("argv, message", [
    (["--strategies", "switch-port,nope"], "no calibration workload for nope"),
    (["--strategies", "switch-port"], "at least two strategies"),
    (["--rounds", "0"], "must be >= 1"),
    (["--quantile", "1.5"], "quantile must be in"),
    (["--realtime", "120"], "--realtime must be"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["hil", "calibrate", "--no-progress", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
