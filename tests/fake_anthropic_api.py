"""A fake of Anthropic's Messages API and Message Batches API, for tests.

A real aiohttp server on 127.0.0.1, built on the OpenAI fakes so both share their machinery and,
above all, their answers: `fake_summary` reads a request's prompt provider-neutrally (Anthropic's
top-level `system` put back in front), so the same prompt gets the same summary, and the same
usage, from either provider, live or in a batch. A run with `--api anthropic` must therefore write
the very bytes a run with `--api openai` writes.

* `FakeAnthropicServer`: `POST /v1/messages` with every fault action of `FakeOpenAIServer`, in
  Anthropic's shapes (content blocks, `stop_reason: max_tokens` for `length`, `usage.input_tokens` /
  `output_tokens`, `{"type": "error", "error": {"type", "message"}}` bodies, 529 overloaded);
  `echo` / `echo_auth` quote the `x-api-key` header. Its base URL has no /v1, as Anthropic's SDK
  takes it.
* `FakeAnthropicBatchServer`: `/v1/messages/batches` (create with the requests in the body, get,
  list newest first with `after_id`, cancel, results as JSONL at `results_url`), with the knobs of
  `FakeBatchServer` (`line_faults`, `outcomes`, `create_faults`, `hold`, `stuck`, `page_size`,
  `lists`, `output_extra`, `repeat_output`, `list_limit`, `failure`). A batch is `in_progress` for
  two looks, then `ended` (one step per look, as the OpenAI fake's four states take three), or
  `canceling` and then `ended` after a cancel. "failed" (Anthropic fails no whole batch) errors
  every request with `failure`; "expired" (and a cancel) leaves the second half expired (canceled).
  `results_host` puts `results_url` on another host (the client must not send its key there).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.fake_batch_api import FakeBatchServer, answer_of
from tests.fake_openai_server import FakeOpenAIServer, prompt_chars

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               529: "overloaded_error"}  # fmt: skip
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BATCHES = "/v1/messages/batches"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class AnthropicShapes:
    """What makes an OpenAI fake speak Anthropic: paths, the key's header, replies and errors."""

    chat_path = "/v1/messages"
    base_path = ""
    credential_header = "x-api-key"
    requests: list[Any]

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
        kind = ERROR_TYPES.get(status, "api_error")
        return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status,
                                 headers=headers)  # fmt: skip

    def _message(self, body: Any, message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
        content = message.get("content")
        reply: dict[str, Any] = {
            "id": f"msg_fake_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake-model") if isinstance(body, dict) else "fake-model",
            "stop_reason": {"length": "max_tokens", "stop": "end_turn"}.get(finish_reason, finish_reason),
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(1, prompt_chars(body) // 4),
                "output_tokens": max(1, len(content or "") // 4),
            },
        }
        if "content" in message:  # `no_content`: a message without its content
            blocks: list[dict[str, Any]] = []
            if message.get("reasoning_content"):
                blocks.append({"type": "thinking", "thinking": message["reasoning_content"], "signature": "fake"})
            if isinstance(content, str):
                blocks.append({"type": "text", "text": content})
            reply["content"] = blocks
        return reply

    def _reply(self, body: Any, message: dict[str, Any], finish_reason: str) -> web.Response:
        return web.Response(body=orjson.dumps(self._message(body, message, finish_reason)),
                            content_type="application/json")  # fmt: skip


@dataclass
class FakeAnthropicServer(AnthropicShapes, FakeOpenAIServer):
    """Anthropic's Messages API; see the module docstring."""


@dataclass
class FakeAnthropicBatchServer(AnthropicShapes, FakeBatchServer):
    """Anthropic's Message Batches API (and its Messages API); see the module docstring."""

    results_host: str | None = None
    _step: dict[str, int] = field(default_factory=dict, init=False)
    _requests_of: dict[str, list[dict[str, Any]]] = field(default_factory=dict, init=False)
    _results: dict[str, bytes] = field(default_factory=dict, init=False)

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=256 << 20)  # Anthropic takes up to 256 MB per batch
        app.router.add_post(self.chat_path, self._chat)
        app.router.add_get("/_fake/stats", self._stats)
        app.router.add_post(BATCHES, self._create)
        app.router.add_get(BATCHES, self._list_batches)
        app.router.add_get(BATCHES + "/{id}", self._get)
        app.router.add_post(BATCHES + "/{id}/cancel", self._cancel)
        app.router.add_get(BATCHES + "/{id}/results", self._results_of)
        return app

    # -- views for tests -----------------------------------------------------------------------

    def batch_lines(self) -> list[dict[str, Any]]:
        """Every request of every created batch (a request paid twice shows twice)."""
        return [line for lines in self._requests_of.values() for line in lines]

    # -- handlers ------------------------------------------------------------------------------

    async def _create(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        fault = await self._fault(request, self.create_faults)
        if isinstance(fault, web.Response):
            return fault
        body = await request.json()
        requests = body.get("requests") if isinstance(body, dict) else None
        problem = _invalid(requests)
        if problem:
            return self._error(400, problem)
        batch_id = f"msgbatch_{len(self.batches) + 1:04d}"
        self._outcome_of[batch_id] = self.outcomes.pop(0) if self.outcomes else "completed"
        self._requests_of[batch_id] = list(requests)
        self._step[batch_id] = 0
        self.batches[batch_id] = {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "ended_at": None, "created_at": _now(), "expires_at": _now(), "archived_at": None,
            "cancel_initiated_at": None, "results_url": None,
        }  # fmt: skip
        return self._maybe_lost(request, fault, self.batches[batch_id])

    async def _list_batches(self, request: web.Request) -> web.Response:
        self._note(request)
        if self.lists in ("404", "405"):
            headers = {"Allow": "POST"} if self.lists == "405" else None
            return self._error(int(self.lists), "no such route", headers)
        if sum(1 for method, path, _ in self.api_calls if method == "GET" and path == BATCHES) > self.list_limit:
            return self._error(400, "too many list calls")
        items = list(reversed(self.batches.values()))  # newest first, as Anthropic lists them
        after = request.query.get("after_id") if self.lists != "ignore_after" else None
        start = next((i + 1 for i, item in enumerate(items) if item["id"] == after), 0) if after else 0
        size = min(int(request.query.get("limit", "20")), self.page_size)
        page = items[start : start + size]
        more = start + size < len(items) or self.lists == "ignore_after"
        return web.json_response({"data": page, "has_more": more, "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None})  # fmt: skip

    async def _get(self, request: web.Request) -> web.Response:
        self._note(request)
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return self._error(404, "no such batch")
        self._advance(batch)
        return web.json_response(batch)

    async def _cancel(self, request: web.Request) -> web.Response:
        self._note(request)
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return self._error(404, "no such batch")
        if batch["processing_status"] == "in_progress":
            batch["processing_status"] = "canceling"
            batch["cancel_initiated_at"] = _now()
        return web.json_response(batch)

    async def _results_of(self, request: web.Request) -> web.Response:
        self._note(request)
        content = self._results.get(request.match_info["id"])
        if content is None:
            return self._error(404, "no results yet")
        return web.Response(body=content, content_type="application/binary")

    # -- the batch's life ----------------------------------------------------------------------

    def _advance(self, batch: dict[str, Any]) -> None:
        state = batch["processing_status"]
        if state == "ended" or (self.stuck and state in ("in_progress", "canceling")):
            return
        if state == "canceling":
            self._end(batch, cancelled=True)
            return
        step = self._step[batch["id"]]
        if step == 1 and self.hold:
            return
        self._step[batch["id"]] = step + 1
        if step + 1 >= 3:
            self._end(batch, cancelled=False)

    def _end(self, batch: dict[str, Any], *, cancelled: bool) -> None:
        requests = self._requests_of[batch["id"]]
        outcome = self._outcome_of[batch["id"]]
        cut = len(requests) // 2 if cancelled or outcome == "expired" else len(requests)
        lines = []
        number = int(batch["id"].split("_")[1])
        for index, line in enumerate(requests):
            if index >= cut:
                result: dict[str, Any] = {"type": "canceled" if cancelled else "expired"}
            elif outcome == "failed":
                kind, _, message = self.failure.partition(": ")
                result = {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": message}}}
            else:
                result = self._result(number, index, line)
            lines.append({"custom_id": line["custom_id"], "result": result})
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for line in lines:
            counts[line["result"]["type"]] += 1
        content = b"".join(orjson.dumps(line) + b"\n" for line in lines)
        if self.repeat_output:
            content += content
        content += b"".join(extra + b"\n" for extra in self.output_extra)
        self._results[batch["id"]] = content
        host = self.results_host or self.base_url
        batch.update(processing_status="ended", ended_at=_now(), request_counts=counts,
                     results_url=f"{host}{BATCHES}/{batch['id']}/results")  # fmt: skip

    def _result(self, batch_number: int, index: int, line: dict[str, Any]) -> dict[str, Any]:
        params = line["params"]
        action = (self.line_faults(batch_number, index, line) if self.line_faults else None) or "ok"
        name = action.partition(":")[0]
        if name == "echo_auth":  # a careless provider quotes the caller's credentials
            error = {"type": "permission_error", "message": f"refused {self.api_calls[-1][2]}"}
            return {"type": "errored", "error": {"type": "error", "error": error}}
        if name.isdigit():
            error = {"type": ERROR_TYPES.get(int(name), "api_error"), "message": f"fake line error {name}"}
            return {"type": "errored", "error": {"type": "error", "error": error}}
        content, finish = answer_of(action, params)
        message = self._message(params, {"role": "assistant", "content": content}, finish)
        return {"type": "succeeded", "message": message}


def _invalid(requests: Any) -> str | None:
    """What Anthropic refuses in a create, or None: it validates every request up front."""
    if not isinstance(requests, list) or not requests:
        return "requests: a non-empty list is required"
    seen = set()
    for number, line in enumerate(requests):
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        params = line.get("params") if isinstance(line, dict) else None
        if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id) or custom_id in seen:
            return f"requests.{number}.custom_id: 1 to 64 of [a-zA-Z0-9_-], unique"
        if not isinstance(params, dict) or not params.get("model") or not isinstance(params.get("max_tokens"), int):
            return f"requests.{number}.params: model and max_tokens are required"
        if not isinstance(params.get("messages"), list) or any(m.get("role") == "system" for m in params["messages"]):
            return f"requests.{number}.params.messages: user and assistant messages only (system is top-level)"
        seen.add(custom_id)
    return None


def at(epoch: float) -> str:
    """Epoch seconds as the RFC 3339 text Anthropic writes."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).isoformat().replace("+00:00", "Z")


__all__ = ["FakeAnthropicBatchServer", "FakeAnthropicServer", "at"]
