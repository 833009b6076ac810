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
from trajectory_compressor.summarize.llm import LLMSummarizer
from trajectory_compressor.summarize.llm.batch_api import TERMINAL, BatchAPI, BatchAPIError, upload_name
from trajectory_compressor.summarize.llm.batch_file import ResponsesLoaded, answer_line_limit
from trajectory_compressor.summarize.llm.request import ChatRequest
from trajectory_compressor.types import Summarizer, SummaryError, SummaryRequest

MAX_ROUNDS = 4  # first passes; second passes and retries; their retries; last follow-ups
# --windows: window k's summary updates window k-1's, so a row needs one round per window; the
# rounds stop as soon as one finds nothing to ask, this only bounds a run that never settles.
MAX_WINDOW_ROUNDS = 1024
POLL_GROWTH = 1.5
PROBLEMS_SHOWN = 20


@dataclass(frozen=True)
class BatchOutcome:
    """Whether every round is settled (the run may finish from the cache), and what to tell the user."""

    settled: bool
    message: str
    status: dict[str, Any]


class BatchPhase:
    """The batch rounds of one output, run under that output's lock before its rows are written."""

    def __init__(
        self,
        folder: Path,
        sources: Sequence[InputSource],
        config: RunConfig,
        counter: TokenCounter,
        primary: Summarizer | None,
        fallback: Summarizer | None,
        *,
        say: Callable[[str], None],
    ) -> None:
        if not isinstance(primary, LLMSummarizer) or fallback is None:
            raise ConfigError("--batch needs the llm summarizer: pass --base-url and --model")
        if not primary.has_cache:
            raise ConfigError("--batch needs the summary cache (drop --no-cache): answers reach the run through it")
        self.folder = folder
        self.sources = sources
        self.config = config
        self.counter = counter
        self.primary = primary
        self.fallback = fallback
        self.say = say
        self.state = BatchState()
        self.line_limit = answer_line_limit(config.plan.summary_target_tokens)
        self.max_rounds = MAX_WINDOW_ROUNDS if config.plan.windows else MAX_ROUNDS

    # ------------------------------------------------------------------------------ the rounds
    async def run(self) -> BatchOutcome:
        """Settle every round, or (`--no-wait`) go as far as possible without waiting."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.state = state = BatchState.load(self.folder)
        collector = LLMSummarizer(self.config.llm, self.counter)
        try:
            async with BatchAPI(self.config.llm, warn=self.say) as api:
                while True:
                    if state.unstored and not await self._settle(api, collector):
                        return self._outcome(settled=False)
                    if state.rounds >= self.max_rounds:
                        break
                    if not await self._next_round(collector):
                        break
        finally:
            await collector.aclose()
        self._prepare_run()
        return self._outcome(settled=True)

    async def _next_round(self, collector: LLMSummarizer) -> bool:
        """Write the next round's request files and record them; whether there were any."""
        files = RequestFiles(self.folder, self.state.rounds + 1, self.config.batch, self.config.llm)
        try:
            waiting = await collect_round(
                self.sources, self.config, self.counter, collector, self.fallback, self.state, files
            )
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

    async def _settle(self, api: BatchAPI, collector: LLMSummarizer) -> bool:
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
                        await self._store(api, collector, submission)
                bar.n = total - sum(s.requests - _done(s) for s in self.state.unstored)
                bar.refresh()
                if not self.state.unstored:
                    return True
                self.state.save(self.folder)  # the last seen counts, for `batches status`
                if self.config.batch.no_wait:
                    return False
                await asyncio.sleep(delay)
                delay = min(delay * POLL_GROWTH, self.config.batch.poll_max)

    async def _submit(self, api: BatchAPI, submission: Submission) -> None:
        if submission.file_id is None:
            name = upload_name(submission.nonce, submission.sha256)
            submission.file_id = await api.upload(self.folder / submission.name, name, since=submission.written_at)
            boundary("batch-uploaded")
            self.state.save(self.folder)
        if submission.batch_id is None:
            metadata = {"trajectory_compressor": submission.nonce, "round": str(submission.round)}
            batch = await api.create_batch(
                submission.file_id,
                window=self.config.batch.completion_window,
                metadata=metadata,
                since=submission.written_at,
            )
            boundary("batch-created")
            submission.batch_id = str(batch["id"])
            submission.submitted_at = time.time()
            _update(submission, batch)
            self.state.save(self.folder)
            self.say(f"batch {submission.batch_id}: {submission.requests:,} requests submitted ({submission.name})")

    async def _look(self, api: BatchAPI, submission: Submission) -> None:
        assert submission.batch_id is not None
        batch = await api.get_batch(submission.batch_id)
        _update(submission, batch)
        submission.submitted_at = submission.submitted_at or time.time()  # a record from before the field
        errors = batch.get("errors")
        data = errors.get("data") if isinstance(errors, dict) else None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            code, message = data[0].get("code"), data[0].get("message")
            why = ": ".join(str(part) for part in (code, message) if part) or str(data[0])
            submission.error = api.sanitize(why)
        boundary("batch-polled")

    def _overdue(self, submission: Submission) -> bool:
        return time.time() - submission.submitted_at >= self.config.batch.timeout

    async def _give_up(self, api: BatchAPI, submission: Submission) -> None:
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

    async def _store(self, api: BatchAPI, collector: LLMSummarizer, submission: Submission) -> None:
        """Download the batch's output and error files, store every answer, note every failure."""
        keys = _request_keys(self.folder / submission.name)
        asked = set(keys)
        answered: set[str] = set()
        failed: dict[str, str] = {}
        problems: list[str] = []
        for file_id, suffix in ((submission.output_file_id, "output"), (submission.error_file_id, "errors")):
            if not file_id:
                continue
            path = self.folder / f"{Path(submission.name).stem}.{suffix}.jsonl"
            if not path.exists():  # downloads land whole (renamed into place), so one there is complete
                await api.download(file_id, path)
                boundary("batch-downloaded")
            loaded = ResponsesLoaded(path.name)
            stored = await collector.store_answers(
                path, loaded, line_limit=self.line_limit, keys=asked, already=answered
            )
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
    def _prepare_run(self) -> None:
        """Hand the run the batch usage, and say what a request without a batch answer becomes."""
        state = self.state
        self.primary.usage.record_batch_answers(state.answers, state.prompt_tokens, state.completion_tokens)
        self.primary.usage.batches_submitted += sum(1 for s in state.submissions if s.batch_id)
        live = self.config.batch.fallback == "live"

        def no_live_call(chat: ChatRequest, request: SummaryRequest) -> None:
            if live and not settled_by_cancel(state, self.config, chat.key):
                return  # a miss is asked live, as in a run without --batch
            failure = state.failures.get(chat.key)
            why = failure.get("error") if failure else f"not asked within {self.max_rounds} batch rounds"
            raise SummaryError(f"no answer from the batch API: {why}")

        self.primary.on_miss = no_live_call

    def completed(self) -> None:
        """The run is written: the batch folder has done its job."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def _outcome(self, *, settled: bool) -> BatchOutcome:
        status = batch_status(self.state)
        if settled:
            return BatchOutcome(True, "", status)
        waiting = self.state.unstored
        done = sum(_done(s) for s in waiting)
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
    async with BatchAPI(endpoint) as api:
        for submission in state.unstored:
            if submission.batch_id is not None:
                _update(submission, await api.get_batch(submission.batch_id))


async def cancel(state: BatchState, endpoint: LLMConfig) -> list[str]:
    """Ask the provider to cancel each open batch of `state`; the ids it was asked for."""
    asked: list[str] = []
    async with BatchAPI(endpoint) as api:
        for submission in state.unstored:
            if submission.batch_id is not None and submission.status not in TERMINAL:
                await api.cancel_batch(submission.batch_id)
                asked.append(submission.batch_id)
    return asked


def _done(submission: Submission) -> int:
    return int(submission.counts.get("completed", 0)) + int(submission.counts.get("failed", 0))


def _update(submission: Submission, batch: dict[str, Any]) -> None:
    """What a batch object says: status, counts, and the files to download once it is over."""
    submission.status = str(batch.get("status") or submission.status or "unknown")
    counts = batch.get("request_counts")
    if isinstance(counts, dict):
        submission.counts = {k: int(v) for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
    for name in ("output_file_id", "error_file_id"):
        value = batch.get(name)
        if isinstance(value, str) and value:
            setattr(submission, name, value)


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
