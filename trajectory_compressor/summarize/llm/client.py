"""The HTTP side of the LLM summarizer: one aiohttp session, retries, limits, failure modes.

Kept apart from the prompt logic so each can be tested alone. What it guarantees:

* at most `max_concurrency` requests in flight across the run (one semaphore), and optional
  `rpm` / `tpm` token buckets;
* transient failures (408, 409, 429, 5xx, dropped connections, timeouts, unusable or
  truncated replies) are retried with exponential backoff and full jitter; a 429 (or a
  Retry-After) pauses the whole client, since every request would hit the same limit;
* permanent failures fail fast: 400/404/422 and other 4xx raise `SummaryError` at once, and a
  401/403 raises `EndpointAuthError` for this and every later call without sending anything;
* an endpoint that has never answered at all (refused, unresolvable, silent) is probed by one
  request while the others wait, and, if it stays silent, raises `EndpointUnreachableError` for
  every call (see `contact`): a wrong URL stops the run instead of falling back row by row;
* the API key appears only in the Authorization header: every message we build is scrubbed,
  and exceptions are raised outside `except` blocks so no aiohttp exception (whose repr may
  hold request headers) is chained to them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import orjson

from trajectory_compressor.settings import ConfigError, LLMConfig
from trajectory_compressor.summarize.llm.contact import EndpointContact
from trajectory_compressor.summarize.llm.ratelimit import RateLimiter, RequestGate, estimate_request_tokens
from trajectory_compressor.summarize.llm.reply import (
    content_text,
    parse_retry_after,
    read_capped,
    reply_byte_limit,
    usage_numbers,
)
from trajectory_compressor.summarize.llm.request import request_body
from trajectory_compressor.summarize.llm.usage import UsageTracker
from trajectory_compressor.summarize.redact import display_url, redact_secrets, scrub, url_secrets
from trajectory_compressor.summarize.tally import note_call, note_endpoint, note_error
from trajectory_compressor.types import EndpointAuthError, EndpointUnreachableError, PromptTooLongError, SummaryError

logger = logging.getLogger(__name__)

USER_AGENT = "trajectory-compressor/0.1"
ERROR_SNIPPET_CHARS = 300
LENGTH_RETRY_GROWTH = 2  # a reply cut by max_tokens is retried with twice the room...
LENGTH_RETRY_MAX_FACTOR = 4  # ...up to four times the original max_tokens
# What servers say when a prompt does not fit: llama.cpp ("exceed_context_size_error"), OpenAI
# and vLLM ("maximum context length", "context_length_exceeded"), others ("prompt is too long").
_CONTEXT_OVERFLOW = re.compile(
    rb"exceed_context|context[_ ]length|maximum context|context size|context window|prompt is too long|too many tokens",
    re.IGNORECASE,
)
FAIL_FAST_STATUSES = frozenset({400, 404, 422})  # named in messages; every other 4xx fails fast too
AUTH_STATUSES = frozenset({401, 403})


@dataclass(frozen=True)
class Completion:
    """A usable reply (already cleaned) and what it took to get it."""

    text: str
    calls: int
    errors: int
    last_error: str | None
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class _Failure:
    """One attempt that did not produce a usable reply. `message` is already sanitized."""

    cause: str  # retry cause ("429", "5xx", "timeout", ...) or fatal status ("400", "auth", ...)
    message: str
    retryable: bool
    retry_after: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    no_response: bool = False  # not even a status line came back (refused, unresolvable, timed out)


@dataclass(frozen=True)
class Reply:
    """A usable reply: the cleaned summary text and the tokens the endpoint reported."""

    text: str
    prompt_tokens: int
    completion_tokens: int


_NOT_SENT = object()  # an attempt that stopped before sending (auth failure seen meanwhile)


class ChatClient:
    """POSTs chat-completions requests to `{base_url}/chat/completions` for one run.

    `config.retry_delay` / `config.retry_max_delay` (seconds) shape the retry sleeps:
    uniform(0, min(max_delay, delay * 2**attempt)); tests pass tiny values. `clean` turns a reply's
    content into the stored text; an empty result is retried like an error. A `gate` (shared with
    other processes) replaces the local `rpm` / `tpm` buckets and adds its own cap on requests in
    flight, for limits that hold across many clients.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        usage: UsageTracker | None = None,
        clean: Callable[[str], str] = str.strip,
        retry_after_cap: float = 300.0,
        rng: random.Random | None = None,
        gate: RequestGate | None = None,
    ) -> None:
        if not config.base_url or not config.model:
            raise ConfigError("the LLM client needs a base_url and a model")
        self.config = config
        self.usage = usage if usage is not None else UsageTracker(config.price_in, config.price_out)
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.endpoint = display_url(self.url)
        self.contact = EndpointContact(display_url(config.base_url.rstrip("/")))
        self._clean = clean
        self._backoff_base = config.retry_delay
        self._backoff_cap = config.retry_max_delay
        self._retry_after_cap = retry_after_cap
        self._rng = rng or random.Random()
        key = (os.environ.get(config.api_key_env) or "").strip()
        self._api_key = key or None
        self._secrets = (self._api_key, *url_secrets(config.base_url))
        # `https://user:pass@host/v1`: aiohttp sends those as HTTP Basic auth and refuses a
        # second Authorization header, so explicit URL credentials win over the env key.
        self._url_has_credentials = "@" in config.base_url.split("://", 1)[-1].split("/", 1)[0]
        if self._url_has_credentials and self._api_key:
            logger.warning("the base URL carries credentials: using them instead of $%s", config.api_key_env)
        self._timeout = aiohttp.ClientTimeout(total=config.request_timeout)
        self._session: aiohttp.ClientSession | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._limiter = RateLimiter(config.rpm, config.tpm)
        self._gate = gate
        self._not_before = 0.0  # monotonic time before which no request is sent (after a 429)
        self._consecutive_429 = 0
        self._auth_error: str | None = None

    # -- public -------------------------------------------------------------------------------

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        label: str = "",
        prompt_estimate: int | None = None,
    ) -> Completion:
        """Send `messages` until a usable reply arrives or the retries run out.

        `prompt_estimate` (prompt tokens, for `tpm`) defaults to characters / 4. `label` names
        the row in log lines only. Raises `SummaryError` (fatal status or retries exhausted),
        `EndpointAuthError` (401/403, now or earlier) or `EndpointUnreachableError` (the endpoint
        never answered since the run started).
        """
        calls = errors = prompt_tokens = completion_tokens = 0
        last: _Failure | None = None
        tokens = max_tokens
        caller = object()  # this call, for the first-contact probe (`contact`)
        note_endpoint(self.contact.silence)
        try:
            for attempt in range(self.config.max_retries + 1):
                outcome = await self._attempt(messages, tokens, prompt_estimate, caller)
                if outcome is _NOT_SENT:
                    break
                calls += 1
                assert isinstance(outcome, (Reply, _Failure))
                prompt_tokens += outcome.prompt_tokens
                completion_tokens += outcome.completion_tokens
                if isinstance(outcome, Reply) or not outcome.no_response:
                    self.contact.heard()
                if isinstance(outcome, Reply):
                    self._consecutive_429 = 0
                    self.usage.record_success()
                    return Completion(
                        text=outcome.text,
                        calls=calls,
                        errors=errors,
                        last_error=last.message if last else None,
                        prompt_tokens=prompt_tokens,
                        completion_tokens=completion_tokens,
                    )
                errors += 1
                note_error()
                last = outcome
                if outcome.no_response:
                    self.contact.no_response(caller, outcome.message)
                self._note_throttling(outcome)
                if not outcome.retryable or attempt == self.config.max_retries:
                    break
                self.usage.record_retry(outcome.cause)
                if outcome.cause == "length":
                    tokens = min(tokens * LENGTH_RETRY_GROWTH, max_tokens * LENGTH_RETRY_MAX_FACTOR)
                delay = self._retry_delay(attempt, outcome)
                logger.debug(
                    "%s: attempt %d failed (%s), retrying in %.2fs",
                    label or "summary", attempt + 1, outcome.message, delay,
                )  # fmt: skip
                self.usage.backoff_seconds += delay
                await asyncio.sleep(delay)
                if self._auth_error is not None:
                    break
        finally:  # also when the row's deadline cancels it: a probe that stops unanswered settles it
            self.contact.done(caller)
        # Every raise below is outside an `except` block: no aiohttp exception is chained.
        if self._auth_error is not None:
            self.usage.record_failure("auth")
            raise EndpointAuthError(self._auth_error, calls=calls, errors=errors)
        if self.contact.unreachable is not None:
            self.usage.record_failure("unreachable")
            raise EndpointUnreachableError(self.contact.unreachable, calls=calls, errors=errors)
        assert last is not None
        if last.cause == "context":
            raise PromptTooLongError(last.message, calls=calls, errors=errors)
        self.usage.record_failure(last.cause)
        message = f"gave up after {calls} attempts; last error: {last.message}" if last.retryable else last.message
        # INFO, not WARNING: the row's metrics carry the error, and a failing endpoint would
        # otherwise print one line per row over the progress bar.
        logger.info("%s: %s", label or "summary", message)
        raise SummaryError(message, calls=calls, errors=errors)

    async def aclose(self) -> None:
        """Close the HTTP session; the client may be used again afterwards (a new one opens)."""
        session, self._session, self._semaphore = self._session, None, None
        if session is not None and not session.closed:
            await session.close()

    # -- one attempt --------------------------------------------------------------------------

    def _retry_after(self, failure: _Failure) -> float | None:
        if failure.retry_after is None:
            return None
        return min(max(0.0, failure.retry_after), self._retry_after_cap)

    def _note_throttling(self, failure: _Failure) -> None:
        """A 429 (or any Retry-After) pauses every request of the client, not just this one.

        Without Retry-After the pause grows with the 429s seen across the client and resets
        on the next success, so a sustained overload slows the whole run down.
        """
        pause = self._retry_after(failure)
        if failure.cause == "429":
            self._consecutive_429 += 1
            if pause is None:
                pause = min(self._backoff_cap, self._backoff_base * 2 ** (self._consecutive_429 - 1))
        if pause is not None:
            self._not_before = max(self._not_before, time.monotonic() + pause)

    def _retry_delay(self, attempt: int, failure: _Failure) -> float:
        """Full jitter: uniform(0, min(cap, base * 2**attempt)), but at least Retry-After."""
        delay = self._rng.uniform(0.0, min(self._backoff_cap, self._backoff_base * 2**attempt))
        retry_after = self._retry_after(failure)
        return delay if retry_after is None else max(delay, retry_after)

    async def _wait_not_before(self) -> None:
        """Sleep until the client-wide pause (set after a 429) is over, plus a little jitter."""
        paused = False
        while (remaining := self._not_before - time.monotonic()) > 0:
            paused = True
            self.usage.backoff_seconds += remaining
            await asyncio.sleep(remaining)
        if paused:  # spread the herd released at the same instant
            await asyncio.sleep(self._rng.uniform(0.0, min(self._backoff_base, self._backoff_cap)))

    @property
    def has_key(self) -> bool:
        """Whether an API key was found in the environment."""
        return self._api_key is not None

    def auth_headers(self) -> dict[str, str]:
        """The Authorization header, unless the URL carries credentials (aiohttp sends those)."""
        if self._api_key and not self._url_has_credentials:
            return {"Authorization": f"Bearer {self._api_key}"}
        return {}

    def _ensure_session(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        """One session per client, created inside the running loop on first use."""
        if self._session is None or self._session.closed:
            headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": USER_AGENT}
            headers.update(self.auth_headers())
            connector = aiohttp.TCPConnector(limit=self.config.max_concurrency)
            self._session = aiohttp.ClientSession(connector=connector, headers=headers)
            self._semaphore = asyncio.Semaphore(self.config.max_concurrency)
        assert self._semaphore is not None
        return self._session, self._semaphore

    async def _attempt(
        self, messages: list[dict[str, str]], max_tokens: int, prompt_estimate: int | None, caller: object
    ) -> Reply | _Failure | object:
        if self._auth_error is not None or not await self.contact.may_send(caller):
            return _NOT_SENT
        session, semaphore = self._ensure_session()
        payload = orjson.dumps(request_body(self.config, messages, max_tokens))
        async with semaphore:
            await self._wait_not_before()
            if self._limiter.enabled or self._gate is not None:
                if prompt_estimate is None:
                    needed = estimate_request_tokens(messages, max_tokens)
                else:
                    needed = prompt_estimate + max_tokens
                if self._gate is not None:
                    waited = await self._gate.acquire(needed)
                else:
                    waited = await self._limiter.acquire(needed)
                self.usage.rate_limit_wait_seconds += waited
            try:
                return await self._send_counted(payload, session, max_tokens)
            finally:
                if self._gate is not None:
                    self._gate.release()

    async def _send_counted(
        self, payload: bytes, session: aiohttp.ClientSession, max_tokens: int
    ) -> Reply | _Failure | object:
        """One send, counted in the usage (in flight, requests, tokens) even when cancelled."""
        if self._auth_error is not None:
            return _NOT_SENT
        self.usage.request_started()
        note_call()
        outcome: Reply | _Failure | None = None
        try:
            outcome = await self._send(session, payload, reply_byte_limit(max_tokens))
        finally:  # also when the caller cancels us (row timeout)
            self.usage.request_finished(*((outcome.prompt_tokens, outcome.completion_tokens) if outcome else ()))
        return outcome

    async def _send(self, session: aiohttp.ClientSession, payload: bytes, byte_limit: int) -> Reply | _Failure:
        """POST once and classify the result; never raises for network or HTTP trouble.

        At most `byte_limit` bytes of the reply are read: a larger body is a failure that is
        not retried (an endpoint that ignored `max_tokens` this far will do it again), so the
        row takes the failure policy instead of a multi-megabyte "summary".
        """
        responded = False
        try:
            async with session.post(self.url, data=payload, timeout=self._timeout) as response:
                responded = True
                status = response.status
                retry_after = response.headers.get("Retry-After")
                raw = await read_capped(response, byte_limit)
                if raw is None:
                    message = f"reply body over {byte_limit} bytes from {self.endpoint} (max_tokens ignored?)"
                    return _Failure("too_large", message, False)
        except (asyncio.TimeoutError, TimeoutError):
            failure = _Failure("timeout", f"no reply within {self.config.request_timeout:g}s", True)
        except aiohttp.InvalidURL:
            failure = _Failure("invalid_url", f"invalid endpoint URL {self.endpoint}", False)
        except aiohttp.ClientPayloadError as exc:
            failure = _Failure("connection", self.sanitize(f"connection dropped mid-reply ({exc})"), True)
        except (aiohttp.ClientError, OSError) as exc:
            failure = _Failure("connection", self.sanitize(f"{type(exc).__name__}: {exc}"), True)
        except Exception as exc:  # aiohttp's ValueError/TypeError for a request it cannot build
            failure = _Failure("client_error", self.sanitize(f"{type(exc).__name__}: {exc}"), False)
        else:
            return self._classify(status, retry_after, raw)
        return replace(failure, no_response=not responded)

    def _classify(self, status: int, retry_after: str | None, raw: bytes) -> Reply | _Failure:
        if status in AUTH_STATUSES:
            message = f"HTTP {status} from {self.endpoint}: the endpoint refused the credentials"
            detail = self._snippet(raw)
            if detail:
                message += f" ({detail})"
            if not self._api_key:
                message += f"; no API key was found in ${self.config.api_key_env}"
            if self._auth_error is None:
                logger.error("%s", message)
                self._auth_error = message
            return _Failure("auth", message, False)
        if status == 429:
            return _Failure("429", self.status_message(status, raw), True, parse_retry_after(retry_after))
        if status in (408, 409):
            return _Failure("408/409", self.status_message(status, raw), True)
        if status >= 500:
            return _Failure("5xx", self.status_message(status, raw), True, parse_retry_after(retry_after))
        if status in (400, 413) and _CONTEXT_OVERFLOW.search(raw[:2000]):
            return _Failure("context", self.status_message(status, raw), False)
        if not 200 <= status < 300:
            return _Failure(str(status), self.status_message(status, raw), False)
        return self.parse_reply(raw)

    def parse_reply(self, raw: bytes) -> Reply | _Failure:
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return _Failure("invalid_json", f"reply is not valid JSON: {self.sanitize(raw[:120])}", True)
        if not isinstance(data, dict):
            return _Failure("invalid_json", "reply is not a JSON object", True)
        tokens = usage_numbers(data.get("usage"))  # paid for even when the reply is rejected
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(message, dict):
            detail = f": {self._snippet(raw)}" if "error" in data else ""
            return _Failure("no_content", f"reply has no choices[0].message{detail}", True, None, *tokens)
        if choice.get("finish_reason") == "length":
            return _Failure("length", "reply was cut at max_tokens (finish_reason=length)", True, None, *tokens)
        content = content_text(message.get("content"))  # reasoning_content / reasoning: ignored
        if content is None:
            return _Failure("no_content", "reply has no choices[0].message.content", True, None, *tokens)
        text = scrub(self._clean(content), self._secrets)
        if not text:
            return _Failure("empty", "reply was empty after cleaning", True, None, *tokens)
        return Reply(text, *tokens)

    # -- messages -----------------------------------------------------------------------------

    def status_message(self, status: int, raw: bytes, where: str | None = None) -> str:
        """`HTTP 500 from <where, the chat endpoint by default>: <what the body says>`, scrubbed."""
        detail = self._snippet(raw)
        return f"HTTP {status} from {where or self.endpoint}" + (f": {detail}" if detail else "")

    def _snippet(self, raw: bytes) -> str:
        """A short, sanitized view of an error body: `error.message` when the body has one."""
        text: Any = raw.decode("utf-8", errors="replace")
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            error = data.get("error", data.get("detail", data.get("message")))
            if isinstance(error, dict):
                error = error.get("message", error)
            if error is not None:
                text = error if isinstance(error, str) else orjson.dumps(error).decode()
        return self.sanitize(text)

    def sanitize(self, text: str | bytes) -> str:
        """Known secrets scrubbed, credential patterns masked, whitespace collapsed, shortened."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        text = redact_secrets(scrub(text, self._secrets))
        text = re.sub(r"\s+", " ", text).strip()
        if len(text) > ERROR_SNIPPET_CHARS:
            text = text[:ERROR_SNIPPET_CHARS] + "..."
        return text
