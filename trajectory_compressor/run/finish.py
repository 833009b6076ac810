"""Finishing one row: get its summary, apply the failure and over-limit policies, build its outputs.

Each row ends here exactly once, as a `FinishedRow` holding the dataset line (or none), its
metrics line and, when relevant, its over-limit and reject lines. Nothing here writes files:
the pipeline commits finished rows in input order.
"""

from __future__ import annotations

import asyncio
import functools
import json
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
from trajectory_compressor.read.formats import from_turns
from trajectory_compressor.read.jsonl import needs_standard_json
from trajectory_compressor.run.prepare import PreparedRow
from trajectory_compressor.summarize.tally import CURRENT_TALLY, CallTally
from trajectory_compressor.types import (
    EditedTurn,
    EndpointAuthError,
    NewTurn,
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
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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
        # Rows of one dataset mostly share their system prompt: count each edited one once.
        self._count_value = functools.lru_cache(maxsize=64)(counter.count)

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
        target = self.config.plan.target_max_tokens
        plan = self._with_exact_notice(row, plan)
        if plan.region is None:
            return self._planned_only(row, metrics, plan)
        first_plan = plan
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.row_timeout
        result = await self._summarize(row, plan, budget, deadline)
        if isinstance(result, SummaryFailure):
            return self._summary_kept_unchanged(row, metrics, plan, result)
        summary_tokens = self._summary_tokens(result)
        passes = 1
        if summary_tokens > budget and plan.size_with_summary(summary_tokens) > target:
            # Second pass: the summary overshot; re-plan once with its real size.
            replanned = plan_region(
                row.roles,
                row.token_counts,
                self.config.plan,
                notice_tokens=plan.notice_tokens,
                summary_tokens=summary_tokens,
                skip_under_target=self.config.skip_under_target,
            )
            if replanned.region is not None and replanned.region != plan.region:
                second = await self._summarize(row, replanned, budget, deadline, second_pass=True)
                if isinstance(second, SummaryResult):
                    passes = 2
                    second.calls += result.calls
                    second.errors += result.errors
                    plan, result = replanned, second
                    summary_tokens = self._summary_tokens(second)
                else:  # the first pass stands; the failed second pass's requests still count
                    result.calls += second.calls
                    result.errors += second.errors
        layout = self._layout(row, plan, result.text)
        size = self.measure(row, layout)
        overshoot = self._overshoot(first_plan, metrics.original_tokens, size, summary_tokens)
        overshoot_error = None
        if overshoot is not None:
            # The summary is still too long after the second pass: the row would grow, or miss
            # a target its plan meets. The failure policy decides, as for a failed summary.
            fallback = await self._after_overshoot(row, first_plan, result, overshoot)
            if isinstance(fallback, SummaryFailure):
                return self._summary_kept_unchanged(row, metrics, first_plan, fallback)
            plan, result, passes, overshoot_error = first_plan, fallback, 1, overshoot
            summary_tokens = self._summary_tokens(result)
            layout = self._layout(row, plan, result.text)
            size = self.measure(row, layout)
        assert plan.region is not None
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
        metrics.still_over_limit = size > target
        metrics.reason = plan.reason if metrics.still_over_limit else None
        if overshoot_error is not None:
            metrics.reason = f"{SUMMARY_FAILED}: {overshoot_error}; used the {result.summarizer} summary"
        self._fill_sizes(metrics, size, len(layout))
        if metrics.still_over_limit and self.over_limit == "truncate":
            return self._truncated(row, metrics, plan, layout, size)
        data = self._rewritten(row, layout)
        return self._with_over_limit(row, metrics, data)

    def _layout(self, row: PreparedRow, plan: Plan, body: str) -> list[LayoutItem]:
        assert row.turns is not None and plan.region is not None
        notice_index = system_turn_in_head(row.roles, plan.region.start)
        return compressed_layout(row.turns, plan.region, body, self.notice_text or None, notice_index)

    def _overshoot(self, first_plan: Plan, original: int, size: int, summary_tokens: int) -> str | None:
        """Why a compressed row must not be written as it is, or None when it may.

        A summary over its budget that makes the row larger than it came in, or over the target
        when the plan at the budget fits, is refused.
        """
        budget = self.config.plan.summary_target_tokens
        target = self.config.plan.target_max_tokens
        if summary_tokens <= budget:
            return None
        if size > original:
            return f"summary of {summary_tokens} tokens (budget {budget}) would grow the row from {original} to {size}"
        if size > target and not first_plan.still_over_limit:
            return f"summary of {summary_tokens} tokens (budget {budget}) leaves the row at {size}, over {target}"
        return None

    async def _after_overshoot(
        self, row: PreparedRow, plan: Plan, result: SummaryResult, error: str
    ) -> SummaryResult | SummaryFailure:
        """`--on-summary-failure` for a summary that overshot: extractive, keep, or fail."""
        failure = SummaryFailure(error, result.calls, result.errors)
        from_fallback = self.fallback is None or result.summarizer == self.fallback.name
        request = self._request(row, plan, self.config.plan.summary_target_tokens)
        try:
            return await self._by_policy(row, request, failure, from_fallback=from_fallback)
        except SummaryError as exc:
            return SummaryFailure(f"{error}; fallback: {exc}", result.calls, result.errors)

    async def _by_policy(
        self, row: PreparedRow, request: SummaryRequest, failure: SummaryFailure, *, from_fallback: bool
    ) -> SummaryResult | SummaryFailure:
        """What a summary that could not be had becomes: the run stops (`fail`), the row stays
        unchanged (`keep`, or nothing else to try), or the fallback summarizer writes it."""
        policy = self.config.on_summary_failure
        if policy == "fail":
            raise RunAborted(f"summary failed for {row.label}: {failure.error}", exit_code=EXIT_FAILED)
        if policy == "keep" or self.fallback is None or from_fallback:
            return failure
        result = await self.fallback.summarize(request)
        result.calls, result.errors, result.last_error = failure.calls, failure.errors, failure.error
        return result

    @staticmethod
    def _request(row: PreparedRow, plan: Plan, budget: int) -> SummaryRequest:
        assert row.turns is not None and plan.region is not None
        turns = tuple(row.turns[plan.region.start : plan.region.end])
        return SummaryRequest(turns=turns, budget_tokens=budget, label=row.label)

    def _with_exact_notice(self, row: PreparedRow, plan: Plan) -> Plan:
        """The plan, re-made if the notice costs this row more than the planner assumed.

        The planner charges the notice as counted alone; appended to a system prompt its first
        token can merge with the prompt's last (cheaper) or, for some texts, split (dearer).
        Only the dearer case re-plans, so the plan's promise to fit stays true.
        """
        assert plan.region is not None and row.turns is not None and row.token_counts is not None
        index = system_turn_in_head(row.roles, plan.region.start)
        if index is None or not self.notice_text:
            return plan
        cost = self.notice_cost(row, index)
        if cost <= plan.notice_tokens:
            return plan
        return plan_region(
            row.roles,
            row.token_counts,
            self.config.plan,
            notice_tokens=cost,
            summary_tokens=plan.summary_tokens,
            skip_under_target=self.config.skip_under_target,
        )

    def notice_cost(self, row: PreparedRow, index: int) -> int:
        """Tokens the notice adds to turn `index` of this row, measured in place."""
        assert row.turns is not None and row.token_counts is not None
        turn = row.turns[index]
        edited = Turn(turn.role, turn.value + self.notice_text)
        if not self.counter.counts_chat_template:
            return self._count_value(edited.value) - row.token_counts[index]
        before = list(row.turns[: index + 1])
        after = [*before[:-1], edited]
        counts = self.counter.count_conversations([before, after])
        return sum(counts[1]) - sum(counts[0])

    def measure(self, row: PreparedRow, layout: list[LayoutItem]) -> int:
        """The exact token count of a rewritten row, as an independent recount would find it.

        Per-value counts: kept turns keep their counts, new and edited turns (the summary, the
        system turn with the notice appended) are counted whole. Chat-template counts: the
        rewritten conversation is rendered and counted whole.
        """
        assert row.turns is not None and row.token_counts is not None
        turns = row.turns
        if self.counter.counts_chat_template:
            rebuilt = [_layout_turn(turns, item) for item in layout]
            return sum(self.counter.count_conversations([rebuilt])[0]) if rebuilt else 0
        kept = sum(row.token_counts[item.index] for item in layout if isinstance(item, KeptTurn))
        edited = sum(self._count_value(item.value) for item in layout if isinstance(item, EditedTurn))
        new_values = [item.turn.value for item in layout if isinstance(item, NewTurn)]
        return kept + edited + sum(self.counter.count_many(new_values))

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
        size = self.measure(row, layout) if self.counter.counts_chat_template else size - removed_tokens
        metrics.extra["truncated"] = bool(removed)
        metrics.extra["turns_truncated"] = len(removed)
        metrics.still_over_limit = size > self.config.plan.target_max_tokens
        if not metrics.still_over_limit:
            metrics.reason = None
        self._fill_sizes(metrics, size, len(layout))
        rewritten = removed or metrics.was_compressed
        data = self._rewritten(row, layout) if rewritten else None
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
    def _rewritten(row: PreparedRow, layout: list[LayoutItem]) -> bytes:
        """The dataset line of a rewritten row: its record with the new turns, every other key exact.

        A record holding integers beyond 64 bits, NaN or Infinity is re-read and written with the
        standard library, which keeps them as they came in (orjson would change them silently).
        """
        raw = row.item.raw
        if raw is not None and needs_standard_json(raw):
            record = from_turns(json.loads(raw), row.fmt, layout)
            return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return dumps(from_turns(row.item.record, row.fmt, layout))

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
        request = self._request(row, plan, budget)
        primary = self.summarizer or self.fallback
        assert primary is not None
        remaining = deadline - asyncio.get_running_loop().time()
        calls = errors = 0
        tally = CallTally()
        token = CURRENT_TALLY.set(tally)  # the summary's task copies it: see `summarize.tally`
        try:
            if remaining <= 0:
                raise TimeoutError
            return await asyncio.wait_for(primary.summarize(request), timeout=remaining)
        except EndpointAuthError as exc:
            raise RunAborted(f"the summary endpoint refused the credentials: {exc}", exit_code=EXIT_USAGE) from None
        except SummaryError as exc:
            error, calls, errors = str(exc), exc.calls, exc.errors
        except TimeoutError:
            # Cancelled mid-flight: the requests already sent still count.
            error, calls, errors = f"row deadline of {self.config.row_timeout:g}s exceeded", tally.calls, tally.errors
        finally:
            CURRENT_TALLY.reset(token)
        failure = SummaryFailure(error, calls, errors)
        if second_pass:
            return failure
        return await self._by_policy(row, request, failure, from_fallback=primary is self.fallback)


def _layout_turn(turns: list[Turn] | tuple[Turn, ...], item: LayoutItem) -> Turn:
    """The turn a layout item stands for."""
    if isinstance(item, KeptTurn):
        return turns[item.index]
    if isinstance(item, EditedTurn):
        return Turn(turns[item.index].role, item.value)
    return item.turn
