"""Run traces (hil/trace.py): written from a small run, read back to the same state and packets."""

from __future__ import annotations

import json

import pytest
from support.bmv2 import needs_bmv2

from experiments.cells.pipeline import cell_notifications, cell_setup
from experiments.cells.spec import Cell
from experiments.cli.main import main
from hil.trace import TraceError, read_trace, write_trace
from sim.dataplanes.control_state import ControlState, SwitchConfig
from sim.engines.static import run_notification

TOPOLOGY = "jellyfish:switches=8,degree=3,seed=1"


def _cell(strategy: str, notifications: int = 5, **params) -> Cell:
    return Cell(experiment="trace-test", topology=TOPOLOGY, strategy=strategy,
                params=tuple(sorted(params.items())), receivers="uniform:percent=30",
                payload_bytes=24, seed=3, notifications=notifications)


def _plain(state: ControlState) -> dict[str, SwitchConfig]:
    """Switch configs without empty tables (the runtime JSON has no empty tables)."""
    return {sw: SwitchConfig(tables={t: es for t, es in c.tables.items() if es},
                             multicast_groups=c.multicast_groups,
                             clone_sessions=c.clone_sessions)
            for sw, c in state.switches.items()}


CELLS = [_cell("tree"), _cell("switch-mcgroup"), _cell("switch-bitmask", 3), _cell("hops", 4),
         _cell("multicast", 4)]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "run.trace"
    n = write_trace(CELLS, path, notifications=4)
    return path, n


def test_trace_reads_back_to_the_same_states_and_packets(written):
    path, n = written
    trace = read_trace(path)
    assert n == sum(min(c.notifications, 4) for c in CELLS) == sum(
        len(c.notifications) for c in trace.cells)
    assert [c.cell["strategy"] for c in trace.cells] == [c.strategy for c in CELLS]
    for cell, traced in zip(CELLS, trace.cells, strict=True):
        assert traced.cell_id == cell.cell_id
        topology, strategy, _ = cell_setup(cell)
        items = list(cell_notifications(cell, topology, strategy))[:4]
        assert len(items) == len(traced.notifications)
        for item, note in zip(items, traced.notifications, strict=True):
            assert note.run == item.run and note.publisher == item.notification.publisher
            assert note.receivers == item.receivers
            assert _plain(trace.state(note)) == _plain(item.state), (cell.strategy, item.run)
            d = run_notification(topology, strategy, item.state, item.notification,
                                 item.receivers, item.payload)
            assert note.packets == d.encoding.packets
            assert dict(note.delivered) == d.delivered
            assert {(s, t): [f, b] for s, t, f, b in note.links} == d.links
            assert dict(note.passes) == {s: c.passes for s, c in d.switches.items()}
            assert sum(v.passes for v in note.visits) == sum(note.passes.values())
            # every frame a visit emits towards a host is a delivery
            assert len(note.visits) >= 1
        assert traced.program is not None


def test_states_are_written_once_and_shared(written):
    path, _ = written
    records = [json.loads(line) for line in path.read_text().splitlines()]
    states = [r for r in records if r["record"] == "state"]
    assert len({r["id"] for r in states}) == len(states)
    by_cell: dict[str, set[int]] = {}
    cell = None
    for r in records:
        if r["record"] == "cell":
            cell = r["cell"]["strategy"]
        elif r["record"] == "notification":
            by_cell.setdefault(cell, set()).add(r["state"])
    # topology-scoped strategies install once per cell; receiver-scoped ones per notification
    assert len(by_cell["switch-mcgroup"]) == 1
    assert len(by_cell["tree"]) > 1


def test_cli_run_writes_a_trace(tmp_path):
    spec = tmp_path / "tiny.toml"
    spec.write_text(f"""
[experiment]
name = "tiny"
notifications = 3
seeds = [1]
payload_bytes = [30]

[grid]
topology = ["{TOPOLOGY}"]
strategy = ["switch-port", "tree"]
receivers = ["uniform:percent=30"]
""")
    trace = tmp_path / "tiny.trace.gz"
    code = main(["run", str(spec), "--engine", "local", "--out", str(tmp_path / "out"),
                 "--quiet", "--trace", str(trace), "--trace-cells", "2",
                 "--trace-notifications", "2"])
    assert code == 0
    got = read_trace(trace)
    assert [(c.cell["strategy"], len(c.notifications)) for c in got.cells] == [
        ("switch-port", 2), ("tree", 2)]
    assert main(["run", str(spec), "--engine", "local", "--out", str(tmp_path / "o2"),
                 "--quiet", "--trace", str(trace), "--trace-cells", "0"]) == 2


# -- validation ---------------------------------------------------------------------


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _first(records, kind):
    return next(i for i, r in enumerate(records) if r["record"] == kind)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.trace"
    write_trace([_cell("switch-port", 2)], path, notifications=2)
    return path


def test_bad_json_names_the_line(small):
    text = small.read_text().splitlines()
    text[2] = text[2][:-1]
    small.write_text("\n".join(text) + "\n")
    with pytest.raises(TraceError, match=r"small.trace:3: not JSON"):
        read_trace(small)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r[_first(r, "notification")].pop("publisher"),
     r":\d+: field 'publisher': missing"),
    (lambda r: r[_first(r, "notification")].update(state=99),
     r"field 'state': state 99 is not defined on an earlier line"),
    (lambda r: r[_first(r, "notification")]["packets"][0].update(frame="zz"),
     r"field 'packets\[0\].frame': not hex"),
    (lambda r: r[_first(r, "notification")].update(run=-1), r"field 'run': must be >= 0"),
    (lambda r: r[_first(r, "notification")].update(links=[["s1", "s2", 1]]),
     r"field 'links\[0\]': expected \[src, dst, frames, bytes\]"),
    (lambda r: r[_first(r, "cell")].update(notifications=5),
     r"announces 5 notifications, 2 follow"),
    (lambda r: r[0].update(version=9), r":1: field 'version': this reader knows version 1"),
    (lambda r: r.pop(0), r":1: the first record must be 'trace'"),
    (lambda r: r[_first(r, "state")].update(record="stat"),
     r"field 'record': unknown record 'stat'"),
    (lambda r: r[_first(r, "state")]["key_kinds"].update(
        {"MyIngress.x": [["f", "fuzzy", None]]}),
     r"field 'key_kinds.MyIngress.x': expected \[\[field, kind, width\]"),
    (lambda r: next(iter(r[_first(r, "state")]["switches"].values()))["table_entries"][0]
     .update(action_params={"port": "1"}),
     r"field 'switches\.s\d+\.table_entries\[0\]\.action_params\.port': expected an int"),
])
def test_bad_fields_are_named(small, edit, message):
    records = _lines(small)
    edit(records)
    _write(small, records)
    with pytest.raises(TraceError, match=message):
        read_trace(small)


def test_unedited_small_trace_is_valid(small):
    """The validation cases above start from a valid file."""
    trace = read_trace(small)
    assert len(trace.cells[0].notifications) == 2


# -- replay on real BMv2 ------------------------------------------------------------




def _replay_json(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["hil", "replay", *argv, "--json", "--no-progress"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.hil
@needs_bmv2
def test_replay_agrees_in_hop_and_network_mode(written, capsys):
    path, n = written
    code, doc = _replay_json(capsys, str(path))
    assert (code, doc["match_rate"], doc["mismatches"]) == (0, 1.0, [])
    assert doc["notifications"] == n
    assert doc["switch_visits"] == sum(len(note.visits) for c in read_trace(path).cells
                                       for note in c.notifications)
    code, doc = _replay_json(capsys, str(path), "--mode", "network")
    assert (code, doc["match_rate"], doc["mismatches"]) == (0, 1.0, [])
    assert sum(c["delivery_checks"] for c in doc["cells"]) == n


@pytest.mark.hil
@needs_bmv2
def test_replay_reports_a_corrupted_expectation(small, capsys):
    """A trace whose recorded emit is wrong must come out as a mismatch naming it."""
    records = _lines(small)
    i = _first(records, "notification")
    visit = next(v for v in records[i]["visits"] if v["emits"])
    port, frame = visit["emits"][0]
    visit["emits"][0] = [port, frame[:-2] + ("00" if frame[-2:] != "00" else "01")]
    _write(small, records)
    code, doc = _replay_json(capsys, str(small), "--quiet-ms", "10")
    assert code == 1 and doc["match_rate"] < 1.0
    [m] = doc["mismatches"]
    assert (m["notification"], m["switch"], m["port"], m["what"]) == (
        records[i]["run"], visit["switch"], port, "frames")
