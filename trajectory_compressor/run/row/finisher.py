"""One row's path from its plan to its outputs: summarize, apply the over-limit policy, close the outcome.

    rejected ─────────────────────────────────────────────► reject line
    no region ──────────────────────── over-limit policy ─► outcome (unchanged, or truncated)
    region ── summary step ── layout ─ over-limit policy ─► outcome (rewritten)
                  └─ failed and kept ────────────────────► outcome (unchanged, flagged)

A dry run is the same path without the summary step: the plan stands in for the summary, at
its budget, and the outcome writes no dataset line.
"""

from __future__ import annotations

from dataclasses import replace

from trajectory_compressor.count import TokenCounter
from trajectory_compressor.plan.region import Plan
from trajectory_compressor.run.prepare import PreparedRow, RejectedRow, ValidRow
from trajectory_compressor.run.pruning import Pruning
from trajectory_compressor.run.row.fidelity_gate import FidelityGate
from trajectory_compressor.run.row.measure import RowMeasure
from trajectory_compressor.run.row.metrics import Outcome, failed_cost, written_cost
from trajectory_compressor.run.row.options import RowOptions
from trajectory_compressor.run.row.outcome import FinishedRow, RowOutcome, fidelity_metrics, rejected_row
from trajectory_compressor.run.row.over_limit import truncate_row
from trajectory_compressor.run.row.summary_step import Summarized, SummaryFailure, SummaryStep, refused_reason
from trajectory_compressor.run.row.windows import WindowFinisher
from trajectory_compressor.settings import RunConfig
from trajectory_compressor.summarize.fidelity import SalientItems, row_text, salient_items, score_items
from trajectory_compressor.summarize.fidelity.anchors import FutureFidelity, future_fidelity, hidden_future_fidelity
from trajectory_compressor.summarize.fidelity.score import Fidelity, RowText
from trajectory_compressor.types import (
    CompressionRegion,
    EditedTurn,
    ExampleRow,
    KeptTurn,
    OutputTurn,
    Summarizer,
    Turn,
)
from trajectory_compressor.write.records import rewritten_bytes

FITTED_BY_PRUNING = "fitted by pruning tool outputs alone"
NO_SUMMARIZER = "no summary (--summarizer none) and pruning tool outputs is not enough"
EXAMPLE_TURNS = 30  # of the example row kept for the HTML report
EXAMPLE_TURN_CHARS = 2000


class RowFinisher:
    """Turns prepared rows into finished rows, calling the summarizer for the ones to compress.

    The row path's settings are taken from `config` once (`RowOptions`), with the summarizer's
    name and whether the output format keeps rejected rows' lines (`keep_rejects_in_data`), and
    that one record is handed to every part of the path."""

    def __init__(
        self,
        config: RunConfig,
        counter: TokenCounter,
        summarizer: Summarizer | None,
        fallback: Summarizer | None,
        *,
        keep_rejects_in_data: bool = True,
    ) -> None:
        options = RowOptions.from_config(
            config, primary_name=getattr(summarizer, "name", None), keep_rejects_in_data=keep_rejects_in_data
        )
        self.options = options
        self.target = options.target
        self.measure = RowMeasure(counter, config.plan, skip_under_target=config.skip_under_target)
        # A dry run has no summary step and writes no dataset (so nothing to truncate).
        self.summary_step = (
            None
            if options.dry_run or not options.summaries
            else SummaryStep(
                self.measure,
                summarizer,
                fallback,
                options,
                gate=FidelityGate(config.min_fidelity, config.reject_unsupported),
                fill_room=config.llm.anchor_index,
            )
        )
        self.outcome = RowOutcome(options)
        self.example: ExampleRow | None = None  # the first compressed row, for the HTML report
        self.windows = (
            WindowFinisher(self.measure, self.summary_step, options, iterative=getattr(summarizer, "iterative", False))
            if config.plan.windows
            else None
        )

    def summarizes(self, row: PreparedRow) -> bool:
        """Whether finishing `row` may call the summarizer: the rows a worker pool takes
        (`run.worker_pool`); the others are finished where they are, in a few microseconds."""
        if isinstance(row, RejectedRow) or self.summary_step is None:
            return False
        if self.windows is not None:
            return not self.windows.replay(row).fits_whole()
        return row.plan.region is not None

    async def finish(self, row: PreparedRow) -> FinishedRow:
        if isinstance(row, RejectedRow):
            return rejected_row(row, keep_in_data=self.options.keep_rejects_in_data)
        if self.windows is not None:
            return await self.windows.finish(row)
        plan = row.plan
        if plan.region is not None and self.summary_step is None:
            if self.options.dry_run:
                return self._planned(row, plan)
            return self._unchanged(row, plan, reason=NO_SUMMARIZER)  # --summarizer none
        if plan.region is not None:
            plan = self.measure.with_exact_notice(row, plan)
        if plan.region is None:
            return self._unchanged(row, plan)
        assert self.summary_step is not None
        summarized = await self.summary_step.run(row, plan)
        if isinstance(summarized, SummaryFailure):
            return self._kept_after_failure(row, plan, summarized)
        return self._compressed(row, summarized)

    def _unchanged(self, row: ValidRow, plan: Plan, *, reason: str | None = None) -> FinishedRow:
        """A row with no summary: under the target, nothing worth summarizing, or (`reason`) no
        summarizer. A pruned row goes out pruned: fitted by pruning alone, or flagged."""
        over = plan.total_tokens > self.target
        why = reason or (FITTED_BY_PRUNING if row.pruning is not None and not over else plan.reason)
        skipped = not over and row.pruning is None
        outcome = Outcome(plan.total_tokens, len(row.turns), over, why, skipped_under_target=skipped)
        if row.pruning is not None:
            return self._pruned(row, row.pruning, plan, outcome)
        if over and self.options.truncates:
            return self._truncated(row, outcome, plan, None, 0)
        return self.outcome.finish(row, outcome, None)

    def _pruned(self, row: ValidRow, pruning: Pruning, plan: Plan, unpruned: Outcome) -> FinishedRow:
        """A pruned row written with no summary (`unpruned`: why, and what a failed summary
        cost), measured exactly; its fidelity is what the kept turns need from the cleared
        results that the placeholders still say."""
        layout = self.measure.pruned_layout(row)
        size = self.measure.size(row, layout)
        placeholders = "\n".join(edit.value for edit in pruning.edits.values())
        future = hidden_future_fidelity(pruning.source_turns, pruning.edits, placeholders)
        outcome = replace(
            unpruned,
            tokens=size,
            turns=len(layout),
            still_over_limit=size > self.target,
            fidelity={"future": future.to_metrics()},
        )
        if outcome.still_over_limit and self.options.truncates:  # no summary: the cut starts after the head
            return self._truncated(row, outcome, replace(plan, region=None), layout, size)
        data = self._rewritten(row, layout) if self.options.writes_data else None
        return self.outcome.finish(row, outcome, data)

    def _planned(self, row: ValidRow, plan: Plan) -> FinishedRow:
        """A dry run's row to compress: the planned sizes, as if the summary were exactly its budget."""
        region = plan.region
        assert region is not None
        outcome = Outcome(
            plan.estimated_tokens,
            len(row.turns) - region.turns_count + 1,
            plan.still_over_limit,
            plan.reason,
            skipped_under_target=plan.total_tokens <= self.target,
            region=region.to_dict(),
            summary_tokens=plan.summary_tokens,
            planned_tokens=plan.estimated_tokens,
        )
        return self.outcome.finish(row, outcome, None, kept=_outside(row, region))

    def _compressed(self, row: ValidRow, summarized: Summarized) -> FinishedRow:
        plan, result = summarized.plan, summarized.result
        region = plan.region
        assert region is not None
        source = row.source_turns
        start, end = region.start, region.end
        # Judged against the turns as read (as `eval` judges it): the gate, when it measured, saw
        # what the summarizer was sent, pruned.
        fidelity = result.fidelity if row.pruning is None else None
        score = _Scorer(source, start, end)  # the region's items read once for both scores of an indexed summary
        if fidelity is None:
            fidelity = score(result.text)
        future = _future(row, start, end, result.text)
        fidelity_line = fidelity_metrics(fidelity, future, result, source[start:end], source, score=score)
        if self.example is None or row.index < self.example.index:
            shown = row.turns[start : min(end, start + EXAMPLE_TURNS)]
            example_region = tuple(Turn(turn.role, turn.value[:EXAMPLE_TURN_CHARS]) for turn in shown)
            self.example = ExampleRow(row.index, row.label, example_region, result.text, fidelity_line)
        over = summarized.size > self.target
        reason = plan.reason if over else None
        if summarized.refused is not None:
            reason = refused_reason(summarized.refused, result.summarizer)
        outcome = Outcome(
            summarized.size,
            len(summarized.layout),
            over,
            reason,
            was_compressed=True,
            region=region.to_dict(),
            summary_tokens=summarized.summary_tokens,
            summary=written_cost(
                result, summarized.calls, summarized.errors, passes=summarized.passes, primary=self.options.primary_name
            ),
            fidelity=fidelity_line,
            unsupported=fidelity.shown_unsupported(),
        )
        if over and self.options.truncates:
            return self._truncated(row, outcome, plan, summarized.layout, summarized.size)
        return self.outcome.finish(row, outcome, self._rewritten(row, summarized.layout), kept=_kept(summarized.layout))

    def _kept_after_failure(self, row: ValidRow, plan: Plan, failure: SummaryFailure) -> FinishedRow:
        """`--on-summary-failure keep` (or nothing left to try): the row goes out unchanged, flagged."""
        outcome = Outcome(
            plan.total_tokens,
            len(row.turns),
            plan.total_tokens > self.target,
            failure.reason,
            summary=failed_cost(failure),
        )
        if row.pruning is not None:  # pruning is local and did not fail: the row stays pruned
            return self._pruned(row, row.pruning, plan, outcome)
        return self.outcome.finish(row, outcome, None)

    def _truncated(
        self, row: ValidRow, outcome: Outcome, plan: Plan, layout: list[OutputTurn] | None, size: int
    ) -> FinishedRow:
        cut = truncate_row(row, plan, layout, size, self.measure)
        over = cut.size > self.target
        truncated = replace(
            outcome,
            tokens=cut.size,
            turns=len(cut.layout),
            still_over_limit=over,
            reason=outcome.reason if over else None,
            turns_truncated=cut.turns_removed,
        )
        rewritten = cut.turns_removed > 0 or outcome.was_compressed or row.pruning is not None
        return self.outcome.finish(
            row, truncated, self._rewritten(row, cut.layout) if rewritten else None, kept=_kept(cut.layout)
        )

    def _rewritten(self, row: ValidRow, layout: list[OutputTurn]) -> bytes:
        return rewritten_bytes(row.item, row.fmt, layout, self.options.shape)


def _future(row: ValidRow, start: int, end: int, summary: str) -> FutureFidelity:
    """What the kept turns need from the summarized region [start, end) and, on a pruned row, the
    cleared tool results outside it, that the summary (and those results' placeholders) still say."""
    source = row.source_turns
    if row.pruning is None:
        return future_fidelity(source[:start], source[start:end], source[end:], summary)
    outside = {i: edit for i, edit in row.pruning.edits.items() if not start <= i < end}
    hidden = set(range(start, end)) | set(outside)
    return hidden_future_fidelity(source, hidden, "\n".join([summary, *(edit.value for edit in outside.values())]))


def _kept(layout: list[OutputTurn]) -> list[int]:
    """The original turns a layout writes back (kept or edited): the rest were summarized or cut."""
    return [item.index for item in layout if isinstance(item, (KeptTurn, EditedTurn))]


def _outside(row: ValidRow, region: CompressionRegion | None) -> list[int]:
    """The turns of `row` outside `region` (all of them without one)."""
    count = len(row.turns)
    if region is None:
        return list(range(count))
    return [index for index in range(count) if not region.start <= index < region.end]


class _Scorer:
    """`score_summary(region, text, row)` of any text, the region's items and the row's text read
    on the first call only."""

    def __init__(self, row: list[Turn], start: int, end: int) -> None:
        self._row = row
        self._region = (start, end)
        self._read: tuple[SalientItems, RowText] | None = None

    def __call__(self, text: str) -> Fidelity:
        if self._read is None:
            start, end = self._region
            corpus = row_text(self._row)
            corpus.look_first_in(start, end)
            self._read = salient_items(self._row[start:end]), corpus
        return score_items(self._read[0], text, self._read[1])
