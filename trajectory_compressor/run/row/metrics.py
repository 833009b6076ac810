"""A row's metrics line, built once from what the row became.

The row code decides what a row becomes (`Outcome`: its size as written, why, the summary
that stands for its region and what that cost) and the outcome code closes it (training
turns, the over-limit policy); `row_metrics` then makes the frozen `RowMetrics` in one call.
Nothing assigns a metrics field anywhere else: the line says what the typed outcome says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trajectory_compressor.run.prepare import RejectedRow, ValidRow
from trajectory_compressor.run.row.summary_step import SummaryFailure
from trajectory_compressor.types import RowMetrics, SummarizerName, SummaryResult


@dataclass(frozen=True)
class SummaryCost:
    """Who wrote the summary a row (or window) is written with, and what getting it cost; or,
    for a summary that could not be had, what the attempts cost and why they failed."""

    summarizer: SummarizerName | None
    calls: int
    errors: int
    last_error: str | None
    passes: int = 0
    failed: bool | None = None  # the fallback wrote it (True when the primary failed), or none could
    fidelity_retried: bool = False


def written_cost(result: SummaryResult, calls: int, errors: int, *, passes: int, primary: str | None) -> SummaryCost:
    """The cost of a summary that is written (`calls` and `errors`: every request sent for it, from
    its tally): `failed` says, for one the primary did not write, whether it stands in for a
    failed one (the fallback) or was the run's only summarizer."""
    return SummaryCost(
        result.summarizer,
        calls,
        errors,
        result.last_error,
        passes,
        failed=result.last_error is not None if result.summarizer != primary else None,
        fidelity_retried=result.fidelity_retried,
    )


def failed_cost(failure: SummaryFailure) -> SummaryCost:
    """The cost of a summary that could not be had (`--on-summary-failure keep`)."""
    return SummaryCost(
        None, failure.calls, failure.errors, failure.error, failed=True, fidelity_retried=failure.fidelity_retried
    )


@dataclass(frozen=True)
class Outcome:
    """What a valid row (or one `--windows` record of it) became: its size as written, whether it
    is still over the target and why, and the summary that stands for its region, if any."""

    tokens: int  # as written (a dry run: as planned)
    turns: int
    still_over_limit: bool
    reason: str | None = None
    skipped_under_target: bool = False
    was_compressed: bool = False
    region: dict[str, int] | None = None  # the summarized turns (`CompressionRegion.to_dict`)
    summary_tokens: int = 0
    summary: SummaryCost | None = None
    planned_tokens: int | None = None  # a dry run: the size planned, each summary at its budget
    turns_truncated: int | None = None  # `--over-limit truncate` applied
    fidelity: dict[str, Any] | None = None
    unsupported: list[str] | None = None


def row_metrics(
    row: ValidRow,
    outcome: Outcome,
    *,
    written: bool,
    train_turns: int,
    dropped: bool,
    window: dict[str, int] | None = None,
    elided_turns: int | None = None,
    pruned: tuple[int, int] | None = None,
) -> RowMetrics:
    """The metrics line of `row` once its `outcome` is closed: `written` (in the dataset),
    `train_turns` (gpt turns it holds verbatim), `dropped` (`--over-limit drop`); for a
    `--windows` record, its `window`, the results `elided` and `pruned` (turns, tokens) in it
    (the row's own pruning otherwise)."""
    original = row.source_tokens
    cost = outcome.summary
    if pruned is None and row.pruning is not None:
        pruned = (len(row.pruning.edits), row.pruning.saved_tokens)
    return RowMetrics(
        index=row.index,
        source=row.item.source,
        line=row.item.line,
        id=row.record_id,
        original_tokens=original,
        compressed_tokens=outcome.tokens,
        tokens_saved=original - outcome.tokens,
        compression_ratio=outcome.tokens / original if original else 1.0,
        original_turns=len(row.turns),
        compressed_turns=outcome.turns,
        turns_removed=len(row.turns) - outcome.turns,
        compression_region=outcome.region,
        was_compressed=outcome.was_compressed,
        skipped_under_target=outcome.skipped_under_target,
        still_over_limit=outcome.still_over_limit,
        written=written,
        reason=outcome.reason,
        summary_tokens=outcome.summary_tokens,
        summarizer=cost.summarizer if cost is not None else None,
        summary_calls=cost.calls if cost is not None else 0,
        summary_errors=cost.errors if cost is not None else 0,
        last_error=cost.last_error if cost is not None else None,
        passes=cost.passes if cost is not None else 0,
        planned_tokens=outcome.planned_tokens,
        summary_failed=cost.failed if cost is not None else None,
        truncated=None if outcome.turns_truncated is None else outcome.turns_truncated > 0,
        turns_truncated=outcome.turns_truncated,
        dropped=True if dropped else None,
        fidelity=outcome.fidelity,
        unsupported=outcome.unsupported,
        fidelity_retried=True if cost is not None and cost.fidelity_retried else None,
        gpt_turns=row.gpt_turns,
        train_turns=train_turns,
        window=window,
        elided_turns=elided_turns,
        pruned_turns=pruned[0] if pruned is not None else None,
        pruned_tokens=pruned[1] if pruned is not None else None,
    )


def rejected_metrics(row: RejectedRow, *, written: bool) -> RowMetrics:
    """The metrics line of a rejected row: where it came from, and why."""
    return RowMetrics(
        index=row.index,
        source=row.item.source,
        line=row.item.line,
        id=row.record_id,
        rejected=True,
        written=written,
        reason=row.error,
    )
