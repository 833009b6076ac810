"""`--api-key-env` takes a variable's name; given the key itself (`--api-key-env $OPENAI_API_KEY`,
a slip the shell makes silent), the run printed it: `no API key was found in $sk-proj-…` on
stderr, in `--json` and in the report (found by the round-12 adversarial pass). It is refused
before anything is written or asked, the value not shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLE, run_cli
from trajectory_compressor.settings import ConfigError, LLMConfig
from trajectory_compressor.summarize.llm.dialects import key_env

KEYS = [
    "sk-proj-Ab3dEfGh7jKlMnOpQr5tUvWxYz01Ab3dEfGh",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",
    "Xk9pQ2mZ7vT4nR8wL3jH6bF1cD5gS0yA",
]


@pytest.mark.parametrize("value", KEYS)
def test_a_key_given_as_the_variables_name_is_refused_unshown(value: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        key_env(LLMConfig(api_key_env=value))
    assert value not in str(refused.value) and value[:12] not in str(refused.value)
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli(
        "compress", str(SAMPLE), "-o", str(out), "--summarizer", "llm", "--base-url", "http://127.0.0.1:9/v1",
        "--model", "m", "--no-cache", "--json", "--api-key-env", value,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert value[:12] not in result.stdout + result.stderr, result.stderr
    assert "--api-key-env" in result.stderr
    assert not out.parent.exists() or value[:12] not in "".join(
        path.read_text() for path in out.parent.rglob("*") if path.is_file()
    )


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY_EASTUS2", "my_key", "GROQ_API_KEY_2"])
def test_a_variables_name_is_taken(name: str) -> None:
    assert key_env(LLMConfig(api_key_env=name)) == name
