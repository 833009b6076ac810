"""Reading a batch output file: the answers a provider's batch API or `vllm run-batch` wrote.

The loop is provider-neutral (line limits, malformed lines counted and reported with their
numbers, never stopping the load); what one line holds is the dialect's (`read_batch_line`):
OpenAI's `{"custom_id", "response": {"status_code", "body"}, "error"}` (which vLLM writes too),
Anthropic's `{"custom_id", "result": {"type", ...}}`. The `custom_id` is the cache key the
request was written with, so an answer is stored where a run will look for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from trajectory_compressor.messages import quoted
from trajectory_compressor.summarize.llm.client import LENGTH_RETRY_MAX_FACTOR
from trajectory_compressor.summarize.llm.dialects.base import BatchAnswer, BatchDialect
from trajectory_compressor.summarize.llm.reply import reply_byte_limit
from trajectory_compressor.summarize.llm.request import max_tokens_for

_PROBLEMS_KEPT = 20

__all__ = ["BatchAnswer", "ResponsesLoaded", "answer_line_limit", "read_batch_output"]


@dataclass
class ResponsesLoaded:
    """What a batch output file gave: answers stored, and the lines that gave none (and why)."""

    path: str
    stored: int = 0
    failed: int = 0  # a request the provider answered with an error, or an unusable reply
    malformed: int = 0  # not a batch output line at all, or not an answer to a `requests` line
    repeated: int = 0  # a second answer to a request already answered: ignored, not paid twice
    problems: list[str] = field(default_factory=list)

    def problem(self, line: int, text: str) -> None:
        if len(self.problems) < _PROBLEMS_KEPT:
            self.problems.append(f"{quoted(self.path)}:{line}: {text}")

    def summary(self) -> str:
        return (
            f"responses {quoted(self.path)}: {self.stored:,} answers stored in the cache, "
            f"{self.failed:,} failed, {self.malformed:,} malformed lines"
            + (f", {self.repeated:,} repeated" if self.repeated else "")
        )


def answer_line_limit(budget_tokens: int) -> int:
    """The most bytes one output line may take: the largest reply the live client would read
    for a summary of `budget_tokens` (after its `length` retries), plus the line's envelope."""
    most_tokens = max_tokens_for(budget_tokens) * LENGTH_RETRY_MAX_FACTOR
    return reply_byte_limit(most_tokens) + (64 << 10)


def read_batch_output(
    path: Path, loaded: ResponsesLoaded, *, line_limit: int, dialect: BatchDialect
) -> Iterator[BatchAnswer]:
    """The answer lines of `path`; malformed lines (or lines over `line_limit` bytes, which the
    live client would not have read either) are counted in `loaded` and skipped."""
    with open(path, "rb") as handle:
        number = 0
        while raw := handle.readline(line_limit + 1):
            number += 1
            if len(raw) > line_limit and not raw.endswith(b"\n"):
                while (rest := handle.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass  # skip the rest of the over-long line without holding it
                loaded.malformed += 1
                loaded.problem(number, f"answer line over {line_limit} bytes")
                continue
            if not raw.strip():
                continue
            answer = _answer(number, raw, dialect)
            if isinstance(answer, str):
                loaded.malformed += 1
                loaded.problem(number, answer)
                continue
            yield answer


def _answer(number: int, raw: bytes, dialect: BatchDialect) -> BatchAnswer | str:
    try:
        data = orjson.loads(raw)  # refuses lone surrogates and nesting past orjson's limit
    except orjson.JSONDecodeError:
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    return dialect.read_batch_line(number, data)
