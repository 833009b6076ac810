"""Reading a chat-completions reply: how much of its body, when to come back, what it holds.

Pure helpers of the client (`client`), apart so the transport reads as retries and verdicts.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

import aiohttp

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


def usage_numbers(usage: Any) -> tuple[int, int]:
    if not isinstance(usage, dict):
        return 0, 0
    numbers = []
    for name in ("prompt_tokens", "completion_tokens"):
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
