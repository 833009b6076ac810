"""`compress --api anthropic`, live, against a fake of Anthropic's Messages API on 127.0.0.1.

The fakes of both providers answer the same prompt with the same summary and the same usage, so
a run through Anthropic's API must write the very bytes a run through OpenAI's writes: the seam
changes the wire, nothing else. The key (`ANTHROPIC_API_KEY`) is in no file and no message; the
cost is in the report; what its row in the dialect table lacks (offline batch files: `requests`,
`--responses`) is refused in one line naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.fake_anthropic_api import FakeAnthropicServer
from tests.fake_openai_server import FakeServerThread
from tests.providers import (
    BUDGET,
    OUTPUTS,
    first_tries_fail,
    live_flags,
    no_secret_anywhere,
    openai_run,
    twelve_runs,
)

SECRET = "sk-ant-api03-LIVE-never-written-7d6c5b4a"
ENV = {"ANTHROPIC_API_KEY": SECRET}


def _flags(base_url: str, *extra: str) -> list[str]:
    return live_flags(base_url, "claude-fake", *extra)


def test_a_live_anthropic_run_writes_the_bytes_an_openai_run_writes_with_its_cost_and_no_key(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    # Each asks for the budget the anchor index leaves: the same under both dialects.
    asked_openai = openai_run(source, tmp_path / "openai" / "x.jsonl", "claude-fake")
    # The first try of the first two rows asked: 529 (overloaded), then 429 (rate limited).
    server = FakeAnthropicServer(faults=first_tries_fail("529", "429:0"))
    with FakeServerThread(server=server):
        result = run_cli("compress", str(source), "-o", str(tmp_path / "anthropic" / "x.jsonl"), "--api", "anthropic",
                         *_flags(server.base_url, "--price-in", "3", "--price-out", "15"), env=ENV)  # fmt: skip
    assert result.returncode == 0, result.stderr
    differ = [
        (m_open, m_ant)
        for m_open, m_ant in zip(
            (tmp_path / "openai" / "x.metrics.jsonl").read_text().splitlines(),
            (tmp_path / "anthropic" / "x.metrics.jsonl").read_text().splitlines(),
            strict=True,
        )
        if m_open != m_ant
    ]
    # Two rows paid the two retries (their metrics count them); everything else is byte for byte.
    assert len(differ) == 2 and all('"summary_calls":2' in m.replace(" ", "") for _, m in differ)
    assert (tmp_path / "anthropic" / "x.jsonl").read_bytes() == (tmp_path / "openai" / "x.jsonl").read_bytes()
    assert len(server.requests) == 6 + 2
    for request in server.requests:
        assert request.api_key == SECRET and request.authorization is None
        assert request.headers.get("anthropic-version") == "2023-06-01"
        assert isinstance(request.body["system"], str) and [m["role"] for m in request.body["messages"]] == ["user"]
        assert request.body["model"] == "claude-fake"
    asked = {request.body["max_tokens"] for request in server.requests}
    assert sorted(asked) == sorted(set(asked_openai)) and all(0 < tokens < 400 for tokens in asked)
    endpoint = json.loads((tmp_path / "anthropic" / "x.report.json").read_text())["summaries"]["endpoint"]
    assert endpoint["endpoint"] == f"{server.base_url}/v1/messages"
    assert endpoint["successes"] == 6 and endpoint["retries_by_cause"] == {"429": 1, "5xx": 1}
    assert endpoint["prompt_tokens"] > 0 and endpoint["completion_tokens"] > 0
    cost = (endpoint["prompt_tokens"] * 3 + endpoint["completion_tokens"] * 15) / 1e6
    assert endpoint["cost_usd"] == round(cost, 6) and endpoint["cost_live_usd"] == endpoint["cost_usd"]
    no_secret_anywhere(SECRET, tmp_path, result.stderr, result.stdout)


def test_without_retries_the_anthropic_outputs_are_the_openai_outputs_byte_for_byte(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    for name, server, env in (
        ("openai", None, {"OPENAI_API_KEY": "k-1234"}),
        ("anthropic", FakeAnthropicServer(), ENV),
    ):
        with FakeServerThread(server=server) as thread:
            api = ["--api", name]
            result = run_cli("compress", str(source), "-o", str(tmp_path / name / "x.jsonl"), *api,
                             *_flags(thread.base_url), env=env)  # fmt: skip
            assert result.returncode == 0, result.stderr
    for output in OUTPUTS:
        assert (tmp_path / "anthropic" / output).read_bytes() == (tmp_path / "openai" / output).read_bytes(), output


def test_refused_credentials_stop_the_run_with_one_line_naming_anthropic_s_variable(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    with FakeServerThread(server=FakeAnthropicServer(default="echo_auth:401")) as server:
        quoted = run_cli("compress", str(source), "-o", str(tmp_path / "a" / "x.jsonl"), "--api", "anthropic",
                         *_flags(server.base_url), env=ENV)  # fmt: skip
        missing = run_cli("compress", str(source), "-o", str(tmp_path / "b" / "x.jsonl"), "--api", "anthropic",
                          *_flags(server.base_url), env={"ANTHROPIC_API_KEY": ""})  # fmt: skip
    assert quoted.returncode == 2 and "refused the credentials" in quoted.stderr
    assert "x-api-key: [REDACTED]" in quoted.stderr and "Traceback" not in quoted.stderr
    assert missing.returncode == 2 and "no API key was found in $ANTHROPIC_API_KEY" in missing.stderr
    no_secret_anywhere(SECRET, tmp_path, quoted.stderr, quoted.stdout)


def test_requests_and_responses_need_offline_files_anthropic_lacks_and_say_so_in_one_line(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    requests = run_cli("requests", str(source), "-o", str(tmp_path / "r.jsonl"), "--api", "anthropic",
                       "--model", "claude-fake", *BUDGET)  # fmt: skip
    assert requests.returncode == 2 and not (tmp_path / "r.jsonl").exists()
    assert "requests writes offline batch files, which --api anthropic does not have (openai has them)" in (
        requests.stderr
    )
    assert "use compress --batch" in requests.stderr  # it has a batch API
    (tmp_path / "answers.jsonl").write_text("")
    with FakeServerThread(server=FakeAnthropicServer()) as server:
        responses = run_cli("compress", str(source), "-o", str(tmp_path / "x.jsonl"), "--api", "anthropic",
                            *_flags(server.base_url), "--cache", str(tmp_path / "c.sqlite3"),
                            "--responses", str(tmp_path / "answers.jsonl"), env=ENV)  # fmt: skip
        assert server.requests == []
    assert (
        responses.returncode == 2 and "--responses reads offline batch files, which --api anthropic" in responses.stderr
    )
    assert "use compress --batch" in responses.stderr
    for result in (requests, responses):
        assert len(result.stderr.strip().splitlines()) <= 2 and "Traceback" not in result.stderr


def test_the_api_is_chosen_in_a_config_file_too_and_a_wrong_one_is_one_line(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    with FakeServerThread(server=FakeAnthropicServer()) as server:
        config = tmp_path / "c.yaml"
        config.write_text(f"summarization:\n  api: anthropic\n  base_url: {server.base_url}\n  model: claude-fake\n")
        result = run_cli("compress", str(source), "-o", str(tmp_path / "x.jsonl"), "--config", str(config),
                         *BUDGET, "--no-cache", env=ENV)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert len(server.requests) == 6 and all(r.api_key == SECRET for r in server.requests)
    config.write_text("summarization:\n  api: mistral\n")
    wrong = run_cli("compress", str(source), "-o", str(tmp_path / "y.jsonl"), "--config", str(config))
    assert wrong.returncode == 2 and "api" in wrong.stderr and "openai, anthropic, gemini" in wrong.stderr
    flag = run_cli("compress", str(source), "-o", str(tmp_path / "y.jsonl"), "--api", "mistral")
    assert flag.returncode == 2 and "Traceback" not in flag.stderr
