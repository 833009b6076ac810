"""The LLM summarizer with `api="anthropic"` against a real aiohttp fake of Anthropic's Messages API
on 127.0.0.1 (`tests/fake_anthropic_api.py`): the request as Anthropic takes it, its replies read,
its failures retried or refused as the OpenAI path's are, the key in `x-api-key` only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic_api import FakeAnthropicServer
from tests.fake_openai_server import fake_summary
from tests.providers import ProviderClient, redirecting_elsewhere
from tests.summarize.llm.test_client import make_request
from trajectory_compressor.summarize.llm import LLMSummarizer
from trajectory_compressor.summarize.llm.batch_api import BatchAPIError
from trajectory_compressor.summarize.llm.dialects.anthropic import ANTHROPIC_VERSION
from trajectory_compressor.summarize.llm.dialects.anthropic_batches import AnthropicBatches
from trajectory_compressor.summarize.llm.preflight import check_endpoint
from trajectory_compressor.summarize.tally import counting
from trajectory_compressor.types import EndpointAuthError, SummaryError, SummaryRequest, Turn

KEY = "sk-ant-api03-TESTKEY-0123456789-abcdefXYZ"  # distinctive; must never leak
ANTHROPIC = ProviderClient("anthropic", "claude-fake", "ANTHROPIC_API_KEY", KEY)
make_config = ANTHROPIC.config
summarize_with = ANTHROPIC.summarize_with


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    return ANTHROPIC.set_keys(monkeypatch)


def test_the_request_is_anthropic_s_messages_call_and_the_reply_its_content_blocks() -> None:
    async def scenario() -> None:
        async with FakeAnthropicServer() as server:
            result, stats = await summarize_with(server, make_request(budget=120), extra_body={"top_k": 5},
                                                 temperature=0.1)  # fmt: skip
        (seen,) = server.requests
        assert not server.base_url.endswith("/v1")  # the base URL as Anthropic's SDK takes it
        assert seen.api_key == KEY and seen.headers.get("anthropic-version") == ANTHROPIC_VERSION
        assert seen.authorization is None  # the key travels in x-api-key only
        body = seen.body
        assert list(body) == ["model", "max_tokens", "system", "messages", "temperature", "top_k"]
        assert body["model"] == "claude-fake" and body["max_tokens"] == 240 and body["temperature"] == 0.1
        assert isinstance(body["system"], str) and "summar" in body["system"].lower()
        assert [m["role"] for m in body["messages"]] == ["user"]
        assert result.text == fake_summary(body)
        assert (result.calls, result.errors, result.cache_hit) == (1, 0, False)
        chars = len(body["system"]) + len(body["messages"][0]["content"])
        assert result.prompt_tokens == chars // 4 and result.completion_tokens == len(result.text) // 4
        assert stats["endpoint"] == f"{server.base_url}/v1/messages" and stats["prompt_tokens"] == result.prompt_tokens
        json.dumps(stats)

    asyncio.run(scenario())


RETRIED = [("529", "5xx"), ("500", "5xx"), ("429", "429"), ("no_choices", "no_content"), ("no_content", "no_content"),
           ("reasoning_only", "no_content"), ("empty", "empty"), ("length", "length"), ("drop_mid", "connection"),
           ("invalid_json", "invalid_json")]  # fmt: skip


@pytest.mark.parametrize(("action", "cause"), RETRIED)
def test_overloaded_rate_limited_and_unusable_replies_are_retried(action: str, cause: str) -> None:
    async def scenario() -> None:
        async with FakeAnthropicServer(faults=[action]) as server:
            result, stats = await summarize_with(server)
        assert server.actions() == [action, "ok"]
        assert (result.calls, result.errors) == (2, 1) and result.last_error
        assert result.text == fake_summary(server.requests[1].body)
        assert stats["retries_by_cause"] == {cause: 1}

    asyncio.run(scenario())


def test_what_an_unusable_reply_lacked_is_said_in_anthropic_s_terms() -> None:
    async def scenario() -> list[str]:
        async with FakeAnthropicServer(default="no_choices") as server:
            with pytest.raises(SummaryError) as no_content:
                await summarize_with(server, max_retries=0)
            server.default = "reasoning_only"
            with pytest.raises(SummaryError) as thinking_only:
                await summarize_with(server, max_retries=0)
            server.default = "length"
            with pytest.raises(SummaryError) as cut:
                await summarize_with(server, max_retries=0)
        return [str(no_content.value), str(thinking_only.value), str(cut.value)]

    no_content, thinking_only, cut = asyncio.run(scenario())
    assert no_content == "gave up after 1 attempts; last error: reply has no content: upstream provider failed"
    assert thinking_only.endswith("reply has no text content")
    assert cut.endswith("reply was cut at max_tokens (stop_reason=max_tokens)")


def test_a_reply_cut_at_max_tokens_is_asked_again_with_more_room() -> None:
    async def scenario() -> None:
        async with FakeAnthropicServer(faults=["length", "length", "length"]) as server:
            await summarize_with(server, make_request(budget=50), max_retries=3)
        assert [r.body["max_tokens"] for r in server.requests] == [100, 200, 400, 400]

    asyncio.run(scenario())


def test_retry_after_of_a_rate_limit_answer_pauses_the_client() -> None:
    async def scenario() -> float:
        async with FakeAnthropicServer(faults=["429:0.3"]) as server:
            _, stats = await summarize_with(server)
            gap = server.requests[1].arrived - server.requests[0].arrived
        assert stats["retries_by_cause"] == {"429": 1}
        return gap

    assert asyncio.run(scenario()) >= 0.3


@pytest.mark.parametrize("status", ["401", "403"])
def test_refused_credentials_stop_and_the_key_is_scrubbed(status: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def scenario() -> str:
        async with FakeAnthropicServer(default=f"echo_auth:{status}") as server:
            with pytest.raises(EndpointAuthError) as caught:
                await summarize_with(server)
            assert server.count == 1
        return str(caught.value)

    message = asyncio.run(scenario())
    assert f"HTTP {status}" in message and "refused the credentials" in message
    assert "x-api-key: [REDACTED]" in message and KEY not in message and KEY not in caplog.text


def test_without_a_key_the_refusal_names_anthropic_s_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")

    async def scenario() -> str:
        async with FakeAnthropicServer(default="401") as server:
            with pytest.raises(EndpointAuthError) as caught:
                await summarize_with(server)
            assert server.requests[0].api_key is None and server.requests[0].authorization is None
        return str(caught.value)

    assert "no API key was found in $ANTHROPIC_API_KEY" in asyncio.run(scenario())


def test_a_reply_quoting_the_key_is_scrubbed_before_it_is_stored() -> None:
    async def scenario() -> str:
        async with FakeAnthropicServer(faults=["echo:80"]) as server:
            result, _ = await summarize_with(server)
        return str(result.text)

    text = asyncio.run(scenario())
    assert KEY not in text and "x-api-key: [REDACTED]" in text


def test_a_ten_megabyte_reply_is_not_read_nor_retried() -> None:
    async def scenario() -> None:
        async with FakeAnthropicServer(default={"content": "x" * 10_000_000}) as server:
            with counting() as tally, pytest.raises(SummaryError, match="bytes"):
                await summarize_with(server)
            assert tally.calls == 1 and server.count == 1

    asyncio.run(scenario())


def test_a_prompt_anthropic_says_is_too_long_is_asked_again_shorter() -> None:
    error = {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}
    too_long = {"status": 400, "json": {"type": "error", "error": error}}

    def fits(number: int, body: Any) -> Any:
        size = len(body["system"]) + sum(len(m["content"]) for m in body["messages"])
        return too_long if size > 4000 else "ok"

    turns = tuple(Turn("tool" if i % 2 else "gpt", "line of output " * 400 if i % 2 else "run") for i in range(12))

    async def scenario() -> None:
        async with FakeAnthropicServer(faults=fits) as server:
            result, stats = await summarize_with(server, SummaryRequest(turns=turns, budget_tokens=100, label="big"))
        assert result.summarizer == "llm" and result.calls >= 2
        assert stats["retries_by_cause"]["context"] == result.calls - 1

    asyncio.run(scenario())


def test_a_redirect_is_not_followed_so_the_key_reaches_no_other_host(tmp_path: Path) -> None:
    # aiohttp drops `Authorization` on a redirect to another origin, but not `x-api-key`: the
    # preflight, a live call and each batch call (a JSON call, a download) once carried it there.
    async def scenario() -> str:
        async with redirecting_elsewhere() as (base_url, elsewhere):
            await check_endpoint(make_config(base_url))  # a redirect decides nothing there
            with counting() as tally, pytest.raises(SummaryError) as caught:
                async with LLMSummarizer(make_config(base_url)) as summarizer:
                    await summarizer.summarize(make_request())
            assert tally.calls == 1  # not retried: it would redirect again
            async with AnthropicBatches(make_config(base_url)) as batches:
                with pytest.raises(BatchAPIError, match="HTTP 307"):
                    await batches.get_batch("msgbatch_1")
                with pytest.raises(BatchAPIError, match="HTTP 307"):
                    await batches.download(f"{base_url}/v1/messages/batches/msgbatch_1/results", tmp_path / "r")
        assert elsewhere == []
        return str(caught.value)

    message = asyncio.run(scenario())
    assert "HTTP 307" in message and "redirected to http://127.0.0.1:" in message and "not followed" in message
    assert KEY not in message
