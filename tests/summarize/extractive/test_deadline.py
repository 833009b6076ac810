"""`--row-timeout` covers the extractive summarizer too: it checks the row's deadline as it works.

The LLM's wait on the endpoint is cut from outside; the extractive summarizer never waits, so it
looks at the deadline between pieces of its work, and a row that reaches it is written unchanged
and flagged with the same reason (`row deadline of Ns exceeded`), as a timed-out LLM row is.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.count import TokenCounter, load_tokenizer
from trajectory_compressor.summarize.deadline import summary_deadline
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.types import SummaryCarry, SummaryRequest, Turn


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter(load_tokenizer())


def _region(calls: int) -> tuple[Turn, ...]:
    turns = []
    for i in range(calls):
        turns.append(
            Turn("gpt", f'<tool_call>\n{{"name": "bash", "arguments": {{"command": "cat f{i}.py"}}}}\n</tool_call>')
        )
        turns.append(Turn("tool", f"def f{i}(x):\n    return x + {i}\n"))
    return tuple(turns)


def test_a_summary_past_its_deadline_raises_timeout_and_drops_what_it_carried(counter: TokenCounter) -> None:
    summarizer = ExtractiveSummarizer(counter)
    carry = SummaryCarry()
    request = SummaryRequest(_region(400), 300, carry=carry)

    async def summarize(seconds: float) -> str:
        with summary_deadline(seconds):
            return (await summarizer.summarize(request)).text

    with pytest.raises(TimeoutError):
        asyncio.run(summarize(-1.0))
    assert carry.state is None  # a region cut short is read again next time, never half-read
    assert asyncio.run(summarize(60.0)) == asyncio.run(summarizer.summarize(SummaryRequest(request.turns, 300))).text


@pytest.mark.parametrize("windows", [False, True])
def test_a_row_past_the_deadline_is_written_unchanged_and_flagged(tmp_path: Path, windows: bool) -> None:
    rows = [make_trajectory(0, steps=300, output_lines=8), make_trajectory(1, steps=2, output_lines=3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    flags = ["--summarizer", "extractive", "--target-max-tokens", "3000", "--row-timeout", "0.0001"]
    result = run_cli("compress", str(source), "-o", str(out), *flags, *(["--windows"] if windows else []))
    assert result.returncode == 0, result.stderr
    written = read_jsonl(out)
    metrics = read_jsonl(out.with_name("x.metrics.jsonl"))
    turns = [{k: v for k, v in turn.items() if k != "train"} for turn in written[0]["conversations"]]
    assert turns == rows[0]["conversations"]  # no data lost: the row as it came in (one window: its marks added)
    assert metrics[0]["reason"] == "summary failed: row deadline of 0.0001s exceeded"


def test_within_waits_in_the_calling_task_and_cuts_a_wait_with_timeout_error() -> None:
    """`within` is the row's deadline around a summary: in the row's own task (what the summary
    sets in its context is seen after it: no task of its own), and a wait past it is cut."""
    from contextvars import ContextVar

    from trajectory_compressor.summarize.deadline import within

    seen: ContextVar[str] = ContextVar("seen", default="")

    async def computes() -> int:
        seen.set("set by the summary")
        return 7

    async def scenario() -> tuple[int, str]:
        never = asyncio.Event()
        with pytest.raises(TimeoutError):
            await within(0.01, never.wait())
        return await within(5, computes()), seen.get()

    assert asyncio.run(scenario()) == (7, "set by the summary")
