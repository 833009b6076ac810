"""Finishing one row: get its summary, apply the failure and over-limit policies, build its outputs.

Each row ends here exactly once, as a `FinishedRow` holding the dataset line (or none), its
metrics line and, when relevant, its over-limit and reject lines. Nothing here writes files:
the pipeline commits finished rows in input order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

from trajectory_compressor.config import RunConfig
from trajectory_compressor.count import TokenCounter
from trajectory_compressor.exit_codes import EXIT_FAILED, EXIT_USAGE
from trajectory_compressor.plan.apply import KeptTurn, LayoutItem, compressed_layout, summary_value
from trajectory_compressor.plan.protect import head_end, tail_start
from trajectory_compressor.plan.region import Plan, plan_region, system_turn_in_head
from trajectory_compressor.plan.truncate import truncate_middle
from trajectory_compressor.prepare import PreparedRow
from trajectory_compressor.read.formats import from_turns
from trajectory_compressor.read.jsonl import exact_record
from trajectory_compressor.types import (
    EndpointAuthError,
    RowMetrics,
    Summarizer,
    SummaryError,
    SummaryRequest,
    SummaryResult,
    Turn,
)

SUMMARY_FAILED = "summary failed"
REJECT_RAW_CHARS = 4000  # enough to see what is wrong without copying a 10 MB line


class RunAborted(RuntimeError):
    """Stop the whole run (`--on-summary-failure fail`, `--strict`, or a refused API key)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class SummaryFailure:
    """A summary that could not be had, kept to flag the row (`--on-summary-failure keep`)."""

    error: str
    calls: int = 0
    errors: int = 0


@dataclass
class FinishedRow:
    """Everything one row contributes to the outputs."""

    position: int
    metrics: RowMetrics
    data: bytes | None = None
    over_limit: dict[str, Any] | None = None
    reject: dict[str, Any] | None = None


def dumps(value: Any) -> bytes:
    """JSON bytes, fast; falls back to the standard library for what orjson refuses (huge ints)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        import json

        return json.dumps(value, ensure_ascii=False).encode("utf-8")


class RowFinisher:
    """Turns prepared rows into finished rows, calling the summarizer for compressed ones."""

    def __init__(
        self,
        config: RunConfig,
        counter: TokenCounter,
        summarizer: Summarizer | None,
        fallback: Summarizer | None,
        *,
        over_limit: str = "keep",
        keep_rejects_in_data: bool = True,
    ) -> None:
        self.config = config
        self.counter = counter
        self.summarizer = summarizer
        self.fallback = fallback
        self.over_limit = over_limit
        self.keep_rejects_in_data = keep_rejects_in_data
        self.notice_text = config.plan.notice
        self.notice_tokens = counter.count(self.notice_text) if self.notice_text else 0

    # ----------------------------------------------------------------------------- entry point
    async def finish(self, row: PreparedRow) -> FinishedRow:
        metrics = RowMetrics(index=row.index, source=row.item.source, line=row.item.line, id=row.record_id)
        if row.error is not None:
            return self._rejected(row, metrics)
        assert row.turns is not None and row.token_counts is not None and row.plan is not None
        plan = row.plan
        metrics.original_tokens = plan.total_tokens
        metrics.original_turns = len(row.turns)
        if plan.region is None or self.config.dry_run:
            return self._planned_only(row, metrics, plan)
        return await self._compressed(row, metrics, plan)

    # ----------------------------------------------------------------------------- outcomes
    def _rejected(self, row: PreparedRow, metrics: RowMetrics) -> FinishedRow:
        metrics.rejected = True
        metrics.reason = row.error
        reject = {
            "index": row.index,
            "file": row.item.source,
            "line": row.item.line,
            "error": row.error,
            "raw": row.item.raw[:REJECT_RAW_CHARS].decode("utf-8", "replace") if row.item.raw is not None else None,
        }
        data = None
        # Valid JSON (even `null`, or too deep to parse) goes back unchanged; only non-JSON cannot.
        if (row.item.error is None or row.item.raw_is_json) and self.keep_rejects_in_data:
            data = self._unchanged_bytes(row)
        return FinishedRow(row.position, metrics, data=data, reject=reject)

    def _planned_only(self, row: PreparedRow, metrics: RowMetrics, plan: Plan) -> FinishedRow:
        """Rows the plan leaves alone, and every row of a dry run (which reports the plan)."""
        target = self.config.plan.target_max_tokens
        metrics.skipped_under_target = plan.total_tokens <= target
        metrics.reason = plan.reason
        if self.config.dry_run and plan.region is not None:
            metrics.compression_region = plan.region.to_dict()
            metrics.extra["planned_tokens"] = plan.estimated_tokens
            metrics.still_over_limit = plan.still_over_limit
            metrics.summary_tokens = plan.summary_tokens
            # A dry run reports the planned sizes, as if each summary were exactly its budget.
            turns = len(row.turns or ()) - plan.region.turns_count + 1
            self._fill_sizes(metrics, plan.estimated_tokens, turns)
            return self._with_over_limit(row, metrics, None)
        metrics.still_over_limit = plan.total_tokens > target
        self._fill_sizes(metrics, plan.total_tokens, len(row.turns or ()))
        if metrics.still_over_limit and self.over_limit == "truncate" and not self.config.dry_run:
            return self._truncated(row, metrics, plan, None, 0)
        return self._with_over_limit(row, metrics, None)

    async def _compressed(self, row: PreparedRow, metrics: RowMetrics, plan: Plan) -> FinishedRow:
        assert row.turns is not None and row.token_counts is not None and plan.region is not None
        budget = self.config.plan.summary_target_tokens
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.row_timeout
        result = await self._summarize(row, plan, budget, deadline)
        if isinstance(result, SummaryFailure):
            return self._summary_kept_unchanged(row, metrics, plan, result)
        body = result.text
        summary_tokens = self._summary_tokens(result)
        passes = 1
        estimated = plan.size_with_summary(summary_tokens)
        target = self.config.plan.target_max_tokens
        if summary_tokens > budget and estimated > target:
            # Second pass: the summary overshot; re-plan once with its real size.
            replanned = plan_region(
                row.roles,
                row.token_counts,
                self.config.plan,
                notice_tokens=self.notice_tokens,
                summary_tokens=summary_tokens,
                skip_under_target=self.config.skip_under_target,
            )
            if replanned.region is not None and replanned.region != plan.region:
                second = await self._summarize(row, replanned, budget, deadline, second_pass=True)
                if isinstance(second, SummaryResult):
                    passes = 2
                    second.calls += result.calls
                    second.errors += result.errors
                    plan, result, body = replanned, second, second.text
                    summary_tokens = self._summary_tokens(second)
                    estimated = plan.size_with_summary(summary_tokens)
        assert plan.region is not None
        layout = compressed_layout(
            row.turns, plan.region, body, self.notice_text or None, system_turn_in_head(row.roles, plan.region.start)
        )
        metrics.was_compressed = True
        metrics.compression_region = plan.region.to_dict()
        metrics.summary_tokens = summary_tokens
        metrics.summarizer = result.summarizer
        metrics.summary_calls = result.calls
        metrics.summary_errors = result.errors
        metrics.last_error = result.last_error
        metrics.passes = passes
        if result.summarizer != getattr(self.summarizer, "name", None):
            metrics.extra["summary_failed"] = result.last_error is not None
        metrics.still_over_limit = estimated > target
        metrics.reason = plan.reason if metrics.still_over_limit else None
        new_turns = len(layout)
        self._fill_sizes(metrics, estimated, new_turns)
        if metrics.still_over_limit and self.over_limit == "truncate":
            return self._truncated(row, metrics, plan, layout, estimated)
        data = dumps(from_turns(self._source_record(row), row.fmt, layout))
        return self._with_over_limit(row, metrics, data)

    def _summary_kept_unchanged(
        self, row: PreparedRow, metrics: RowMetrics, plan: Plan, failure: SummaryFailure
    ) -> FinishedRow:
        """`--on-summary-failure keep`: the row goes out unchanged, flagged with the error."""
        metrics.reason = f"{SUMMARY_FAILED}: {failure.error}"
        metrics.last_error = failure.error
        metrics.summary_calls = failure.calls
        metrics.summary_errors = failure.errors
        metrics.extra["summary_failed"] = True
        metrics.still_over_limit = plan.total_tokens > self.config.plan.target_max_tokens
        self._fill_sizes(metrics, plan.total_tokens, len(row.turns or ()))
        return self._with_over_limit(row, metrics, None)

    def _truncated(
        self, row: PreparedRow, metrics: RowMetrics, plan: Plan, layout: list[LayoutItem] | None, size: int
    ) -> FinishedRow:
        """`--over-limit truncate`: drop kept middle turns from the end until the row fits."""
        assert row.turns is not None and row.token_counts is not None
        roles = row.roles
        tail = tail_start(roles, self.config.plan)
        if layout is None:
            layout = [KeptTurn(i) for i in range(len(row.turns))]
            size = plan.total_tokens
            start = head_end(roles, self.config.plan)
        else:
            assert plan.region is not None
            start = plan.region.end
        start = min(start, tail)
        excess = size - self.config.plan.target_max_tokens
        cut = truncate_middle(roles, row.token_counts, start, tail, excess)
        removed = set(range(cut, tail))
        removed_tokens = sum(row.token_counts[i] for i in removed)
        layout = [item for item in layout if not (isinstance(item, KeptTurn) and item.index in removed)]
        size -= removed_tokens
        metrics.extra["truncated"] = bool(removed)
        metrics.extra["turns_truncated"] = len(removed)
        metrics.still_over_limit = size > self.config.plan.target_max_tokens
        if not metrics.still_over_limit:
            metrics.reason = None
        self._fill_sizes(metrics, size, len(layout))
        rewritten = removed or metrics.was_compressed
        data = dumps(from_turns(self._source_record(row), row.fmt, layout)) if rewritten else None
        return self._with_over_limit(row, metrics, data)

    def _with_over_limit(self, row: PreparedRow, metrics: RowMetrics, data: bytes | None) -> FinishedRow:
        """Attach the dataset line (unchanged if none given) and the over-limit entry if due."""
        if data is None and not self.config.dry_run:
            data = self._unchanged_bytes(row)
        over = None
        if metrics.still_over_limit:
            if not metrics.reason:
                metrics.reason = "over target"
            over = {
                "index": row.index,
                **({"id": metrics.id} if metrics.id is not None else {}),
                "file": row.item.source,
                "line": row.item.line,
                "tokens": metrics.compressed_tokens,
                "target": self.config.plan.target_max_tokens,
                "reason": metrics.reason,
            }
            if self.over_limit == "drop":
                metrics.extra["dropped"] = True
                data = None
        if self.config.dry_run:
            data = None
        return FinishedRow(row.position, metrics, data=data, over_limit=over)

    # ----------------------------------------------------------------------------- helpers
    @staticmethod
    def _fill_sizes(metrics: RowMetrics, tokens: int, turns: int) -> None:
        metrics.compressed_tokens = tokens
        metrics.tokens_saved = metrics.original_tokens - tokens
        metrics.compression_ratio = tokens / metrics.original_tokens if metrics.original_tokens else 1.0
        metrics.compressed_turns = turns
        metrics.turns_removed = metrics.original_turns - turns

    def _summary_tokens(self, result: SummaryResult) -> int:
        """Size of the summary turn: measured by the summarizer when it could, else counted here."""
        if result.tokens is not None and not self.counter.counts_chat_template and result.text == result.text.strip():
            return result.tokens
        return self.counter.count_turn(Turn("human", summary_value(result.text)))

    @staticmethod
    def _source_record(row: PreparedRow) -> Any:
        """The record to rewrite, re-read exactly when its JSON holds very long integers."""
        if row.item.raw is not None:
            return exact_record(row.item.raw, row.item.record)
        return row.item.record

    @staticmethod
    def _unchanged_bytes(row: PreparedRow) -> bytes:
        """An unchanged row is written back byte for byte when its source line is known."""
        if row.item.raw is not None:
            return row.item.raw
        return dumps(row.item.record)

    async def _summarize(
        self, row: PreparedRow, plan: Plan, budget: int, deadline: float, *, second_pass: bool = False
    ) -> SummaryResult | SummaryFailure:
        """One summary, within the row's deadline; the failure policy decides what a failure becomes.

        Returns a `SummaryFailure` when the policy is `keep`, or when a second pass failed (the
        first pass then stands).
        """
        assert row.turns is not None and plan.region is not None
        request = SummaryRequest(
            turns=tuple(row.turns[plan.region.start : plan.region.end]), budget_tokens=budget, label=row.label
        )
        primary = self.summarizer or self.fallback
        assert primary is not None
        remaining = deadline - asyncio.get_running_loop().time()
        calls = errors = 0
        try:
            if remaining <= 0:
                raise TimeoutError
            return await asyncio.wait_for(primary.summarize(request), timeout=remaining)
        except EndpointAuthError as exc:
            raise RunAborted(f"the summary endpoint refused the credentials: {exc}", exit_code=EXIT_USAGE) from None
        except SummaryError as exc:
            error, calls, errors = str(exc), exc.calls, exc.errors
        except TimeoutError:
            error = f"row deadline of {self.config.row_timeout:g}s exceeded"
        failure = SummaryFailure(error, calls, errors)
        if second_pass:
            return failure
        policy = self.config.on_summary_failure
        if policy == "fail":
            raise RunAborted(f"summary failed for {row.label}: {error}", exit_code=EXIT_FAILED)
        if policy == "keep" or self.fallback is None or primary is self.fallback:
            return failure
        result = await self.fallback.summarize(request)
        result.calls, result.errors, result.last_error = calls, errors, error
        return result
