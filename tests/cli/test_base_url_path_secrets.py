"""A credential in the base URL's *path* (a gateway that takes its key as a segment:
`https://gw.example.com/key/<KEY>/v1`) is the endpoint's own, as one in its query is: found by the
round-6 trust pass written to stderr (the summarizer's line, the endpoint's stats), `--json` and the
report whenever no rule knew its shape (a key of random letters and digits), while `sk-...` and
`AKIA...` were masked by shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_base_url_query_secrets import _rows
from tests.conftest import run_cli
from tests.fake_openai_server import FakeServerThread
from trajectory_compressor.summarize.redact import REDACTED
from trajectory_compressor.summarize.url_credentials import display_url, url_secrets

GATEWAY_KEY = "Zk3pQ9xLm2Rt7vWn4bYc8dHf1gJs6kPa0eTq"


@pytest.mark.parametrize(
    ("path", "secret"),
    [
        (f"/api/{GATEWAY_KEY}/v1", GATEWAY_KEY),
        ("/key/hunter2x/v1", "hunter2x"),  # named by the segment before it
        ("/v1/sk-proj-Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789/chat", "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"),
        ("/key/AKIAIOSFODNN7EXAMPLE/v1", "AKIAIOSFODNN7EXAMPLE"),
        ("/v1/Zk3pQ9xLm2Rt%2F7vWn4bYc8dHf1gJs/x", "Zk3pQ9xLm2Rt/7vWn4bYc8dHf1gJs"),  # percent-decoded too
        ("/accounts/123e4567-e89b-12d3-a456-426614174000/v1", "123e4567-e89b-12d3-a456-426614174000"),
        ("/key=hunter2x/v1", "hunter2x"),  # a segment or a matrix parameter named as one
        ("/v1;apikey=hunter2x/chat", "hunter2x"),
        ("/v1#access_token=hunter2x", "hunter2x"),  # the fragment: never sent, but printed
        (f"/v1#{GATEWAY_KEY}", GATEWAY_KEY),
    ],
)
def test_a_path_credential_of_the_base_url_is_a_secret_of_it(path: str, secret: str) -> None:
    url = f"https://gw.example.com{path}"
    assert secret in url_secrets(url)
    shown = display_url(url)
    assert secret not in shown and REDACTED in shown and shown.startswith("https://gw.example.com/"), shown


@pytest.mark.parametrize(
    "url",
    [
        "https://x.openai.azure.com/openai/deployments/gpt-4o-mini-2024-07-18/",
        "https://api.example.com/v1/models/claude-3-5-sonnet-20241022",
        "https://api.example.com/v1/Qwen2.5-Coder-32B-Instruct",
        "https://x.supabase.co/auth/v1",
        "https://api.example.com/token/v1",
        "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj-123/locations/us-central1/endpoints/openapi",
        "http://127.0.0.1:8080/v1",
        "https://api.example.com/v1#section-2",
        "https://api.example.com/v1;v=2/chat",
        # Words joined by a dash or an underscore after a segment ending in a credential's name
        # (`claude-code`, `auth`): a route's name, no key. Taken for one, every summary was
        # scrubbed of it (`Credentials.scrub_summary`): `[REDACTED]` for `anthropic-proxy`.
        "https://api.example.com/claude-code/anthropic-proxy/v1",
        "https://api.example.com/auth/openai-compat/v1",
        "https://api.example.com/team-token/shared_pool/v1",
    ],
)
def test_model_deployment_and_version_segments_are_no_secret(url: str) -> None:
    assert url_secrets(url) == ()
    assert display_url(url) == url


def test_a_path_credential_reaches_no_stderr_json_or_report(tmp_path: Path) -> None:
    source = _rows(tmp_path / "in.jsonl")
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(default="echo") as server:
        url = f"{server.base_url}/gw/{GATEWAY_KEY}/v1"  # not the fake's route: each call fails, and says where
        result = run_cli(
            "compress", str(source), "-o", str(out), "--summarizer", "llm", "--base-url", url, "--model", "m",
            "--no-cache", "--json", "--target-max-tokens", "3000", "--summary-target-tokens", "300", "-v",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "endpoint" in result.stderr and REDACTED in result.stderr, result.stderr
    written = "\n".join(path.read_text() for path in out.parent.rglob("*") if path.is_file())
    for where, text in (("stdout", result.stdout), ("stderr", result.stderr), ("files", written)):
        assert GATEWAY_KEY[:12] not in text, where
