"""What a provider dialect is: the parts of a chat API that differ between providers.

Everything else is shared and provider-neutral: the transport (`client`, `credentials`,
`backoff`, `contact`, `ratelimit`: session, retries, Retry-After, rate limits, the dead-endpoint
check, scrubbing of the key, reply size caps), the prompt (`prompt`), the cache (`cache`), the
counters (`usage`) and the batch rounds (`run/batch/`). A dialect says how a request body looks,
where it goes, how the key travels, what a reply holds, and how a batch line is written and read;
its batch calls (`BatchCalls`) say how a provider's batch API is driven. As in Bespoke Curator:
one transport, one request processor per provider.

Two protocols, because not every provider has batches: `Dialect` is what every provider speaks
(live calls: the body, the key's headers, the reply, the cache key); `BatchDialect` adds the batch
lines, written and read, for a provider whose row in `DIALECTS` declares a batch API or offline
batch files. A live-only provider implements `Dialect` alone.

The records here are the neutral shapes both sides of the seam speak: `ReplyRead` (what a dialect
found in a reply), `BatchAnswer` (one line of a provider's batch output), `BatchView` (a batch, in
the run's words) and `BatchJob` (a request file to submit).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

import orjson

Messages = list[dict[str, str]]  # the prompt, provider-neutral: [{"role": "system"|"user", "content": ...}]

# The batch statuses of the run's record, whatever the provider calls them: OpenAI's words.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
# The `custom_id` of every batch line we write: the request's cache key, a sha256 in hex. Its 64
# characters of [0-9a-f] are within every provider's rule (Anthropic: 1 to 64 of [a-zA-Z0-9_-]).
CUSTOM_ID = re.compile(r"^[0-9a-f]{64}$")
ERROR_CHARS = 200  # of a provider's error for one request, kept
AUTH_STATUSES = frozenset({401, 403})  # the statuses by which most providers refuse credentials


@dataclass(frozen=True)
class ReplyRead:
    """What a dialect found in a reply object: the text and the tokens billed for it.

    `content` is None when the reply holds no text; `missing` then says what was missing (and
    `quote_error`, whether the body's own error message is worth adding). `cut` says the reply
    stopped at `max_tokens`: it is retried with more room, never stored.
    """

    content: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cut: str | None = None
    missing: str | None = None
    quote_error: bool = False


@dataclass(frozen=True)
class BatchAnswer:
    """One line of a batch output: the request it answers and the reply body, if any."""

    line: int
    custom_id: str
    status: int | None  # 200 when `body` is a reply
    body: bytes | None  # the reply, as the endpoint's live API would have sent it
    error: str | None  # the provider's own error for this request


class Dialect(Protocol):
    """A provider's chat API, live, bound to one run's `LLMConfig` (model, temperature, `extra_body`)."""

    name: str
    path: str  # appended to the base URL: where a chat request is POSTed (it may name the model)
    models_path: str  # appended to the base URL: the model list, GET with the key before a run (`preflight`)

    def auth_headers(self, key: str | None) -> dict[str, str]:
        """The headers that carry `key` (and any fixed header the API requires)."""
        ...

    def refuses_key(self, status: int, body: bytes) -> bool:
        """Whether a reply (`status`, the first bytes of its `body`) says the credentials were
        refused: `AUTH_STATUSES` for most; a provider that says it otherwise (a 400 naming the
        key) says so here. A refusal stops the run in one line instead of failing row by row."""
        ...

    def body(self, messages: Messages, max_tokens: int) -> dict[str, Any]:
        """The JSON body of one request; `extra_body` merged last, as the user asked."""
        ...

    def cache_key(self, messages: Messages, max_tokens: int) -> str:
        """The key the answer is stored under: everything that shapes the reply, no credentials."""
        ...

    def read_reply(self, data: dict[str, Any]) -> ReplyRead:
        """The text and the tokens of a reply object (a 2xx body, or a batch answer's body)."""
        ...


@runtime_checkable
class BatchDialect(Dialect, Protocol):
    """A provider's batch lines, on top of its live calls: what `--batch`, `requests` and
    `--responses` write and read. Only a provider whose row declares `batch` or `offline_files`."""

    def batch_line(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        """One request line of this provider's batch input, `custom_id` = `key`."""
        ...

    def read_batch_line(self, number: int, data: dict[str, Any]) -> BatchAnswer | str:
        """One line of this provider's batch output (a JSON object), or why it is not an answer."""
        ...


def with_batch_lines(dialect: Dialect) -> BatchDialect:
    """`dialect` as the `BatchDialect` it is; `ValueError` for a live-only one (a command asks its
    row first, `dialects.require`, so this is a guard against a bug, not a user's message)."""
    if not isinstance(dialect, BatchDialect):
        raise ValueError(f"the {dialect.name} dialect writes and reads no batch lines: it is asked live only")
    return dialect


def custom_id_of(line: dict[str, Any]) -> str | None:
    """A batch output line's `custom_id`, if it is one we wrote (a cache key)."""
    custom_id = line.get("custom_id")
    return custom_id if isinstance(custom_id, str) and CUSTOM_ID.match(custom_id) else None


def error_text(error: Any) -> str:
    """A provider's error for one request, as one short line: its message (or code), else its JSON."""
    if isinstance(error, dict):
        message = error.get("message", error.get("code"))
        return str(message)[:ERROR_CHARS] if message is not None else orjson.dumps(error).decode()[:ERROR_CHARS]
    return str(error)[:ERROR_CHARS]


@dataclass(frozen=True)
class BatchView:
    """A provider's batch as the run needs it, whatever the provider names its fields.

    `status` is in the run's words (`TERMINAL` and validating, in_progress, finalizing,
    cancelling); `counts` are the provider's own request counts, shown as it names them; `done`
    is how many requests are over; `downloads` names what to fetch once the batch is over
    (a file name suffix -> the provider's reference: a file id, a URL); `error` says why the
    provider failed the whole batch, if it did. None: the provider did not say (the run keeps
    what it saw last).
    """

    id: str
    status: str | None = None
    counts: dict[str, int] | None = None
    done: int | None = None
    downloads: dict[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class BatchJob:
    """A request file to submit, and what a look for a batch a lost reply created needs to know."""

    path: Path
    requests: int
    written_at: float  # epoch seconds the file was written
    sent_at: float  # epoch seconds its first create was sent (recorded by the run before sending it)
    sent_before: bool  # a create was sent before this call (a killed run, an earlier attempt): look first
    file_id: str | None = None  # its upload, for providers that take files
    claimed: frozenset[str] = frozenset()  # batches the run already owns: never another file's
    marker: str | None = None  # `BatchCalls.create_marker` before its first create (None: none known)


class BatchCalls(Protocol):
    """A provider's batch API, driven by `run/batch/driver.py`; every call safe to repeat."""

    uploads: bool  # whether a request file is uploaded (`upload`) before its batch is created
    endpoint: str  # the base URL, without credentials, for messages

    def sanitize(self, text: str) -> str:
        """`text` with the credentials scrubbed, for messages and the batch record."""
        ...

    async def upload(self, path: Path, name: str, *, since: float = 0.0) -> str:
        """Upload a request file under `name` (or find it uploaded); its file id."""
        ...

    async def create_marker(self) -> str | None:
        """What the provider holds before a file's first create is sent, recorded with it: where a
        later look for the batch that create made begins (None: the provider needs none, or has
        no usable list)."""
        ...

    async def create_batch(self, job: BatchJob, *, window: str, metadata: dict[str, str]) -> BatchView:
        """Create the batch of `job`, or return the one a lost reply or a killed run created."""
        ...

    async def get_batch(self, batch_id: str) -> BatchView: ...

    async def cancel_batch(self, batch_id: str) -> BatchView: ...

    async def download(self, reference: str, destination: Path) -> None:
        """One of `BatchView.downloads` into `destination`, written whole, then renamed into place."""
        ...

    async def __aenter__(self) -> BatchCalls: ...

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None: ...
