"""The LLM summarizer with `api="gemini"` against a real aiohttp fake of Gemini's `generateContent` on
127.0.0.1 (`tests/fake_gemini_api.py`): the request as Google takes it, its replies read, its
failures retried or refused as the other dialects' are, the key in `x-goog-api-key` only.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from tests.fake_gemini_api import FakeGeminiServer, neutral_body
from tests.fake_openai_server import fake_summary
from tests.providers import ProviderClient, redirecting_elsewhere
from tests.summarize.llm.test_client import make_request
from trajectory_compressor.settings import ConfigError
from trajectory_compressor.summarize.llm import LLMSummarizer
from trajectory_compressor.summarize.llm.dialects.gemini import GeminiDialect
from trajectory_compressor.summarize.llm.preflight import check_endpoint
from trajectory_compressor.types import EndpointAuthError, SummaryError

KEY = "AIzaSyFAKE-gemini-TESTKEY-0123456789abcdef"  # distinctive; must never leak
GEMINI = ProviderClient("gemini", "gemini-fake", "GEMINI_API_KEY", KEY)
make_config = GEMINI.config
summarize_with = GEMINI.summarize_with


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    return GEMINI.set_keys(monkeypatch)


def test_the_request_is_generate_content_and_the_reply_its_candidate_s_parts() -> None:
    async def scenario() -> None:
        async with FakeGeminiServer(key=KEY) as server:
            extra = {"generationConfig": {"topK": 5}, "safetySettings": []}
            result, stats = await summarize_with(server, make_request(budget=120), extra_body=extra, temperature=0.1)
        (seen,) = server.requests
        assert server.base_url.endswith("/v1beta") and server.urls == ["/v1beta/models/gemini-fake:generateContent"]
        assert seen.headers.get("x-goog-api-key") == KEY and seen.authorization is None  # never `?key=`
        body = seen.body
        assert list(body) == ["contents", "systemInstruction", "generationConfig", "safetySettings"]
        assert body["generationConfig"] == {"maxOutputTokens": 240, "temperature": 0.1, "topK": 5}
        assert "summar" in body["systemInstruction"]["parts"][0]["text"].lower()
        assert [c["role"] for c in body["contents"]] == ["user"] and len(body["contents"][0]["parts"]) == 1
        assert result.text == fake_summary(neutral_body(body))
        assert (result.calls, result.errors, result.cache_hit) == (1, 0, False)
        chars = sum(len(m["content"]) for m in neutral_body(body)["messages"])
        assert result.prompt_tokens == chars // 4 and result.completion_tokens == len(result.text) // 4
        assert stats["endpoint"] == f"{server.base_url}/models/gemini-fake:generateContent"
        json.dumps(stats)

    asyncio.run(scenario())


RETRIED = [("503", "5xx"), ("500", "5xx"), ("429", "429"), ("no_choices", "no_content"), ("no_content", "no_content"),
           ("reasoning_only", "no_content"), ("empty", "empty"), ("length", "length"), ("drop_mid", "connection"),
           ("invalid_json", "invalid_json")]  # fmt: skip


@pytest.mark.parametrize(("action", "cause"), RETRIED)
def test_overloaded_rate_limited_and_unusable_replies_are_retried(action: str, cause: str) -> None:
    async def scenario() -> None:
        async with FakeGeminiServer(faults=[action]) as server:
            result, stats = await summarize_with(server)
        assert server.actions() == [action, "ok"]
        assert (result.calls, result.errors) == (2, 1) and result.last_error
        assert result.text == fake_summary(neutral_body(server.requests[1].body))
        assert stats["retries_by_cause"] == {cause: 1}

    asyncio.run(scenario())


def test_what_an_unusable_reply_lacked_is_said_in_gemini_s_terms() -> None:
    async def scenario() -> list[str]:
        messages = []
        async with FakeGeminiServer() as server:
            for action in ("no_choices", "reasoning_only", "length"):
                server.default = action
                with pytest.raises(SummaryError) as caught:
                    await summarize_with(server, max_retries=0)
                messages.append(str(caught.value))
        return messages

    no_candidates, thought_only, cut = asyncio.run(scenario())
    assert no_candidates == "gave up after 1 attempts; last error: reply has no candidates: upstream provider failed"
    assert thought_only.endswith("reply has no text in candidates[0].content.parts")  # a thought part is no summary
    assert cut.endswith("reply was cut at max_tokens (finishReason=MAX_TOKENS)")


def test_a_reply_cut_at_max_tokens_is_asked_again_with_more_room() -> None:
    async def scenario() -> None:
        async with FakeGeminiServer(faults=["length", "length", "length"]) as server:
            await summarize_with(server, make_request(budget=50), max_retries=3)
        assert [r.body["generationConfig"]["maxOutputTokens"] for r in server.requests] == [100, 200, 400, 400]

    asyncio.run(scenario())


def test_retry_after_of_a_rate_limit_answer_pauses_the_client() -> None:
    async def scenario() -> float:
        async with FakeGeminiServer(faults=["429:0.3"]) as server:
            _, stats = await summarize_with(server)
            gap = server.requests[1].arrived - server.requests[0].arrived
        assert stats["retries_by_cause"] == {"429": 1}
        return gap

    assert asyncio.run(scenario()) >= 0.3


def test_a_key_google_does_not_know_is_a_refusal_of_the_credentials_not_a_bad_request(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Google answers a wrong key with a 400 naming API_KEY_INVALID (a missing one: 403): both stop
    the run as a 401 does elsewhere, before (preflight) and during it, the key in no message."""
    caplog.set_level(logging.DEBUG)

    async def scenario() -> list[str]:
        async with FakeGeminiServer(key="AIzaSy-the-right-one") as server:
            with pytest.raises(ConfigError) as before:
                await check_endpoint(make_config(server.base_url))
            with pytest.raises(EndpointAuthError) as during:
                await summarize_with(server)
            assert sum("generateContent" in url for url in server.urls) == 1  # not retried
            monkeypatch.delenv("GEMINI_API_KEY")
            with pytest.raises(EndpointAuthError) as missing:
                await summarize_with(server)
        return [str(before.value), str(during.value), str(missing.value)]

    before, during, missing = asyncio.run(scenario())
    assert "HTTP 400" in before and "refused the credentials (API key not valid" in before
    assert "check the key in $GEMINI_API_KEY" in before
    assert "HTTP 400" in during and "refused the credentials" in during
    assert "HTTP 403" in missing and "no API key was found in $GEMINI_API_KEY" in missing
    for text in (before, during, missing, caplog.text):
        assert KEY not in text


def test_a_bad_request_that_names_no_key_fails_that_row_only() -> None:
    async def scenario() -> None:
        async with FakeGeminiServer(default="400") as server:
            with pytest.raises(SummaryError) as caught:
                await summarize_with(server)
            assert not isinstance(caught.value, EndpointAuthError) and server.count == 1

    asyncio.run(scenario())


def test_an_echoed_key_is_scrubbed_from_errors_and_summaries(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def scenario() -> tuple[str, str]:
        async with FakeGeminiServer(faults=["echo:80"]) as server:
            result, _ = await summarize_with(server)
        async with FakeGeminiServer(default="echo_auth:401") as server:
            with pytest.raises(EndpointAuthError) as caught:
                await summarize_with(server)
        return str(result.text), str(caught.value)

    text, error = asyncio.run(scenario())
    assert "x-goog-api-key: [REDACTED]" in text and "x-goog-api-key: [REDACTED]" in error
    assert KEY not in text + error + caplog.text


def test_a_model_path_a_tuned_model_and_a_thought_part() -> None:
    config = make_config("http://127.0.0.1:1/v1beta")
    assert GeminiDialect(config).path == "/models/gemini-fake:generateContent"
    assert GeminiDialect(make_config("x", model="tunedModels/my-model")).path == "/tunedModels/my-model:generateContent"
    assert GeminiDialect(make_config("x", model="models/gemini 2")).path == "/models/gemini%202:generateContent"
    parts = [{"text": "plan", "thought": True}, {"text": "A "}, {"text": "B."}]
    usage = {"promptTokenCount": 90, "candidatesTokenCount": 3, "thoughtsTokenCount": 40}
    reply = {"candidates": [{"content": {"parts": parts}, "finishReason": "STOP"}], "usageMetadata": usage}
    read = GeminiDialect(config).read_reply(reply)
    assert (read.content, read.prompt_tokens, read.completion_tokens) == ("A B.", 90, 43)  # thinking is billed
    blocked = GeminiDialect(config).read_reply({"promptFeedback": {"blockReason": "SAFETY"}})
    assert blocked.content is None and blocked.missing == "reply has no candidates (prompt blocked: SAFETY)"
    safety = GeminiDialect(config).read_reply({"candidates": [{"finishReason": "SAFETY"}]})
    assert safety.missing == "reply has no text in candidates[0].content.parts (finishReason=SAFETY)"


def test_a_redirect_is_not_followed_so_the_key_reaches_no_other_host() -> None:
    # aiohttp keeps `x-goog-api-key` on a redirect to another origin (it drops `Authorization` only).
    async def scenario() -> str:
        async with redirecting_elsewhere(302) as (origin, elsewhere):
            await check_endpoint(make_config(f"{origin}/v1beta"))
            with pytest.raises(SummaryError) as caught:
                async with LLMSummarizer(make_config(f"{origin}/v1beta")) as summarizer:
                    await summarizer.summarize(make_request())
        assert elsewhere == []
        return str(caught.value)

    message = asyncio.run(scenario())
    assert message.startswith("HTTP 302 from http://127.0.0.1:") and "redirected to http://127.0.0.1:" in message
    assert KEY not in message
