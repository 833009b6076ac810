"""Anthropic's Messages API: the body, the cache key, the reply, the Message Batches lines.

`POST {base_url}/v1/messages` (the base URL as Anthropic's SDK takes it: `https://api.anthropic.com`)
with the key in `x-api-key` and the `anthropic-version` header; the system prompt is a top-level
`system` field and `max_tokens` is required; a reply is a list of content blocks (the text ones
make the summary; thinking blocks are ignored, as OpenAI's reasoning fields are), `stop_reason:
max_tokens` is OpenAI's `finish_reason: length`, and `usage` counts `input_tokens` /
`output_tokens`. A batch request line is `{"custom_id", "params"}`; a result line is
`{"custom_id", "result": {"type": "succeeded" | "errored" | "canceled" | "expired", ...}}`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.cache import request_cache_key
from trajectory_compressor.summarize.llm.dialects.base import (
    AUTH_STATUSES,
    BatchAnswer,
    Messages,
    ReplyRead,
    custom_id_of,
    error_text,
)
from trajectory_compressor.summarize.llm.reply import content_text, usage_numbers

MESSAGES_PATH = "/v1/messages"
ANTHROPIC_VERSION = "2023-06-01"
# Anthropic's rule for a batch request's custom_id; ours (a cache key) always meets it.
ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
NOT_RUN = {
    "canceled": "request canceled: the batch was cancelled before it ran",
    "expired": "request expired: the batch ended before it ran",
}


class AnthropicDialect:
    """Requests and replies of Anthropic's Messages API."""

    name = "anthropic"
    path = MESSAGES_PATH  # the base URL has no /v1, as Anthropic's SDK takes it
    models_path = "/v1/models"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": key} if key else {})}

    def refuses_key(self, status: int, body: bytes) -> bool:
        return status in AUTH_STATUSES

    def body(self, messages: Messages, max_tokens: int) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {"model": self.config.model, "max_tokens": max_tokens}
        if system:
            body["system"] = system
        body["messages"] = [m for m in messages if m["role"] != "system"]
        body["temperature"] = self.config.temperature
        body.update(self.config.extra_body)
        return body

    def cache_key(self, messages: Messages, max_tokens: int) -> str:
        return request_cache_key(self.config, messages, max_tokens, api=self.name)

    def read_reply(self, data: dict[str, Any]) -> ReplyRead:
        tokens = usage_numbers(data.get("usage"), ("input_tokens", "output_tokens"))
        blocks = data.get("content")
        if not isinstance(blocks, list):
            return ReplyRead(None, *tokens, missing="reply has no content", quote_error="error" in data)
        if data.get("stop_reason") == "max_tokens":
            return ReplyRead(None, *tokens, cut="reply was cut at max_tokens (stop_reason=max_tokens)")
        content = content_text(blocks)  # text blocks; thinking blocks ignored
        return ReplyRead(content, *tokens, missing=None if content is not None else "reply has no text content")

    def batch_line(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        if not ANTHROPIC_CUSTOM_ID.match(key):  # a cache key always matches: a broken key is a bug
            raise ValueError(f"custom_id {key[:80]!r} is not 1 to 64 of [a-zA-Z0-9_-]")
        return {"custom_id": key, "params": body}

    def read_batch_line(self, number: int, data: dict[str, Any]) -> BatchAnswer | str:
        custom_id = custom_id_of(data)
        if custom_id is None:
            return "no custom_id written by trajectory-compressor"
        result = data.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded":
            message = result.get("message") if isinstance(result, dict) else None
            body = orjson.dumps(message) if isinstance(message, dict) else None
            if body is None:
                return BatchAnswer(number, custom_id, None, None, "a succeeded result without a message")
            return BatchAnswer(number, custom_id, 200, body, None)
        if kind == "errored":
            return BatchAnswer(number, custom_id, None, None, _errored(result))
        if isinstance(kind, str) and kind in NOT_RUN:
            return BatchAnswer(number, custom_id, None, None, NOT_RUN[kind])
        return "a result that is neither succeeded, errored, canceled nor expired"


def _errored(result: Any) -> str:
    """An errored result's `{"error": {"type": "error", "error": {"type", "message"}}}` as one line."""
    error = result.get("error") if isinstance(result, dict) else None
    inner = error.get("error") if isinstance(error, dict) else None
    if isinstance(inner, dict):
        kind, message = inner.get("type"), inner.get("message")
        if isinstance(message, str):
            return error_text(f"{kind}: {message}" if isinstance(kind, str) else message)
        return error_text(inner)
    return error_text(error) if error is not None else "errored, without an error"
