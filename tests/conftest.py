"""Shared test configuration: Hypothesis profiles, the zoo directory, small topologies."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
SHARED_ZOO = REPO.parent / "shared" / "data" / "topology-zoo"

# Tests and CI read the raw Topology Zoo files from shared/ (issue 2).
if "STACKCAST_ZOO_DIR" not in os.environ and SHARED_ZOO.is_dir():
    os.environ["STACKCAST_ZOO_DIR"] = str(SHARED_ZOO)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite golden files under tests/golden/ instead of comparing")


@pytest.fixture
def regen_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--regen-golden"))


@pytest.fixture
def golden(regen_golden: bool, request: pytest.FixtureRequest) -> Callable[[str, str], None]:
    """``golden(name, text)``: compare ``text`` with ``tests/golden/<name>`` exactly.

    With ``--regen-golden`` the file is (re)written instead; without it a
    missing or different file fails with a short unified diff and the command
    that regenerates it.
    """

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / name
        if regen_golden:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        test_file = Path(str(request.node.path)).relative_to(REPO)
        regen = f"python -m pytest {test_file} --regen-golden"
        if not path.is_file():
            pytest.fail(f"golden file {path.relative_to(REPO)} is missing; create it with: {regen}",
                        pytrace=False)
        expected = path.read_text(encoding="utf-8")
        if text == expected:
            return
        diff = list(difflib.unified_diff(
            expected.splitlines(), text.splitlines(), fromfile=f"golden/{name}",
            tofile="now", lineterm="", n=2))
        shown = diff[:40] + ([f"... ({len(diff) - 40} more diff lines)"] if len(diff) > 40 else [])
        pytest.fail(f"{path.relative_to(REPO)} differs:\n" + "\n".join(shown)
                    + f"\nIf the change is intended, regenerate with: {regen}", pytrace=False)

    return check


@pytest.fixture(autouse=True)
def _no_held_freeze() -> object:
    """A test that runs a Spark partition in this process (``run_partition``) leaves the
    worker's freeze held for a next task (``sim.engines.gc_thresholds``): release it."""
    yield
    from sim.engines.gc_thresholds import release_held

    release_held()
