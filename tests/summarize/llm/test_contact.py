"""First contact: an endpoint that never answers is a probe's retries (two probes' when its model
list answers), then `EndpointUnreachableError` for every call; one that answered even once fails its
calls one by one, as before (real server on 127.0.0.1)."""

from __future__ import annotations

import asyncio

import pytest

from tests.fake_openai_server import FakeOpenAIServer
from tests.summarize.llm.test_client import make_config, make_request, timeouts_by_action
from trajectory_compressor.summarize.llm import LLMSummarizer
from trajectory_compressor.types import EndpointUnreachableError, SummaryError


async def _summarize_all(server: FakeOpenAIServer, calls: int, **config: object) -> list[object]:
    async with LLMSummarizer(make_config(server.base_url, **config)) as summarizer:
        jobs = [summarizer.summarize(make_request(number)) for number in range(calls)]
        return await asyncio.gather(*jobs, return_exceptions=True)


def test_a_silent_endpoint_costs_the_first_wave_and_two_probes_then_every_call_fails_at_once() -> None:
    async def scenario() -> tuple[list[object], int, int]:
        config = {"max_concurrency": 4, "max_retries": 3}
        async with (
            FakeOpenAIServer(default="drop") as server,  # accepted, closed: never a response
            LLMSummarizer(make_config(server.base_url, **config)) as summarizer,
        ):
            jobs = [summarizer.summarize(make_request(number)) for number in range(20)]
            results = await asyncio.gather(*jobs, return_exceptions=True)
            sent = summarizer.stats()["requests"]
        return results, sent, server.count

    results, sent, received = asyncio.run(scenario())
    assert all(isinstance(result, EndpointUnreachableError) for result in results), results
    # The first wave (up to the four slots; fewer when the first failure comes back before the
    # others are sent, as on a busy machine), then the probe's three retries; its model list
    # answered (the server is up), so a second request probes, with what is left of its four
    # attempts; the other 15 or more never sent. Counted by the client: a retry may go out on a
    # pooled connection the server already closed and fail before the server's handler sees it.
    assert 1 + 3 + 3 <= sent <= 4 + 3 + 4
    assert received <= sent
    assert "never answered since the run started (last: ServerDisconnectedError" in str(results[0])


def test_an_endpoint_that_comes_up_during_the_probe_serves_everyone() -> None:
    async def scenario() -> tuple[list[object], int]:
        async with FakeOpenAIServer(faults=["drop", "drop", "drop"]) as server:  # still starting up
            results = await _summarize_all(server, 6, max_concurrency=3, max_retries=3)
        return results, server.count

    results, sent = asyncio.run(scenario())
    assert not any(isinstance(result, BaseException) for result in results), results
    assert sent == 3 + 1 + 5  # the first wave dropped; the probe got through; then the others went


@pytest.mark.parametrize("later", ["drop", "hang"])
def test_after_one_answer_failures_are_each_row_s_own(later: str) -> None:
    async def scenario() -> list[object]:
        async with FakeOpenAIServer() as server:
            config = make_config(server.base_url, max_concurrency=1, max_retries=1)  # one request at a time
            async with LLMSummarizer(config) as summarizer:
                # The answered request has 5 s (a busy machine may need them); a hang times out in 0.3 s.
                server.faults = timeouts_by_action(summarizer, ["ok"], default=later)
                jobs = [summarizer.summarize(make_request(number)) for number in range(3)]
                return await asyncio.gather(*jobs, return_exceptions=True)

    results = asyncio.run(scenario())
    assert not isinstance(results[0], BaseException)
    assert all(isinstance(r, SummaryError) and not isinstance(r, EndpointUnreachableError) for r in results[1:])


def test_a_server_that_drops_one_rows_request_every_time_fails_that_row_alone() -> None:
    """Found by an adversarial pass: a server whose model list answers, and that serves every row
    but one whose request it drops each time (a prompt it cannot serve). That row was the probe,
    its retries ran out, and the whole run stopped as if the endpoint were dead, nothing written,
    the same again on every re-run. Now a second request probes while the first waits; it is
    answered, and the first row alone fails (its failure policy), one request at a time too."""

    def drops_the_first_row(number: int, body: object) -> str:
        return "drop" if "failing test number 0." in str(body) else "ok"

    async def scenario(concurrency: int) -> list[object]:
        async with FakeOpenAIServer(faults=drops_the_first_row) as server:
            return await _summarize_all(server, 4, max_concurrency=concurrency, max_retries=2)

    for concurrency in (1, 4):
        results = asyncio.run(scenario(concurrency))
        assert isinstance(results[0], SummaryError) and not isinstance(results[0], EndpointUnreachableError), results
        assert not any(isinstance(result, BaseException) for result in results[1:]), results


def test_one_request_at_a_time_a_server_up_that_answers_no_request_stops_after_the_second_probe() -> None:
    """The model list answers, every chat request is dropped, one request at a time: the first
    probe's row fails as its own (no other call was asking to probe next), the second probe's
    retries run out too, and every later call fails at once: two rows' retries, not one per row."""

    async def scenario() -> tuple[list[object], int]:
        async with FakeOpenAIServer(default="drop") as server:
            results = await _summarize_all(server, 6, max_concurrency=1, max_retries=2)
            return results, server.model_lists

    results, model_lists = asyncio.run(scenario())
    assert isinstance(results[0], SummaryError) and not isinstance(results[0], EndpointUnreachableError), results
    assert all(isinstance(result, EndpointUnreachableError) for result in results[1:]), results
    assert model_lists == 2  # asked once per probe
