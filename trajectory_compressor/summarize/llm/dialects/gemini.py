"""Google's Gemini API, `generateContent`: the body, the cache key, the key's header, the reply. Live only.

`POST {base_url}/models/{model}:generateContent` (the base URL with its version, as OpenAI's has
its /v1: `https://generativelanguage.googleapis.com/v1beta`) with the key in `x-goog-api-key`,
never in the URL's `?key=` (a URL is shown in messages, logs and the report). The system prompt
is `systemInstruction`, the user's turn a `contents` entry of text `parts`, and `maxOutputTokens`
and `temperature` go in `generationConfig` (a `generationConfig` in `--extra-body` is merged
into it, so `{"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}` keeps the budget).
A reply's text is `candidates[0].content.parts[*].text` (thought parts ignored, as OpenAI's
reasoning fields are); `finishReason: MAX_TOKENS` is OpenAI's `finish_reason: length`; usage is
`usageMetadata.promptTokenCount` and `candidatesTokenCount` (+ `thoughtsTokenCount`, billed as
output). A key Google does not know is refused with a 400 naming `API_KEY_INVALID`, which
`refuses_key` takes as the 401 other providers send. Google's Batch Mode is not supported (no
batch API in its row), nor offline batch files.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.cache import request_cache_key
from trajectory_compressor.summarize.llm.dialects.base import AUTH_STATUSES, Messages, ReplyRead
from trajectory_compressor.summarize.llm.reply import usage_numbers

KEY_HEADER = "x-goog-api-key"
KEY_INVALID = b"API_KEY_INVALID"  # the reason Google gives, in a 400, for a key it does not know
ROLES = {"user": "user", "assistant": "model"}


class GeminiDialect:
    """Requests and replies of Gemini's `generateContent`."""

    name = "gemini"
    models_path = "/models"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        model = str(config.model or "")
        resource = model if "/" in model else f"models/{model}"  # `tunedModels/x` as it is
        self.path = "/" + quote(resource, safe="/-._~") + ":generateContent"

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {KEY_HEADER: key} if key else {}

    def refuses_key(self, status: int, body: bytes) -> bool:
        return status in AUTH_STATUSES or (status == 400 and KEY_INVALID in body[:4096])

    def body(self, messages: Messages, max_tokens: int) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "contents": [
                {"role": ROLES.get(m["role"], "user"), "parts": [{"text": m["content"]}]}
                for m in messages
                if m["role"] != "system"
            ]
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        body["generationConfig"] = {"maxOutputTokens": max_tokens, "temperature": self.config.temperature}
        for key, value in self.config.extra_body.items():  # as the user asked; generationConfig merged
            if key == "generationConfig" and isinstance(value, dict):
                body[key] = {**body[key], **value}
            else:
                body[key] = value
        return body

    def cache_key(self, messages: Messages, max_tokens: int) -> str:
        return request_cache_key(self.config, messages, max_tokens, api=self.name)

    def read_reply(self, data: dict[str, Any]) -> ReplyRead:
        tokens = _tokens(data.get("usageMetadata"))
        candidates = data.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if not isinstance(candidate, dict):
            feedback = data.get("promptFeedback")
            blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
            missing = f"reply has no candidates (prompt blocked: {blocked})" if blocked else "reply has no candidates"
            return ReplyRead(None, *tokens, missing=missing, quote_error="error" in data)
        finish = candidate.get("finishReason")
        if finish == "MAX_TOKENS":
            return ReplyRead(None, *tokens, cut="reply was cut at max_tokens (finishReason=MAX_TOKENS)")
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        texts = [
            part["text"]
            for part in (parts if isinstance(parts, list) else [])
            if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
        ]
        if not texts:
            said = f" (finishReason={finish})" if isinstance(finish, str) and finish != "STOP" else ""
            return ReplyRead(None, *tokens, missing=f"reply has no text in candidates[0].content.parts{said}")
        return ReplyRead("".join(texts), *tokens)


def _tokens(usage: Any) -> tuple[int, int]:
    """Prompt and completion tokens of `usageMetadata`: thinking tokens are billed as output."""
    prompt, candidates = usage_numbers(usage, ("promptTokenCount", "candidatesTokenCount"))
    _, thoughts = usage_numbers(usage, ("promptTokenCount", "thoughtsTokenCount"))
    return prompt, candidates + thoughts
