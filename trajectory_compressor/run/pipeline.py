"""The compress run: stream rows through prepare → finish → commit, in order, resumably.

Reading, validating, counting and planning run in a worker thread, a chunk ahead; summaries
run as tasks on the event loop. A bounded window of rows sits between the two: the reader may
run at most `window` rows ahead of the oldest unfinished one, and rows are committed in input
order as soon as the head of the window is done. Memory therefore depends on the window, not
on the size of the input.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.count.exactness import GuardResult
from trajectory_compressor.errors import RunAborted
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.messages import quoted
from trajectory_compressor.read.ahead import ReadAhead
from trajectory_compressor.read.convert_format import WriteShape
from trajectory_compressor.read.select import RowSelection, Selected
from trajectory_compressor.read.sources import InputSource
from trajectory_compressor.run.commit import RowCommitter, completed_exit
from trajectory_compressor.run.jobs import CompressJob
from trajectory_compressor.run.prepare import CHUNK_BYTES, CHUNK_ROWS, PreparedRow, notice_tokens, prepare_for_run
from trajectory_compressor.run.row import FinishedRow, RowFinisher
from trajectory_compressor.run.settings_record import flat_settings, known_secrets
from trajectory_compressor.run.signals import sigterm_cancels_this_task
from trajectory_compressor.run.window import finish_in_order
from trajectory_compressor.run.worker_pool import PooledFinisher, WorkerPool
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.summarize.llm.usage import carried_usage
from trajectory_compressor.types import Summarizer
from trajectory_compressor.write.html_compress import write_compress_html_report
from trajectory_compressor.write.lock import OutputLock
from trajectory_compressor.write.paths import OutputPaths
from trajectory_compressor.write.report import RunTotals
from trajectory_compressor.write.report_examples import examples_from_files
from trajectory_compressor.write.run_report import (
    ABORTED,
    COMPLETED,
    INTERRUPTED,
    PENDING,
    RunReport,
    RunStatus,
    build_report,
)
from trajectory_compressor.write.run_summary import render_text_summary

if TYPE_CHECKING:  # the batch phase loads aiohttp: only runs with --batch import it
    from trajectory_compressor.run.batch.driver import BatchPhase
from trajectory_compressor.write.run_files import OutputError, RunFiles, write_json_atomically
from trajectory_compressor.write.run_fingerprint import RunFingerprint


@dataclass(frozen=True)
class RunResult:
    """What a finished (or stopped) run reports back to its caller: its `RunReport` (`record`),
    whose JSON document is `report`."""

    record: RunReport
    exit_code: int
    paths: OutputPaths
    message: str | None = None

    @cached_property
    def report(self) -> dict[str, Any]:
        """The report as its file and `--json` say it (`RunReport.to_dict`), built on first use."""
        return self.record.to_dict()

    @property
    def summary_text(self) -> str:
        if self.record.totals is None:  # stopped before any row: batches pending, or interrupted there
            return f"status: {self.record.status}"
        return render_text_summary(self.report)


class CompressionRun:
    """One compress run over a job's sources; `run()` is its only entry point."""

    def __init__(
        self,
        job: CompressJob,
        config: RunConfig,
        counter: TokenCounter,
        summarizer: Summarizer | None,
        fallback: Summarizer | None,
        *,
        settings: dict[str, Any],
        on_message: Callable[[str], None] | None = None,
        batches: BatchPhase | None = None,
        pool: WorkerPool | None = None,
        counters_since: dict[str, Any] | None = None,
    ) -> None:
        self.job = job
        self.pool = pool
        # The shared summarizer's counters as this output began (None: all so far are its own) and ended.
        self.counters_since = self.counters_at_end = counters_since
        self.batches = batches
        self.config = config
        self.counter = counter
        self.summarizer = summarizer
        self.fallback = fallback
        self.settings = settings
        self.paths = OutputPaths.beside(job.output, job.metrics)
        self.finisher = self._finisher(summarizer)
        self.notice_tokens = notice_tokens(counter, config.plan)
        self.totals = RunTotals()
        self.on_message = on_message or (lambda text: print(text, file=sys.stderr))
        self._timings: dict[str, float] = {}
        self._cpu_started = 0.0
        self._inputs: list[dict[str, Any]] = []  # name, size and sha256 of each input, once per run

    def _finisher(self, summarizer: Summarizer | None) -> RowFinisher | PooledFinisher:
        keep_rejects = self.job.output_format in {"jsonl", "jsonl.gz"}
        local = RowFinisher(self.config, self.counter, summarizer, self.fallback, keep_rejects_in_data=keep_rejects)
        return local if self.pool is None else PooledFinisher(local, self.pool)

    # ----------------------------------------------------------------------------- reading
    def _selection(self, skip: int) -> RowSelection:
        """The rows this run takes, after the `skip` stream positions a resumed run committed."""
        return RowSelection(
            self.job.sources,
            read=self.config.read,
            select=self.config.select,
            skip=skip,
            already_selected=self.totals.rows_selected,
        )

    def _prepare_next(self, chunks: Iterator[list[Selected]]) -> list[PreparedRow] | None:
        rows = next(chunks, None)
        if rows is None:
            return None
        return prepare_for_run(rows, self.counter, self.config, self.notice_tokens)

    # ----------------------------------------------------------------------------- the loop
    async def run(self) -> RunResult:
        """Hold the output's lock for the whole run; an OS error on the outputs is one clear line."""
        try:
            with OutputLock(self.paths), sigterm_cancels_this_task():
                if self.batches is not None:
                    stopped = await self._batch_phase(self.batches)
                    if stopped is not None:
                        return stopped
                result = await self._run_locked()
                if self.batches is not None and result.record.completed:
                    self.batches.completed()
                return result
        except OSError as exc:
            raise OutputError(describe_os_error(exc, self.paths.data)) from None
        finally:
            if self.batches is not None:
                await self.batches.aclose()

    async def _batch_phase(self, batches: BatchPhase) -> RunResult | None:
        """`--batch`: every summary into the cache first; a result only when the run stops here.

        Once the rounds are settled, the run finishes with the batch phase's summarizer (answers
        from the cache; a request without one takes `--batch-fallback`)."""
        try:
            outcome = await batches.run()
        except (KeyboardInterrupt, asyncio.CancelledError):
            message = "interrupted; re-run the same command: it picks up the same batches"
            return RunResult(RunReport(INTERRUPTED), ExitCode.INTERRUPTED, self.paths, message)
        if outcome.settled:
            self.summarizer = outcome.summarizer
            self.finisher = self._finisher(outcome.summarizer)
            return None
        return RunResult(RunReport(PENDING, batches=outcome.status), ExitCode.PENDING, self.paths, outcome.message)

    async def _run_locked(self) -> RunResult:
        started = time.monotonic()
        self._cpu_started = cpu_seconds(self.pool)
        # The inputs are hashed on a thread while the run starts (hashlib releases the GIL); the
        # fingerprint is taken when first needed: at once to resume, else at the first checkpoint.
        hashing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tc-hash")
        inputs = hashing.submit(lambda: [_source_fingerprint(s) for s in self.job.sources])
        hashing.shutdown(wait=False)  # the hashing goes on; nothing else is taken

        def run_fingerprint() -> RunFingerprint:
            self._inputs = inputs.result()
            hashed = {"settings": self.settings, "sources": self._inputs}
            return RunFingerprint.of(hashed, flat_settings(self.settings), self._inputs, known_secrets(self.config))

        files = RunFiles(self.paths, run_fingerprint, resume=self.config.output.resume, on_message=self.on_message)
        try:
            return await self._run_with(files, started)
        finally:
            files.close()

    async def _run_with(self, files: RunFiles, started: float) -> RunResult:
        skip = files.rows_committed
        self.totals, resumed_usage = resumed_from(files, self.on_message)
        used = partial(usage_so_far, self, resumed_usage)
        status: RunStatus = COMPLETED
        exit_code: ExitCode = ExitCode.OK
        message: str | None = None
        committer = RowCommitter(
            files, self.totals, skip, strict=self.config.strict, on_message=self.on_message, usage=used
        )
        if files.phase != "finalizing":
            selection = self._selection(skip)
            try:
                await self._process(committer, selection)
                self.totals.rows_read = selection.stream_rows
            except RunAborted as exc:
                status, exit_code, message = ABORTED, exc.exit_code, str(exc)
            except (KeyboardInterrupt, asyncio.CancelledError):
                status, exit_code, message = (
                    INTERRUPTED,
                    ExitCode.INTERRUPTED,
                    "interrupted; re-run the same command to resume",
                )
        self._timings["total"] = time.monotonic() - started
        # CPU seconds too: on a busy machine wall time alone hides what other work took from the run.
        self._timings["cpu"] = cpu_seconds(self.pool) - self._cpu_started
        completed = status == COMPLETED
        if completed:
            self._finalize(files, committer.position)
        else:
            committer.checkpoint()
            files.close()
        self.counters_at_end, counting = run_figures(self.summarizer, self.counter, self.pool)
        report = build_report(
            self.totals,
            status=status,
            settings=self.settings,
            outputs=self.paths.as_dict() if completed else {"work_dir": str(files.work_dir)},
            timings=self._timings,
            summarizer_stats=carried_usage(resumed_usage, self.counters_since, self.counters_at_end),
            counting=counting.to_dict(),
            warnings=[counting.warning or ""],
            message=message,
            files=files.files_written if completed else None,  # what `merge` checks each shard's files against
            inputs=[input_record(entry) for entry in self._inputs] if completed else None,  # what `eval` checks
        )
        result = RunResult(report, exit_code, self.paths, message)
        self._write_report(result)
        if completed:
            files.cleanup()
            exit_code, message = completed_exit(self.totals, self.config, committer.first_reject)
            result = RunResult(report, exit_code, self.paths, message)
        return result

    async def _process(self, committer: RowCommitter, selection: RowSelection) -> None:
        limit = self.config.effective_window
        chunk_rows = max(1, min(CHUNK_ROWS, limit // 4))  # small windows read small chunks
        # The next chunk is parsed on its own thread while this one is counted (read.ahead): one
        # chunk more in memory, counted in the window (a window under 4 rows reads no chunk ahead).
        ahead_rows = chunk_rows if limit >= 4 * chunk_rows else 0
        rows = selection.chunks(chunk_rows, CHUNK_BYTES)
        chunks = ReadAhead(rows, name="tc-read") if ahead_rows else rows
        progress = tqdm(
            unit="rows",
            desc="compress",
            disable=self.config.quiet or not sys.stderr.isatty(),
            initial=self.totals.rows_selected,
            dynamic_ncols=True,
        )

        def commit(finished: FinishedRow) -> None:
            committer.commit(finished)
            progress.update(1)

        def after_commits(pending: int) -> None:
            if committer.checkpoint_if_due() and not progress.disable:
                totals = self.totals
                progress.set_postfix(
                    compressed=totals.rows_compressed,
                    over=totals.rows_still_over_limit,
                    rejected=totals.rows_rejected,
                    pending=pending,
                )

        try:
            await finish_in_order(
                lambda: self._prepare_next(chunks),
                self.finisher.finish,
                commit,
                after_commits,
                limit=limit,
                chunk_rows=chunk_rows,
                ahead_rows=ahead_rows,
            )
        finally:
            chunks.close()
            progress.close()

    # ----------------------------------------------------------------------------- the end
    def _finalize(self, files: RunFiles, position: int) -> None:
        started = time.monotonic()
        convert = None
        if self.job.output_format != "jsonl":
            from trajectory_compressor.read.column_types import source_column_types
            from trajectory_compressor.write.converters import convert_jsonl

            fmt = self.job.output_format
            column_types = source_column_types(self.job.sources)  # every column's Arrow type
            json_lists = WriteShape(self.config.output.write_format).json_lists  # hf-chat's messages

            def convert(jsonl_path: Path, final: Path) -> None:
                note = convert_jsonl(jsonl_path, final, fmt, column_types, json_lists).changed_columns_note()
                if note:
                    self.on_message(note)

        files.finalize(position, {"totals": self.totals.to_dict()}, convert, write_data=not self.config.dry_run)
        self._timings["finalize"] = time.monotonic() - started

    def _write_report(self, result: RunResult) -> None:
        report = result.report
        write_json_atomically(self.paths.report, report, hook="report")
        if self.job.html_report is not None and result.record.completed:
            examples = []
            if not self.config.dry_run:  # a few rows read back from the files just written
                examples = examples_from_files(
                    self.paths.metrics, self.paths.data, self.job.sources, read=self.config.read
                )
            write_compress_html_report(
                self.job.html_report,
                report,
                self.paths.metrics,
                self.config.plan.target_max_tokens,
                example=self.finisher.example,
                examples=examples,
                currency=self.config.llm.currency,
            )


def resumed_from(files: RunFiles, say: Callable[[str], None]) -> tuple[RunTotals, dict[str, Any] | None]:
    """The totals and summarizer counters the stopped run of these work files checkpointed, said
    in one line (fresh totals and none when it starts afresh)."""
    state = files.resumed_state
    if not state:
        return RunTotals(), None
    if files.phase == "finalizing":
        say(f"resuming: finishing the run whose work is in {quoted(files.work_dir)}")
    else:
        say(f"resuming: {files.rows_committed} input rows already committed in {quoted(files.work_dir)}")
    return RunTotals.from_dict(state.get("totals", {})), state.get("summarizer_usage")


def usage_so_far(run: CompressionRun, resumed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The summarizer counters of `run`'s output so far: those its stopped runs checkpointed
    (`resumed`), and this run's."""
    return carried_usage(resumed, run.counters_since, run_figures(run.summarizer, run.counter, run.pool)[0])


def run_figures(
    summarizer: Summarizer | None, counter: TokenCounter, pool: WorkerPool | None
) -> tuple[dict[str, Any] | None, GuardResult]:
    """The summarizer's counters and the exactness guard: this process's, with the workers'."""
    stats = summarizer.stats() if summarizer is not None else None
    if pool is None:
        return stats, counter.guard
    return pool.stats(stats), pool.counting(counter.guard)


def cpu_seconds(pool: WorkerPool | None) -> float:
    """CPU seconds of every thread of this process and, with `--num-workers`, of the workers'
    rows (their start-up left out, as this process's own is)."""
    return time.process_time() + (pool.cpu_seconds if pool is not None else 0.0)


def describe_os_error(exc: OSError, output: Path) -> str:
    """One line for a failed write (no permission, a full disk): what, where, and what to do."""
    where = f" ({quoted(exc.filename)})" if exc.filename else ""
    return (
        f"cannot write {quoted(output)}: {exc.strerror or exc}{where}; "
        "fix that and re-run the same command (the run resumes from its last checkpoint)"
    )


def input_record(fingerprint: dict[str, Any]) -> dict[str, Any]:
    """An input as the report records it: its name, resolved path, size and sha256 (None where not a file)."""
    name = fingerprint["name"]
    return {
        "name": name,
        "path": None if name.startswith("hf:") else os.path.realpath(name),
        "bytes": fingerprint.get("size"),
        "sha256": fingerprint.get("sha256"),
    }


def _source_fingerprint(source: InputSource) -> dict[str, Any]:
    """Name, size and content hash of a file input, to refuse a mismatched resume.

    The hash catches an edit that keeps the size and restores the modification time; at ~1 GB/s
    it costs a fraction of a percent of counting the same bytes. The modification time is left
    out where the hash stands: a file touched (copied, checked out again) with the same bytes
    resumes. Pipes and other non-regular files (read once) are not hashed; their time stays.
    """
    entry: dict[str, Any] = {"name": source.name}
    try:
        stat = os.stat(source.name)
        entry["size"] = stat.st_size
        if S_ISREG(stat.st_mode):
            entry["sha256"] = _sha256(source.name)
        else:
            entry["mtime_ns"] = stat.st_mtime_ns
    except OSError:
        pass
    return entry


def _sha256(path: str) -> str:
    """The file's sha256, read in large blocks (hashlib releases the GIL on each)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
