"""A SQLite cache of summaries, keyed by exactly what was asked of the model.

A re-run of the same data (after a crash, a changed output format, a second shard pass) must
not pay twice. The key is a hash of the model name, the full messages and every generation
parameter — never the API key or the endpoint's credentials, so rotating a key keeps the cache
and the cache file holds nothing secret.

Several processes (shard jobs) may share one file: WAL mode lets readers and one writer work
together, `busy_timeout` makes a writer wait for the lock instead of failing, and every write
is one short autocommitted `INSERT OR REPLACE`, committed as soon as the summary arrives.
Each operation is a single indexed row; `LLMSummarizer` still runs them on one worker thread,
so a writer waiting on another process's lock never stalls the event loop.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from trajectory_compressor.settings import LLMConfig

CACHE_VERSION = 2  # bump when the stored body's meaning changes
# What a key says of redaction when it is on: the rule set's id of round 4, kept as it was. A
# summary is cleaned again (reply rules and redaction) whenever it is taken from the cache
# (`LLMSummarizer.summarize`), so newer rules reach stored summaries without changing any key: a
# changed key would make every user pay again for the summaries their cache holds. A prompt the
# newer rules mask differently is another prompt, and so another key, anyway.
KEYED_REDACTION = "6ccde893bc0175e9"
BUSY_TIMEOUT_SECONDS = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS summaries_v2 (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 1,
    errors INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created REAL NOT NULL
)
"""


@dataclass(frozen=True)
class CachedSummary:
    """A stored summary body (cleaned, without prefix) and what it cost when made.

    The calls, errors and last error are replayed into a resumed run's metrics, so a row's
    metrics line does not depend on whether its summary came from the endpoint or the cache.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 1
    errors: int = 0
    last_error: str | None = None


def _stored_types(row: tuple[Any, ...]) -> bool:
    """Whether a row holds what `put` writes: text, four counts, and a text or null error."""
    text, *counts, last_error = row
    return (
        isinstance(text, str)
        and all(type(count) is int for count in counts)
        and (last_error is None or isinstance(last_error, str))
    )


def default_cache_path() -> Path:
    """`$XDG_CACHE_HOME/trajectory_compressor/summaries.sqlite3` (`~/.cache/...` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trajectory_compressor" / "summaries.sqlite3"


def cache_key(
    *,
    model: str,
    messages: list[dict[str, str]],
    temperature: float,
    max_tokens: int,
    extra_body: dict[str, Any],
    redact: bool,
    api: str | None = None,
) -> str:
    """sha256 over everything that shapes the reply; no credentials, no URL.

    `redact` is included because it changes how the stored body was cleaned (a body stored
    unredacted is not served to a run that redacts); the rule set is not (see `KEYED_REDACTION`:
    hits are cleaned again under the current rules). `api` names
    a dialect other than OpenAI's (whose keys predate dialects and are kept as they were, so no
    stored summary is paid for again): the same prompt to another provider is another request.
    """

    material = {
        "v": CACHE_VERSION,
        "model": model,
        "messages": messages,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "extra_body": extra_body,
        "redact": KEYED_REDACTION if redact else False,
    }
    if api is not None:
        material["api"] = api
    blob = orjson.dumps(material, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(blob).hexdigest()


def request_cache_key(
    config: LLMConfig, messages: list[dict[str, str]], max_tokens: int, api: str | None = None
) -> str:
    """`cache_key` of one request a dialect makes with a run's `config`: what every dialect uses."""
    return cache_key(
        model=str(config.model),
        messages=messages,
        temperature=config.temperature,
        max_tokens=max_tokens,
        extra_body=config.extra_body,
        redact=config.redact_secrets,
        api=api,
    )


class SummaryCache:
    """Synchronous get/put on one SQLite file; safe to share between processes.

    Thread-safe by a lock (the connection is opened with `check_same_thread=False` because the
    thread that opens it need not be the worker thread that uses it).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, journal_mode: str | None = "WAL") -> None:
        """`journal_mode` None leaves the file's own mode (a reader of another process's file);
        "DELETE" suits a file on a network filesystem, where WAL's shared memory does not work."""
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # isolation_level=None: autocommit, each statement its own short transaction.
        self._conn = sqlite3.connect(
            str(self.path), timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            if journal_mode is not None:
                self._conn.execute(f"PRAGMA journal_mode = {journal_mode}")
            # NORMAL in WAL mode: a commit survives a crash of this process (not a power cut),
            # without an fsync per summary.
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute(_SCHEMA)
        except sqlite3.Error:
            self._conn.close()
            raise

    def get(self, key: str) -> CachedSummary | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT text, prompt_tokens, completion_tokens, calls, errors, last_error"
                " FROM summaries_v2 WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None or not _stored_types(row):
            return None  # a row of other types (an edited file, another tool's): asked for again
        return CachedSummary(*row)

    def put(self, key: str, summary: CachedSummary, *, model: str) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO summaries_v2"
                " (key, text, model, prompt_tokens, completion_tokens, calls, errors, last_error, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    summary.text,
                    model,
                    summary.prompt_tokens,
                    summary.completion_tokens,
                    summary.calls,
                    summary.errors,
                    summary.last_error,
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM summaries_v2").fetchone()[0])

    def keys(self) -> list[str]:
        """Every stored key (for counting distinct summaries over several files)."""
        with self._lock:
            return [row[0] for row in self._conn.execute("SELECT key FROM summaries_v2")]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SummaryCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
