"""Reading a reply, whatever the dialect: how much of its body, when to come back, what it holds.

Helpers of the client (`client`), apart so the transport reads as retries and verdicts. The
verdict on a reply body (`ReplyReader`) is shared by live calls and by batch answers, so an answer
from a batch is checked exactly as a live reply is.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

if TYPE_CHECKING:
    from trajectory_compressor.summarize.llm.credentials import Credentials
    from trajectory_compressor.summarize.llm.dialects.base import Dialect

# A reply body is read up to this many bytes per max_tokens token (at least REPLY_MIN_BYTES):
# far more than any honest reply (a token is a few bytes, JSON escaping at most 6 per char,
# reasoning text included), so only an endpoint that ignores max_tokens reaches it.
REPLY_BYTES_PER_TOKEN = 64
REPLY_MIN_BYTES = 1 << 20


def reply_byte_limit(max_tokens: int) -> int:
    """The most bytes read from one reply asking for at most `max_tokens` tokens."""
    return max(REPLY_MIN_BYTES, REPLY_BYTES_PER_TOKEN * max_tokens)


async def read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The whole body, or None as soon as it is known to be over `limit` bytes."""
    declared = response.content_length
    if declared is not None and declared > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def usage_numbers(usage: Any, names: tuple[str, str] = ("prompt_tokens", "completion_tokens")) -> tuple[int, int]:
    """The prompt and completion tokens of a reply's `usage` object (0 where absent or not a count)."""
    if not isinstance(usage, dict):
        return 0, 0
    numbers = []
    for name in names:
        value = usage.get(name)
        numbers.append(value if isinstance(value, int) and not isinstance(value, bool) else 0)
    return numbers[0], numbers[1]


def content_text(content: Any) -> str | None:
    """`message.content` as text: a string, or the text parts of a content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type") == "text"]
        texts = [part for part in parts if isinstance(part, str)]
        return "".join(texts) if texts else None
    return None


@dataclass(frozen=True)
class Refused:
    """A reply that is no summary (a transcript: `reply_text`), with why, to say in the row's error."""

    reason: str


@dataclass(frozen=True)
class Reply:
    """A usable reply: the cleaned summary text and the tokens the endpoint reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Failure:
    """One attempt that did not produce a usable reply. `message` is already sanitized."""

    cause: str  # retry cause ("429", "5xx", "timeout", ...) or fatal status ("400", "auth", ...)
    message: str
    retryable: bool
    retry_after: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    no_response: bool = False  # not even a status line came back (refused, unresolvable, timed out)


class ReplyReader:
    """The verdict on a reply body: a `Reply` (cleaned, the key scrubbed) or the `Failure` to retry.

    `clean` turns the dialect's text into the stored text; an empty result is a failure, retried
    like any other; a `Refused` one (a transcript, not a summary) is a failure that is not
    retried (the same prompt gets the same kind of answer), so the row takes
    `--on-summary-failure`. Tokens are counted even for a rejected reply: they were paid for.
    """

    def __init__(
        self, dialect: Dialect, credentials: Credentials, clean: Callable[[str], str | Refused] = str.strip
    ) -> None:
        self.dialect = dialect
        self.credentials = credentials
        self._clean = clean

    def read(self, raw: bytes) -> Reply | Failure:
        sanitize = self.credentials.sanitize
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return Failure("invalid_json", f"reply is not valid JSON: {sanitize(raw[:120])}", True)
        if not isinstance(data, dict):
            return Failure("invalid_json", "reply is not a JSON object", True)
        read = self.dialect.read_reply(data)
        tokens = (read.prompt_tokens, read.completion_tokens)
        if read.cut is not None:
            return Failure("length", read.cut, True, None, *tokens)
        if read.content is None:
            detail = f": {self.credentials.snippet(raw)}" if read.quote_error else ""
            return Failure("no_content", f"{read.missing}{detail}", True, None, *tokens)
        cleaned = self._clean(read.content)
        if isinstance(cleaned, Refused):
            return Failure("transcript", self.credentials.sanitize(cleaned.reason), False, None, *tokens)
        text = self.credentials.scrub_summary(cleaned)
        if not text:
            return Failure("empty", "reply was empty after cleaning", True, None, *tokens)
        return Reply(text, *tokens)
