"""Shared test configuration: Hypothesis profiles, the zoo directory, small topologies."""

from __future__ import annotations

import os
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
