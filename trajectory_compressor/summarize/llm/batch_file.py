"""Reading a batch output file: the answers a provider's batch API or `vllm run-batch` wrote.

Each line is `{"custom_id": ..., "response": {"status_code": 200, "body": {...}}, "error": null}`
(the OpenAI batch output format, which vLLM writes too). The `custom_id` is the cache key the
`requests` command gave the request, so an answer is stored where a run will look for it.
Bad lines are counted and reported with their line numbers; they never stop the load.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from trajectory_compressor.messages import quoted
from trajectory_compressor.summarize.llm.client import LENGTH_RETRY_MAX_FACTOR
from trajectory_compressor.summarize.llm.reply import reply_byte_limit
from trajectory_compressor.summarize.llm.request import max_tokens_for

_KEY = re.compile(r"^[0-9a-f]{64}$")
_PROBLEMS_KEPT = 20


@dataclass(frozen=True)
class BatchAnswer:
    """One line of a batch output file: the request it answers and the reply body, if any."""

    line: int
    custom_id: str
    status: int | None
    body: bytes | None  # the chat-completions reply, as the endpoint sent it
    error: str | None  # the provider's own error for this request


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


def read_batch_output(path: Path, loaded: ResponsesLoaded, *, line_limit: int) -> Iterator[BatchAnswer]:
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
            answer = _answer(number, raw)
            if isinstance(answer, str):
                loaded.malformed += 1
                loaded.problem(number, answer)
                continue
            yield answer


def _answer(number: int, raw: bytes) -> BatchAnswer | str:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str) or not _KEY.match(custom_id):
        return "no custom_id written by `trajectory-compressor requests`"
    response = data.get("response")
    error = data.get("error")
    error_text = None if error in (None, "", {}) else _error_text(error)
    if not isinstance(response, dict):
        if error_text is None:
            return "neither a response nor an error"
        return BatchAnswer(number, custom_id, None, None, error_text)
    status = response.get("status_code")
    body = response.get("body")
    return BatchAnswer(
        number,
        custom_id,
        status if isinstance(status, int) else None,
        orjson.dumps(body) if isinstance(body, (dict, list)) else None,
        error_text,
    )


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        message = error.get("message", error.get("code"))
        return str(message)[:200] if message is not None else orjson.dumps(error).decode()[:200]
    return str(error)[:200]
