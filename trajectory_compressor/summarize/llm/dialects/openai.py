"""OpenAI's chat completions: the body, the cache key, the reply, the batch line (in and out).

The shape OpenAI, Azure OpenAI, OpenRouter, vLLM, SGLang, llama.cpp and most gateways serve:
`POST {base_url}/chat/completions` with `Authorization: Bearer <key>`, a reply with
`choices[0].message.content` and `usage.prompt_tokens` / `completion_tokens`, and batch files
whose lines are `{"custom_id", "method", "url", "body"}` in and `{"custom_id", "response":
{"status_code", "body"}, "error"}` out (which `vllm run-batch` reads and writes too).
"""

from __future__ import annotations

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

CHAT_COMPLETIONS_PATH = "/v1/chat/completions"  # the `url` of a batch line, and the batch's endpoint


class OpenAIDialect:
    """Requests and replies of an OpenAI-compatible chat-completions endpoint."""

    name = "openai"
    path = "/chat/completions"  # the base URL ends in /v1
    models_path = "/models"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    def refuses_key(self, status: int, body: bytes) -> bool:
        return status in AUTH_STATUSES

    def body(self, messages: Messages, max_tokens: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": max_tokens,
        }
        body.update(self.config.extra_body)
        return body

    def cache_key(self, messages: Messages, max_tokens: int) -> str:
        return request_cache_key(self.config, messages, max_tokens)

    def read_reply(self, data: dict[str, Any]) -> ReplyRead:
        prompt_tokens, completion_tokens = usage_numbers(data.get("usage"))  # paid for even when rejected
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(message, dict):
            missing: str | None = "reply has no choices[0].message"
            return ReplyRead(None, prompt_tokens, completion_tokens, missing=missing, quote_error="error" in data)
        if choice.get("finish_reason") == "length":
            cut = "reply was cut at max_tokens (finish_reason=length)"
            return ReplyRead(None, prompt_tokens, completion_tokens, cut=cut)
        if choice.get("finish_reason") == "content_filter":  # what is there was cut by the filter
            filtered = "the endpoint's content filter stopped the reply (finish_reason=content_filter)"
            return ReplyRead(None, prompt_tokens, completion_tokens, missing=filtered)
        content = content_text(message.get("content"))  # reasoning_content / reasoning: ignored
        missing = None if content is not None else "reply has no choices[0].message.content"
        return ReplyRead(content, prompt_tokens, completion_tokens, missing=missing)

    def batch_line(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"custom_id": key, "method": "POST", "url": CHAT_COMPLETIONS_PATH, "body": body}

    def read_batch_line(self, number: int, data: dict[str, Any]) -> BatchAnswer | str:
        custom_id = custom_id_of(data)
        if custom_id is None:
            return "no custom_id written by `trajectory-compressor requests`"
        response = data.get("response")
        error = data.get("error")
        error_message = None if error in (None, "", {}) else error_text(error)
        if not isinstance(response, dict):
            if error_message is None:
                return "neither a response nor an error"
            return BatchAnswer(number, custom_id, None, None, error_message)
        status = response.get("status_code")
        body = response.get("body")
        return BatchAnswer(
            number,
            custom_id,
            status if isinstance(status, int) else None,
            orjson.dumps(body) if isinstance(body, (dict, list)) else None,
            error_message,
        )
