"""CLI contract tests: JSON shapes and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from experiments.cli.main import main

TOPO = "jellyfish:switches=12,degree=3,seed=2"
DELIVER_KEYS = {"strategy", "topology", "publisher", "receivers", "header", "delivered",
                "false_positives", "false_negatives", "duplicates", "links", "frames", "bytes",
                "switches", "state", "delay_ms"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("strategy", ["unicast", "broadcast", "multicast"])
def test_deliver_json_contract(capsys, strategy):
    code, out, err = run(capsys, "deliver", "--topology", TOPO, "--strategy", strategy,
                         "--publisher", "h1", "--receivers", "h3,h7,h12", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == DELIVER_KEYS
    assert set(doc["header"]) == {"entries", "bytes", "hex"}
    assert set(doc["state"]) == {"entries", "multicast_groups", "per_switch"}
    assert set(doc["delay_ms"]) == {"worst"}
    assert doc["receivers"] == ["h3", "h7", "h12"]
    for h in ("h3", "h7", "h12"):
        assert doc["delivered"][h] == 1
    assert doc["bytes"] == sum(lk["bytes"] for lk in doc["links"])
    assert doc["frames"] == sum(lk["frames"] for lk in doc["links"])
    assert all(set(v) == {"passes", "recirculations", "lookups"} for v in doc["switches"].values())
    if strategy == "broadcast":
        assert doc["false_positives"] == 12 - 1 - 3
    else:
        assert doc["false_positives"] == 0


def test_topology_show_json(capsys):
    code, out, _ = run(capsys, "topology", "show", TOPO, "--json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"name", "switches", "hosts", "links"}
    assert len(doc["switches"]) == 12 and len(doc["hosts"]) == 12
    assert set(doc["links"][0]) == {"a", "a_port", "b", "b_port", "edge_id"}
    assert [lk["edge_id"] for lk in doc["links"]] == list(range(1, len(doc["links"]) + 1))


def test_list_outputs_registered_names(capsys):
    for what, name in [("strategies", "multicast"), ("topologies", "jellyfish"),
                       ("receiver-models", "uniform"), ("experiments", "quickstart")]:
        code, out, _ = run(capsys, "list", what, "--json")
        assert code == 0
        assert name in {item["name"] for item in json.loads(out)}


@pytest.mark.parametrize("argv, needle", [
    (["deliver", "--topology", "jellyfsh:switches=4", "--strategy", "unicast",
      "--publisher", "h1", "--receivers", "h2"], "did you mean jellyfish"),
    (["deliver", "--topology", TOPO, "--strategy", "unicst", "--publisher", "h1",
      "--receivers", "h2"], "unknown strategy 'unicst'"),
    (["deliver", "--topology", TOPO, "--strategy", "unicast", "--publisher", "h99",
      "--receivers", "h2"], "unknown host 'h99'"),
    (["deliver", "--topology", TOPO, "--strategy", "multicast", "--publisher", "h1",
      "--receivers", "h2", "--param", "tree=bogus"], "tree' must be one of spt, steiner"),
    (["deliver", "--topology", TOPO, "--strategy", "multicast", "--publisher", "h1",
      "--receivers", "h2", "--param", "nope"], "--param expects KEY=VALUE"),
    (["deliver", "--topology", "jellyfish:switches=x,degree=3", "--strategy", "unicast",
      "--publisher", "h1", "--receivers", "h2"], "must be an integer"),
    (["run", "/nonexistent/spec.toml", "--engine", "local"], "cannot read spec"),
    (["run", "quickstrat", "--engine", "local"], "did you mean quickstart"),
    (["report", "/nonexistent/dir"], "does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_spec_content_names_the_field(tmp_path, capsys):
    spec = tmp_path / "bad.toml"
    spec.write_text('[experiment]\nname = "x"\n[grid]\ntopology = ["fattree:k=4"]\n'
                    'strategy = ["unicast"]\nreceivers = ["uniform:percent=10"]\n'
                    'colour = ["red"]\n')
    code, _, err = run(capsys, "run", str(spec), "--engine", "local")
    assert code == 2 and "unknown key(s) colour" in err
    spec.write_text('[experiment]\nname = "x"\nnotifications = 0\n[grid]\n'
                    'topology = ["fattree:k=4"]\nstrategy = ["unicast"]\n'
                    'receivers = ["uniform:percent=10"]\n')
    code, _, err = run(capsys, "run", str(spec), "--engine", "local")
    assert code == 2 and "notifications must be a positive integer" in err


def _all_strategies():
    from strategies.base import STRATEGIES, load_builtin_strategies

    load_builtin_strategies()
    return STRATEGIES.names()


@pytest.mark.parametrize("strategy", _all_strategies())
def test_every_strategy_fills_the_deliver_contract_or_says_what_it_needs(capsys, strategy):
    """Strategies that need more than one receiver set (a population, content) refuse
    with one clear line; all others fill the whole contract and deliver exactly."""
    code, out, err = run(capsys, "deliver", "--topology", TOPO, "--strategy", strategy,
                         "--publisher", "h2", "--receivers", "h5,h9,h11", "--json")
    if code == 2:
        assert err.count("\n") == 1 and "Traceback" not in err and strategy in err
        return
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == DELIVER_KEYS
    assert doc["false_negatives"] == 0
    if strategy != "broadcast":
        assert doc["delivered"] == {"h5": 1, "h9": 1, "h11": 1}


def test_a_closed_pipe_ends_quietly() -> None:
    """``stackcast topology show ... | head`` ends without a traceback."""
    import subprocess
    import sys

    entry = "import sys; from experiments.cli.main import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", entry, "topology", "show", "fattree:k=16"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()            # what head does after its lines
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
