"""A fake OpenAI-compatible chat-completions server with a fault schedule, for tests.

A real aiohttp server on 127.0.0.1 (not a patched client), so the code under test goes
through real sockets, timeouts and dropped connections. Three ways to run it:

* in a test's event loop: ``async with FakeOpenAIServer(faults=[...]) as server: server.base_url``
* in a background thread with its own loop (for sync tests, click's CliRunner, subprocesses):
  ``with running_fake_server(faults=[...]) as base_url:`` or ``with FakeServerThread(...) as server:``
* as a process: ``python tests/fake_openai_server.py --port 0 --latency 0.2 --faults 429:1,ok,500``
  prints its base URL (``http://127.0.0.1:PORT/v1``) on the first line of stdout; ``GET /_fake/stats``
  returns the request count and the maximum number of requests in flight.

Fault schedule: a list (action for request 0, 1, 2, ...; later requests get `default`), a dict
{request number: action}, or a callable ``(number, body) -> action | None``. Request numbers
count POSTs to /v1/chat/completions from 0. Actions:

    ok                      a deterministic summary derived from the request, with usage
    429 / 429:S             HTTP 429, with ``Retry-After: S`` (seconds) when given
    429-date:S              HTTP 429 with Retry-After as an HTTP date S seconds ahead
    500 / 502 / 503 / 503:S HTTP 5xx (503:S adds Retry-After: S)
    400 404 408 409 413 422 401 403 529   that status with an error body (529: Anthropic's overloaded)
    hang                    never answer (until the server stops): the client must time out
    drop                    close the connection before answering
    drop_mid                send headers and half a body, then close the connection
    invalid_json            200 with a body that is not JSON
    no_choices              200 with ``{"error": ...}`` and no choices
    no_content              200 with ``message`` lacking ``content``
    empty                   200 with empty content
    think_only              200 whose content is only a ``<think>`` block
    reasoning_only          200 with content null and ``reasoning_content`` set
    length                  200 with finish_reason ``length``
    prefixed                200 whose content starts with ``[CONTEXT SUMMARY]:`` (twice)
    think                   200 with a ``<think>`` block before the summary
    hold                    wait until the test calls ``release()`` (then answer ok): holds a
                            request at a known point without sleeping
    echo / echo:N           200 whose content is the request's Authorization header and prompt
                            (its first N characters with echo:N)
    echo_auth / echo_auth:S HTTP S (401) whose error message is the Authorization header
    {"body": ..., "status": ...}  that JSON value (bytes: sent as they are) as the whole reply body
    {"content": ..., "finish_reason": ..., "status": ...}   a custom reply; it may add
                            ``"delay": S`` (answer after S seconds: per-request latency) and
                            ``"hold": True`` (wait for ``release()`` first)

``held`` is the number of requests waiting for a release; ``release(n)`` lets n of them go
(oldest first; None: all, now and later). With a callable schedule a test can echo a marker
from the prompt into the reply (see `prompt_text`), to check each row got its own summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email.utils
import hashlib
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

Action = str | dict[str, Any] | None
FaultSchedule = Sequence[Action] | Mapping[int, Action] | Callable[[int, Any], Action] | None

ERROR_STATUSES = {400, 401, 403, 404, 408, 409, 413, 422, 500, 502, 503, 504, 529}


@dataclass
class RecordedRequest:
    """One POST to /v1/chat/completions as the server saw it."""

    number: int
    action: str
    body: Any  # parsed JSON, or None when the body was not JSON
    headers: dict[str, str]
    arrived: float  # time.monotonic() at arrival
    peer: Any = None  # the client's (host, port): a reused connection keeps its port
    finished: float | None = None
    query: dict[str, str] = field(default_factory=dict)  # the URL's query parameters

    @property
    def authorization(self) -> str | None:
        return self.headers.get("Authorization")

    @property
    def api_key(self) -> str | None:
        """Anthropic's key header."""
        return self.headers.get("x-api-key")


def prompt_messages(body: Any) -> list[Any]:
    """A request's messages, provider-neutral: an Anthropic body's top-level `system` is put back in
    front as a system message, so the same prompt gets the same answer from either fake."""
    if not isinstance(body, dict):
        return []
    messages = body.get("messages", [])
    messages = messages if isinstance(messages, list) else []
    system = body.get("system")
    return [{"role": "system", "content": system}, *messages] if isinstance(system, str) else messages


def prompt_text(body: Any) -> str:
    """Every message's text of a request body, joined: where a test looks for a row's marker."""
    return "\n".join(str(m.get("content", "")) for m in prompt_messages(body) if isinstance(m, dict))


def prompt_chars(body: Any) -> int:
    return sum(len(str(m.get("content", ""))) for m in prompt_messages(body) if isinstance(m, dict))


def fake_summary(body: Any) -> str:
    """The deterministic summary the server returns for a request body (of either dialect)."""
    messages = prompt_messages(body)
    digest = hashlib.sha256(orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    return f"The user and the assistant worked on task {digest}; the prompt had {prompt_chars(body)} characters."


@dataclass
class FakeOpenAIServer:
    """The fake endpoint; see the module docstring for the fault actions."""

    faults: FaultSchedule = None
    latency: float = 0.0  # seconds before every chat reply (to build up concurrency)
    default: Action = "ok"  # action for requests past the end of a list schedule
    model: str = "fake-model"
    hang_seconds: float = 60.0
    models_status: int = 200  # what GET /v1/models answers (a run's preflight asks it): 401 refuses the key
    requests: list[RecordedRequest] = field(default_factory=list, init=False)
    model_lists: int = field(default=0, init=False)  # GET /v1/models asked
    models_queries: list[dict[str, str]] = field(default_factory=list, init=False)  # each one's query
    max_in_flight: int = field(default=0, init=False)
    base_url: str = field(default="", init=False)
    _in_flight: int = field(default=0, init=False, repr=False)
    _runner: web.AppRunner | None = field(default=None, init=False, repr=False)
    _closing: asyncio.Event | None = field(default=None, init=False, repr=False)
    _gate: asyncio.Condition | None = field(default=None, init=False, repr=False)
    _held: int = field(default=0, init=False, repr=False)
    _passes: int = field(default=0, init=False, repr=False)  # releases not yet taken
    _open: bool = field(default=False, init=False, repr=False)  # release(None): no more holding

    # What differs in another provider's fake (`tests/fake_anthropic_api.py`): where chat requests
    # go, what the base URL ends with, which header carries the key, how errors and replies look.
    chat_path = "/v1/chat/completions"
    base_path = "/v1"
    credential_header = "Authorization"

    # -- lifecycle ----------------------------------------------------------------------------

    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=256 << 20)  # batch uploads: providers take ~200 MB
        app.router.add_post(self.chat_path, self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/_fake/stats", self._stats)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on `host:port` (0: any free port); returns the base URL (ending in `base_path`)."""
        self._closing = asyncio.Event()
        self._gate = asyncio.Condition()
        # handler_cancellation: a handler whose client went away (timeout) is cancelled, so
        # `hang` does not keep shutdown waiting and in-flight counts stay right.
        self._runner = web.AppRunner(self.make_app(), shutdown_timeout=0.5, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound_port = self._runner.addresses[0][1]
        self.base_url = f"http://{host}:{bound_port}{self.base_path}"
        return self.base_url

    async def stop(self) -> None:
        if self._closing is not None:
            self._closing.set()
        if self._gate is not None:
            async with self._gate:
                self._gate.notify_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- views --------------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return len(self.requests)

    @property
    def held(self) -> int:
        """Requests waiting for `release()` right now."""
        return self._held

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def release(self, n: int | None = None) -> None:
        """Let `n` held requests (present or future) answer; None: all, and hold no more."""
        assert self._gate is not None
        async with self._gate:
            if n is None:
                self._open = True
            else:
                self._passes += n
            self._gate.notify_all()

    async def _wait_released(self) -> None:
        assert self._gate is not None and self._closing is not None
        self._held += 1
        try:
            async with self._gate:
                await self._gate.wait_for(lambda: self._open or self._passes > 0 or self._closing.is_set())
                if not self._open and self._passes > 0:
                    self._passes -= 1
        finally:
            self._held -= 1

    def actions(self) -> list[str]:
        return [request.action for request in self.requests]

    # -- handlers -----------------------------------------------------------------------------

    def _action_for(self, number: int, body: Any) -> Action:
        schedule = self.faults
        if schedule is None:
            return self.default
        if callable(schedule):
            action = schedule(number, body)
            return self.default if action is None else action
        if isinstance(schedule, Mapping):
            return schedule.get(number, self.default)
        return schedule[number] if number < len(schedule) else self.default

    async def _models(self, request: web.Request) -> web.Response:
        self.model_lists += 1
        self.models_queries.append(dict(request.query))
        if self.models_status != 200:
            return self._error(self.models_status, f"fake error {self.models_status}")
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"requests": self.count, "max_in_flight": self.max_in_flight, "actions": self.actions()}
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        number = len(self.requests)
        arrived = time.monotonic()
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            raw = await request.read()
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                body = None
            action = self._action_for(number, body)
            name = action if isinstance(action, str) else "custom"
            peer = request.transport.get_extra_info("peername") if request.transport else None
            record = RecordedRequest(
                number, name or "ok", body, dict(request.headers), arrived, peer, query=dict(request.query)
            )
            self.requests.append(record)
            if self.latency:
                await asyncio.sleep(self.latency)
            try:
                return await self._respond(request, action, body)
            finally:
                record.finished = time.monotonic()
        finally:
            self._in_flight -= 1

    async def _respond(self, request: web.Request, action: Action, body: Any) -> web.StreamResponse:
        if isinstance(action, dict):
            if action.get("delay"):
                await asyncio.sleep(float(action["delay"]))
            if action.get("hold"):
                await self._wait_released()
            status = int(action.get("status", 200))
            if "body" in action:  # a whole reply body of the test's making, any JSON, or bytes as they are
                raw = action["body"]
                raw = raw if isinstance(raw, bytes) else json.dumps(raw).encode()  # json: big integers too
                return web.Response(body=raw, status=status, content_type="application/json")
            if status != 200:
                return web.json_response(action.get("json", {}), status=status, headers=action.get("headers"))
            return self._completion(
                body,
                action.get("content", fake_summary(body)),
                finish_reason=action.get("finish_reason", "stop"),
                extra=action.get("message_extra"),
            )
        name, _, argument = (action or "ok").partition(":")
        if name == "ok":
            return self._completion(body, fake_summary(body))
        if name in ("429", "429-date") or (name.isdigit() and int(name) in ERROR_STATUSES):
            headers = {}
            if argument:
                seconds = float(argument)
                if name == "429-date":
                    headers["Retry-After"] = email.utils.formatdate(time.time() + seconds, usegmt=True)
                else:
                    headers["Retry-After"] = argument
            status = 429 if name.startswith("429") else int(name)
            return self._error(status, f"fake error {status}", headers)
        if name == "hold":
            await self._wait_released()
            return self._completion(body, fake_summary(body))
        if name == "hang":
            assert self._closing is not None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.hang_seconds)
            return self._completion(body, fake_summary(body))
        if name == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=200)
        if name == "drop_mid":
            response = web.StreamResponse(status=200)
            response.content_type = "application/json"
            response.content_length = 4096
            await response.prepare(request)
            await response.write(b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "con')
            assert request.transport is not None
            request.transport.close()
            return response
        if name == "invalid_json":
            return web.Response(text='{"choices": [ this is not json', content_type="application/json")
        if name == "no_choices":
            return self._error(200, "upstream provider failed")
        if name == "no_content":
            return self._reply(body, {"role": "assistant"}, "stop")
        if name == "empty":
            return self._completion(body, "   ")
        if name == "think_only":
            return self._completion(body, "<think>The user wants a summary. Let me think...")
        if name == "reasoning_only":
            message = {"role": "assistant", "content": None, "reasoning_content": "thinking hard"}
            return self._reply(body, message, "stop")
        if name == "length":
            return self._completion(body, fake_summary(body)[:20], finish_reason="length")
        if name == "prefixed":
            return self._completion(body, "[CONTEXT SUMMARY]: [CONTEXT SUMMARY]: " + fake_summary(body))
        if name == "think":
            return self._completion(body, "<think>\nplanning the summary\n</think>\n\n" + fake_summary(body))
        if name in ("echo", "echo_auth"):  # a careless proxy: what it was sent comes back
            quoted = f"{self.credential_header}: {request.headers.get(self.credential_header, '')}"
            if name == "echo_auth":
                return self._error(int(argument or 401), f"refused {quoted}")
            prompt = prompt_text(body)
            if argument:  # echo:N echoes the first N characters of the prompt only
                prompt = prompt[: int(argument)]
            return self._completion(body, f"{quoted}\n{prompt}")
        raise ValueError(f"unknown fake action {action!r}")

    def _completion(
        self, body: Any, content: str, *, finish_reason: str = "stop", extra: dict[str, Any] | None = None
    ) -> web.Response:
        message = {"role": "assistant", "content": content, **(extra or {})}
        return self._reply(body, message, finish_reason)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
        """An OpenAI-style error body with `status` (200 too: a gateway's error in a 200)."""
        error = {"error": {"message": message, "type": "fake", "code": status}}
        if status == 200:
            error = {"error": {"message": message}}
        return web.json_response(error, status=status, headers=headers)

    def _reply(self, body: Any, message: dict[str, Any], finish_reason: str) -> web.Response:
        content = message.get("content") or ""
        usage = {
            "prompt_tokens": max(1, prompt_chars(body) // 4),
            "completion_tokens": max(1, len(content) // 4),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        payload = {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model) if isinstance(body, dict) else self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": usage,
        }
        return web.Response(body=orjson.dumps(payload), content_type="application/json")


class FakeServerThread:
    """A `FakeOpenAIServer` running in a background thread with its own event loop.

    For code under test that runs its own loop (a CLI through click's CliRunner, `asyncio.run`
    inside the code): ``with FakeServerThread(faults=[...]) as server: server.base_url``.
    """

    def __init__(self, server: FakeOpenAIServer | None = None, **kwargs: Any) -> None:
        self.server = server if server is not None else FakeOpenAIServer(**kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.server.requests

    @property
    def max_in_flight(self) -> int:
        return self.server.max_in_flight

    @property
    def held(self) -> int:
        return self.server.held

    def release(self, n: int | None = None) -> None:
        """`FakeOpenAIServer.release`, from the test's thread; returns once it took effect."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self.server.release(n), self._loop).result(timeout=10)

    def __enter__(self) -> FakeServerThread:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.server.start())
            except BaseException as exc:  # report to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.server.stop())
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai-server", daemon=True)
        self._thread.start()
        if not ready.wait(timeout=10):
            raise RuntimeError("fake server did not start in 10 s")
        if failure:
            raise failure[0]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)


@contextlib.contextmanager
def running_fake_server(**kwargs: Any) -> Iterator[str]:
    """``with running_fake_server(faults=[...], latency=0.1) as base_url:`` (thread-based)."""
    with FakeServerThread(**kwargs) as thread:
        yield thread.base_url


def parse_faults(text: str) -> list[str]:
    """``"429:1,ok,500"`` -> ["429:1", "ok", "500"]; empty items mean ok."""
    return [item.strip() or "ok" for item in text.split(",")] if text else []


async def _serve(args: argparse.Namespace) -> None:
    server = FakeOpenAIServer(faults=parse_faults(args.faults), latency=args.latency, default=args.then)
    base_url = await server.start(args.host, args.port)
    print(base_url, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    with contextlib.suppress(asyncio.TimeoutError):
        # A bounded lifetime: a forgotten server stops by itself.
        await asyncio.wait_for(stop.wait(), args.lifetime)
    await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible chat-completions server for tests.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--faults", default="", help="comma-separated actions for requests 0, 1, 2, ...")
    parser.add_argument("--then", default="ok", help="action for requests after the --faults list")
    parser.add_argument("--lifetime", type=float, default=600.0, help="stop after this many seconds")
    args = parser.parse_args(argv)
    asyncio.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
