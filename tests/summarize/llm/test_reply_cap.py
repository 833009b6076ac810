"""An endpoint that ignores the summary budget never makes a row grow (issue 10, A10).

A real aiohttp server on 127.0.0.1 answers a 200-token budget with ~20,000 tokens or with a
10 MB body. The request carries `max_tokens`; the client reads at most a bounded number of
bytes; a summary still over its budget after the second pass takes `--on-summary-failure`.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeOpenAIServer, FakeServerThread
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm import LLMSummarizer
from trajectory_compressor.summarize.llm.reply import REPLY_MIN_BYTES, reply_byte_limit
from trajectory_compressor.summarize.tally import counting
from trajectory_compressor.types import SummaryError, SummaryRequest, Turn

TARGET, BUDGET = 2500, 200
HUGE_TOKENS = "lorem " * 20_000  # ~20,000 tokens
TEN_MB = "x" * 10_000_000


def _source(tmp_path: Path) -> Path:
    rows = [make_trajectory(i, steps=6 + i, output_lines=40) for i in range(3)]
    return write_jsonl(tmp_path / "in.jsonl", rows)


def _args(base_url: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--target-max-tokens", str(TARGET), "--summary-target-tokens", str(BUDGET), "-q",
        "--summarizer", "llm", "--base-url", base_url, "--model", "m", "--no-cache",
        "--retry-delay", "0.01", "--request-timeout", "30", *extra,
    ]  # fmt: skip


def _run(tmp_path: Path, content: str, name: str, *extra: str) -> tuple[Any, list[dict], list[Any]]:
    source = _source(tmp_path)
    out = tmp_path / name / "x.jsonl"
    with FakeServerThread(default={"content": content}) as server:
        result = run_cli("compress", str(source), "-o", str(out), *_args(server.base_url, tmp_path, *extra))
        bodies = [request.body for request in server.requests]
    metrics = read_jsonl(out.parent / "x.metrics.jsonl") if out.parent.joinpath("x.metrics.jsonl").exists() else []
    return result, metrics, bodies


def _asked_budget(body: dict[str, Any]) -> int:
    """The summary length the prompt asks for ("in at most N tokens")."""
    match = re.search(r"in at most (\d+) tokens", body["messages"][-1]["content"])
    assert match, body["messages"][-1]["content"][:300]
    return int(match.group(1))


@pytest.mark.parametrize("content", [HUGE_TOKENS, TEN_MB], ids=["20k-tokens", "10MB"])
def test_an_overlong_reply_never_grows_the_row(tmp_path: Path, content: str, counter) -> None:
    result, metrics, bodies = _run(tmp_path, content, "ext")
    assert result.returncode == 0, result.stderr
    # Room for twice what the prompt asks: the budget, less what the anchor index keeps for itself.
    assert bodies and all(body["max_tokens"] == 2 * _asked_budget(body) for body in bodies)
    assert all(0 < _asked_budget(body) <= BUDGET for body in bodies)
    compressed = [m for m in metrics if m["compression_region"]]
    assert compressed
    for m in compressed:
        assert m["compressed_tokens"] <= m["original_tokens"]
        assert m["compressed_tokens"] <= TARGET
        assert m["was_compressed"] and m["summarizer"] == "extractive" and m["passes"] == 1
        assert m["summary_tokens"] <= BUDGET
        assert m["summary_calls"] >= 1 and m["last_error"]
    if content is TEN_MB:
        assert all("bytes" in m["last_error"] for m in compressed)
        assert len(bodies) == len(compressed), "an oversized body is not retried"
    else:
        assert all(m["reason"].startswith("summary failed") and "20" in m["reason"] for m in compressed)
    rows = read_jsonl(tmp_path / "ext" / "x.jsonl")
    for m in metrics:
        values = [turn["value"] for turn in rows[m["index"]]["conversations"]]
        assert sum(counter.count_many(values)) == m["compressed_tokens"]


def test_overlong_reply_with_keep_leaves_rows_unchanged(tmp_path: Path) -> None:
    result, metrics, _ = _run(tmp_path, HUGE_TOKENS, "keep", "--on-summary-failure", "keep")
    assert result.returncode == 0, result.stderr
    planned = [m for m in metrics if m["compression_region"] or m["reason"]]
    failed = [m for m in metrics if (m["reason"] or "").startswith("summary failed")]
    assert failed and all(not m["was_compressed"] for m in failed)
    assert all(m["compressed_tokens"] == m["original_tokens"] for m in failed)
    assert (tmp_path / "keep" / "x.jsonl").read_bytes() == _source(tmp_path).read_bytes()
    assert planned


def test_overlong_reply_with_fail_stops_the_run(tmp_path: Path) -> None:
    result, _, _ = _run(tmp_path, HUGE_TOKENS, "fail", "--on-summary-failure", "fail")
    assert result.returncode == 1
    assert "summary failed" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "fail" / "x.jsonl").exists()


def test_the_client_reads_a_bounded_number_of_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert reply_byte_limit(10) == REPLY_MIN_BYTES and reply_byte_limit(10**6) > REPLY_MIN_BYTES
    request = SummaryRequest(turns=(Turn("human", "hello"), Turn("gpt", "hi")), budget_tokens=100, label="t")

    async def scenario() -> None:
        async with FakeOpenAIServer(default={"content": TEN_MB}) as server:
            config = LLMConfig(
                base_url=server.base_url,
                model="m",
                max_retries=3,
                use_cache=False,
                retry_delay=0.01,
                retry_max_delay=0.02,
            )
            async with LLMSummarizer(config) as summarizer:
                with counting() as tally, pytest.raises(SummaryError, match="bytes"):
                    await summarizer.summarize(request)
                assert tally.calls == 1 and server.count == 1
                assert json.dumps(summarizer.stats())

    asyncio.run(scenario())
