"""The SQLite summary cache: keys, round trips, concurrent writers from several processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai_server import FakeOpenAIServer
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm import LLMSummarizer
from trajectory_compressor.summarize.llm.cache import CachedSummary, SummaryCache, cache_key, default_cache_path
from trajectory_compressor.types import SummaryRequest, Turn

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
BASE: dict[str, Any] = {
    "model": "m",
    "messages": MESSAGES,
    "temperature": 0.3,
    "max_tokens": 200,
    "extra_body": {"seed": 1},
    "redact": True,
}


def test_key_is_stable_and_sensitive_to_every_input() -> None:
    key = cache_key(**BASE)
    assert key == cache_key(**{**BASE, "extra_body": {"seed": 1}})
    assert len(key) == 64
    variants = [
        {"model": "m2"},
        {"messages": [*MESSAGES, {"role": "user", "content": "more"}]},
        {"temperature": 0.0},
        {"max_tokens": 201},
        {"extra_body": {"seed": 2}},
        {"extra_body": {}},
        {"redact": False},
    ]
    assert len({cache_key(**{**BASE, **variant}) for variant in variants} | {key}) == len(variants) + 1


def test_key_ignores_dict_order() -> None:
    a = cache_key(**{**BASE, "extra_body": {"seed": 1, "top_p": 0.9}})
    b = cache_key(**{**BASE, "extra_body": {"top_p": 0.9, "seed": 1}})
    assert a == b


def test_round_trip_and_replace(tmp_path: Path) -> None:
    with SummaryCache(tmp_path / "c.sqlite3") as cache:
        assert cache.get("k") is None
        cache.put("k", CachedSummary("first", 10, 2), model="m")
        assert cache.get("k") == CachedSummary("first", 10, 2)
        cache.put("k", CachedSummary("second", 11, 3), model="m")
        assert cache.get("k") == CachedSummary("second", 11, 3)
        assert len(cache) == 1
    with SummaryCache(tmp_path / "c.sqlite3") as reopened:  # committed at once
        assert reopened.get("k") == CachedSummary("second", 11, 3)


@pytest.mark.parametrize(
    "edit",
    # (a number given to a text column is stored as text: SQLite's column affinity)
    ["text = x'ff00'", "prompt_tokens = 'abc'", "completion_tokens = 1.5", "calls = 'x'", "errors = x'00'",
     "last_error = x'01'"],
)  # fmt: skip
def test_a_row_of_other_types_is_a_miss_and_is_replaced(tmp_path: Path, edit: str) -> None:
    """A cache file edited, or written by another tool, once gave a summary of bytes or a call
    count of text, and the run stopped with an internal error. It is a miss: asked again."""
    with SummaryCache(tmp_path / "c.sqlite3") as cache:
        cache.put("k", CachedSummary("first", 10, 2), model="m")
    with sqlite3.connect(tmp_path / "c.sqlite3") as connection:
        connection.execute(f"UPDATE summaries_v2 SET {edit}")
    with SummaryCache(tmp_path / "c.sqlite3") as cache:
        assert cache.get("k") is None
        cache.put("k", CachedSummary("again", 10, 2), model="m")
        assert cache.get("k") == CachedSummary("again", 10, 2)


def test_wal_mode(tmp_path: Path) -> None:
    with SummaryCache(tmp_path / "c.sqlite3"):
        pass
    conn = sqlite3.connect(tmp_path / "c.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_default_path_honours_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_path() == tmp_path / "trajectory_compressor" / "summaries.sqlite3"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == tmp_path / "home" / ".cache" / "trajectory_compressor" / "summaries.sqlite3"


def _writer(path: str, worker: int, count: int) -> None:
    with SummaryCache(path) as cache:
        for i in range(count):
            cache.put(f"w{worker}-{i}", CachedSummary(f"summary {worker}/{i}", i, worker), model="m")
            cache.put("shared", CachedSummary(f"last writer {worker}", 0, 0), model="m")
            assert cache.get(f"w{worker}-{i}") is not None


def test_concurrent_writers_from_several_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    SummaryCache(path).close()  # created up front, as the first shard job would
    workers, count = 4, 150
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    processes = [context.Process(target=_writer, args=(path, w, count)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
    assert [process.exitcode for process in processes] == [0] * workers
    with SummaryCache(path) as cache:
        assert len(cache) == workers * count + 1
        assert cache.get("w3-149") == CachedSummary("summary 3/149", 149, 3)
        assert cache.get("shared") is not None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_disabled_cache_is_not_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    summarizer = LLMSummarizer(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", use_cache=False))
    assert summarizer.stats()["cache"] is None
    asyncio.run(summarizer.aclose())
    assert not (tmp_path / "trajectory_compressor").exists()


def test_unusable_cache_path_degrades_to_no_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")

    async def scenario() -> None:
        async with FakeOpenAIServer() as server:
            config = LLMConfig(base_url=server.base_url, model="m", cache_path=str(blocker / "c.sqlite3"))
            async with LLMSummarizer(config) as summarizer:
                result = await summarizer.summarize(SummaryRequest(turns=(Turn("human", "hi"),), budget_tokens=50))
                assert result.text and summarizer.stats()["cache"] is None

    asyncio.run(scenario())
    assert "summary cache" in caplog.text
