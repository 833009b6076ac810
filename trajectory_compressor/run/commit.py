"""Committing finished rows in input order: their lines into the work files, their counts into the totals.

A checkpoint makes the committed rows durable (see `write.run_files`); it is taken every so many
rows or seconds, so a crash loses at most that much work, which the summary cache makes cheap
to redo. `TC_CHECKPOINT_ROWS` / `TC_CHECKPOINT_SECONDS` tune that for tests and slow disks.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

from trajectory_compressor.errors import RunAborted, UsageError
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.messages import quoted
from trajectory_compressor.run.row import FinishedRow
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.write.records import dumps
from trajectory_compressor.write.report import RunTotals
from trajectory_compressor.write.run_files import RunFiles

REJECTS_SHOWN = 20  # bad records named on stderr; the rest are in the rejects file
MORE_REJECTS = "warning: more bad records; see the rejects file"


def all_rejected_message(rows: int, first: dict[str, Any] | None) -> str:
    """The one line of a run that rejected every row it read: the first reason, where the others
    are, and the flags for the commonest cause (not claimed to be this run's: a run of records with
    images, or tools no template takes, is rejected for what its reasons say)."""
    example = f" (first: {quoted(first['file'])}:{first['line']}: {first['error']})" if first else ""
    return (
        f"every row was rejected ({rows:,} of {rows:,}){example}: every reason is in the rejects file; if the "
        "input is in another format or keeps its turns under another key, pass --format sharegpt|openai and "
        "--conversation-key NAME (the field holding the turn list)"
    )


def completed_exit(
    totals: RunTotals, config: RunConfig, first_reject: dict[str, Any] | None
) -> tuple[ExitCode, str | None]:
    """A completed run's exit code and line, whichever engine ran it: every row rejected (4),
    rows over the limit with `--fail-on-over-limit` (3), else done (0)."""
    if 0 < totals.rows_selected == totals.rows_rejected:
        return ExitCode.ALL_REJECTED, all_rejected_message(totals.rows_rejected, first_reject)
    if config.output.fail_on_over_limit and totals.rows_still_over_limit:
        return ExitCode.OVER_LIMIT, f"{totals.rows_still_over_limit} rows are still over the limit"
    return ExitCode.OK, None


def reject_warning(reject: dict[str, Any]) -> str:
    """The stderr line naming one bad record (both engines print it)."""
    return f"warning: {quoted(reject['file'])}:{reject['line']}: {reject['error']}"


def _checkpoint_every(variable: str, default: str, kind: Callable[[str], float]) -> float:
    """A checkpoint interval from the environment: a positive number, or one line naming it (exit 2)."""
    text = os.environ.get(variable) or default
    try:
        value = kind(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise UsageError(f"{variable} must be a positive {'integer' if kind is int else 'number'}, got {text!r}")
    return value


class RowCommitter:
    """Writes each finished row's lines, keeps the run's totals and position, checkpoints when due."""

    def __init__(
        self,
        files: RunFiles,
        totals: RunTotals,
        position: int,
        *,
        strict: bool,
        on_message: Callable[[str], None],
        usage: Callable[[], dict[str, Any] | None],
    ) -> None:
        self.files = files
        self.totals = totals
        self.usage = usage  # the summarizer counters so far, checkpointed so that a resume counts them
        self.position = position  # stream rows committed (selected or not): where a resume starts
        self.strict = strict
        self.on_message = on_message
        self.every_rows = int(_checkpoint_every("TC_CHECKPOINT_ROWS", "500", int))
        self.every_seconds = _checkpoint_every("TC_CHECKPOINT_SECONDS", "5", float)
        self._since_checkpoint = 0
        self._last_checkpoint = time.monotonic()
        self._rejects_reported = 0
        self.first_reject: dict[str, Any] | None = None  # this run's first bad record, to name it again

    def commit(self, finished: FinishedRow) -> None:
        records = finished.records()
        for record in records:
            metrics = record.metrics
            if record.data is not None:
                self.files.write("data", record.data)
            self.files.write("metrics", dumps(metrics.to_dict()))
            if record.over_limit is not None:
                self.files.write("over_limit", dumps(record.over_limit))
        if records[0].metrics.window is not None:
            self.totals.add_windows([record.metrics for record in records])
        else:
            self.totals.add(records[0].metrics)
        if finished.reject is not None:
            self.files.write("rejects", dumps(finished.reject))
            self._report_reject(finished.reject)
        self.position = finished.position
        self._since_checkpoint += 1

    def checkpoint_if_due(self) -> bool:
        """Checkpoint if enough rows or time went by since the last one; whether it did."""
        now = time.monotonic()
        if self._since_checkpoint < self.every_rows and now - self._last_checkpoint < self.every_seconds:
            return False
        self.checkpoint()
        self._since_checkpoint, self._last_checkpoint = 0, now
        return True

    def checkpoint(self) -> None:
        self.totals.rows_read = self.position
        self.files.checkpoint(self.position, {"totals": self.totals.to_dict(), "summarizer_usage": self.usage()})

    def _report_reject(self, reject: dict[str, Any]) -> None:
        self._rejects_reported += 1
        self.first_reject = self.first_reject or reject
        if self.strict:  # the run stops on it: said once, as the run's error (not a warning first)
            raise RunAborted(
                f"{reject['file']}:{reject['line']}: {reject['error']} (--strict); "
                "fix the record, then re-run with --no-resume",
                ExitCode.FAILED,
            )
        if self._rejects_reported <= REJECTS_SHOWN:
            self.on_message(reject_warning(reject))
        elif self._rejects_reported == REJECTS_SHOWN + 1:
            self.on_message(MORE_REJECTS)
