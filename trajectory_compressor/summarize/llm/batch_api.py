"""The HTTP side of a provider's batch API, whatever the provider: one session, retries, lists.

The calls themselves are the dialect's (`dialects/openai_batches.py`: Files + Batches;
`dialects/anthropic_batches.py`: Message Batches); what they share is here. Every call is safe to
repeat after a crash or a lost reply, because a call that creates something is looked up before
it is repeated (`call(..., recheck=)`), through the provider's list endpoints (`pages`).

Listing is that safety net, not a requirement: a provider without list endpoints (404 / 405),
or whose pages ignore the cursor or never end (at most `MAX_PAGES` are read), is said once
(`warn`), and the run relies on its own record: only a reply lost on the way back goes unchecked.

Transient failures (429 with or without Retry-After, 5xx and Anthropic's 529, 408/409, dropped
connections, timeouts) are retried with full-jitter backoff; the credentials are refused at once
(401/403); every other status is one `BatchAPIError` line. The API key travels only in its
dialect's header and is scrubbed from every message, as in the chat client (`credentials`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.backoff import Backoff
from trajectory_compressor.summarize.llm.client import USER_AGENT
from trajectory_compressor.summarize.llm.contact import EndpointContact
from trajectory_compressor.summarize.llm.credentials import FOLLOW_REDIRECTS, Credentials
from trajectory_compressor.summarize.llm.dialects.base import Dialect
from trajectory_compressor.summarize.llm.reply import parse_retry_after

logger = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({408, 409, 429})
PAGE = 100
MAX_PAGES = 100  # 10,000 items: far past a day of anyone's batches (the look stops at older ones)
ABSENT_STATUSES = frozenset({404, 405})  # a list endpoint the provider does not have
REPLY_LIMIT = 64 << 20  # a JSON reply of the API itself (not a file's content), far above any real one
DOWNLOAD_CHUNK = 1 << 20
LOOK_BACK_SECONDS = 86_400.0  # how far before a request file was written an upload of it is looked for


class BatchAPIError(UsageError, RuntimeError):
    """The batch API refused or kept failing a call: one line, credentials scrubbed (exit 2)."""


def upload_name(nonce: str, sha256: str) -> str:
    """The name a request file is uploaded under, unique to its submission, so a lost upload can be found."""
    return f"tc-{nonce}-{sha256[:16]}.jsonl"


@dataclass(frozen=True)
class Absent:
    """A list endpoint answered 404 / 405: the provider has none."""

    message: str


class BatchTransport:
    """One provider's batch calls over one aiohttp session; `aclose` ends it.

    `dialect` gives the key's headers, `Credentials` the scrubbing, `EndpointContact` says a
    wrong URL as the live client says it, `Backoff` the sleeps: both clients treat the key, the
    endpoint and a failing server alike.
    """

    def __init__(
        self,
        config: LLMConfig,
        dialect: Dialect,
        *,
        rng: random.Random | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.credentials = Credentials(config, dialect)
        self.base = self.credentials.base
        self.endpoint = self.credentials.endpoint
        self.contact = EndpointContact(self.endpoint)
        self._backoff = Backoff(config.retry_delay, config.retry_max_delay, retry_after_cap=config.retry_max_delay,
                                rng=rng)  # fmt: skip
        self._session: aiohttp.ClientSession | None = None
        self._warn = warn or logger.warning
        self._unlisted: set[str] = set()  # list endpoints found missing or unusable: not asked again
        self._warned = False

    def sanitize(self, text: str) -> str:
        return self.credentials.sanitize(text)

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        payload: bytes | None = None,
        data: Callable[[], aiohttp.FormData] | None = None,
        params: dict[str, str] | None = None,
        recheck: Callable[[], Any] | None = None,
        what: str,
        listing: bool = False,
    ) -> Any:
        """One API call with retries; `recheck` finds what a lost attempt may have made. A
        `listing` call the provider does not have (404, 405) returns `Absent`. `payload` is a
        JSON body already encoded (a large one, built without parsing it again)."""
        url = self.credentials.url_for(path)
        for attempt in range(self.config.max_retries + 1):
            if attempt and recheck is not None:
                made = await recheck()
                if made is not None:
                    return made
            session = self._ensure_session()
            failure: str | None = None
            retry_after: float | None = None
            try:
                body = orjson.dumps(json) if json is not None else payload
                sent: Any = body if body is not None else (data() if data is not None else None)
                headers = {"Content-Type": "application/json"} if body is not None else None
                async with session.request(
                    method, url, data=sent, params=params, headers=headers, timeout=self._timeout(),
                    allow_redirects=FOLLOW_REDIRECTS,
                ) as response:  # fmt: skip
                    self.contact.heard()
                    raw = await response.content.read(REPLY_LIMIT)
                    if 200 <= response.status < 300:
                        try:
                            return orjson.loads(raw)
                        except orjson.JSONDecodeError:
                            failure = f"{what}: the reply is not JSON"
                    elif listing and response.status in ABSENT_STATUSES:
                        return Absent(self.credentials.status_message(response.status, raw, f"GET {path}"))
                    else:
                        failure = self._refusal(response.status, raw, what, response.headers.get("Location"))
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                failure = self.sanitize(f"{what}: {type(exc).__name__}: {exc}")
                self.contact.no_response(self, failure)
            await self._pause_or_fail(attempt, failure, retry_after)
        raise AssertionError("unreachable")  # _pause_or_fail raises on the last attempt

    async def download(self, url: str, destination: Path, *, what: str) -> None:
        """The body at `url` into `destination` (written whole, then renamed into place)."""
        partial = destination.with_name(f".{destination.name}.partial")
        for attempt in range(self.config.max_retries + 1):
            session = self._ensure_session()
            failure: str | None = None
            retry_after: float | None = None
            try:
                async with session.get(url, timeout=self._timeout(), allow_redirects=FOLLOW_REDIRECTS) as response:
                    self.contact.heard()
                    if response.status == 200:
                        with open(partial, "wb") as handle:
                            async for chunk in response.content.iter_chunked(DOWNLOAD_CHUNK):
                                handle.write(chunk)
                            handle.flush()
                            os.fsync(handle.fileno())
                        os.replace(partial, destination)
                        return
                    raw = await response.content.read(REPLY_LIMIT)
                    failure = self._refusal(response.status, raw, what, response.headers.get("Location"))
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                if isinstance(exc, OSError) and exc.filename:
                    raise BatchAPIError(f"cannot write {quoted(exc.filename)}: {exc.strerror or exc}") from None
                failure = self.sanitize(f"{what}: {type(exc).__name__}: {exc}")
                self.contact.no_response(self, failure)
            await self._pause_or_fail(attempt, failure, retry_after)

    async def pages(
        self,
        path: str,
        params: dict[str, str],
        *,
        since: float = 0.0,
        cursor: str = "after",
        made_at: Callable[[dict[str, Any]], float | None],
    ) -> AsyncIterator[dict[str, Any]]:
        """Every item of a list endpoint, newest first, following `has_more` and the `cursor`
        parameter (the last item's id), until the items were made (`made_at`, epoch seconds) more
        than a day (clock skew, queueing) before `since`.

        A list the provider lacks, or one that would never end (a cursor it gives back again,
        more than `MAX_PAGES` pages), yields what it gave so far and is not asked again.
        """
        if path in self._unlisted:
            return
        after: str | None = None
        cursors: set[str] = set()
        for _ in range(MAX_PAGES):
            query = {**params, "limit": str(PAGE), **({cursor: after} if after else {})}
            page = await self.call("GET", path, params=query, what=f"list {path.lstrip('/')}", listing=True)
            if isinstance(page, Absent):
                self._unusable_list(path, f"the provider has no list of {path.lstrip('/')} ({page.message})")
                return
            items = page.get("data") if isinstance(page, dict) else None
            if not isinstance(items, list):
                return
            for item in items:
                if not isinstance(item, dict) or "id" not in item:
                    continue
                made = made_at(item)
                if since and made is not None and made < since - LOOK_BACK_SECONDS:
                    return
                yield item
            if not page.get("has_more") or not items:
                return
            after = str(page.get("last_id") or items[-1].get("id"))
            if after in cursors:
                self._unusable_list(
                    path, f"the provider's list of {path.lstrip('/')} ignores `{cursor}` (a page came back again)"
                )
                return
            cursors.add(after)
        self._unusable_list(path, f"the provider's list of {path.lstrip('/')} did not end within {MAX_PAGES} pages")

    def lists(self, path: str) -> bool:
        """Whether the list at `path` is still taken to be usable (not found missing or endless)."""
        return path not in self._unlisted

    def _unusable_list(self, path: str, why: str) -> None:
        """Stop asking `path`, and say once per run what that costs."""
        self._unlisted.add(path)
        if not self._warned:
            self._warned = True
            self._warn(
                f"warning: {why}: a lost reply to an upload or a batch create cannot be checked, "
                "so the run relies on its own record"
            )

    def _refusal(self, status: int, raw: bytes, what: str, location: str | None = None) -> str:
        """The message for a non-2xx reply; raises at once when retrying cannot help (a redirect too)."""
        message = f"{what}: {self.credentials.status_message(status, raw, self.endpoint, location)}"
        if self.credentials.refused(status, raw):
            raise BatchAPIError(f"{message} (the endpoint refused the credentials{self.credentials.no_key_hint()})")
        if status in TRANSIENT_STATUSES or status >= 500:
            return message
        raise BatchAPIError(message)

    async def _pause_or_fail(self, attempt: int, failure: str | None, retry_after: float | None) -> None:
        """Sleep before the next attempt, or raise the last failure when none is left."""
        assert failure is not None
        if attempt >= self.config.max_retries:
            if self.contact.silent:  # a wrong URL or a server that is down, said as the live client says it
                raise BatchAPIError(self.contact.message())
            raise BatchAPIError(f"{failure} (gave up after {attempt + 1} attempts)")
        delay = self._backoff.delay(attempt, retry_after)
        logger.info("%s; retrying in %.1fs", failure, delay)
        await asyncio.sleep(delay)

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=None, sock_connect=self.config.request_timeout,
                                     sock_read=self.config.request_timeout)  # fmt: skip

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **self.credentials.headers()}
            self._session = aiohttp.ClientSession(headers=headers)
        return self._session

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def required(reply: Any, name: str, what: str) -> str:
    """`reply[name]`, a non-empty string, or one line saying the reply lacks it."""
    value = reply.get(name) if isinstance(reply, dict) else None
    if not isinstance(value, str) or not value:
        raise BatchAPIError(f"{what}: the reply has no {name}")
    return value
