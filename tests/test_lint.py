"""The code base stays ruff-clean (lint and format) and mypy-clean, checked by the test command CI runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff(command: list[str]) -> None:
    # ruff is part of the test extras (pip install -e ".[test]").
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *command], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy() -> None:
    # mypy and the stubs it needs are part of the test extras; its settings are pyproject's
    # [tool.mypy] (the package, strictness, the untyped third-party imports). Its cache
    # (.mypy_cache) makes a run after the first take seconds; a cold one is about 35 s.
    # ray/ is checked against Ray's own types: without the [ray] extra, skipped as tests/ray is.
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
