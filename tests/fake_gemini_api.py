"""A fake of Google's Gemini API (`generateContent`, the model list), for tests.

A real aiohttp server on 127.0.0.1, built on `FakeOpenAIServer` so it has every fault action of
that fake (429 with Retry-After, 5xx, hang, drop, length, echo, ...) in Gemini's shapes, and, above
all, its answers: a request's `contents` and `systemInstruction` are read back into the neutral
messages `fake_summary` hashes, so the same prompt gets the same summary, and the same usage, as
from the OpenAI fake. A run with `--api gemini` must therefore write the very bytes a run with
`--api openai` writes.

* `POST /v1beta/models/{model}:generateContent`: the reply is `candidates[0].content.parts`
  (`reasoning_content` as a `thought` part), `finishReason` `STOP` or `MAX_TOKENS` (the `length`
  action), `usageMetadata` (`promptTokenCount`, `candidatesTokenCount`); errors are Google's
  `{"error": {"code", "message", "status"}}`.
* `GET /v1beta/models`: the model list a run's preflight asks.
* `key`: when set, a request whose `x-goog-api-key` is another (or none) is refused as Google
  refuses it, with a 400 whose details name `API_KEY_INVALID` (a missing key: 403).
* `urls` records each request's path and query, so a test sees the key never travels in the URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.fake_openai_server import Action, FakeOpenAIServer, prompt_chars

STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
            408: "DEADLINE_EXCEEDED", 409: "ABORTED", 413: "INVALID_ARGUMENT", 422: "INVALID_ARGUMENT",
            429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "UNAVAILABLE", 503: "UNAVAILABLE",
            504: "DEADLINE_EXCEEDED", 529: "UNAVAILABLE"}  # fmt: skip
FINISH = {"stop": "STOP", "length": "MAX_TOKENS"}


def neutral_body(body: Any, model: str = "") -> Any:
    """A Gemini request body as the OpenAI fake reads one: `systemInstruction` as a system message,
    `contents` as messages (`model` as `assistant`), `generationConfig` as `max_tokens` / `temperature`."""
    if not isinstance(body, dict):
        return body

    def text_of(content: Any) -> str:
        parts = content.get("parts") if isinstance(content, dict) else None
        return "".join(str(part.get("text", "")) for part in parts or [] if isinstance(part, dict))

    messages: list[dict[str, Any]] = []
    system = text_of(body.get("systemInstruction"))
    if system:
        messages.append({"role": "system", "content": system})
    for content in body.get("contents") or []:
        role = content.get("role", "user") if isinstance(content, dict) else "user"
        messages.append({"role": "assistant" if role == "model" else role, "content": text_of(content)})
    config = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
    return {"model": model, "messages": messages, "max_tokens": config.get("maxOutputTokens"),
            "temperature": config.get("temperature")}  # fmt: skip


@dataclass
class FakeGeminiServer(FakeOpenAIServer):
    """Gemini's `generateContent`; see the module docstring."""

    key: str | None = None  # the one key accepted (None: any)
    urls: list[str] = field(default_factory=list, init=False)

    chat_path = "/v1beta/models/{model}:generateContent"
    base_path = "/v1beta"
    credential_header = "x-goog-api-key"

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 << 20)
        app.router.add_post(self.chat_path, self._generate)
        app.router.add_get("/v1beta/models", self._model_list)
        app.router.add_get("/_fake/stats", self._stats)
        return app

    # -- handlers ------------------------------------------------------------------------------

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        self.urls.append(str(request.rel_url))
        refused = self._refusal(request)
        if refused is not None:
            return refused
        return await self._chat(request)

    async def _model_list(self, request: web.Request) -> web.Response:
        self.urls.append(str(request.rel_url))
        self.model_lists += 1
        refused = self._refusal(request)
        if refused is not None:
            return refused
        if self.models_status != 200:
            return self._error(self.models_status, f"fake error {self.models_status}")
        return web.json_response({"models": [{"name": f"models/{self.model}", "displayName": self.model}]})

    def _refusal(self, request: web.Request) -> web.Response | None:
        """Google's answer to a key it does not take, or None."""
        if self.key is None:
            return None
        given = request.headers.get(self.credential_header) or request.query.get("key")
        if not given:
            return self._error(403, "Method doesn't allow unregistered callers (callers without established identity).")
        if given != self.key:
            return self._error(400, "API key not valid. Please pass a valid API key.", reason="API_KEY_INVALID")
        return None

    # -- what makes the OpenAI fake speak Gemini -----------------------------------------------

    def _action_for(self, number: int, body: Any) -> Action:
        return super()._action_for(number, neutral_body(body))

    async def _respond(self, request: web.Request, action: Action, body: Any) -> web.StreamResponse:
        return await super()._respond(request, action, neutral_body(body, request.match_info.get("model", "")))

    def _error(
        self, status: int, message: str, headers: dict[str, str] | None = None, *, reason: str | None = None
    ) -> web.Response:
        error: dict[str, Any] = {"code": status, "message": message, "status": STATUSES.get(status, "UNKNOWN")}
        if reason is not None:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                                 "domain": "googleapis.com"}]  # fmt: skip
        return web.json_response({"error": error}, status=status, headers=headers)

    def _reply(self, body: Any, message: dict[str, Any], finish_reason: str) -> web.Response:
        content = message.get("content")
        candidate: dict[str, Any] = {"finishReason": FINISH.get(finish_reason, finish_reason.upper()), "index": 0}
        if "content" in message:  # `no_content`: a candidate without its content
            parts: list[dict[str, Any]] = []
            if message.get("reasoning_content"):
                parts.append({"text": message["reasoning_content"], "thought": True})
            if isinstance(content, str):
                parts.append({"text": content})
            candidate["content"] = {"role": "model", "parts": parts}
        prompt_tokens, completion_tokens = max(1, prompt_chars(body) // 4), max(1, len(content or "") // 4)
        usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": completion_tokens,
                 "totalTokenCount": prompt_tokens + completion_tokens}  # fmt: skip
        model = body.get("model") if isinstance(body, dict) else self.model
        reply = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model}
        return web.Response(body=orjson.dumps(reply), content_type="application/json")


__all__ = ["FakeGeminiServer", "neutral_body"]
