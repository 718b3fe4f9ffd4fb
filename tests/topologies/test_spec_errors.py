"""Bad topology specs fail early with one line that names the problem."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from topologies.model import TopologyError
from topologies.registry import SpecError
from topologies.specs import TOPOLOGIES, load_topology


def one_line_error(spec: str, match: str, exc: type[Exception] = SpecError) -> None:
    with pytest.raises(exc, match=match) as info:
        load_topology(spec)
    assert "\n" not in str(info.value)


def test_all_kinds_are_registered() -> None:
    load_topology("leafspine")  # imports the generator modules
    assert {"jellyfish", "fattree", "fabric", "leafspine", "elmo", "zoo",
            "file"} <= set(TOPOLOGIES)


def test_unknown_generator_names_the_closest() -> None:
    one_line_error("jellyfsh:switches=10", r"unknown topology generator 'jellyfsh'.*"
                                           r"did you mean jellyfish")
    one_line_error("fattre:k=4", r"did you mean fattree")


@pytest.mark.parametrize(("spec", "match"), [
    ("jellyfish:switches=x", r"parameter 'switches' must be an integer; got 'x'"),
    ("jellyfish:switches", r"parameter 'switches' must be an integer; got 'switches'"),
    ("jellyfish:degree=3", r"missing parameter\(s\) 'switches'"),
    ("jellyfish:switches=10,ports=3", r"unknown parameter 'ports' \(allowed: degree, hosts, "
                                      r"seed, switches\)"),
    ("fabric:planes=2,spine=4", r"unknown parameter 'spine'"),
    ("leafspine:leaves=2.5", r"parameter 'leaves' must be an integer"),
    ("zoo:", r"missing the name \(write zoo:NAME\)"),
    ("file:", r"missing the path \(write file:PATH\)"),
])
def test_bad_or_missing_parameters(spec: str, match: str) -> None:
    one_line_error(spec, rf"^topology '{re.escape(spec)}': .*{match}")


@pytest.mark.parametrize(("spec", "match"), [
    ("jellyfish:switches=10,degree=10", r"degree must be an integer with 1 <= degree < switches"),
    ("jellyfish:switches=10,degree=1", r"degree must be >= 2 for more than 2 switches"),
    ("jellyfish:switches=1,degree=1", r"switches must be an integer >= 2; got 1"),
    ("jellyfish:switches=10,hosts=-1", r"hosts must be an integer >= 0; got -1"),
    ("jellyfish:switches=10,seed=-3", r"seed must be an integer >= 0; got -3"),
    ("fattree:k=3", r"k must be an even integer >= 2; got 3"),
    ("fattree:k=0", r"k must be an even integer >= 2; got 0"),
    ("fabric:pods=0", r"pods must be an integer >= 1; got 0"),
    ("leafspine:spines=0", r"spines must be an integer >= 1; got 0"),
])
def test_out_of_range_parameters_name_field_and_allowed_values(spec: str, match: str) -> None:
    one_line_error(spec, match)


def test_unknown_zoo_name_has_a_suggestion() -> None:
    one_line_error("zoo:Chinanett", r"did you mean Chinanet", TopologyError)


def test_jellyfish_gives_up_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from topologies import generators

    monkeypatch.setattr(generators, "JELLYFISH_MAX_ATTEMPTS", 1)
    # a random 2-regular graph on 200 switches is almost never one cycle
    one_line_error("jellyfish:switches=200,degree=2,seed=1",
                   r"no connected 2-regular graph on 200 switches after 1 attempts",
                   TopologyError)


def test_pure_layer_imports_no_engine_packages() -> None:
    code = (
        "import sys\n"
        "from topologies.specs import load_topology\n"
        "load_topology('jellyfish:switches=20,degree=3')\n"
        "load_topology('fabric')\n"
        "bad = {'simpy', 'pyspark', 'scapy', 'p4runtime_sh'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
