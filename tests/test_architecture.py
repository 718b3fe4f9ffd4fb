"""Architecture and conventions the linters alone do not keep (DESIGN.md, STYLE.md).

- mypy over every package and import-linter's layer contract (pyproject.toml) exit clean;
- no call to the builtin ``hash()`` in the packages: it is salted per process for
  strings (PYTHONHASHSEED), so a seed or a key derived from it changes between runs.
  Seeds come from ``sim.dataplanes.seeds`` (SHA-256 / CRC32 by name). ruff bans the
  ``random`` module (TID251) but cannot ban a builtin, hence this test.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("topologies", "sim", "strategies", "experiments", "hil")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True,
                          check=False)


@pytest.mark.slow
def test_mypy_is_clean_on_every_package():
    out = _run("-m", "mypy")  # packages and options: [tool.mypy] in pyproject.toml
    if out.returncode != 0:
        pytest.fail(f"mypy found errors:\n{out.stdout}{out.stderr}", pytrace=False)


def test_import_layers_contract_is_kept():
    out = _run("-c", "import sys; from importlinter.cli import lint_imports_command; "
                     "sys.exit(lint_imports_command())")
    if out.returncode != 0:
        pytest.fail(f"lint-imports: a layer contract is broken:\n{out.stdout}{out.stderr}",
                    pytrace=False)


def _builtin_hash_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rebound = any(  # a module that defines or imports its own ``hash`` is not using the builtin
        (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == "hash")
        or (isinstance(n, ast.Name) and n.id == "hash" and isinstance(n.ctx, ast.Store))
        or (isinstance(n, ast.alias) and (n.asname or n.name) == "hash")
        for n in ast.walk(tree))
    if rebound:
        return []
    rel = path.relative_to(REPO)
    return [f"{rel}:{n.lineno}: {ast.unparse(n)}" for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "hash"]


def test_no_builtin_hash_in_the_packages():
    found = [hit for pkg in PACKAGES for path in sorted((REPO / pkg).rglob("*.py"))
             for hit in _builtin_hash_calls(path)]
    if found:
        pytest.fail("builtin hash() is salted per process (PYTHONHASHSEED); derive seeds with "
                    "sim.dataplanes.seeds.child_rng / crc32:\n" + "\n".join(found), pytrace=False)


def test_the_hash_check_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text("seed = hash(('cell', 1)) % 2**32\nx = obj.hash(1)\n")
    assert _builtin_hash_calls(bad) == ["bad.py:1: hash(('cell', 1))"]
