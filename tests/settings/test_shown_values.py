"""A setting's wrong value is quoted in its error (`must be a number, got '…'`): a key put in the
wrong place of a config file was printed whole (found by the round-12 adversarial pass); a
credential's shape is masked there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLE, run_cli

KEY = "sk-proj-Ab3dEfGh7jKlMnOpQr5tUvWxYz01Ab3dEfGh"


@pytest.mark.parametrize("setting", [f"temperature: {KEY}", f"base_url: [{KEY}]", f"api: {KEY}"])
def test_a_key_in_the_wrong_setting_is_not_quoted(setting: str, tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"summarization:\n  {setting}\n")
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(SAMPLE), "-o", str(out), "--config", str(config), "--summarizer", "extractive")
    assert result.returncode == 2, result.stderr
    assert "[REDACTED]" in result.stderr and KEY[:12] not in result.stderr, result.stderr


def test_an_ordinary_wrong_value_is_still_quoted(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("summarization:\n  temperature: warm\n")
    result = run_cli("compress", str(SAMPLE), "-o", str(tmp_path / "x.jsonl"), "--config", str(config))
    assert result.returncode == 2 and "got 'warm'" in result.stderr, result.stderr
