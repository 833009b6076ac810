"""A fake OpenAI Files + Batches API on top of the fake chat server, for `--batch` tests.

A real aiohttp server on 127.0.0.1. It keeps uploaded files, validates every uploaded line as a
provider does, and walks each batch `validating → in_progress → finalizing → completed`, one
step per look (`GET /v1/batches/{id}`), so a test controls progress by how often the client
looks, never by time. Each line is answered as the chat endpoint answers it (`fake_summary`),
so a batch run and a live run of the same data get the very same summaries.

Knobs (all optional):

* `line_faults(batch_number, index, line) -> action`: per request line (batches count from 1):
  "ok" (default), "echo_auth" (an error quoting the Authorization header the batch came with), an HTTP status
  ("500", "400"), "length" (cut at max_tokens), "empty", "huge:N" (a reply N bytes long) or "text:T" (the
  summary T);
* `outcomes`: the end of each created batch in turn ("completed", "expired": the second half
  of its requests expire, "failed": the whole batch is refused at validation); then "completed";
* `create_faults` / `upload_faults`: per call in turn: an HTTP status ("429" comes with
  Retry-After 0; "401" echoes the Authorization header, as a careless server does), or
  "lost" (the call takes effect but the connection drops before the reply);
* `output_extra`: raw lines appended to every output file (hostile or foreign answers);
* `hold = True`: batches stay `in_progress` until a test sets it to False;
* `page_size`: list endpoints return at most this many items a page (pagination is exercised);
* `lists`: how the list endpoints (`GET /v1/files`, `GET /v1/batches`) behave: "ok" (default),
  "404" (they answer 404), "405" (there are none, only the POSTs: 405 with `Allow: POST`) or
  "ignore_after" (every page is the first one and says `has_more`, whatever `after` is);
* `stuck = True`: a batch stays `in_progress` for good (cancelling it included), like `hold`
  but never let go: a client deadline must end it;
* `repeat_output = True`: every output file holds each of its lines twice (a provider's retry);
* `list_limit`: list calls past this many are refused with a 400 (a client that loops fails, not hangs);
* `failure`: the `errors.data[0]` of a batch that `outcomes` fails ("code: message").

`api_calls` records (method, path, Authorization header) of every Files/Batches call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.fake_openai_server import FakeOpenAIServer, fake_summary

STEPS = ("validating", "in_progress", "finalizing", "completed")
LIST_PATHS = ("/v1/files", "/v1/batches")


@dataclass
class FakeBatchServer(FakeOpenAIServer):
    line_faults: Callable[[int, int, dict[str, Any]], str | None] | None = None
    outcomes: list[str] = field(default_factory=list)
    create_faults: list[str] = field(default_factory=list)
    upload_faults: list[str] = field(default_factory=list)
    hold: bool = False
    page_size: int = 2
    output_extra: list[bytes] = field(default_factory=list)
    lists: str = "ok"
    repeat_output: bool = False
    list_limit: int = 1000
    stuck: bool = False
    failure: str = "invalid_request: the input file was refused"
    files: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)
    api_calls: list[tuple[str, str, str | None]] = field(default_factory=list, init=False)
    _outcome_of: dict[str, str] = field(default_factory=dict, init=False)

    def make_app(self) -> web.Application:
        app = super().make_app()
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files", self._list_files)
        app.router.add_get("/v1/files/{id}/content", self._content)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches", self._list_batches)
        app.router.add_get("/v1/batches/{id}", self._get)
        app.router.add_post("/v1/batches/{id}/cancel", self._cancel)
        return app

    # -- views for tests -----------------------------------------------------------------------

    def created(self) -> int:
        return len(self.batches)

    def batch_lines(self) -> list[dict[str, Any]]:
        """Every request line of every created batch (a request paid twice shows twice)."""
        lines = []
        for batch in self.batches.values():
            lines.extend(_lines(self.files[batch["input_file_id"]]["content"]))
        return lines

    def calls(self, method: str, path_prefix: str) -> int:
        return sum(1 for m, p, _ in self.api_calls if m == method and p.startswith(path_prefix))

    # -- handlers ------------------------------------------------------------------------------

    def _note(self, request: web.Request) -> None:
        self.api_calls.append((request.method, request.path, request.headers.get(self.credential_header)))

    async def _fault(self, request: web.Request, faults: list[str]) -> web.Response | str | None:
        action = faults.pop(0) if faults else "ok"
        if action.isdigit():
            status = int(action)
            echo = f": {request.headers.get(self.credential_header)}" if status == 401 else ""
            headers = {"Retry-After": "0"} if status == 429 else None
            return self._error(status, f"fake batch error {status}{echo}", headers)
        return action

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        fault = await self._fault(request, self.upload_faults)
        if isinstance(fault, web.Response):
            return fault
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or upload is None or isinstance(upload, str):
            return web.json_response({"error": {"message": "purpose=batch and a file are required"}}, status=400)
        content = upload.file.read()
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": upload.filename,
            "purpose": "batch",
            "status": "processed",
            "content": content,
        }
        return self._maybe_lost(request, fault, _public(self.files[file_id]))

    async def _list_files(self, request: web.Request) -> web.Response:
        self._note(request)
        items = [_public(f) for f in self.files.values() if f["purpose"] == request.query.get("purpose", f["purpose"])]
        return self._page(request, items)

    async def _content(self, request: web.Request) -> web.Response:
        self._note(request)
        item = self.files.get(request.match_info["id"])
        if item is None:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        return web.Response(body=item["content"], content_type="application/octet-stream")

    async def _create(self, request: web.Request) -> web.StreamResponse:
        self._note(request)
        fault = await self._fault(request, self.create_faults)
        if isinstance(fault, web.Response):
            return fault
        body = await request.json()
        if body.get("input_file_id") not in self.files or body.get("endpoint") != "/v1/chat/completions":
            return web.json_response({"error": {"message": "bad input_file_id or endpoint"}}, status=400)
        batch_id = f"batch_{len(self.batches) + 1:04d}"
        self._outcome_of[batch_id] = self.outcomes.pop(0) if self.outcomes else "completed"
        requests = len(_lines(self.files[body["input_file_id"]]["content"]))
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window"),
            "metadata": body.get("metadata"),
            "status": "validating",
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "errors": None,
            "request_counts": {"total": requests, "completed": 0, "failed": 0},
        }
        return self._maybe_lost(request, fault, self.batches[batch_id])

    async def _list_batches(self, request: web.Request) -> web.Response:
        self._note(request)
        return self._page(request, list(reversed(self.batches.values())))  # newest first, as OpenAI

    async def _get(self, request: web.Request) -> web.Response:
        self._note(request)
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        self._advance(batch)
        return web.json_response(batch)

    async def _cancel(self, request: web.Request) -> web.Response:
        self._note(request)
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        if batch["status"] not in ("completed", "failed", "expired", "cancelled"):
            batch["status"] = "cancelling"
        return web.json_response(batch)

    # -- the batch's life ----------------------------------------------------------------------

    def _advance(self, batch: dict[str, Any]) -> None:
        status = batch["status"]
        outcome = self._outcome_of[batch["id"]]
        if self.stuck and status in ("in_progress", "cancelling"):
            return
        if status == "cancelling":
            self._finish(batch, "cancelled")
        elif status == "validating":
            problem = _invalid(self.files[batch["input_file_id"]]["content"])
            if problem or outcome == "failed":
                batch["status"] = "failed"
                code, _, message = self.failure.partition(": ")
                error = (
                    {"code": "invalid_request", "message": problem} if problem else {"code": code, "message": message}
                )
                batch["errors"] = {"object": "list", "data": [error]}
            else:
                batch["status"] = "in_progress"
        elif status == "in_progress" and not self.hold:
            batch["status"] = "finalizing"
        elif status == "finalizing":
            self._finish(batch, "expired" if outcome == "expired" else "completed")

    def _finish(self, batch: dict[str, Any], status: str) -> None:
        lines = _lines(self.files[batch["input_file_id"]]["content"])
        cut = len(lines) // 2 if status in ("expired", "cancelled") else len(lines)
        output, errors = [], []
        for index, line in enumerate(lines):
            if index >= cut:
                code = "batch_expired" if status == "expired" else "batch_cancelled"
                errors.append({"id": f"req_{index}", "custom_id": line["custom_id"], "response": None,
                               "error": {"code": code, "message": f"request not run ({code})"}})  # fmt: skip
                continue
            answer = self._answer(int(batch["id"].split("_")[1]), index, line)
            (output if answer["response"]["status_code"] == 200 else errors).append(answer)
        for name, rows in (("output_file_id", output), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{len(self.files) + 1:04d}"
                content = b"".join(orjson.dumps(row) + b"\n" for row in rows)
                if name == "output_file_id" and self.repeat_output:
                    content += content
                if name == "output_file_id":
                    content += b"".join(line + b"\n" for line in self.output_extra)
                self.files[file_id] = {
                    "id": file_id, "object": "file", "bytes": len(content), "filename": name,
                    "purpose": "batch_output", "status": "processed", "content": content,
                }  # fmt: skip
                batch[name] = file_id
        batch["status"] = status
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}

    def _answer(self, batch_number: int, index: int, line: dict[str, Any]) -> dict[str, Any]:
        body = line["body"]
        action = (self.line_faults(batch_number, index, line) if self.line_faults else None) or "ok"
        name = action.partition(":")[0]
        envelope: dict[str, Any] = {"id": f"req_{index}", "custom_id": line["custom_id"], "error": None}
        if name == "echo_auth":  # a careless provider quotes the caller's credentials
            envelope["error"] = {"code": "refused", "message": f"refused {self.api_calls[-1][2]}"}
            envelope["response"] = {"status_code": 403, "body": None}
            return envelope
        if name.isdigit():
            error = {"error": {"message": f"fake line error {name}", "code": name}}
            envelope["response"] = {"status_code": int(name), "body": error}
            return envelope
        content, finish = answer_of(action, body)
        reply = self._reply(body, {"role": "assistant", "content": content}, finish)
        envelope["response"] = {"status_code": 200, "request_id": f"r{index}", "body": orjson.loads(reply.body)}
        return envelope

    # -- plumbing ------------------------------------------------------------------------------

    def _page(self, request: web.Request, items: list[dict[str, Any]]) -> web.Response:
        if self.lists in ("404", "405"):
            headers = {"Allow": "POST"} if self.lists == "405" else None
            return web.json_response({"error": {"message": "no such route"}}, status=int(self.lists), headers=headers)
        if sum(1 for method, path, _ in self.api_calls if method == "GET" and path in LIST_PATHS) > self.list_limit:
            return web.json_response({"error": {"message": "too many list calls"}}, status=400)
        after = request.query.get("after") if self.lists != "ignore_after" else None
        start = next((i + 1 for i, item in enumerate(items) if item["id"] == after), 0) if after else 0
        size = min(int(request.query.get("limit", "20")), self.page_size)
        page = items[start : start + size]
        more = start + size < len(items) or self.lists == "ignore_after"
        return web.json_response({
            "object": "list", "data": page, "has_more": more,
            "first_id": page[0]["id"] if page else None, "last_id": page[-1]["id"] if page else None,
        })  # fmt: skip

    def _maybe_lost(self, request: web.Request, fault: Any, body: dict[str, Any]) -> web.StreamResponse:
        if fault == "lost":  # it happened, but the reply never arrives
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=200)
        return web.json_response(body)


def answer_of(action: str, body: Any) -> tuple[str, str]:
    """The reply text and finish reason a batch line's answering `action` gives (both fake batch
    APIs answer lines alike): ok, length (cut), empty, huge:N (N characters), text:T."""
    name, _, argument = action.partition(":")
    content = fake_summary(body)
    if name == "ok":
        return content, "stop"
    if name == "length":
        return content[:20], "length"
    if name == "empty":
        return "  ", "stop"
    if name == "huge":
        return "x" * int(argument), "stop"
    if name == "text":
        return argument, "stop"
    raise ValueError(f"unknown line action {action!r}")


def _public(item: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in item.items() if key != "content"}


def _lines(content: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in content.splitlines() if line.strip()]


def _invalid(content: bytes) -> str | None:
    """What a provider would refuse in an uploaded batch input file, or None."""
    seen = set()
    for number, raw in enumerate(content.splitlines(), start=1):
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return f"line {number}: not JSON"
        body = line.get("body") if isinstance(line, dict) else None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
            return f"line {number}: body needs model and messages"
        if line.get("method") != "POST" or line.get("url") != "/v1/chat/completions":
            return f"line {number}: method and url must be POST /v1/chat/completions"
        if line.get("custom_id") in seen or not isinstance(line.get("custom_id"), str):
            return f"line {number}: custom_id missing or repeated"
        seen.add(line["custom_id"])
    return None if seen else "empty file"
