"""The API key and the endpoint URL's own credentials: where they travel, and where they never do.

The key is read from the environment only (`--api-key-env`, or the dialect's own variable) and
travels only in the header its dialect names (`Authorization: Bearer`, Anthropic's `x-api-key`),
and only to the base URL: no request that carries it follows a redirect (`FOLLOW_REDIRECTS`), since
aiohttp drops `Authorization` on a redirect to another host but keeps every other header.
A URL like `https://user:pass@host/v1` is sent as HTTP Basic auth by aiohttp, which refuses a
second Authorization header: then the URL's credentials win over a Bearer key. Every message
built from what an endpoint sends back (an error body may quote our headers) goes through
`sanitize`: known secrets scrubbed, credential patterns masked. The live client and the batch
calls share one `Credentials` per endpoint, so both treat the key and the endpoint alike.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

import orjson

from trajectory_compressor.errors import UsageError
from trajectory_compressor.settings import LLMConfig
from trajectory_compressor.summarize.llm.dialects import key_env
from trajectory_compressor.summarize.llm.dialects.base import Dialect
from trajectory_compressor.summarize.redact import redact_secrets, scrub
from trajectory_compressor.summarize.url_credentials import display_url, url_secrets

logger = logging.getLogger(__name__)

ERROR_SNIPPET_CHARS = 300
# Given as `allow_redirects` to every request carrying the key: a 3xx is a reply, said with where
# it points (`status_message`). Followed, it would take Anthropic's `x-api-key` or Gemini's
# `x-goog-api-key` to whatever host the endpoint names.
FOLLOW_REDIRECTS = False
# The shortest API key scrubbed from a summary (`scrub_summary`). A shorter key is a local
# server's placeholder (vLLM, Ollama, llama.cpp take any text: `EMPTY`, `ollama`, `test`), no
# provider's, and in a summary it is a word the summary needs: scrubbed, `pytest` read
# `py[REDACTED]`. Messages are still scrubbed of it (`sanitize`), where that costs nothing.
SUMMARY_SECRET_CHARS = 8


class Credentials:
    """One endpoint's key (from the environment) and URL credentials, and the scrubbing of both."""

    def __init__(self, config: LLMConfig, dialect: Dialect) -> None:
        self.key_env = key_env(config)
        self.key = (os.environ.get(self.key_env) or "").strip() or None
        if self.key is not None and not self.key.isprintable():
            # aiohttp refuses such a header on the first request, which read as an endpoint that
            # never answered; the key itself is never shown.
            raise UsageError(
                f"${self.key_env} holds a line break or another control character inside it (the key is"
                " not shown): an API key is one line of text; set it again (one read from a file holds all"
                " the file's lines)"
            )
        self.url_secrets = url_secrets(config.base_url)
        self.secrets = (self.key, *self.url_secrets)
        self.base = (config.base_url or "").rstrip("/")
        self.endpoint = display_url(self.base)  # the base URL as shown: without credentials
        netloc = (config.base_url or "").split("://", 1)[-1].split("/", 1)[0]
        headers = dialect.auth_headers(self.key)
        if "@" in netloc and "Authorization" in headers:
            headers.pop("Authorization")
            if self.key:
                logger.warning("the base URL carries credentials: using them instead of $%s", self.key_env)
        self._headers = headers
        self._refuses_key = dialect.refuses_key

    def url_for(self, path: str) -> str:
        """The base URL with `path` added to its path, its query kept after it: Azure's
        `?api-version=`, an Azure Function's `?code=`. Added to the whole URL, `path` became part
        of the query's last value, and no request could reach the endpoint."""
        stem, _, query = self.base.partition("?")
        path, _, path_query = path.partition("?")
        queries = "&".join(part for part in (query, path_query) if part)
        return stem.rstrip("/") + path + (f"?{queries}" if queries else "")

    def refused(self, status: int, body: bytes) -> bool:
        """Whether a reply says the endpoint refused the credentials (401/403; as its dialect says)."""
        return self._refuses_key(status, body)

    def headers(self) -> dict[str, str]:
        """The headers that carry the key (none for a URL with credentials: aiohttp sends those)."""
        return dict(self._headers)

    def no_key_hint(self) -> str:
        """What a refusal of the credentials adds when no key was found."""
        return "" if self.key else f"; no API key was found in ${self.key_env}"

    def status_message(self, status: int, raw: bytes, where: str, location: str | None = None) -> str:
        """`HTTP 500 from <where>: <what the body says>`, scrubbed; a redirect says where it points."""
        detail = self.snippet(raw)
        if 300 <= status < 400:
            to = f" to {self.sanitize(display_url(location))}" if location else ""
            detail = f"redirected{to}, not followed (the API key goes to the base URL only): set --base-url to it"
        return f"HTTP {status} from {where}" + (f": {detail}" if detail else "")

    def snippet(self, raw: bytes) -> str:
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

    def scrub_summary(self, text: str) -> str:
        """`text`, a reply's summary, scrubbed of the URL's credentials and of a key not too short to be one."""
        key = self.key if self.key and len(self.key) >= SUMMARY_SECRET_CHARS else None
        return scrub(text, (key, *self.url_secrets))

    def sanitize(self, text: str | bytes) -> str:
        """Known secrets scrubbed, credential patterns masked, whitespace collapsed, shortened."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        text = redact_secrets(scrub(text, self.secrets))
        text = re.sub(r"\s+", " ", text).strip()
        if len(text) > ERROR_SNIPPET_CHARS:
            text = text[:ERROR_SNIPPET_CHARS] + "..."
        return text
