"""The LLM summarizer against a real aiohttp server on 127.0.0.1, one failure mode at a time.

Timings are kept small: backoffs of a few hundredths of a second; a 0.3 s request timeout
only for a request the server hangs on purpose (`HANG_TIMEOUT`, given request by request by
`timeouts_by_action`), 5 s elsewhere so a busy machine never turns an ordinary reply into a
timeout. Where a test needs requests at the server at once, the server holds them (`hold`) and
the test polls for them (`until`); a rate limit's waits run on a clock that only they advance
(`WaitsOnlyClock`), so the time a busy machine takes between requests repays no debt.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fake_openai_server import FakeOpenAIServer, FakeServerThread, fake_summary, running_fake_server
from trajectory_compressor.settings import ConfigError, LLMConfig
from trajectory_compressor.summarize.llm import LLMSummarizer, ratelimit
from trajectory_compressor.summarize.llm.ratelimit import TokenBucket, estimate_request_tokens
from trajectory_compressor.summarize.llm.reply import parse_retry_after
from trajectory_compressor.summarize.tally import counting
from trajectory_compressor.types import SUMMARY_PREFIX, EndpointAuthError, SummaryError, SummaryRequest, Turn

KEY = "sk-fakeTESTKEY0123456789abcdefXYZ"  # distinctive; must never leak
URL_PASSWORD = "hunter2-url-pass"
FAST = {"retry_delay": 0.01, "retry_max_delay": 0.05}  # tiny backoff sleeps
HANG_TIMEOUT = 0.3  # the request timeout of tests whose server hangs on purpose


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def make_config(base_url: str | None = None, **overrides: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "base_url": base_url,
        "model": "fake-model",
        "request_timeout": 5.0,
        "max_retries": 3,
        "use_cache": False,
        **FAST,
    }
    values.update(overrides)
    return LLMConfig(**values)


def make_request(number: int = 0, budget: int = 100) -> SummaryRequest:
    call = '<tool_call>{"name": "read_file", "arguments": {"path": "src/app.py"}}</tool_call>'
    return SummaryRequest(
        turns=(
            Turn("human", f"Please fix the failing test number {number}."),
            Turn("gpt", f"I will look at the file first. {call}"),
            Turn("tool", "<tool_response>def main():\n    return 42\n</tool_response>"),
        ),
        budget_tokens=budget,
        label=f"test.jsonl:{number}",
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def summarize_with(server: FakeOpenAIServer, request: SummaryRequest | None = None, **overrides: Any) -> Any:
    overrides.setdefault("base_url", server.base_url)
    async with LLMSummarizer(make_config(**overrides)) as summarizer:
        result = await summarizer.summarize(request or make_request())
        return result, summarizer.stats()


async def until(condition: Callable[[], object], what: str, seconds: float = 60.0) -> None:
    """Poll `condition` (a state of the server or the client) until it holds, or fail naming `what`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def timeouts_by_action(
    summarizer: LLMSummarizer, faults: Sequence[str], default: str = "ok"
) -> Callable[[int, Any], str]:
    """`faults` as a fault schedule (requests past its end: `default`) that also gives the client,
    request by request, `HANG_TIMEOUT` for a request the server will hang and 5 s for any other.

    One timeout for all would either let an ordinary reply on a busy machine time out (0.3 s) or
    make every hang cost 5 s. The client takes its timeout as it sends a request; the next
    one's is set here when this one arrives, so requests must go one at a time (a retry, or
    `max_concurrency=1`). The client keeps it in `_timeout`: no public setting is per request.
    """
    client = summarizer._client
    assert isinstance(client._timeout, aiohttp.ClientTimeout)  # what the client sends with (renamed: said here)

    def action(number: int) -> str:
        return faults[number] if number < len(faults) else default

    def give_timeout(number: int) -> None:
        client._timeout = aiohttp.ClientTimeout(total=HANG_TIMEOUT if action(number) == "hang" else 5.0)

    def schedule(number: int, body: Any) -> str:
        give_timeout(number + 1)  # request `number + 1` is not sent before this one is over
        return action(number)

    give_timeout(0)
    return schedule


class WaitsOnlyClock:
    """A rate bucket's clock (`TokenBucket(clock=..., sleep=...)`) that advances only while the
    bucket waits, by what it waited (really: `asyncio.sleep`). The time a busy machine takes
    between requests then refills nothing, so each wait is the debt in full, on any machine."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        self.now += seconds


# -- the happy path ---------------------------------------------------------------------------


def test_success_sends_the_expected_request_and_returns_usage() -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer() as server:
            extra = {"stop": ["\n\n\n"], "seed": 7, "provider": {"order": ["x"]}}
            result, stats = await summarize_with(
                server, make_request(budget=120), base_url=server.base_url + "/", extra_body=extra, temperature=0.1
            )
        (seen,) = server.requests
        assert seen.body["model"] == "fake-model"
        assert seen.body["max_tokens"] == 240
        assert seen.body["temperature"] == 0.1
        assert seen.body["stop"] == ["\n\n\n"] and seen.body["seed"] == 7 and seen.body["provider"] == {"order": ["x"]}
        assert [m["role"] for m in seen.body["messages"]] == ["system", "user"]
        assert seen.authorization == f"Bearer {KEY}"
        assert result.text == fake_summary(seen.body)
        assert (result.summarizer, result.calls, result.errors, result.cache_hit) == ("llm", 1, 0, False)
        assert result.prompt_tokens > 0 and result.completion_tokens > 0
        assert stats["requests"] == 1 and stats["successes"] == 1 and stats["retries"] == 0
        assert stats["prompt_tokens"] == result.prompt_tokens
        json.dumps(stats)

    run(scenario())


def test_a_base_url_with_a_query_keeps_it_after_the_path() -> None:
    """Azure OpenAI's `?api-version=` (an Azure Function's `?code=`): the path goes before the
    query. Added to the whole URL it became part of `api-version`'s value, and every request
    went to the base path, where nothing answers chat completions."""
    from trajectory_compressor.summarize.llm.preflight import check_endpoint

    async def scenario() -> None:
        async with FakeOpenAIServer() as server:
            base = server.base_url + "/?api-version=2024-10-21&deployment=a%20b"
            await check_endpoint(make_config(base))
            result, _ = await summarize_with(server, make_request(), base_url=base)
        (seen,) = server.requests
        assert seen.query == {"api-version": "2024-10-21", "deployment": "a b"} and result.text
        assert server.models_queries == [seen.query]

    run(scenario())


@pytest.mark.parametrize(
    ("base", "path", "url"),
    [
        ("https://h/v1", "/chat/completions", "https://h/v1/chat/completions"),
        ("https://h/v1/?a=1", "/chat/completions", "https://h/v1/chat/completions?a=1"),
        ("https://h/v1?a=1&b=2", "/files?purpose=batch", "https://h/v1/files?a=1&b=2&purpose=batch"),
    ],
)
def test_url_for_puts_the_path_before_the_query(base: str, path: str, url: str) -> None:
    from trajectory_compressor.summarize.llm.credentials import Credentials
    from trajectory_compressor.summarize.llm.dialects import dialect_for

    config = make_config(base)
    assert Credentials(config, dialect_for(config)).url_for(path) == url


def test_one_session_reuses_its_connection() -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer() as server:
            config = make_config(server.base_url, max_concurrency=1)
            async with LLMSummarizer(config) as summarizer:
                for n in range(5):
                    await summarizer.summarize(make_request(n))
        assert len({request.peer for request in server.requests}) == 1

    run(scenario())


def test_no_key_means_no_authorization_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")

    async def scenario() -> None:
        async with FakeOpenAIServer() as server:
            await summarize_with(server)
        assert server.requests[0].authorization is None

    run(scenario())


def test_key_is_read_from_the_configured_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_GATEWAY_KEY", "gw-key-123456")

    async def scenario() -> None:
        async with FakeOpenAIServer() as server:
            await summarize_with(server, api_key_env="MY_GATEWAY_KEY")
        assert server.requests[0].authorization == "Bearer gw-key-123456"

    run(scenario())


def test_missing_base_url_or_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        LLMSummarizer(LLMConfig(model="m"))
    with pytest.raises(ConfigError):
        LLMSummarizer(LLMConfig(base_url="http://127.0.0.1:1/v1"))


@pytest.mark.parametrize("action", ["prefixed", "think"])
def test_reply_is_cleaned(action: str) -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer(faults=[action]) as server:
            result, _ = await summarize_with(server)
        assert result.text == fake_summary(server.requests[0].body)
        assert SUMMARY_PREFIX not in result.text and "<think>" not in result.text

    run(scenario())


def test_content_parts_and_reasoning_fields() -> None:
    parts = {"content": [{"type": "text", "text": "Part one. "}, {"type": "text", "text": "Part two."}]}
    reasoning = {"content": "The body.", "message_extra": {"reasoning_content": "secret thoughts", "reasoning": "x"}}

    async def scenario() -> None:
        async with FakeOpenAIServer(faults=[parts, reasoning]) as server:
            first, _ = await summarize_with(server)
            second, _ = await summarize_with(server)
        assert first.text == "Part one. Part two."
        assert second.text == "The body."

    run(scenario())


# -- retries ----------------------------------------------------------------------------------

RETRYABLE = [
    ("429", "429"),
    ("500", "5xx"),
    ("502", "5xx"),
    ("503", "5xx"),
    ("408", "408/409"),
    ("409", "408/409"),
    ("hang", "timeout"),
    ("drop", "connection"),
    ("drop_mid", "connection"),
    ("invalid_json", "invalid_json"),
    ("no_choices", "no_content"),
    ("no_content", "no_content"),
    ("reasoning_only", "no_content"),
    ("empty", "empty"),
    ("think_only", "empty"),
    ("length", "length"),
]


@pytest.mark.parametrize(("action", "cause"), RETRYABLE)
def test_transient_failure_is_retried_and_counted_by_cause(action: str, cause: str) -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer() as server, LLMSummarizer(make_config(server.base_url)) as summarizer:
            # A hang times out after HANG_TIMEOUT; the retry, answered, has 5 s (a busy machine may need them).
            server.faults = timeouts_by_action(summarizer, [action])
            result = await summarizer.summarize(make_request())
            stats = summarizer.stats()
        assert server.actions() == [action, "ok"]
        assert (result.calls, result.errors) == (2, 1)
        assert result.last_error
        assert result.text == fake_summary(server.requests[1].body)
        assert stats["retries_by_cause"] == {cause: 1}
        assert stats["requests"] == 2 and stats["successes"] == 1 and stats["failures"] == 0

    run(scenario())


def test_gives_up_after_max_retries() -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer(default="503") as server:
            with counting() as tally, pytest.raises(SummaryError) as caught:
                await summarize_with(server, max_retries=2)
        assert server.count == 3
        assert tally.calls == 3 and tally.errors == 3
        assert "503" in str(caught.value) and "3 attempts" in str(caught.value)
        assert not isinstance(caught.value, EndpointAuthError)

    run(scenario())


def test_failure_stats() -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer(default="500") as server:
            summarizer = LLMSummarizer(make_config(server.base_url, max_retries=1))
            with pytest.raises(SummaryError):
                await summarizer.summarize(make_request())
            stats = summarizer.stats()
            await summarizer.aclose()
        assert stats["failures"] == 1 and stats["failures_by_cause"] == {"5xx": 1}
        assert stats["retries_by_cause"] == {"5xx": 1} and stats["requests"] == 2

    run(scenario())


def test_length_retry_gets_more_room() -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer(faults=["length", "length", "length"]) as server:
            await summarize_with(server, make_request(budget=50), max_retries=3)
        assert [r.body["max_tokens"] for r in server.requests] == [100, 200, 400, 400]

    run(scenario())


def test_connection_refused_is_retried_then_fails() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def scenario() -> None:
        config = make_config(f"http://127.0.0.1:{port}/v1", max_retries=2)
        async with LLMSummarizer(config) as summarizer:
            with counting() as tally, pytest.raises(SummaryError):
                await summarizer.summarize(make_request())
            assert summarizer.stats()["retries_by_cause"] == {"connection": 2}
        assert tally.calls == 3

    run(scenario())


def test_retry_after_seconds_is_honoured() -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer(faults=["429:0.4"]) as server:
            await summarize_with(server)
        gap = server.requests[1].arrived - server.requests[0].arrived
        assert gap >= 0.38

    run(scenario())


def test_retry_after_http_date_is_honoured() -> None:
    async def scenario() -> None:
        # An HTTP date has one-second resolution: 1.5 s ahead means 0.5 to 1.5 s of wait.
        async with FakeOpenAIServer(faults=["429-date:1.5"]) as server:
            await summarize_with(server)
        gap = server.requests[1].arrived - server.requests[0].arrived
        assert gap >= 0.45

    run(scenario())


def test_parse_retry_after() -> None:
    import email.utils

    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (parse_retry_after(future) or 0) <= 30
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert parse_retry_after(past) == 0.0


def test_429_pauses_the_whole_client() -> None:
    """Requests started after a 429 wait for its Retry-After too, not only the one that got it."""

    async def scenario() -> None:
        async with FakeOpenAIServer(faults=lambda number, body: "429:0.5" if number == 0 else None) as server:
            summarizer = LLMSummarizer(make_config(server.base_url))
            first = asyncio.create_task(summarizer.summarize(make_request(0)))
            while not summarizer.usage.retries:  # the client has read the 429 (not a guess at how long it takes)
                await asyncio.sleep(0.01)
            others = [summarizer.summarize(make_request(n)) for n in (1, 2, 3)]
            await asyncio.gather(first, *others)
            await summarizer.aclose()
        throttled_at = server.requests[0].arrived
        later = server.requests[1:]
        assert len(later) == 4
        assert all(request.arrived - throttled_at >= 0.45 for request in later)

    run(scenario())


def test_in_flight_never_exceeds_max_concurrency() -> None:
    async def scenario() -> None:
        # The server holds every request until the test lets them go: eight at once are reached
        # whatever the machine's speed (a latency made them overlap on a fast machine only).
        async with FakeOpenAIServer(default="hold") as server:
            config = make_config(server.base_url, max_concurrency=8, request_timeout=60.0)  # held, then answered
            async with LLMSummarizer(config) as summarizer:
                calls = asyncio.gather(*(summarizer.summarize(make_request(n)) for n in range(100)))
                await until(lambda: server.held >= 8, "eight requests held at the server")
                await asyncio.sleep(0.05)  # a client without a cap would send more meanwhile
                assert server.held == 8 and summarizer.usage.in_flight == 8
                await server.release()
                results = await calls
                stats = summarizer.stats()
        assert len(results) == 100 and server.count == 100
        assert server.max_in_flight == 8  # reached, never exceeded
        assert stats["max_in_flight"] == 8

    run(scenario())


def test_tpm_limit_spaces_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # The client's bucket on a clock only its waits advance: on the real clock, the time the
    # first three requests take (long on a busy machine) repays the debt the fourth waits for.
    clock = WaitsOnlyClock()
    monkeypatch.setattr(ratelimit, "TokenBucket", functools.partial(TokenBucket, clock=clock, sleep=clock.sleep))

    async def scenario() -> tuple[list[Any], dict[str, Any]]:
        # 120k tpm = 2000 tokens/s with a 20k burst; each request asks for ~5.3k tokens
        # (max_tokens 5000 + the prompt), so the fourth must wait for the bucket to refill.
        async with FakeOpenAIServer() as server:
            config = make_config(server.base_url, tpm=120_000, max_concurrency=1)
            async with LLMSummarizer(config) as summarizer:
                for n in range(4):
                    await summarizer.summarize(make_request(n, budget=2500))
                stats = summarizer.stats()
        return server.requests, stats

    requests, stats = run(scenario())
    asked = [estimate_request_tokens(request.body["messages"], request.body["max_tokens"]) for request in requests]
    assert len(asked) == 4 and sum(asked[:3]) <= 20_000 < sum(asked)  # the burst covers three: the fourth waits
    debt = (sum(asked) - 20_000) / 2000  # seconds at 2000 tokens a second (about 0.6)
    assert requests[3].arrived - requests[2].arrived >= debt - 0.001
    assert stats["rate_limit_wait_seconds"] == pytest.approx(debt, abs=0.002)  # the only wait, in full


def test_token_bucket_spaces_acquisitions() -> None:
    async def scenario() -> float:
        bucket = TokenBucket(1200, burst=1)  # 20 per second, no burst
        started = time.monotonic()
        for _ in range(6):
            await bucket.acquire()
        return time.monotonic() - started

    assert run(scenario()) >= 0.24


def test_token_bucket_lets_an_oversized_request_through_in_debt() -> None:
    # On the real clock a stall between the two acquisitions repays part of the debt (6 ms of
    # it took the wait under 0.035 s); on this one only the bucket's own waits do.
    clock = WaitsOnlyClock()

    async def scenario() -> tuple[float, float]:
        bucket = TokenBucket(60_000, burst=10, clock=clock, sleep=clock.sleep)  # 1000 per second
        first = await bucket.acquire(50)  # more than the bucket holds: let through at once...
        second = await bucket.acquire(1)  # ...and the next one waits for the debt to be repaid
        return first, second

    first, second = run(scenario())
    assert first == 0.0 and second == pytest.approx(0.041)  # 40 in debt and 1 more, at 1000 a second


def test_cost_from_reported_usage() -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer() as server:
            result, stats = await summarize_with(server, price_in=1.0, price_out=2.0)
        expected = (result.prompt_tokens * 1.0 + result.completion_tokens * 2.0) / 1e6
        assert stats["cost_usd"] == pytest.approx(expected, abs=1e-6)

    run(scenario())


def test_cancelled_calls_free_their_slot() -> None:
    """A row timeout (the pipeline cancelling a call) must not leak the concurrency slot."""

    async def scenario() -> None:
        async with FakeOpenAIServer(faults=["hang"]) as server:
            config = make_config(server.base_url, max_concurrency=1, request_timeout=5.0)
            async with LLMSummarizer(config) as summarizer:
                first = asyncio.ensure_future(summarizer.summarize(make_request(0)))
                # Cut once its request hangs at the server, holding the only slot. Cut earlier (a
                # busy machine), it sent nothing, and the next call's request was the one hung.
                await until(lambda: server.count == 1, "the first request at the server")
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(first, 0.1)
                # With the slot leaked this one never sends: it fails here, however long it is given.
                result = await asyncio.wait_for(summarizer.summarize(make_request(1)), 30.0)
                assert result.calls == 1 and summarizer.usage.in_flight == 0
                assert server.actions() == ["hang", "ok"]

    run(scenario())


# -- fail fast ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["400", "404", "422", {"status": 413, "json": {"error": {"message": "too big"}}}])
def test_client_errors_fail_fast(status: Any) -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer(default=status) as server:
            with counting() as tally, pytest.raises(SummaryError) as caught:
                await summarize_with(server, max_retries=5)
        assert server.count == 1
        expected = (status, f"fake error {status}") if isinstance(status, str) else ("413", "too big")
        assert all(part in str(caught.value) for part in expected)
        assert tally.calls == 1 and tally.errors == 1
        assert not isinstance(caught.value, EndpointAuthError)

    run(scenario())


@pytest.mark.parametrize("status", ["401", "403"])
def test_auth_failure_aborts_without_a_retry_storm(status: str) -> None:
    async def scenario() -> None:
        async with FakeOpenAIServer(default=status, latency=0.05) as server:
            config = make_config(server.base_url, max_concurrency=2, max_retries=5)
            async with LLMSummarizer(config) as summarizer:
                outcomes = await asyncio.gather(
                    *(summarizer.summarize(make_request(n)) for n in range(20)), return_exceptions=True
                )
                sent = server.count
                with pytest.raises(EndpointAuthError):  # later calls: raised without sending
                    await summarizer.summarize(make_request(99))
                stats = summarizer.stats()
        assert all(isinstance(outcome, EndpointAuthError) for outcome in outcomes)
        assert sent <= 2 and server.count == sent
        assert stats["retries"] == 0 and stats["failures_by_cause"] == {"auth": 21}
        assert status in str(outcomes[0])

    run(scenario())


# -- cache --------------------------------------------------------------------------------------


def test_cached_rerun_makes_zero_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = str(tmp_path / "summaries.sqlite3")
    requests = [make_request(n) for n in range(5)]

    async def first_run() -> list[str]:
        async with FakeOpenAIServer() as server:
            config = make_config(server.base_url, use_cache=True, cache_path=cache)
            async with LLMSummarizer(config) as summarizer:
                results = await asyncio.gather(*(summarizer.summarize(r) for r in requests))
            assert server.count == 5
        return [result.text for result in results]

    async def second_run() -> tuple[list[str], dict[str, Any]]:
        # Another server (another port) and another key: neither is part of the cache key.
        async with FakeOpenAIServer(default="500") as server:
            config = make_config(server.base_url, use_cache=True, cache_path=cache)
            async with LLMSummarizer(config) as summarizer:
                results = await asyncio.gather(*(summarizer.summarize(r) for r in requests))
                stats = summarizer.stats()
            assert server.count == 0
        # The stored cost of each summary is replayed (one call each), though nothing was sent.
        assert all(result.cache_hit and result.calls == 1 and result.errors == 0 for result in results)
        return [result.text for result in results], stats

    texts = run(first_run())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-anotherKEY9876543210zyxwvu")
    again, stats = run(second_run())
    assert again == texts
    assert stats["cache_hits"] == 5 and stats["requests"] == 0


def test_incomplete_summary_is_never_cached(tmp_path: Path) -> None:
    cache = str(tmp_path / "summaries.sqlite3")

    async def scenario() -> None:
        async with FakeOpenAIServer(default="length") as server:
            config = make_config(server.base_url, use_cache=True, cache_path=cache, max_retries=1)
            async with LLMSummarizer(config) as summarizer:
                with pytest.raises(SummaryError, match="length"):
                    await summarizer.summarize(make_request())
        async with FakeOpenAIServer() as server:
            config = make_config(server.base_url, use_cache=True, cache_path=cache)
            async with LLMSummarizer(config) as summarizer:
                result = await summarizer.summarize(make_request())
            assert server.count == 1 and not result.cache_hit

    run(scenario())


# -- secrets ------------------------------------------------------------------------------------


def _exception_texts(exc: BaseException | None) -> list[str]:
    """str and repr of an exception and of everything chained to it."""
    texts: list[str] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        texts += [str(exc), repr(exc), repr(exc.args)]
        exc = exc.__cause__ or exc.__context__
    return texts


def test_api_key_never_leaks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cache = tmp_path / "summaries.sqlite3"
    echo = {"status": 400, "json": {"error": {"message": f"invalid request; you sent Authorization: Bearer {KEY}"}}}
    echo_429 = {"status": 429, "json": {"error": {"message": f"slow down, {KEY}"}}}
    echo_401 = {"status": 401, "json": {"error": {"message": f"key {KEY} is revoked"}}}
    echo_reply = {"content": f"The assistant exported OPENAI_API_KEY={KEY} and ran the tests."}

    async def scenario() -> list[str]:
        texts: list[str] = []
        async with FakeOpenAIServer(faults=[echo_429, "drop", echo_reply, echo, "hang"]) as server:
            config = make_config(server.base_url, use_cache=True, cache_path=str(cache), max_retries=3)
            async with LLMSummarizer(config) as summarizer:
                result = await summarizer.summarize(make_request(0))
                texts += [result.text, str(result.last_error), repr(result)]
                with pytest.raises(SummaryError) as caught:
                    await summarizer.summarize(make_request(1))
                texts += _exception_texts(caught.value)
                texts.append(json.dumps(summarizer.stats()))
            # Only the hang gets the short timeout: on a busy machine an ordinary reply may take longer.
            hanging = make_config(server.base_url, max_retries=0, request_timeout=HANG_TIMEOUT)
            async with LLMSummarizer(hanging) as summarizer:
                with pytest.raises(SummaryError) as timed_out:
                    await summarizer.summarize(make_request(3))
                texts += _exception_texts(timed_out.value)
            assert len(server.requests) == 5
            assert all(r.authorization == f"Bearer {KEY}" for r in server.requests)
        async with FakeOpenAIServer(default=echo_401) as server:
            async with LLMSummarizer(make_config(server.base_url)) as summarizer:
                with pytest.raises(EndpointAuthError) as auth:
                    await summarizer.summarize(make_request(2))
                texts += _exception_texts(auth.value)
            assert server.requests[0].authorization == f"Bearer {KEY}"
        return texts

    texts = run(scenario())
    texts += [record.getMessage() for record in caplog.records]
    texts += [caplog.text]
    assert texts and all(KEY not in text for text in texts)
    assert any("[REDACTED]" in text for text in texts)  # the echoes were there, and masked
    data = cache.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("summaries.sqlite3-*"))
    assert KEY.encode() not in data


def test_key_is_scrubbed_even_with_redaction_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key no pattern knows, echoed by the model, with --no-redact-secrets: still scrubbed."""
    plain_key = "plainGatewayKey-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", plain_key)
    cache = tmp_path / "summaries.sqlite3"
    echo_reply = {"content": f"The assistant configured the gateway with {plain_key} and stopped."}

    async def scenario() -> Any:
        async with FakeOpenAIServer(faults=[echo_reply]) as server:
            result, _ = await summarize_with(server, redact_secrets=False, use_cache=True, cache_path=str(cache))
        assert server.requests[0].authorization == f"Bearer {plain_key}"
        return result

    result = run(scenario())
    assert plain_key not in result.text and "[REDACTED]" in result.text
    data = b"".join(p.read_bytes() for p in tmp_path.glob("summaries.sqlite3*"))
    assert plain_key.encode() not in data and b"configured the gateway" in data


@pytest.mark.parametrize("placeholder", ["test", "EMPTY", "ollama", "none"])
def test_a_local_server_s_placeholder_key_leaves_the_summary_s_words_alone(
    placeholder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key no provider would issue (what vLLM, Ollama and llama.cpp take: any text) is also a
    word: scrubbed from summaries, `pytest` read `py[REDACTED]` and `tests` `[REDACTED]s`."""
    monkeypatch.setenv("OPENAI_API_KEY", placeholder)
    summary = "The agent ran pytest: none of the tests failed (EMPTY queue, ollama serve stopped) after the test run."

    async def scenario() -> Any:
        async with FakeOpenAIServer(faults=[{"content": summary}]) as server:
            result, _ = await summarize_with(server)
        assert server.requests[0].authorization == f"Bearer {placeholder}"
        return result

    assert run(scenario()).text == summary


def test_credentials_in_base_url_are_not_shown(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def scenario() -> list[str]:
        async with FakeOpenAIServer(faults=["500"], default="404") as server:
            url = server.base_url.replace("http://", f"http://bob:{URL_PASSWORD}@")
            async with LLMSummarizer(make_config(url)) as summarizer:
                with pytest.raises(SummaryError) as caught:
                    await summarizer.summarize(make_request())
                stats = summarizer.stats()
            assert server.requests[0].authorization.startswith("Basic ")
        assert stats["endpoint"] == server.base_url + "/chat/completions"
        return [*_exception_texts(caught.value), json.dumps(stats)]

    texts = run(scenario())
    texts.append(caplog.text)
    assert all(URL_PASSWORD not in text for text in texts)


# -- the thread-based and process-based server, for the CLI tests ----------------------------------


async def summarize_at(base_url: str) -> Any:
    async with LLMSummarizer(make_config(base_url)) as summarizer:
        return await summarizer.summarize(make_request())


def test_thread_server_serves_a_summarizer_in_another_loop() -> None:
    with running_fake_server(faults=["500"]) as base_url:
        result = run(summarize_at(base_url))
    assert result.calls == 2
    with FakeServerThread(latency=0.01) as server:
        run(summarize_at(server.base_url))
        assert server.max_in_flight == 1 and len(server.requests) == 1


def test_server_runs_as_a_process() -> None:
    script = Path(__file__).resolve().parents[2] / "fake_openai_server.py"
    command = [sys.executable, str(script), "--port", "0", "--faults", "500", "--lifetime", "60"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().strip()
            assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
            result = run(summarize_at(base_url))
            with urllib.request.urlopen(base_url.replace("/v1", "/_fake/stats"), timeout=5) as response:
                stats = json.loads(response.read())
            with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
                assert json.loads(response.read())["data"][0]["id"] == "fake-model"
            assert result.calls == 2 and stats["requests"] == 2 and stats["actions"] == ["500", "ok"]
        finally:
            process.terminate()
            process.wait(timeout=10)
    assert process.returncode == 0


def test_prompt_over_the_context_window_is_retried_shorter() -> None:
    """llama.cpp answers a prompt longer than its slot with a 400 `exceed_context_size_error`."""
    llama_400 = {
        "status": 400,
        "json": {
            "error": {
                "code": 400,
                "message": "request (5302 tokens) exceeds the available context size (4096 tokens)",
                "type": "exceed_context_size_error",
            }
        },
    }

    def fits(number: int, body: Any) -> Any:
        size = sum(len(message["content"]) for message in body["messages"])
        return llama_400 if size > 4000 else "ok"

    turns = tuple(
        Turn(
            "tool" if i % 2 else "gpt", f"<tool_response>{'line of output ' * 400}</tool_response>" if i % 2 else "run"
        )
        for i in range(12)
    )
    request = SummaryRequest(turns=turns, budget_tokens=100, label="big")

    async def scenario() -> None:
        async with FakeOpenAIServer(faults=fits) as server:
            config = make_config(server.base_url)
            async with LLMSummarizer(config) as summarizer:
                result = await summarizer.summarize(request)
                stats = summarizer.stats()
            sizes = [sum(len(m["content"]) for m in r.body["messages"]) for r in server.requests]
        assert result.summarizer == "llm" and result.text
        assert result.calls == len(sizes) >= 2 and result.errors == len(sizes) - 1
        assert sizes == sorted(sizes, reverse=True) and sizes[-1] <= 4000 < sizes[0]
        assert stats["retries_by_cause"]["context"] == len(sizes) - 1

    run(scenario())


def test_a_learned_prompt_size_spares_later_rows_the_refusals() -> None:
    def fits(number: int, body: Any) -> Any:
        size = sum(len(message["content"]) for message in body["messages"])
        return {"status": 400, "json": {"error": {"type": "exceed_context_size_error"}}} if size > 4000 else "ok"

    big = tuple(Turn("tool", f"<tool_response>{'output line ' * 500}</tool_response>") for _ in range(10))
    requests = [SummaryRequest(turns=(Turn("gpt", f"step {i}"), *big), budget_tokens=100) for i in range(4)]

    async def scenario() -> None:
        async with FakeOpenAIServer(faults=fits) as server, LLMSummarizer(make_config(server.base_url)) as llm:
            first = await llm.summarize(requests[0])
            later = [await llm.summarize(request) for request in requests[1:]]
        assert first.calls >= 2
        assert all(result.calls == 1 and result.errors == 0 for result in later)

    run(scenario())


def test_a_prompt_that_never_fits_fails_the_row_without_a_storm() -> None:
    always = {"status": 400, "json": {"error": {"message": "This model's maximum context length is 10 tokens"}}}

    async def scenario() -> None:
        async with FakeOpenAIServer(default=always) as server:
            with pytest.raises(SummaryError, match="maximum context length"):
                await summarize_with(server)
            assert server.count == 1, "a prompt already below the floor is not sent again"

    run(scenario())


# -- the public API the batch rounds use ----------------------------------------------------------


def test_the_miss_policy_and_the_usage_sink_are_given_at_construction(tmp_path: Path) -> None:
    """What `--batch` needs of a summarizer, fixed when it is built: nothing is set on it later."""
    from trajectory_compressor.summarize.llm.usage import UsageTracker

    usage = UsageTracker(price_in=1.0, price_out=1.0)
    asked: list[str] = []

    def no_live_call(chat: Any, request: SummaryRequest) -> None:
        asked.append(chat.key)
        raise SummaryError("no live call")

    async def scenario() -> Any:
        async with FakeOpenAIServer() as server:
            config = make_config(server.base_url, use_cache=True, cache_path=str(tmp_path / "c.sqlite3"))
            async with LLMSummarizer(config, usage=usage, on_miss=no_live_call) as batch_only:
                with pytest.raises(SummaryError, match="no live call"):
                    await batch_only.summarize(make_request(1))
                assert not hasattr(batch_only, "on_miss")  # a policy is not a field to swap
            async with LLMSummarizer(config, usage=usage, on_miss=lambda chat, request: None) as live:
                made = await live.summarize(make_request(1))  # the policy lets it go: asked live
            async with LLMSummarizer(config, usage=usage, on_miss=no_live_call) as cached:
                again = await cached.summarize(make_request(1))  # a cache hit never consults the policy
            return server.count, made, again

    sent, made, again = run(scenario())
    assert sent == 1 and len(asked) == 1 and not made.cache_hit and again.cache_hit
    assert (usage.requests, usage.successes, usage.cache_hits) == (1, 1, 1)  # one sink, counted by all three
