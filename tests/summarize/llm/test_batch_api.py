"""The Files + Batches client against the fake batch server on 127.0.0.1: look-ups across pages,
where they stop, retries, and refusals as one scrubbed line."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.fake_batch_api import FakeBatchServer
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.batch_api import MAX_PAGES, BatchAPIError
from trajectory_compressor.summarize.llm.dialects.base import BatchJob
from trajectory_compressor.summarize.llm.dialects.openai_batches import OpenAIBatches as BatchAPI

SECRET = "sk-test-batch-api-0b9c8d7e6f"


def _config(base_url: str) -> LLMConfig:
    return LLMConfig(base_url=base_url, model="m", retry_delay=0.001, retry_max_delay=0.01, max_retries=2)


def _job(file_id: str) -> BatchJob:
    return BatchJob(Path("r.jsonl"), 1, written_at=0.0, sent_at=time.time(), sent_before=False, file_id=file_id)


def _batch(server: FakeBatchServer, batch_id: str, file_id: str, created_at: float) -> None:
    server.batches[batch_id] = {"id": batch_id, "object": "batch", "input_file_id": file_id, "status": "completed",
                                "created_at": int(created_at)}  # fmt: skip


def test_a_batch_is_found_pages_away_and_the_look_stops_at_old_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        now = time.time()
        async with FakeBatchServer(page_size=2) as server:
            for number in range(30):  # an old history: 15 pages of it
                _batch(server, f"batch_old_{number}", f"file-old-{number}", now - 10 * 86_400)
            _batch(server, "batch_mine", "file-mine", now)
            for number in range(5):  # newer batches of other runs, listed before it
                _batch(server, f"batch_new_{number}", f"file-new-{number}", now)
            async with BatchAPI(_config(server.base_url)) as api:
                found = await api.find_batch("file-mine", since=now)
                assert found is not None and found["id"] == "batch_mine"
                pages_to_find = server.calls("GET", "/v1/batches")
                assert await api.find_batch("file-absent", since=now) is None
                pages_to_give_up = server.calls("GET", "/v1/batches") - pages_to_find
                assert await api.find_batch("file-absent") is None  # no `since`: the whole history
                pages_whole = server.calls("GET", "/v1/batches") - pages_to_find - pages_to_give_up
        assert pages_to_find == 3
        assert pages_to_give_up == 4  # the 6 recent ones, then the first old one ends the look
        assert pages_whole == 18
        assert {auth for _, _, auth in server.api_calls} == {f"Bearer {SECRET}"}

    asyncio.run(scenario())


def test_an_upload_is_made_once_even_when_its_reply_is_lost(tmp_path: Path) -> None:
    async def scenario() -> None:
        requests = tmp_path / "r.jsonl"
        requests.write_bytes(b'{"custom_id": "a"}\n')
        server = FakeBatchServer(upload_faults=["lost", "500"])
        async with server, BatchAPI(_config(server.base_url)) as api:
            file_id = await api.upload(requests, "tc-nonce-sha.jsonl")
            assert await api.upload(requests, "tc-nonce-sha.jsonl") == file_id  # found, not sent again
        assert [f["filename"] for f in server.files.values()] == ["tc-nonce-sha.jsonl"]
        assert server.calls("POST", "/v1/files") == 1  # the lost one; the 500 never came: found first

    asyncio.run(scenario())


def test_refusals_are_one_scrubbed_line_and_transient_errors_give_up_in_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        async with FakeBatchServer(create_faults=["401"]) as server, BatchAPI(_config(server.base_url)) as api:
            with pytest.raises(BatchAPIError) as refused:
                await api.create_batch(_job("file-x"), window="24h", metadata={})
            server.create_faults = ["500", "500", "500"]
            with pytest.raises(BatchAPIError) as gave_up:
                await api.create_batch(_job("file-y"), window="24h", metadata={})
            with pytest.raises(BatchAPIError) as missing:
                await api.get_batch("batch_nope")
        assert "refused the credentials" in str(refused.value) and SECRET not in str(refused.value)
        assert "[REDACTED]" in str(refused.value)
        assert "gave up after 3 attempts" in str(gave_up.value)
        assert "HTTP 404" in str(missing.value) and "\n" not in str(missing.value)

    asyncio.run(scenario())


def _file(server: FakeBatchServer, file_id: str) -> None:
    server.files[file_id] = {"id": file_id, "object": "file", "bytes": 10, "created_at": int(time.time()),
                             "filename": f"{file_id}.jsonl", "purpose": "batch", "status": "processed",
                             "content": b""}  # fmt: skip


@pytest.mark.parametrize("lists", ["404", "405"])
def test_without_list_endpoints_the_calls_go_ahead_and_say_once_that_a_lost_reply_cannot_be_checked(
    tmp_path: Path, lists: str
) -> None:
    async def scenario() -> list[str]:
        said: list[str] = []
        requests = tmp_path / "r.jsonl"
        requests.write_bytes(b'{"custom_id": "a"}\n')
        async with FakeBatchServer(lists=lists) as server, BatchAPI(_config(server.base_url), warn=said.append) as api:
            file_id = await api.upload(requests, "tc-nonce-sha.jsonl")
            batch = await api.create_batch(_job(file_id), window="24h", metadata={})
            assert await api.find_file("tc-nonce-sha.jsonl", 19) is None  # nothing to look in: not asked again
            assert await api.find_batch(file_id) is None
            assert server.batches[batch.id]["input_file_id"] == file_id and server.created() == 1
            assert server.calls("GET", "/v1/files") + server.calls("GET", "/v1/batches") == 2  # one each, once
        return said

    said = asyncio.run(scenario())
    assert len(said) == 1, said
    assert "lost reply" in said[0] and "cannot be checked" in said[0] and f"HTTP {lists}" in said[0]


def test_a_list_that_ignores_after_or_never_ends_is_cut_short_and_said_once() -> None:
    async def scenario() -> tuple[list[str], int, int]:
        said: list[str] = []
        async with FakeBatchServer(lists="ignore_after", page_size=2) as server:
            for number in range(5):  # other runs' files: every page is the first one, `has_more` for ever
                _file(server, f"file-other-{number}")
            async with BatchAPI(_config(server.base_url), warn=said.append) as api:
                assert await api.find_file("tc-absent.jsonl", 10) is None
                repeated = server.calls("GET", "/v1/files")
            server.lists = "ok"
            server.page_size = 1
            for number in range(5, 150):  # a list far longer than anyone looks through
                _file(server, f"file-other-{number}")
            async with BatchAPI(_config(server.base_url), warn=said.append) as api:
                assert await api.find_file("tc-absent.jsonl", 10) is None
                endless = server.calls("GET", "/v1/files") - repeated
        return said, repeated, endless

    said, repeated, endless = asyncio.run(scenario())
    assert repeated == 2  # the second page was the first again: the look stops there
    assert endless == MAX_PAGES
    assert len(said) == 2 and "ignores `after`" in said[0] and f"{MAX_PAGES} pages" in said[1]
