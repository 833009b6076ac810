"""The HTTP side of the LLM summarizer: one aiohttp session, retries, limits, failure modes.

Provider-neutral: what differs between APIs (the path, the key's header, the body, what a reply
holds) is the dialect's (`dialects/`), the key and its scrubbing are `credentials`, the sleeps
`backoff`. Kept apart from the prompt logic so each can be tested alone. What it guarantees:

* at most `max_concurrency` requests in flight across the run (one semaphore), and optional
  `rpm` / `tpm` token buckets;
* transient failures (408, 409, 429, 5xx and Anthropic's 529, dropped connections, timeouts,
  unusable or truncated replies) are retried with exponential backoff and full jitter; a 429
  (or a Retry-After) pauses the whole client, since every request would hit the same limit;
* permanent failures fail fast: 400/404/422 and other 4xx raise `SummaryError` at once, and a
  401/403 (or what the dialect takes as a refused key) raises `EndpointAuthError` for this and
  every later call without sending anything;
* an endpoint that has never answered at all (refused, unresolvable, silent) is probed by one
  request while the others wait, and, if it stays silent, raises `EndpointUnreachableError` for
  every call (see `contact`): a wrong URL stops the run instead of falling back row by row;
* the API key appears only in its header: every message we build is scrubbed, and exceptions
  are raised outside `except` blocks so no aiohttp exception (whose repr may hold request
  headers) is chained to them.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import aiohttp
import orjson

from trajectory_compressor.settings import ConfigError, LLMConfig
from trajectory_compressor.summarize.llm.backoff import Backoff
from trajectory_compressor.summarize.llm.contact import EndpointContact
from trajectory_compressor.summarize.llm.credentials import FOLLOW_REDIRECTS, Credentials
from trajectory_compressor.summarize.llm.dialects import dialect_for
from trajectory_compressor.summarize.llm.dialects.base import Messages
from trajectory_compressor.summarize.llm.preflight import model_list
from trajectory_compressor.summarize.llm.ratelimit import RateLimiter, RequestGate, estimate_request_tokens
from trajectory_compressor.summarize.llm.reply import (
    Failure,
    Refused,
    Reply,
    ReplyReader,
    parse_retry_after,
    read_capped,
    reply_byte_limit,
)
from trajectory_compressor.summarize.llm.usage import UsageTracker
from trajectory_compressor.summarize.tally import note_call, note_endpoint, note_error
from trajectory_compressor.summarize.url_credentials import display_url
from trajectory_compressor.types import EndpointAuthError, EndpointUnreachableError, PromptTooLongError, SummaryError

logger = logging.getLogger(__name__)

USER_AGENT = "trajectory-compressor/0.1"
LENGTH_RETRY_GROWTH = 2  # a reply cut by max_tokens is retried with twice the room...
LENGTH_RETRY_MAX_FACTOR = 4  # ...up to four times the original max_tokens
# What servers say when a prompt does not fit: llama.cpp ("exceed_context_size_error"), OpenAI
# and vLLM ("maximum context length", "context_length_exceeded"), Anthropic and others ("prompt is too long").
_CONTEXT_OVERFLOW = re.compile(
    rb"exceed_context|context[_ ]length|maximum context|context size|context window|prompt is too long|too many tokens",
    re.IGNORECASE,
)
FAIL_FAST_STATUSES = frozenset({400, 404, 422})  # named in messages; every other 4xx fails fast too


@dataclass(frozen=True)
class Completion:
    """A usable reply (already cleaned), the last failed attempt's error before it, and its tokens.

    The requests it took are counted in the current tally (`summarize.tally`), not here.
    """

    text: str
    last_error: str | None
    prompt_tokens: int
    completion_tokens: int


_NOT_SENT = object()  # an attempt that stopped before sending (auth failure seen meanwhile)


class ChatClient:
    """POSTs one dialect's chat requests to `{base_url}{dialect.path}` for one run.

    `config.retry_delay` / `config.retry_max_delay` (seconds) shape the retry sleeps (`backoff`);
    tests pass tiny values. `clean` turns a reply's text into the stored text; an empty result is
    retried like an error. A `gate` (shared with other processes) replaces the local `rpm` / `tpm`
    buckets and adds its own cap on requests in flight, for limits that hold across many clients.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        usage: UsageTracker | None = None,
        clean: Callable[[str], str | Refused] = str.strip,
        retry_after_cap: float = 300.0,
        rng: random.Random | None = None,
        gate: RequestGate | None = None,
    ) -> None:
        if not config.base_url or not config.model:
            raise ConfigError("the LLM client needs a base_url and a model")
        self.config = config
        self.usage = usage if usage is not None else UsageTracker(config.price_in, config.price_out)
        self.dialect = dialect_for(config)
        self.credentials = Credentials(config, self.dialect)
        self.url = self.credentials.url_for(self.dialect.path)
        self.endpoint = display_url(self.url)
        self.contact = EndpointContact(self.credentials.endpoint)
        self.reader = ReplyReader(self.dialect, self.credentials, clean)
        self._backoff = Backoff(config.retry_delay, config.retry_max_delay, retry_after_cap=retry_after_cap,
                                rng=rng, usage=self.usage)  # fmt: skip
        self._timeout = aiohttp.ClientTimeout(total=config.request_timeout)
        self._session: aiohttp.ClientSession | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._limiter = RateLimiter(config.rpm, config.tpm)
        self._gate = gate
        self._auth_error: str | None = None

    async def complete(
        self, messages: Messages, *, max_tokens: int, label: str = "", prompt_estimate: int | None = None
    ) -> Completion:
        """Send `messages` until a usable reply arrives or the retries run out.

        `prompt_estimate` (prompt tokens, for `tpm`) defaults to characters / 4. `label` names
        the row in log lines only. Raises `SummaryError` (fatal status or retries exhausted),
        `EndpointAuthError` (401/403, now or earlier) or `EndpointUnreachableError` (the endpoint
        never answered since the run started).
        """
        calls = prompt_tokens = completion_tokens = 0  # calls: for the message only (the tally counts)
        last: Failure | None = None
        tokens = max_tokens
        caller = object()  # this call, for the first-contact probe (`contact`)
        note_endpoint(self.contact.silence)
        self.contact.asking(caller)
        try:
            for attempt in range(self.config.max_retries + 1):
                outcome = await self._attempt(messages, tokens, prompt_estimate, caller)
                if not isinstance(outcome, (Reply, Failure)):
                    break  # not sent: a refusal of the credentials was seen meanwhile
                calls += 1
                prompt_tokens += outcome.prompt_tokens
                completion_tokens += outcome.completion_tokens
                if isinstance(outcome, Reply) or not outcome.no_response:
                    self.contact.heard()
                if isinstance(outcome, Reply):
                    self._backoff.succeeded()
                    self.usage.record_success()
                    last_error = last.message if last else None
                    return Completion(outcome.text, last_error, prompt_tokens, completion_tokens)
                note_error()
                last = outcome
                if outcome.no_response:
                    self.contact.no_response(caller, outcome.message)
                self._backoff.throttled(outcome.cause, outcome.retry_after)
                if not outcome.retryable or attempt == self.config.max_retries:
                    break
                self.usage.record_retry(outcome.cause)
                if outcome.cause == "length":
                    tokens = min(tokens * LENGTH_RETRY_GROWTH, max_tokens * LENGTH_RETRY_MAX_FACTOR)
                delay = self._backoff.delay(attempt, outcome.retry_after)
                logger.debug(
                    "%s: attempt %d failed (%s), retrying in %.2fs",
                    label or "summary", attempt + 1, outcome.message, delay,
                )  # fmt: skip
                self.usage.backoff_seconds += delay
                await asyncio.sleep(delay)
                if self._auth_error is not None:
                    break
            if self.contact.probing(caller):  # it ended unanswered: is the server there at all?
                self.contact.server_up = await self._server_answers()
        finally:  # also when the row's deadline cancels it: a probe that stops unanswered settles it
            self.contact.done(caller)
        await self.contact.verdict(caller)  # a probe handed over: its row waits for the next one's verdict
        # Every raise below is outside an `except` block: no aiohttp exception is chained.
        if self._auth_error is not None:
            self.usage.record_failure("auth")
            raise EndpointAuthError(self._auth_error)
        if self.contact.unreachable is not None:
            self.usage.record_failure("unreachable")
            raise EndpointUnreachableError(self.contact.unreachable)
        assert last is not None
        if last.cause == "context":
            raise PromptTooLongError(last.message)
        self.usage.record_failure(last.cause)
        message = f"gave up after {calls} attempts; last error: {last.message}" if last.retryable else last.message
        # INFO, not WARNING: the row's metrics carry the error, and a failing endpoint would
        # otherwise print one line per row over the progress bar.
        logger.info("%s: %s", label or "summary", message)
        raise SummaryError(message)

    async def _server_answers(self) -> bool:
        """Whether the server sends back any HTTP response to a GET of its model list (the
        preflight's request): asked when a probe ends unanswered, to tell a server that drops one
        row's request from one that is down."""
        session, _ = self._ensure_session()
        url = self.credentials.url_for(self.dialect.models_path)
        return await model_list(session, url, self.config.request_timeout) is not None

    async def aclose(self) -> None:
        """Close the HTTP session; the client may be used again afterwards (a new one opens)."""
        session, self._session, self._semaphore = self._session, None, None
        if session is not None and not session.closed:
            await session.close()

    # -- one attempt --------------------------------------------------------------------------

    def _ensure_session(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        """One session per client, created inside the running loop on first use."""
        if self._session is None or self._session.closed:
            headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": USER_AGENT}
            headers.update(self.credentials.headers())
            connector = aiohttp.TCPConnector(limit=self.config.max_concurrency)
            self._session = aiohttp.ClientSession(connector=connector, headers=headers)
            self._semaphore = asyncio.Semaphore(self.config.max_concurrency)
        assert self._semaphore is not None
        return self._session, self._semaphore

    async def _attempt(
        self, messages: Messages, max_tokens: int, prompt_estimate: int | None, caller: object
    ) -> Reply | Failure | object:
        if self._auth_error is not None or not await self.contact.may_send(caller):
            return _NOT_SENT
        session, semaphore = self._ensure_session()
        payload = orjson.dumps(self.dialect.body(messages, max_tokens))
        async with semaphore:
            await self._backoff.wait_not_before()
            if self._limiter.enabled or self._gate is not None:
                needed = (
                    estimate_request_tokens(messages, max_tokens)
                    if prompt_estimate is None
                    else prompt_estimate + max_tokens
                )
                acquire = self._gate.acquire if self._gate is not None else self._limiter.acquire
                self.usage.rate_limit_wait_seconds += await acquire(needed)
            try:
                return await self._send_counted(payload, session, max_tokens)
            finally:
                if self._gate is not None:
                    self._gate.release()

    async def _send_counted(
        self, payload: bytes, session: aiohttp.ClientSession, max_tokens: int
    ) -> Reply | Failure | object:
        """One send, counted in the usage (in flight, requests, tokens) even when cancelled."""
        if self._auth_error is not None:
            return _NOT_SENT
        self.usage.request_started()
        note_call()
        outcome: Reply | Failure | None = None
        try:
            outcome = await self._send(session, payload, reply_byte_limit(max_tokens))
        finally:  # also when the caller cancels us (row timeout)
            self.usage.request_finished(*((outcome.prompt_tokens, outcome.completion_tokens) if outcome else ()))
        return outcome

    async def _send(self, session: aiohttp.ClientSession, payload: bytes, byte_limit: int) -> Reply | Failure:
        """POST once and classify the result; never raises for network or HTTP trouble.

        At most `byte_limit` bytes of the reply are read: a larger body is a failure that is
        not retried (an endpoint that ignored `max_tokens` this far will do it again), so the
        row takes the failure policy instead of a multi-megabyte "summary".
        """
        responded = False
        sanitize = self.credentials.sanitize
        try:
            async with session.post(
                self.url, data=payload, timeout=self._timeout, allow_redirects=FOLLOW_REDIRECTS
            ) as response:
                responded = True
                status = response.status
                retry_after = response.headers.get("Retry-After")
                location = response.headers.get("Location")
                raw = await read_capped(response, byte_limit)
                if raw is None:
                    message = f"reply body over {byte_limit} bytes from {self.endpoint} (max_tokens ignored?)"
                    return Failure("too_large", message, False)
        except (asyncio.TimeoutError, TimeoutError):
            failure = Failure("timeout", f"no reply within {self.config.request_timeout:g}s", True)
        except aiohttp.InvalidURL:
            failure = Failure("invalid_url", f"invalid endpoint URL {self.endpoint}", False)
        except aiohttp.ClientPayloadError as exc:
            failure = Failure("connection", sanitize(f"connection dropped mid-reply ({exc})"), True)
        except (aiohttp.ClientError, OSError) as exc:
            failure = Failure("connection", sanitize(f"{type(exc).__name__}: {exc}"), True)
        except Exception as exc:  # aiohttp's ValueError/TypeError for a request it cannot build
            failure = Failure("client_error", sanitize(f"{type(exc).__name__}: {exc}"), False)
        else:
            return self._classify(status, retry_after, raw, location)
        return replace(failure, no_response=not responded)

    def _classify(self, status: int, retry_after: str | None, raw: bytes, location: str | None) -> Reply | Failure:
        said = self.credentials.status_message
        if self.credentials.refused(status, raw):
            message = f"HTTP {status} from {self.endpoint}: the endpoint refused the credentials"
            detail = self.credentials.snippet(raw)
            if detail:
                message += f" ({detail})"
            message += self.credentials.no_key_hint()
            if self._auth_error is None:  # said once, by the run that stops on it (`EndpointAuthError`)
                logger.debug("%s", message)
                self._auth_error = message
            return Failure("auth", message, False)
        if status == 429:
            return Failure("429", said(status, raw, self.endpoint), True, parse_retry_after(retry_after))
        if status in (408, 409):
            return Failure("408/409", said(status, raw, self.endpoint), True)
        if status >= 500:  # Anthropic's 529 (overloaded) too
            return Failure("5xx", said(status, raw, self.endpoint), True, parse_retry_after(retry_after))
        if status in (400, 413) and _CONTEXT_OVERFLOW.search(raw[:2000]):
            return Failure("context", said(status, raw, self.endpoint), False)
        if not 200 <= status < 300:  # a redirect too: it would redirect again
            return Failure(str(status), said(status, raw, self.endpoint, location), False)
        return self.reader.read(raw)
