"""Which summary requests a run still needs, found by running every row's own path against the cache.

A batch round cannot be planned apart from the run: a row's second pass depends on how long its
first summary came back, and a `--min-fidelity` retry on what that summary missed. So each row
goes through the very `RowFinisher` the run uses, with the summarizer's cache as its only source
of answers: a request the cache cannot answer is written to the round's request files and the
row waits (`RequestPending`). Round 1 finds the first passes; the next round, with those answers
in the cache, finds the second passes and retries they call for; a round that finds nothing
means the run can finish from the cache alone.

Requests are streamed to disk as they are found (a prompt can be 100 KB, so a million of them
are never held), split by `--batch-max-requests` and `--batch-max-bytes` (a request over the
byte limit alone is sent with a shorter transcript).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import orjson

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.errors import RunAborted
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.batch.state import BatchState, Submission
from trajectory_compressor.run.prepare import PreparedRow, planned_rows
from trajectory_compressor.run.row import RowFinisher
from trajectory_compressor.settings import BatchConfig, LLMConfig, RunConfig
from trajectory_compressor.summarize.llm.request import MIN_PROMPT_CHARS, ChatRequest, RequestBuilder
from trajectory_compressor.summarize.llm.summarizer import LLMSummarizer
from trajectory_compressor.types import Summarizer, SummaryError, SummaryRequest

ROWS_AT_ONCE = 64


class RequestPending(Exception):
    """The row needs an answer the cache does not have yet: it waits for the next batch round."""


class RequestFiles:
    """The request files of one round, each within the byte and request limits, fsynced when closed.

    A request whose line alone is over `--batch-max-bytes` is sent with a shorter transcript, as
    the live client asks again when the endpoint refuses a prompt as too long (same key, so the
    run finds its answer); one that cannot be made to fit goes in a file of its own. Both are
    counted, for one line per round.
    """

    def __init__(self, folder: Path, round_number: int, limits: BatchConfig, llm: LLMConfig) -> None:
        self.folder = folder
        self.round = round_number
        self.limits = limits
        self.requests = RequestBuilder(llm)
        self.submissions: list[Submission] = []
        self.shortened = 0  # requests over the byte limit, sent with a shorter transcript
        self.oversized = 0  # requests over the byte limit even at the shortest transcript
        self._handle: BinaryIO | None = None
        self._digest = hashlib.sha256()
        self._requests = self._bytes = 0

    def add(self, chat: ChatRequest, request: SummaryRequest) -> None:
        line = self._fitted(chat, request)
        full = self._requests >= self.limits.max_requests or self._bytes + len(line) > self.limits.max_bytes
        if self._handle is None or (full and self._requests):
            self._next_file()
        assert self._handle is not None
        self._handle.write(line)
        self._digest.update(line)
        self._requests += 1
        self._bytes += len(line)

    def close(self) -> list[Submission]:
        self._close_file()
        return self.submissions

    def oversize_note(self) -> str | None:
        """The round's one line on requests over `--batch-max-bytes`, if there were any."""
        if not (self.shortened or self.oversized):
            return None
        parts = [f"{self.shortened:,} are sent with a shorter transcript"] if self.shortened else []
        if self.oversized:
            parts.append(f"{self.oversized:,} cannot be made to fit: each goes in a file of its own")
        over = self.shortened + self.oversized
        return (
            f"warning: batch round {self.round}: {over:,} requests over --batch-max-bytes "
            f"({self.limits.max_bytes}): " + ", ".join(parts)
        )

    def _fitted(self, chat: ChatRequest, request: SummaryRequest) -> bytes:
        """The request's line, its transcript cut until the line fits the byte limit, if it can."""
        line = self._encoded(chat)
        limit = self.limits.max_bytes
        if len(line) <= limit:
            return line
        original = line
        prompt_chars = chat.prompt_chars
        while len(line) > limit:
            # In proportion to the bytes over, and at least a tenth shorter each time.
            prompt_chars = int(prompt_chars * min(0.9, limit / len(line)))
            if prompt_chars < MIN_PROMPT_CHARS:
                self.oversized += 1
                return original
            line = self._encoded(self.requests.shortened(request, chat, prompt_chars))
        self.shortened += 1
        return line

    def _encoded(self, chat: ChatRequest) -> bytes:
        return orjson.dumps(self.requests.batch_line(chat)) + b"\n"

    def _next_file(self) -> None:
        self._close_file()
        name = f"round-{self.round:02d}-part-{len(self.submissions) + 1:04d}.jsonl"
        nonce = uuid.uuid4().hex[:16]
        self.submissions.append(
            Submission(name, self.round, requests=0, bytes=0, sha256="", nonce=nonce, written_at=time.time())
        )
        self._handle = open(self.folder / name, "wb")  # noqa: SIM115 - closed in _close_file
        self._digest = hashlib.sha256()
        self._requests = self._bytes = 0

    def _close_file(self) -> None:
        handle, self._handle = self._handle, None
        if handle is None:
            return
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        last = self.submissions[-1]
        last.requests, last.bytes, last.sha256 = self._requests, self._bytes, self._digest.hexdigest()


def settled_by_cancel(state: BatchState, config: RunConfig, key: str) -> bool:
    """A request of a batch the user cancelled: it takes the failure policy, unless asked to resubmit."""
    return state.cancelled(key) and not config.batch.resubmit_cancelled


async def collect_round(
    sources: Sequence[InputSource],
    config: RunConfig,
    counter: TokenCounter,
    fallback: Summarizer,
    state: BatchState,
    files: RequestFiles,
) -> int:
    """Write every request the run still needs to `files`; returns the rows left waiting.

    A request that already failed in as many batches as `--batch-fallback` allows, or whose batch
    the user cancelled (unless `--batch-resubmit-cancelled`), is not asked again: here it fails
    like a live request, so its row takes the failure policy (and asks for nothing more), as it
    will in the run. The round's summarizer answers from the cache only: its miss policy writes
    the request and makes the row wait. Its counters are its own (the run's report counts what
    the run does, not what the rounds looked up).
    """
    allowed = 2 if config.batch.fallback == "batch" else 1
    seen: set[str] = set()

    def write_and_wait(chat: ChatRequest, request: SummaryRequest) -> None:
        if state.attempts(chat.key) >= allowed or settled_by_cancel(state, config, chat.key):
            raise SummaryError(str(state.failures[chat.key].get("error")))
        if chat.key not in seen:
            seen.add(chat.key)
            files.add(chat, request)
        raise RequestPending

    async with LLMSummarizer(config.llm, counter, on_miss=write_and_wait) as collector:
        finisher = RowFinisher(config, counter, collector, fallback)
        waiting = 0

        async def visit(row: PreparedRow) -> bool:
            try:
                await finisher.finish(row)
            except RequestPending:
                return True
            except RunAborted:  # `--on-summary-failure fail`: the run itself will stop there
                return False
            return False

        chunk = []
        for row in planned_rows(sources, config, counter):
            chunk.append(row)
            if len(chunk) >= ROWS_AT_ONCE:
                waiting += sum(await asyncio.gather(*(visit(r) for r in chunk)))
                chunk = []
        waiting += sum(await asyncio.gather(*(visit(r) for r in chunk)))
    return waiting
