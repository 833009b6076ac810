"""`compress --api gemini`, live, against a fake of Gemini's `generateContent` on 127.0.0.1.

Gemini is the live-only provider: its row in the dialect table declares no batch API and no
offline batch files, so `--batch`, `requests` and `--responses` are refused in one line naming it
(the table, not its name, decides). Live, it writes the very bytes an OpenAI run writes (the fakes
answer the same prompt alike); its key (`GEMINI_API_KEY`) is in no file, no message, no log.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fake_gemini_api import FakeGeminiServer, neutral_body
from tests.fake_openai_server import FakeServerThread
from tests.providers import BUDGET, first_tries_fail, live_flags, no_secret_anywhere, openai_run, twelve_runs
from trajectory_compressor.summarize.llm.dialects import DIALECTS

SECRET = "AIzaSy-LIVE-gemini-never-written-9f8e7d6c"
ENV = {"GEMINI_API_KEY": SECRET}


def _flags(base_url: str, *extra: str) -> list[str]:
    return live_flags(base_url, "gemini-fake", *extra)


def test_a_live_gemini_run_writes_the_bytes_an_openai_run_writes_with_its_cost_and_no_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    source = twelve_runs(tmp_path)
    asked_openai = openai_run(source, tmp_path / "openai" / "x.jsonl", "gemini-fake")
    # The first try of the first two rows asked: 503 (unavailable), then 429 (quota).
    server = FakeGeminiServer(faults=first_tries_fail("503", "429:0"), key=SECRET)
    with FakeServerThread(server=server):
        result = run_cli("compress", str(source), "-o", str(tmp_path / "gemini" / "x.jsonl"), "--api", "gemini",
                         *_flags(server.base_url, "--price-in", "0.3", "--price-out", "2.5"), env=ENV)  # fmt: skip
    assert result.returncode == 0, result.stderr
    metrics = zip(
        (tmp_path / "openai" / "x.metrics.jsonl").read_text().splitlines(),
        (tmp_path / "gemini" / "x.metrics.jsonl").read_text().splitlines(),
        strict=True,
    )
    differ = [(ours, theirs) for ours, theirs in metrics if ours != theirs]
    # Two rows paid the two retries (their metrics count them); everything else is byte for byte.
    assert len(differ) == 2 and all('"summary_calls":2' in m.replace(" ", "") for _, m in differ)
    assert (tmp_path / "gemini" / "x.jsonl").read_bytes() == (tmp_path / "openai" / "x.jsonl").read_bytes()
    assert len(server.requests) == 6 + 2 and server.model_lists == 1  # the preflight, then the rows
    assert all(url.endswith(("/models/gemini-fake:generateContent", "/models")) for url in server.urls)
    assert not any("key=" in url for url in server.urls)  # the key travels in its header only
    for request in server.requests:
        assert request.headers.get("x-goog-api-key") == SECRET and request.authorization is None
        assert set(request.body) == {"contents", "systemInstruction", "generationConfig"}
    asked = sorted({neutral_body(request.body)["max_tokens"] for request in server.requests})
    assert asked == sorted(set(asked_openai))
    endpoint = json.loads((tmp_path / "gemini" / "x.report.json").read_text())["summaries"]["endpoint"]
    assert endpoint["endpoint"] == f"{server.base_url}/models/gemini-fake:generateContent"
    assert endpoint["successes"] == 6 and endpoint["retries_by_cause"] == {"429": 1, "5xx": 1}
    cost = (endpoint["prompt_tokens"] * 0.3 + endpoint["completion_tokens"] * 2.5) / 1e6
    assert endpoint["prompt_tokens"] > 0 and endpoint["cost_usd"] == round(cost, 6)
    no_secret_anywhere(SECRET, tmp_path, result.stderr, result.stdout, caplog.text)


def test_a_wrong_key_stops_the_run_before_the_tokenizer_in_one_line_naming_gemini_s_variable(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    with FakeServerThread(server=FakeGeminiServer(key="AIzaSy-the-right-one")) as server:
        wrong = run_cli("compress", str(source), "-o", str(tmp_path / "a" / "x.jsonl"), "--api", "gemini",
                        *_flags(server.base_url), env=ENV)  # fmt: skip
        missing = run_cli("compress", str(source), "-o", str(tmp_path / "b" / "x.jsonl"), "--api", "gemini",
                          *_flags(server.base_url), env={"GEMINI_API_KEY": ""})  # fmt: skip
        assert server.requests == []  # refused at the model list: no summary asked
    assert wrong.returncode == 2 and "HTTP 400" in wrong.stderr and "refused the credentials" in wrong.stderr
    assert "check the key in $GEMINI_API_KEY" in wrong.stderr
    assert missing.returncode == 2 and "no API key was found in $GEMINI_API_KEY" in missing.stderr
    for result in (wrong, missing):
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    no_secret_anywhere(SECRET, tmp_path, wrong.stderr, wrong.stdout)


def test_batch_requests_and_responses_are_refused_in_one_line_naming_gemini(tmp_path: Path) -> None:
    source = twelve_runs(tmp_path)
    (tmp_path / "answers.jsonl").write_text("")
    with FakeServerThread(server=FakeGeminiServer()) as server:
        batch = run_cli("compress", str(source), "-o", str(tmp_path / "b" / "x.jsonl"), "--api", "gemini",
                        *_flags(server.base_url), "--batch", env=ENV)  # fmt: skip
        responses = run_cli("compress", str(source), "-o", str(tmp_path / "r" / "x.jsonl"), "--api", "gemini",
                            *_flags(server.base_url), "--cache", str(tmp_path / "c.sqlite3"),
                            "--responses", str(tmp_path / "answers.jsonl"), env=ENV)  # fmt: skip
        requests = run_cli("requests", str(source), "-o", str(tmp_path / "q.jsonl"), "--api", "gemini",
                           "--model", "gemini-fake", *BUDGET, env=ENV)  # fmt: skip
        assert server.requests == [] and server.server.model_lists == 0
    assert batch.stderr.strip() == (
        "error: --batch needs a batch API, which --api gemini does not have (openai, anthropic have one); "
        "drop --batch: compress asks gemini live"
    )
    assert responses.stderr.strip() == (
        "error: --responses reads offline batch files, which --api gemini does not have (openai has them); "
        "drop --responses: compress asks gemini live"
    )
    assert requests.stderr.strip() == (
        "error: requests writes offline batch files, which --api gemini does not have (openai has them); "
        "run compress, which asks gemini live"
    )
    for result in (batch, responses, requests):
        assert result.returncode == 2
    assert not (tmp_path / "q.jsonl").exists() and not (tmp_path / "b").exists()


def test_the_commands_ask_the_table_not_the_provider_s_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI's row stripped of its offline files: `requests` refuses OpenAI, and points to its batch API."""
    source = twelve_runs(tmp_path)
    monkeypatch.setitem(DIALECTS, "openai", replace(DIALECTS["openai"], offline_files=False))
    refused = run_cli("requests", str(source), "-o", str(tmp_path / "q.jsonl"), "--model", "m", *BUDGET)
    assert refused.returncode == 2 and "which --api openai does not have (no provider has them)" in refused.stderr
    assert "use compress --batch, which drives openai's batch API whole" in refused.stderr
