"""`--engine ray` without the extra is one line and exit 2, naming the install command."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import SAMPLE, run_cli


def test_engine_ray_without_ray_installed_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    hidden = lambda name, *args: None if name.startswith("ray") else real(name, *args)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", hidden)
    result = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "x.jsonl"), "--engine", "ray")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        'error: --engine ray needs Ray Data, which is not installed: pip install "trajectory-compressor[ray]"'
    ]
    assert not (tmp_path / "x.jsonl").exists()
