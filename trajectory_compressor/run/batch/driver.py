"""`--batch`: get every summary a run needs through the provider's batch API, then let the run finish
from the cache.

    collect ─► request files ─► upload ─► create ─► poll ─► download ─► store in cache ─┐
       ▲                                                                                 │
       └──────────── next round: second passes, fidelity retries, follow-ups ◄──────────┘

Each step is recorded in the batch folder (`state`) right after it happens, and each step looks
for what a killed run may have done before doing it (`batch_api`): a re-run of the same command
reattaches to the same batches, never submits a request twice and never loses an answer. With
`--no-wait` the phase checks once and reports `pending` instead of waiting. Requests a batch
failed or expired go to one follow-up batch or to live calls (`--batch-fallback`), then to the
failure policy, as in a live run.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from tqdm import tqdm

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.faults import boundary
from trajectory_compressor.messages import quoted
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.batch.collect import RequestFiles, collect_round, settled_by_cancel
from trajectory_compressor.run.batch.state import BatchState, BatchStateError, Submission
from trajectory_compressor.settings import ConfigError, LLMConfig, RunConfig
from trajectory_compressor.summarize.llm.answers import AnswerStore
from trajectory_compressor.summarize.llm.batch_api import BatchAPIError, upload_name
from trajectory_compressor.summarize.llm.batch_file import ResponsesLoaded, answer_line_limit
from trajectory_compressor.summarize.llm.dialects import batch_calls_for
from trajectory_compressor.summarize.llm.dialects.base import TERMINAL, BatchCalls, BatchJob, BatchView
from trajectory_compressor.summarize.llm.request import ChatRequest
from trajectory_compressor.summarize.llm.summarizer import LLMSummarizer
from trajectory_compressor.summarize.llm.usage import UsageTracker
from trajectory_compressor.types import Summarizer, SummaryError, SummaryRequest

MAX_ROUNDS = 4  # first passes; second passes and retries; their retries; last follow-ups
# --windows: window k's summary updates window k-1's, so a row needs one round per window; the
# rounds stop as soon as one finds nothing to ask, this only bounds a run that never settles.
MAX_WINDOW_ROUNDS = 1024
POLL_GROWTH = 1.5
PROBLEMS_SHOWN = 20


@dataclass(frozen=True)
class BatchOutcome:
    """Whether every round is settled, and what to tell the user; once settled, the summarizer the
    run finishes with (from the cache, a miss taking `--batch-fallback`)."""

    settled: bool
    message: str
    status: dict[str, Any]
    summarizer: LLMSummarizer | None = None


class BatchPhase:
    """The batch rounds of one output, run under that output's lock before its rows are written.

    `usage` is the run's usage sink (the report reads it): the batch answers and batches are
    counted there, and the summarizer the run finishes with counts into it too.
    """

    def __init__(
        self,
        folder: Path,
        sources: Sequence[InputSource],
        config: RunConfig,
        counter: TokenCounter,
        fallback: Summarizer,
        *,
        usage: UsageTracker,
        say: Callable[[str], None],
    ) -> None:
        self.folder = folder
        self.sources = sources
        self.config = config
        self.counter = counter
        self.fallback = fallback
        self.usage = usage
        self.say = say
        self.state = BatchState(api=config.llm.api)
        self.line_limit = answer_line_limit(config.plan.summary_target_tokens)
        self.max_rounds = MAX_WINDOW_ROUNDS if config.plan.windows else MAX_ROUNDS
        self._summarizer: LLMSummarizer | None = None

    # ------------------------------------------------------------------------------ the rounds
    async def run(self) -> BatchOutcome:
        """Settle every round, or (`--no-wait`) go as far as possible without waiting."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.state = state = BatchState.load(self.folder)
        if state.submissions and state.api != self.config.llm.api:
            raise ConfigError(
                f"the batches of this output went to the {state.api} API (see `trajectory-compressor batches status`): "
                f"run it with --api {state.api}, or remove {quoted(self.folder)} to start the batches over"
            )
        state.api = self.config.llm.api
        answers = AnswerStore.for_endpoint(self.config.llm, self.counter)
        try:
            async with batch_calls_for(self.config.llm, warn=self.say) as api:
                while True:
                    if state.unstored and not await self._settle(api, answers):
                        return self._outcome(settled=False)
                    if state.rounds >= self.max_rounds:
                        break
                    if not await self._next_round():
                        break
        finally:
            await answers.aclose()
        self._summarizer = self._run_summarizer()
        return self._outcome(settled=True)

    async def aclose(self) -> None:
        """Close the summarizer the run finished with, if the rounds got that far."""
        if self._summarizer is not None:
            await self._summarizer.aclose()

    async def _next_round(self) -> bool:
        """Write the next round's request files and record them; whether there were any."""
        files = RequestFiles(self.folder, self.state.rounds + 1, self.config.batch, self.config.llm)
        try:
            waiting = await collect_round(self.sources, self.config, self.counter, self.fallback, self.state, files)
        finally:
            submissions = files.close()
        if not submissions:
            return False
        requests = sum(s.requests for s in submissions)
        self.say(f"batch round {files.round}: {requests:,} requests for {waiting:,} rows in {len(submissions)} file(s)")
        if note := files.oversize_note():
            self.say(note)
        self.state.submissions.extend(submissions)
        self.state.save(self.folder)
        boundary("batch-written")
        return True

    async def _settle(self, api: BatchCalls, answers: AnswerStore) -> bool:
        """Submit what is not submitted, then poll until every batch is stored (or once, `--no-wait`)."""
        for submission in self.state.unstored:
            await self._submit(api, submission)
        delay = self.config.batch.poll_interval
        total = sum(s.requests for s in self.state.unstored)
        with tqdm(total=total, unit="req", desc="batch", disable=self.config.quiet or not sys.stderr.isatty()) as bar:
            while True:
                for submission in self.state.unstored:
                    await self._look(api, submission)
                    if submission.status not in TERMINAL and self._overdue(submission):
                        await self._give_up(api, submission)
                    if submission.status in TERMINAL:
                        await self._store(api, answers, submission)
                bar.n = total - sum(s.requests - s.done for s in self.state.unstored)
                bar.refresh()
                if not self.state.unstored:
                    return True
                self.state.save(self.folder)  # the last seen counts, for `batches status`
                if self.config.batch.no_wait:
                    return False
                await asyncio.sleep(delay)
                delay = min(delay * POLL_GROWTH, self.config.batch.poll_max)

    async def _submit(self, api: BatchCalls, submission: Submission) -> None:
        if api.uploads and submission.file_id is None:
            name = upload_name(submission.nonce, submission.sha256)
            submission.file_id = await api.upload(self.folder / submission.name, name, since=submission.written_at)
            boundary("batch-uploaded")
            self.state.save(self.folder)
        if submission.batch_id is None:
            sent_before = bool(submission.create_sent_at)
            if not sent_before:  # recorded first: a create whose reply is lost is then looked for, never sent twice
                submission.create_marker = await api.create_marker()
                submission.create_sent_at = time.time()
                self.state.save(self.folder)
                boundary("batch-create-sent")
            job = BatchJob(
                self.folder / submission.name,
                submission.requests,
                submission.written_at,
                submission.create_sent_at,
                sent_before,
                submission.file_id,
                frozenset(s.batch_id for s in self.state.submissions if s.batch_id),
                submission.create_marker,
            )
            metadata = {"trajectory_compressor": submission.nonce, "round": str(submission.round)}
            batch = await api.create_batch(job, window=self.config.batch.completion_window, metadata=metadata)
            boundary("batch-created")
            submission.batch_id = batch.id
            submission.submitted_at = time.time()
            _update(submission, batch, api.sanitize)
            self.state.save(self.folder)
            self.say(f"batch {submission.batch_id}: {submission.requests:,} requests submitted ({submission.name})")

    async def _look(self, api: BatchCalls, submission: Submission) -> None:
        assert submission.batch_id is not None
        _update(submission, await api.get_batch(submission.batch_id), api.sanitize)
        submission.submitted_at = submission.submitted_at or time.time()  # a record from before the field
        boundary("batch-polled")

    def _overdue(self, submission: Submission) -> bool:
        return time.time() - submission.submitted_at >= self.config.batch.timeout

    async def _give_up(self, api: BatchCalls, submission: Submission) -> None:
        """A batch past `--batch-timeout`: ask the provider to stop it (so it is not paid for on top of
        what replaces it), and take it as expired: its requests go to the fallback."""
        assert submission.batch_id is not None
        timeout, status = self.config.batch.timeout, submission.status
        waited = f"no result within --batch-timeout {timeout:g}s (the provider still says {status})"
        try:
            await api.cancel_batch(submission.batch_id)
        except BatchAPIError as exc:  # it is given up all the same
            self.say(f"warning: batch {submission.batch_id}: cancelling it failed: {exc}")
        submission.status, submission.error = "expired", waited

    async def _store(self, api: BatchCalls, answers: AnswerStore, submission: Submission) -> None:
        """Download what the batch gave (output and error files, or results), store every answer,
        note every failure."""
        keys = _request_keys(self.folder / submission.name)
        asked = set(keys)
        answered: set[str] = set()
        failed: dict[str, str] = {}
        problems: list[str] = []
        for suffix, reference in submission.downloads.items():
            path = self.folder / f"{Path(submission.name).stem}.{suffix}.jsonl"
            if not path.exists():  # downloads land whole (renamed into place), so one there is complete
                await api.download(reference, path)
                boundary("batch-downloaded")
            loaded = ResponsesLoaded(path.name)
            stored = await answers.store(path, loaded, line_limit=self.line_limit, keys=asked, already=answered)
            problems += loaded.problems
            answered |= stored.answered
            failed.update(stored.failed)
            self.state.answers += len(stored.answered)
            self.state.prompt_tokens += stored.prompt_tokens
            self.state.completion_tokens += stored.completion_tokens
        boundary("batch-stored")
        unanswered = f"batch {submission.status}" + (f": {submission.error}" if submission.error else "")
        cancelled = submission.status == "cancelled"
        for key in keys:
            if key in answered:
                self.state.note_answered(key)
            else:
                self.state.note_failure(key, failed.get(key) or f"no answer ({unanswered})", cancelled=cancelled)
        submission.stored = True
        self.state.save(self.folder)
        lost = len(asked - answered)
        self.say(
            f"batch {submission.batch_id} {submission.status}"
            + (f": {submission.error}" if submission.error else "")
            + f": {len(answered):,} answers stored"
            + (f", {lost:,} requests without an answer" if lost else "")
            + (self._after_cancel() if cancelled and lost else "")
        )
        for problem in problems[:PROBLEMS_SHOWN]:
            self.say(f"warning: {problem}")

    def _after_cancel(self) -> str:
        """What becomes of the requests a cancelled batch did not answer."""
        if self.config.batch.resubmit_cancelled:
            return f"; --batch-resubmit-cancelled: they go to --batch-fallback ({self.config.batch.fallback})"
        return (
            f" take --on-summary-failure ({self.config.on_summary_failure}): a cancelled request is not asked "
            "again (--batch-resubmit-cancelled submits it anew)"
        )

    # ------------------------------------------------------------------------------ the run
    def _run_summarizer(self) -> LLMSummarizer:
        """The run's summarizer: the batch usage counted in the run's usage, and a request without a
        batch answer asked live (`--batch-fallback live`) or failed as the batch failed it."""
        state = self.state
        self.usage.record_batch_answers(state.answers, state.prompt_tokens, state.completion_tokens)
        self.usage.record_batches_submitted(sum(1 for s in state.submissions if s.batch_id))
        live = self.config.batch.fallback == "live"

        def no_live_call(chat: ChatRequest, request: SummaryRequest) -> None:
            if live and not settled_by_cancel(state, self.config, chat.key):
                return  # a miss is asked live, as in a run without --batch
            failure = state.failures.get(chat.key)
            why = failure.get("error") if failure else f"not asked within {self.max_rounds} batch rounds"
            raise SummaryError(f"no answer from the batch API: {why}")

        return LLMSummarizer(self.config.llm, self.counter, usage=self.usage, on_miss=no_live_call)

    def completed(self) -> None:
        """The run is written: the batch folder has done its job."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def _outcome(self, *, settled: bool) -> BatchOutcome:
        status = batch_status(self.state)
        if settled:
            return BatchOutcome(True, "", status, self._summarizer)
        waiting = self.state.unstored
        done = sum(s.done for s in waiting)
        total = sum(s.requests for s in waiting)
        message = (
            f"{len(waiting)} batch(es) pending with the provider ({done:,} of {total:,} requests done); "
            "run the same command again later"
        )
        return BatchOutcome(False, message, status)


def batch_status(state: BatchState) -> dict[str, Any]:
    """The batches of a run as the record knows them: for reports and `batches status`."""
    return {
        "rounds": state.rounds,
        "answers": state.answers,
        "failed_requests": len(state.failures),
        "batches": [
            {
                "file": s.name,
                "round": s.round,
                "requests": s.requests,
                "batch_id": s.batch_id,
                "status": s.status or ("not submitted" if s.batch_id is None else "unknown"),
                "request_counts": s.counts,
                "stored": s.stored,
            }
            for s in state.submissions
        ],
    }


async def refresh(state: BatchState, endpoint: LLMConfig) -> None:
    """Bring the record's view of each open batch up to date (in memory only: the run owns the file)."""
    async with batch_calls_for(endpoint) as api:
        for submission in state.unstored:
            if submission.batch_id is not None:
                _update(submission, await api.get_batch(submission.batch_id), api.sanitize)


async def cancel(state: BatchState, endpoint: LLMConfig) -> list[str]:
    """Ask the provider to cancel each open batch of `state`; the ids it was asked for."""
    asked: list[str] = []
    async with batch_calls_for(endpoint) as api:
        for submission in state.unstored:
            if submission.batch_id is not None and submission.status not in TERMINAL:
                await api.cancel_batch(submission.batch_id)
                asked.append(submission.batch_id)
    return asked


def _update(submission: Submission, batch: BatchView, sanitize: Callable[[str], str]) -> None:
    """What a batch says: status, counts, why it failed, and what to download once it is over."""
    submission.status = batch.status or submission.status or "unknown"
    if batch.counts is not None:
        submission.counts = batch.counts
        submission.done = batch.done or 0
    submission.downloads.update(batch.downloads)
    if batch.error:
        submission.error = sanitize(batch.error)


def _request_keys(path: Path) -> list[str]:
    """The `custom_id` of every request in one of our request files."""
    keys = []
    try:
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    keys.append(str(orjson.loads(line)["custom_id"]))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise BatchStateError(f"the request file {quoted(path)} of a submitted batch cannot be read ({exc})") from None
    return keys
