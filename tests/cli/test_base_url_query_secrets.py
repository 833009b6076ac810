"""A credential in the base URL's query string (`?code=` an Azure Function's key, `?key=` a
gateway's, `?sig=` a SAS signature) is the endpoint's own, as a URL's password is: found by the
round-12 adversarial pass written to stderr, `--json` and the report whenever the rules did not
know its shape (`?code=…` any value, `?key=hunter2x`), though the report's `endpoint` masked one.
(The client appends its path to the base URL, after such a query: the run fails, and its error
names the endpoint.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread
from trajectory_compressor.summarize.redact import REDACTED
from trajectory_compressor.summarize.url_credentials import display_url, url_secrets

FUNCTION_KEY = "Zk3pQ9xLm2Rt7vWn4bYc8dHf1gJs6kPa0eTq5uVw9xYz2AbCdE=="


@pytest.mark.parametrize(
    ("query", "secret"),
    [
        (f"code={FUNCTION_KEY}", FUNCTION_KEY),
        ("key=hunter2x", "hunter2x"),
        ("api-version=2024-06-01&subscription-key=plainword", "plainword"),
        ("sig=abc%2Bdef%3D&sv=2022-11-02", "abc+def="),
    ],
)
def test_a_query_credential_of_the_base_url_is_a_secret_of_it(query: str, secret: str) -> None:
    url = f"https://fn.example.com/api/v1?{query}"
    assert secret in url_secrets(url)
    assert secret not in display_url(url) and REDACTED in display_url(url)


def test_ordinary_query_parameters_of_the_base_url_are_no_secret() -> None:
    url = "https://x.openai.azure.com/openai/deployments/gpt/?api-version=2024-06-01&format=json"
    assert url_secrets(url) == ()
    assert display_url(url) == url


def _rows(path: Path) -> Path:
    turns = [{"from": "system", "value": "You are an agent."}, {"from": "human", "value": "Fix the bug."}]
    for step in range(12):
        turns += [
            {"from": "gpt", "value": f"Step {step}: run the tests.\n" + "looking at the code " * 40},
            {"from": "tool", "value": "\n".join(f"tests/test_{step}_{n}.py PASSED" for n in range(40))},
        ]
    turns.append({"from": "gpt", "value": "Done."})
    write_jsonl(path, [{"id": "r0", "conversations": turns}])
    return path


def test_a_query_credential_reaches_no_stderr_json_or_report(tmp_path: Path) -> None:
    source = _rows(tmp_path / "in.jsonl")
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(default="echo") as server:
        url = f"{server.base_url}?code={FUNCTION_KEY}"
        result = run_cli(
            "compress", str(source), "-o", str(out), "--summarizer", "llm", "--base-url", url, "--model", "m",
            "--no-cache", "--json", "--target-max-tokens", "3000", "--summary-target-tokens", "300",
        )  # fmt: skip
    # The path is appended to the base URL, after its query: the run fails, and says so.
    assert result.returncode in (0, 2), result.stderr
    assert "never answered" in result.stderr or result.returncode == 0, result.stderr
    written = "\n".join(path.read_text() for path in out.parent.rglob("*") if path.is_file())
    for where, text in (("stdout", result.stdout), ("stderr", result.stderr), ("files", written)):
        assert FUNCTION_KEY[:16] not in text, where
