"""The provider's Files + Batches API (`/v1/files`, `/v1/batches`): upload, create, look, download.

The OpenAI shape, which Azure OpenAI, Groq, Together, Fireworks and others also serve. Every
call is safe to repeat after a crash or a lost reply, because the two calls that create
something are looked up before they are repeated:

* an uploaded file has a name of its own, chosen before the upload and recorded
  (`tc-<nonce>-<sha256>.jsonl`), so `find_file` finds an upload whose reply was lost, or that a
  killed run made but never recorded;
* a batch is found by its `input_file_id` (`find_batch`), so a create whose reply was lost is
  not sent again: a second batch for the same file would be paid twice.

Listing is that safety net, not a requirement: a provider without list endpoints (404 / 405),
or whose pages ignore `after` or never end (at most `MAX_PAGES` are read), is said once (`warn`),
and the run relies on its own record: only a reply lost on the way back goes unchecked.

Transient failures (429 with or without Retry-After, 5xx, 408/409, dropped connections,
timeouts) are retried with full-jitter backoff; the credentials are refused at once (401/403);
every other status is one `BatchAPIError` line. The API key travels only in the Authorization
header and is scrubbed from every message, as in the chat client.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from trajectory_compressor.errors import UsageError
from trajectory_compressor.messages import quoted
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.client import AUTH_STATUSES, USER_AGENT, ChatClient
from trajectory_compressor.summarize.llm.reply import parse_retry_after
from trajectory_compressor.summarize.llm.request import CHAT_COMPLETIONS_PATH

logger = logging.getLogger(__name__)

TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
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


class BatchAPI:
    """The Files + Batches calls of one run, over one aiohttp session; `async with` closes it.

    `chat` lends its credentials, its scrubbing and the retry settings, so both clients treat
    the key, the endpoint and a failing server alike.
    """

    def __init__(
        self, config: LLMConfig, *, rng: random.Random | None = None, warn: Callable[[str], None] | None = None
    ) -> None:
        self._chat = ChatClient(config)
        self.config = config
        self.base = config.base_url.rstrip("/") if config.base_url else ""
        self._rng = rng or random.Random()
        self._session: aiohttp.ClientSession | None = None
        self._warn = warn or logger.warning
        self._unlisted: set[str] = set()  # list endpoints found missing or unusable: not asked again
        self._warned = False

    @property
    def endpoint(self) -> str:
        return self._chat.endpoint.rsplit("/chat/completions", 1)[0]

    def sanitize(self, text: str) -> str:
        """`text` with the credentials scrubbed, for messages and the batch record."""
        return self._chat.sanitize(text)

    # -- files ---------------------------------------------------------------------------------

    async def upload(self, path: Path, name: str, *, since: float = 0.0) -> str:
        """Upload the request file `path` (`purpose=batch`), or find it uploaded; returns its file id.

        It is looked for under its name first (a killed run may have uploaded it without
        recording it) and after each failed attempt (a lost reply), so it is never sent twice.
        """
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise BatchAPIError(f"cannot read the request file {quoted(path)}: {exc.strerror or exc}") from None

        def form() -> aiohttp.FormData:
            data = aiohttp.FormData()
            data.add_field("purpose", "batch")
            data.add_field("file", content, filename=name, content_type="application/jsonl")
            return data

        async def already() -> str | None:
            return await self.find_file(name, len(content), since=since)

        found = await already()
        if found is not None:
            return found
        reply = await self._call("POST", "/files", data=form, recheck=already, what=f"upload {path.name}")
        return reply if isinstance(reply, str) else _field(reply, "id", "upload")

    async def find_file(self, name: str, size: int, *, since: float = 0.0) -> str | None:
        """The id of an uploaded batch file named `name` with `size` bytes, if there is one.

        Lists come newest first: the look stops at items made well before `since` (epoch
        seconds, when the file was written), so a long history is not read to the end.
        """
        async for item in self._pages("/files", {"purpose": "batch"}, since=since):
            if item.get("filename") == name and item.get("bytes") in (size, None) and item.get("status") != "error":
                return str(item["id"])
        return None

    async def download(self, file_id: str, destination: Path) -> None:
        """The content of `file_id` into `destination` (written whole, then renamed into place)."""
        partial = destination.with_name(f".{destination.name}.partial")
        url = f"{self.base}/files/{file_id}/content"
        for attempt in range(self.config.max_retries + 1):
            session = self._ensure_session()
            failure: str | None = None
            retry_after: float | None = None
            try:
                async with session.get(url, timeout=self._timeout()) as response:
                    self._chat.contact.heard()
                    if response.status == 200:
                        with open(partial, "wb") as handle:
                            async for chunk in response.content.iter_chunked(DOWNLOAD_CHUNK):
                                handle.write(chunk)
                            handle.flush()
                            os.fsync(handle.fileno())
                        os.replace(partial, destination)
                        return
                    raw = await response.content.read(REPLY_LIMIT)
                    failure = self._refusal(response.status, raw, f"download {file_id}")
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                if isinstance(exc, OSError) and exc.filename:
                    raise BatchAPIError(f"cannot write {quoted(exc.filename)}: {exc.strerror or exc}") from None
                failure = self._chat.sanitize(f"download {file_id}: {type(exc).__name__}: {exc}")
                self._chat.contact.no_response(self, failure)
            await self._pause_or_fail(attempt, failure, retry_after)

    # -- batches -------------------------------------------------------------------------------

    async def create_batch(
        self, file_id: str, *, window: str, metadata: dict[str, str], since: float = 0.0
    ) -> dict[str, Any]:
        """Create the batch of `file_id`, or return the one that exists already for it."""
        body = {
            "input_file_id": file_id,
            "endpoint": CHAT_COMPLETIONS_PATH,
            "completion_window": window,
            "metadata": metadata,
        }

        async def already() -> dict[str, Any] | None:
            return await self.find_batch(file_id, since=since)

        found = await already()
        if found is not None:
            return found
        return await self._call("POST", "/batches", json=body, recheck=already, what=f"create the batch of {file_id}")

    async def find_batch(self, file_id: str, *, since: float = 0.0) -> dict[str, Any] | None:
        """The newest batch whose input is `file_id` (not a cancelled one), if there is one."""
        async for item in self._pages("/batches", {}, since=since):
            if item.get("input_file_id") == file_id and item.get("status") not in ("cancelled", "cancelling"):
                return item
        return None

    async def get_batch(self, batch_id: str) -> dict[str, Any]:
        return await self._call("GET", f"/batches/{batch_id}", what=f"look at batch {batch_id}")

    async def cancel_batch(self, batch_id: str) -> dict[str, Any]:
        return await self._call("POST", f"/batches/{batch_id}/cancel", what=f"cancel batch {batch_id}")

    # -- plumbing ------------------------------------------------------------------------------

    async def _pages(self, path: str, params: dict[str, str], *, since: float = 0.0):  # type: ignore[no-untyped-def]
        """Every item of a list endpoint, newest first, following `has_more` / `after`, until the
        items were made more than a day (clock skew, queueing) before `since`.

        A list the provider lacks, or one that would never end (a cursor it gives back again,
        more than `MAX_PAGES` pages), yields what it gave so far and is not asked again.
        """
        if path in self._unlisted:
            return
        after: str | None = None
        cursors: set[str] = set()
        for _ in range(MAX_PAGES):
            query = {**params, "limit": str(PAGE), **({"after": after} if after else {})}
            page = await self._call("GET", path, params=query, what=f"list {path.lstrip('/')}", listing=True)
            if isinstance(page, _Absent):
                self._unusable_list(path, f"the provider has no list of {path.lstrip('/')} ({page.message})")
                return
            items = page.get("data") if isinstance(page, dict) else None
            if not isinstance(items, list):
                return
            for item in items:
                if not isinstance(item, dict) or "id" not in item:
                    continue
                made = item.get("created_at")
                if since and isinstance(made, (int, float)) and made < since - LOOK_BACK_SECONDS:
                    return
                yield item
            if not page.get("has_more") or not items:
                return
            after = str(page.get("last_id") or items[-1].get("id"))
            if after in cursors:
                self._unusable_list(
                    path, f"the provider's list of {path.lstrip('/')} ignores `after` (a page came back again)"
                )
                return
            cursors.add(after)
        self._unusable_list(path, f"the provider's list of {path.lstrip('/')} did not end within {MAX_PAGES} pages")

    def _unusable_list(self, path: str, why: str) -> None:
        """Stop asking `path`, and say once per run what that costs."""
        self._unlisted.add(path)
        if not self._warned:
            self._warned = True
            self._warn(
                f"warning: {why}: a lost reply to an upload or a batch create cannot be checked, "
                "so the run relies on its own record"
            )

    async def _call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        data: Callable[[], aiohttp.FormData] | None = None,
        params: dict[str, str] | None = None,
        recheck: Callable[[], Any] | None = None,
        what: str,
        listing: bool = False,
    ) -> Any:
        """One API call with retries; `recheck` finds what a lost attempt may have made. A
        `listing` call the provider does not have (404, 405) returns `_Absent`."""
        url = self.base + path
        for attempt in range(self.config.max_retries + 1):
            if attempt and recheck is not None:
                made = await recheck()
                if made is not None:
                    return made
            session = self._ensure_session()
            failure: str | None = None
            retry_after: float | None = None
            try:
                payload = orjson.dumps(json) if json is not None else (data() if data is not None else None)
                headers = {"Content-Type": "application/json"} if json is not None else None
                async with session.request(
                    method, url, data=payload, params=params, headers=headers, timeout=self._timeout()
                ) as response:
                    self._chat.contact.heard()
                    raw = await response.content.read(REPLY_LIMIT)
                    if 200 <= response.status < 300:
                        try:
                            return orjson.loads(raw)
                        except orjson.JSONDecodeError:
                            failure = f"{what}: the reply is not JSON"
                    elif listing and response.status in ABSENT_STATUSES:
                        return _Absent(self._chat.status_message(response.status, raw, f"GET {path}"))
                    else:
                        failure = self._refusal(response.status, raw, what)
                        retry_after = parse_retry_after(response.headers.get("Retry-After"))
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                failure = self._chat.sanitize(f"{what}: {type(exc).__name__}: {exc}")
                self._chat.contact.no_response(self, failure)
            await self._pause_or_fail(attempt, failure, retry_after)
        raise AssertionError("unreachable")  # _pause_or_fail raises on the last attempt

    def _refusal(self, status: int, raw: bytes, what: str) -> str:
        """The message for a non-2xx reply; raises at once when retrying cannot help."""
        message = f"{what}: {self._chat.status_message(status, raw, self.endpoint)}"
        if status in AUTH_STATUSES:
            hint = "" if self._chat.has_key else f"; no API key was found in ${self.config.api_key_env}"
            raise BatchAPIError(f"{message} (the endpoint refused the credentials{hint})")
        if status in TRANSIENT_STATUSES or status >= 500:
            return message
        raise BatchAPIError(message)

    async def _pause_or_fail(self, attempt: int, failure: str | None, retry_after: float | None) -> None:
        """Sleep before the next attempt, or raise the last failure when none is left."""
        assert failure is not None
        if attempt >= self.config.max_retries:
            if self._chat.contact.silent:  # a wrong URL or a server that is down, said as the live client says it
                raise BatchAPIError(self._chat.contact.message())
            raise BatchAPIError(f"{failure} (gave up after {attempt + 1} attempts)")
        base, cap = self.config.retry_delay, self.config.retry_max_delay
        delay = self._rng.uniform(0.0, min(cap, base * 2**attempt))
        if retry_after is not None:
            delay = max(delay, min(retry_after, cap))
        logger.info("%s; retrying in %.1fs", failure, delay)
        await asyncio.sleep(delay)

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=None, sock_connect=self.config.request_timeout,
                                     sock_read=self.config.request_timeout)  # fmt: skip

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"Accept": "application/json", "User-Agent": USER_AGENT, **self._chat.auth_headers()}
            self._session = aiohttp.ClientSession(headers=headers)
        return self._session

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()

    async def __aenter__(self) -> BatchAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass(frozen=True)
class _Absent:
    """A list endpoint answered 404 / 405: the provider has none."""

    message: str


def _field(reply: Any, name: str, what: str) -> str:
    value = reply.get(name) if isinstance(reply, dict) else None
    if not isinstance(value, str) or not value:
        raise BatchAPIError(f"{what}: the reply has no {name}")
    return value
