"""``stackcast state``: a strategy's entries per switch role and table, on a spec's population."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.cli.main import main

SPEC = """
[experiment]
name = "state-test"
notifications = 5
seeds = [1]
payload_bytes = [64]

[grid]
topology = ["elmo:pods=2,leaves=3,hosts=3,spines=2,cores=2"]
strategy = ["elmo", "multicast"]
receivers = ["tenants:tenants=6,groups=40"]
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "state.toml"
    path.write_text(SPEC)
    return path


def test_entries_per_role_add_up_to_the_install(spec: Path, capsys) -> None:
    assert main(["state", str(spec), "--strategy", "elmo", "--json",
                 "--param", "redundancy=0", "--param", "leaf_prules=1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "redundancy=0" in out["params"] and "leaf_prules=1" in out["params"]
    rows = {(r["role"], r["table"]): r for r in out["tables"]}
    assert {role for role, _ in rows} == {"core", "spine", "leaf"}
    assert rows[("leaf", "MyIngress.elmo_switch")]["switches"] == 6
    assert rows[("leaf", "MyIngress.elmo_switch")]["total"] == 6
    assert sum(r["total"] for r in out["tables"]) == out["entries"]
    srules = rows[("leaf", "MyIngress.elmo_srule")]
    assert srules["total"] > 0, "one leaf p-rule for 40 groups leaves s-rules on leaves"
    assert srules["max"] >= srules["mean"] > 0


def test_a_strategy_outside_the_spec_is_named(spec: Path, capsys) -> None:
    assert main(["state", str(spec), "--strategy", "bier"]) != 0
    err = capsys.readouterr().err
    assert "runs no 'bier' cell" in err and "elmo, multicast" in err
