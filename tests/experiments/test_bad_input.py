"""Bad input at the command line: exit 2, one line on stderr, no traceback, nothing written.

A Hypothesis test generates malformed topology specs, receiver lists, strategy
parameters, TOML specs and ``--out`` targets and runs the CLI in-process
(``main(argv)``); regression tests cover each bullet of the bad-input issue
(whole-run validation, size limits, ``--out`` checks, Spark master errors,
Ctrl-C, ``--version``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.cli.main import main, package_version
from topologies.specs import MAX_LINKS, MAX_NODES

REPO = Path(__file__).resolve().parents[2]
TOPO = "jellyfish:switches=8,degree=3,seed=1"
FUNCTION_FIXTURES = settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                    HealthCheck.too_slow])


def run_cli(capsys: Any, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_bad_input(code: int, err: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("stackcast: error: "), err
    assert "Traceback" not in err


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- generators of malformed input ------------------------------------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_KINDS = ["jellyfish", "fattree", "fabric", "leafspine", "regulartree", "randomtree"]
_INT_KEYS = {"jellyfish": ["switches", "degree", "hosts", "seed"], "fattree": ["k"],
             "fabric": ["pods", "racks", "hosts", "planes", "spines"],
             "leafspine": ["leaves", "spines", "hosts"],
             "regulartree": ["depth", "fanout", "hosts"],
             "randomtree": ["switches", "ports", "hosts", "seed"]}


def _not_int(s: str) -> bool:
    try:
        int(s, 0)
    except ValueError:
        return True
    return False


bad_topologies = st.one_of(
    _WORD.filter(lambda w: w not in _KINDS + ["zoo", "file"]).map(lambda w: f"{w}:k=4"),
    st.tuples(st.sampled_from(_KINDS), _WORD).map(lambda t: f"{t[0]}:zz{t[1]}=1"),
    st.sampled_from(_KINDS).flatmap(lambda k: st.tuples(
        st.just(k), st.sampled_from(_INT_KEYS[k]),
        st.text(alphabet="abcxyz.-+ ", min_size=1, max_size=5).filter(_not_int)))
    .map(lambda t: f"{t[0]}:{t[1]}={t[2]}"),
    st.tuples(st.sampled_from(["jellyfish:switches", "fattree:k", "leafspine:leaves",
                               "fabric:pods", "randomtree:ports"]),
              st.integers(max_value=0)).map(lambda t: f"{t[0]}={t[1]}"),
    st.integers(min_value=40, max_value=10**6).map(lambda k: f"fattree:k={2 * k}"),
    st.integers(min_value=MAX_NODES + 1, max_value=10**9).map(
        lambda n: f"jellyfish:switches={n},degree=4"),
    st.sampled_from(["zoo:", "file:", "zoo", "file", ":", "jellyfish:switches", "fattree:k=4,k=6",
                     "fattree:=4", "zoo:NoSuchNetwork", "file:/nonexistent/x.gml"]),
)

bad_receivers = st.one_of(
    st.sampled_from(["", ",", " , ", "h2,,h3", "h2,h2", "h1", "h0", "h9999", "x", "h2, h2"]),
    st.lists(st.sampled_from(["h2", "h3", "h4"]), min_size=2, max_size=5).filter(
        lambda xs: len(set(xs)) < len(xs)).map(",".join),
    _WORD.map(lambda w: f"h2,{w}"),
)

bad_params = st.one_of(
    _WORD.map(lambda w: ["--strategy", "multicast", "--param", w]),  # no "="
    _WORD.map(lambda w: ["--strategy", "multicast", "--param", f"zz{w}=1"]),
    st.sampled_from([["--strategy", "multicast", "--param", "tree=nope"],
                     ["--strategy", "multicast", "--param", "=1"],
                     ["--strategy", "switch-port", "--param", "mtu_bytes=abc"],
                     ["--strategy", "nosuchstrategy"]]),
)

BASE_SPEC: dict[str, dict[str, Any]] = {
    "experiment": {"name": "bad", "notifications": 2, "seeds": [1]},
    "grid": {"topology": [TOPO], "strategy": ["unicast"], "receivers": ["uniform:percent=20"]},
}

# One mutation of a valid spec that makes it invalid: (table, key, value).
spec_mutations = st.one_of(
    st.integers(max_value=-1).map(lambda s: ("experiment", "seeds", [1, s])),
    st.integers(max_value=0).map(lambda n: ("experiment", "notifications", n)),
    st.integers(min_value=1_000_001, max_value=10**12).map(
        lambda n: ("experiment", "notifications", n)),
    st.sampled_from([True, "10", 1.5]).map(lambda v: ("experiment", "notifications", v)),
    st.integers(min_value=9001, max_value=10**6).map(
        lambda p: ("experiment", "payload_bytes", [p])),
    _WORD.map(lambda w: ("experiment", f"zz{w}", 1)),
    _WORD.map(lambda w: ("grid", "strategy", ["unicast", f"zz{w}"])),
    _WORD.map(lambda w: ("grid", "receivers", [f"zz{w}:percent=1"])),
    bad_topologies.map(lambda t: ("grid", "topology", [TOPO, t])),
    st.sampled_from([
        ("grid", "strategy", ["unicast", "pleroma-dz"]),   # needs content receivers
        ("grid", "strategy", ["unicast", "path"]),         # needs the fabric
        ("grid", "strategy", []),
        ("grid", "receivers", ["uniform:percent=500"]),
        ("experiment", "name", "bad name"),
        ("strategy_params", "multicast", {"tree": "x"}),
        ("strategy_params", "unicast", 3),
        ("delays", "zz", 1.0),
    ]),
)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(v)


def to_toml(data: dict[str, Any]) -> str:
    lines = []
    for table, body in data.items():
        if table == "strategy_params":
            for name, params in body.items():
                if isinstance(params, dict):
                    lines.append(f"[strategy_params.{name}]")
                    lines += [f"{k} = {_toml_value(v)}" for k, v in params.items()]
                else:
                    lines.append("[strategy_params]")
                    lines.append(f"{name} = {_toml_value(params)}")
            continue
        lines.append(f"[{table}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


def mutated_spec(mutation: tuple[str, str, Any]) -> str:
    table, key, value = mutation
    data = {k: dict(v) for k, v in BASE_SPEC.items()}
    data.setdefault(table, {})[key] = value
    return to_toml(data)


# -- the property ---------------------------------------------------------------------

bad_commands = st.one_of(
    bad_topologies.map(lambda t: ("argv", ["topology", "show", t])),
    bad_topologies.map(lambda t: ("argv", ["deliver", "--topology", t, "--strategy", "unicast",
                                           "--publisher", "h1", "--receivers", "h2"])),
    bad_receivers.map(lambda r: ("argv", ["deliver", "--topology", TOPO, "--strategy",
                                          "unicast", "--publisher", "h1",
                                          f"--receivers={r}"])),
    bad_params.map(lambda p: ("argv", ["deliver", "--topology", TOPO, "--publisher", "h1",
                                       "--receivers", "h2", *p])),
    spec_mutations.map(lambda m: ("spec", mutated_spec(m))),
    st.sampled_from(["[experiment\nname=", "x = = 1", "[grid]\ntopology = 3\n"]).map(
        lambda text: ("spec", text)),
    st.sampled_from(["file", "file/sub", "unrelated", "/proc/stackcast-no/out"]).map(
        lambda kind: ("out", kind)),
)


@FUNCTION_FIXTURES
@given(bad_commands)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(capsys, case):
    kind, payload = case
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        spec = tmp / "spec.toml"
        spec.write_text(to_toml(BASE_SPEC))
        out = tmp / "out"
        if kind == "argv":
            argv = payload
        elif kind == "spec":
            spec.write_text(payload)
            argv = ["run", str(spec), "--runner", "local", "--quiet", "--out", str(out)]
        else:
            (tmp / "file").write_text("not a directory")
            (tmp / "unrelated").mkdir()
            (tmp / "unrelated" / "notes.txt").write_text("mine")
            target = payload if payload.startswith("/") else str(tmp / payload)
            argv = ["run", str(spec), "--runner", "local", "--quiet", "--out", target]
        before = listing(tmp)
        code, _, err = run_cli(capsys, argv)
        assert_bad_input(code, err)
        assert listing(tmp) == before, "bad input wrote files"


# -- 3. the whole run validated before the first cell ------------------------------------

@pytest.mark.parametrize("grid", [
    {"topology": [TOPO], "strategy": ["unicast", "pleroma-dz"],
     "receivers": ["uniform:percent=20"]},
    {"topology": ["fattree:k=4"], "strategy": ["unicast", "path"],
     "receivers": ["uniform:percent=20"]},
])
def test_a_spec_with_one_impossible_cell_writes_nothing(capsys, tmp_path, grid):
    spec = tmp_path / "mixed.toml"
    spec.write_text(to_toml({"experiment": {"name": "mixed", "notifications": 2, "seeds": [1]},
                             "grid": grid}))
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, ["run", str(spec), "--runner", "local", "--quiet",
                                    "--out", str(out)])
    assert_bad_input(code, err)
    assert grid["strategy"][1] in err
    assert not out.exists()


def test_shipped_quickstart_still_validates_fast():
    from experiments.cells.spec import SPEC_DIR, load_spec

    t0 = time.perf_counter()
    spec = load_spec(SPEC_DIR / "quickstart.toml")
    assert len(spec.cells()) == 80
    assert time.perf_counter() - t0 < 5.0


def test_negative_seed_in_toml_is_refused(capsys, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(mutated_spec(("experiment", "seeds", [-3])))
    code, _, err = run_cli(capsys, ["run", str(spec), "--runner", "local",
                                    "--out", str(tmp_path / "o")])
    assert_bad_input(code, err)
    assert "seeds" in err and "-3" in err


# -- 4. size limits -----------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["topology", "show", "fattree:k=1000"],
    ["deliver", "--topology", "jellyfish:switches=200000,degree=4", "--strategy", "unicast",
     "--publisher", "h1", "--receivers", "h2"],
    ["topology", "show", "regulartree:depth=1000000000,fanout=1"],
])
def test_huge_topologies_are_refused_quickly(capsys, argv):
    t0 = time.perf_counter()
    code, _, err = run_cli(capsys, argv)
    assert time.perf_counter() - t0 < 3.0
    assert_bad_input(code, err)
    assert "--force" in err and f"{MAX_NODES:,}" in err and f"{MAX_LINKS:,}" in err


def test_force_lifts_the_topology_limit(capsys, monkeypatch):
    import topologies.specs as specs

    monkeypatch.setattr(specs, "MAX_NODES", 10)
    assert_bad_input(*run_cli(capsys, ["topology", "show", "fattree:k=4"])[::2])
    code, out, _ = run_cli(capsys, ["topology", "show", "fattree:k=4", "--force"])
    assert code == 0 and out.startswith("fattree:k=4: 20 switches")


def test_a_billion_notifications_are_refused(capsys, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(mutated_spec(("experiment", "notifications", 1_000_000_000)))
    t0 = time.perf_counter()
    code, _, err = run_cli(capsys, ["run", str(spec), "--runner", "local",
                                    "--out", str(tmp_path / "o")])
    assert time.perf_counter() - t0 < 3.0
    assert_bad_input(code, err)
    assert "--force" in err and "1,000,000" in err
    assert not (tmp_path / "o").exists()


# -- 3. --out ---------------------------------------------------------------------------

def _run_small(capsys, tmp_path, out, *extra):
    spec = tmp_path / "s.toml"
    spec.write_text(to_toml(BASE_SPEC))
    return run_cli(capsys, ["run", str(spec), "--runner", "local", "--quiet", "--out",
                            str(out), *extra])


def test_out_naming_a_file(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    code, _, err = _run_small(capsys, tmp_path, tmp_path / "f")
    assert_bad_input(code, err)
    assert "is a file, not a directory" in err


def test_out_unwritable(capsys, tmp_path):
    if os.geteuid() == 0:  # root writes anywhere chmod allows: use a read-only file system
        target = Path("/proc/stackcast-test/out")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "out"
    code, _, err = _run_small(capsys, tmp_path, target)
    assert_bad_input(code, err)
    assert "not writable" in err


def test_out_with_unrelated_files_needs_force(capsys, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    code, _, err = _run_small(capsys, tmp_path, out)
    assert_bad_input(code, err)
    assert "--force" in err and "thesis.tex" in err
    assert listing(out) == ["thesis.tex"]
    code, out_text, err = _run_small(capsys, tmp_path, out, "--force")
    assert code == 0, err
    # A results directory is accepted again (resume) without --force.
    code, out_text, err = _run_small(capsys, tmp_path, tmp_path / "fresh")
    assert code == 0, err
    code, out_text, err = _run_small(capsys, tmp_path, tmp_path / "fresh", "--resume")
    assert code == 0, err
    assert "skipped" in out_text


# -- 5. the small bullets ---------------------------------------------------------------

@pytest.mark.parametrize(("argv", "needle"), [
    (["topology", "show", "zoo:"], "zoo:NAME"),
    (["topology", "show", "file:"], "file:PATH"),
    (["deliver", "--topology", "leafspine:hosts=0", "--strategy", "unicast", "--publisher",
      "h1", "--receivers", "h2"], "has no hosts"),
    (["deliver", "--topology", TOPO, "--strategy", "unicast", "--publisher", "h1",
      "--receivers", ""], "names no host"),
    (["deliver", "--topology", TOPO, "--strategy", "unicast", "--publisher", "h1",
      "--receivers", "h2,h2"], "more than once"),
])
def test_one_line_messages(capsys, argv, needle):
    code, _, err = run_cli(capsys, argv)
    assert_bad_input(code, err)
    assert needle in err
    assert "__init__" not in err


def test_report_on_a_file(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    code, _, err = run_cli(capsys, ["report", str(tmp_path / "f")])
    assert_bad_input(code, err)
    assert "is a file" in err and "does not exist" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.strip() == f"stackcast {package_version()}"
    assert out.strip() != "stackcast "


# -- 5. Spark master errors -------------------------------------------------------------

def _default_sigint() -> None:
    """Run in the child before exec: Ctrl-C handling as in a terminal, also where this
    test itself runs with SIGINT ignored (a background job of a non-interactive shell,
    as CI may be); Python installs its KeyboardInterrupt handler only over SIG_DFL."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stackcast(*argv: str, **kw: Any) -> subprocess.Popen:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    return subprocess.Popen([sys.executable, "-c",
                             "import sys; from experiments.cli.main import main; "
                             "sys.exit(main(sys.argv[1:]))", *argv],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_default_sigint, **kw)


@pytest.mark.spark
def test_unknown_master_scheme_is_one_line(capsys, tmp_path):
    code, _, err = _run_small(capsys, tmp_path, tmp_path / "o", "--runner", "spark",
                              "--master", "bogus://x")
    assert_bad_input(code, err)
    assert "bogus://x" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.spark
def test_refused_master_is_one_line(capsys, tmp_path):
    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    code, _, err = _run_small(capsys, tmp_path, tmp_path / "o", "--runner", "spark",
                              "--master", f"spark://127.0.0.1:{port}")
    assert time.perf_counter() - t0 < 15
    assert_bad_input(code, err)
    assert f"spark://127.0.0.1:{port}" in err and "unreachable" in err


@pytest.mark.spark
@pytest.mark.slow
def test_silent_master_fails_within_15_s(tmp_path):
    """A port that accepts TCP but speaks no Spark (the 68 s / 75 lines case)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    spec = tmp_path / "s.toml"
    spec.write_text(to_toml(BASE_SPEC))
    try:
        t0 = time.perf_counter()
        proc = _stackcast("run", str(spec), "--quiet", "--out", str(tmp_path / "o"),
                          "--master", f"spark://127.0.0.1:{port}")
        _, err = proc.communicate(timeout=60)
        elapsed = time.perf_counter() - t0
    finally:
        stop.set()
        thread.join()
        for c in held:
            c.close()
        server.close()
    assert elapsed < 15, elapsed
    assert_bad_input(proc.returncode, err)
    assert f"spark://127.0.0.1:{port}" in err
    assert not (tmp_path / "o").exists()


# -- 5. Ctrl-C ---------------------------------------------------------------------------

LONG_SPEC = {"experiment": {"name": "long", "notifications": 3000, "seeds": [1, 2, 3, 4]},
             "grid": {"topology": ["jellyfish:switches=32,degree=4,seed=1"],
                      "strategy": ["unicast", "broadcast", "multicast", "tree"],
                      "receivers": ["uniform:percent=10", "uniform:percent=50"]}}


def _interrupt_when(proc: subprocess.Popen, ready: Any, limit_s: float = 120) -> float:
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < limit_s, "never got going"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    t1 = time.monotonic()
    proc.wait(timeout=30)
    return time.monotonic() - t1


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["local", pytest.param("spark", marks=pytest.mark.spark)])
def test_ctrl_c_exits_130_with_one_line_and_keeps_cells(tmp_path, runner):
    spec = tmp_path / "long.toml"
    spec.write_text(to_toml(LONG_SPEC))
    out = tmp_path / "o"
    proc = _stackcast("run", str(spec), "--quiet", "--runner", runner, "--out", str(out))
    waited = _interrupt_when(proc, lambda: any(out.rglob("cell-*.parquet")))
    _, err = proc.communicate()
    assert waited < 5, waited
    assert proc.returncode == 130, err
    assert err.strip() == ("stackcast: interrupted (finished cells are kept; rerun with "
                           "--resume)"), err
    assert any(out.rglob("cell-*.parquet"))


FAKE_HIL = textwrap.dedent("""
    import socket, sys, time
    import grpc
    import experiments.cli.hil as hil
    from experiments.cli.main import main

    def fake_validate(args):
        # A P4Runtime-like channel with a call in flight to a server that never answers,
        # as hil validate has in its first seconds in network mode.
        server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(4)
        channel = grpc.insecure_channel("127.0.0.1:%d" % server.getsockname()[1])
        call = channel.unary_unary("/p4.v1.P4Runtime/Capabilities")
        future = call.future(b"", timeout=3600)
        print("ready", flush=True)
        while True:
            time.sleep(0.1)

    hil.cmd_validate = fake_validate
    sys.exit(main(["hil", "validate", "--topology", "fattree:k=4", "--strategy", "unicast",
                   "--notifications", "1", "--mode", "network"]))
""")


@pytest.mark.slow
def test_ctrl_c_in_hil_exits_130_without_hanging():
    """The CLI's interrupt path once gRPC is loaded (BMv2 itself need not be here)."""
    env = {**os.environ}
    proc = subprocess.Popen([sys.executable, "-c", FAKE_HIL], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("hil validate hung after Ctrl-C")
    assert time.monotonic() - t0 < 5
    assert proc.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == ["stackcast: hil validate interrupted (BMv2 stopped; no report)"], err
    assert "--resume" not in err
