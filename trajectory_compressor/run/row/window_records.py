"""`--windows`: the records of a row's windows once they are built: layout, metrics, dataset line.

`run/row/windows.py` decides each window and gets its summary; this module writes each one down:
its turns (the summary, the tool results shortened or cleared), its training marks, its exact
size, its metrics (the summary's cost and fidelity, the results cleared) and its over-limit entry.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from trajectory_compressor.plan.region import PROTECTED_OVER_BUDGET, UNDER_TARGET, system_turn_in_head
from trajectory_compressor.plan.windows import Cut, Window, WindowReplay, window_layout
from trajectory_compressor.run.prepare import ValidRow
from trajectory_compressor.run.row.measure import RowMeasure
from trajectory_compressor.run.row.metrics import Outcome, failed_cost, row_metrics, written_cost
from trajectory_compressor.run.row.options import RowOptions
from trajectory_compressor.run.row.outcome import OVER_TARGET, FinishedRow, OutputRecord, fidelity_metrics
from trajectory_compressor.run.row.summary_step import SummaryFailure, refused_reason
from trajectory_compressor.summarize.fidelity.windows import WindowFidelity
from trajectory_compressor.types import EditedTurn, OutputTurn, SummaryResult
from trajectory_compressor.write.records import window_bytes

GROUP_OVER_BUDGET = "one turn group does not fit beside the head"
GROUP_OVER_BUDGET_WITH_SUMMARY = "one turn group does not fit beside the head and the summary"
# A row whose gpt turns after the head are all marked "train": false stays one window: cut, every
# window after the first would train nothing (rows TRL drops).
NOTHING_TRAINED_AFTER_HEAD = 'every gpt turn after the head is marked "train": false: not cut into windows'


@dataclass(frozen=True)
class BuiltWindow:
    """A window with its summary (None for window 0, a dry run's planned window, or
    `--summarizer none`), as it will be written."""

    window: Window
    cut: Cut | None = None
    result: SummaryResult | None = None
    passes: int = 0
    refused: str | None = None  # why the primary's summary was refused and the fallback's used
    elided: tuple[tuple[int, EditedTurn], ...] = ()  # tool results shortened so the window fits
    calls: int = 0  # every request sent for its summary (both passes, refused ones, the fallback's)
    errors: int = 0  # and the failed attempts among them
    judged: Judged | None = None  # its summary's fidelity, scored as soon as the window was built


@dataclass(frozen=True)
class Judged:
    """A window's summary as its metrics judge it: `fidelity_metrics` and the unsupported items."""

    fidelity: dict[str, Any]
    unsupported: list[str]


def cleared_edits(row: ValidRow, window: Window) -> dict[int, EditedTurn]:
    """The context results `window` shows as placeholders (`--prune-tool-outputs`), as written."""
    if not window.cleared:
        return {}
    return {index: row.placeholder_edits[index] for index in window.cleared}


class WindowRecords:
    """Writes a row's built windows as records, in order."""

    def __init__(
        self,
        measure: RowMeasure,
        options: RowOptions,
    ) -> None:
        self.measure = measure
        # `summaries` off for --summarizer none: a cut then carries no summary; `shape`
        # (--write-format): windows of a row read in another format, converted.
        self.options = options
        self.target = measure.plan_config.target_max_tokens

    def layout(
        self, row: ValidRow, replay: WindowReplay, item: BuiltWindow
    ) -> tuple[list[OutputTurn], list[bool | None]]:
        replaced = {**cleared_edits(row, item.window), **dict(item.elided)}
        return window_layout(
            row.turns,
            replay.head,
            item.window,
            item.result.text if item.result is not None else None,
            notice_text=self.measure.notice_for(row),
            notice_index=system_turn_in_head(row.roles, replay.head),
            replaced=replaced,
            untrained=replay.untrained,
        )

    def finished(
        self,
        row: ValidRow,
        replay: WindowReplay,
        built: list[BuiltWindow],
        failure: SummaryFailure | None = None,
        scores: WindowFidelity | None = None,
    ) -> FinishedRow:
        """The row's records; `failure`: a summary could not be had and the row is kept as one
        window (`--on-summary-failure keep`), flagged with why. `scores`: the one that `judge`d
        the windows as they were built, if any."""
        if scores is None:
            scores = WindowFidelity(row.turns, replay.head)  # the windows' summaries, each turn read once
        records = [self._record(row, replay, item, len(built), failure, scores) for item in built]
        first = records[0]
        return FinishedRow(row.position, first.metrics, first.data, first.over_limit, more=tuple(records[1:]))

    def _record(
        self,
        row: ValidRow,
        replay: WindowReplay,
        item: BuiltWindow,
        count: int,
        failure: SummaryFailure | None,
        scores: WindowFidelity,
    ) -> OutputRecord:
        window = item.window
        layout, marks = self.layout(row, replay, item)
        # A dry run's window: its summary is planned at its budget, not written yet.
        planned = self.options.summaries and item.cut is not None and item.result is None
        end = replay.written_end(row.turns, window)  # where the window as written stops
        size = window.tokens - replay.tokens(end, window.end) if planned else self.measure.size(row, layout)
        skipped = count == 1 and replay.total <= self.target
        over = size > self.target
        reason = None
        if skipped:
            reason = UNDER_TARGET
        elif over:
            if replay.head_tokens > self.target:
                reason = PROTECTED_OVER_BUDGET
            elif replay.trains_nothing_after_head:
                reason = NOTHING_TRAINED_AFTER_HEAD
            else:
                reason = GROUP_OVER_BUDGET if item.cut is None else GROUP_OVER_BUDGET_WITH_SUMMARY
        outcome = Outcome(size, len(layout) + planned, over, reason, skipped_under_target=skipped)
        if item.cut is not None:
            outcome = self._summarized(row, replay, outcome, item.cut, item, scores, end)
            if planned:
                outcome = replace(outcome, planned_tokens=size, summary_tokens=item.cut.budget)
        if item.refused is not None:
            summarizer = outcome.summary.summarizer if outcome.summary is not None else None
            outcome = replace(outcome, reason=refused_reason(item.refused, summarizer))
        if failure is not None:
            outcome = replace(outcome, reason=failure.reason, summary=failed_cost(failure))
        marked = {"index": window.index, "count": count, "input_index": row.index}
        data = None
        if self.options.writes_data:
            data = window_bytes(row.item, row.fmt, layout, marks, marked, self.options.shape)
        over_entry = None
        dropped = False
        if outcome.still_over_limit:
            over_entry = self._over_limit_entry(row, marked, outcome)
            if self.options.drops:
                dropped = True
                data = None
        pruned = None
        if window.cleared:
            pruned = (len(window.cleared), sum(replay.savings[index] for index in window.cleared))
        metrics = row_metrics(
            row,
            outcome,
            written=data is not None,
            train_turns=sum(1 for mark in marks if mark),
            dropped=dropped,
            window=marked,
            elided_turns=len(item.elided) or None,
            pruned=pruned,
        )
        return OutputRecord(metrics, data, over_entry)

    def _summarized(
        self,
        row: ValidRow,
        replay: WindowReplay,
        outcome: Outcome,
        cut: Cut,
        item: BuiltWindow,
        scores: WindowFidelity,
        shown_end: int,
    ) -> Outcome:
        """`outcome` with what left the context at the `cut` before the window: the summary that
        stands for it (what it covers, who wrote it, what it cost, its fidelity) or, with no
        summarizer, only the fidelity of what the window still shows (its placeholders).
        `shown_end`: where the window as written stops (`written_end`)."""
        window = item.window
        if not self.options.summaries:  # its own turns are its future: the placeholders must hold what they use
            placeholders = "\n".join(edit.value for edit in cleared_edits(row, window).values())
            future = scores.future(cut.context_start, shown_end, set(window.cleared), placeholders)
            return replace(outcome, fidelity={"future": future.to_metrics()})
        region = {
            "start_idx": replay.head,
            "end_idx": cut.context_start - 1,
            "turns_count": cut.context_start - replay.head,
        }
        result = item.result
        if result is None:
            return replace(outcome, was_compressed=True, region=region)
        judged = item.judged or self.judge(row, replay, item, scores)
        return replace(
            outcome,
            was_compressed=True,
            region=region,
            summary_tokens=self.measure.summary_tokens(result),
            summary=written_cost(
                result, item.calls, item.errors, passes=item.passes, primary=self.options.primary_name
            ),
            fidelity=judged.fidelity,
            unsupported=judged.unsupported,
        )

    def judge(self, row: ValidRow, replay: WindowReplay, item: BuiltWindow, scores: WindowFidelity) -> Judged:
        """The fidelity of a built window's summary. `scores` reads the region as it grows, so the
        windows are judged in order; the windows' finisher judges each one as soon as it is built,
        while the turns it summarized are still fresh in the readers' memos (`TextMemo`): judged
        after the last window, a long row's early turns were parsed all over again."""
        window, cut, result = item.window, item.cut, item.result
        assert cut is not None and result is not None
        # The window's own turns are its future: what they use, the summary (and the placeholders
        # of the results it cleared) must hold. Judged against everything it stands for: an updated
        # summary must still carry the earlier windows' facts.
        placeholders = [edit.value for edit in cleared_edits(row, window).values()]
        summarized = row.turns[replay.head : cut.context_start]
        fidelity = scores.score(cut.context_start, result.text)
        context = "\n".join([result.text, *placeholders])
        shown_end = replay.written_end(row.turns, window)
        future = scores.future(cut.context_start, shown_end, set(window.cleared), context)
        metrics = fidelity_metrics(
            fidelity, future, result, summarized, row.turns, score=partial(scores.score, cut.context_start)
        )
        return Judged(metrics, fidelity.shown_unsupported())

    def _over_limit_entry(self, row: ValidRow, window: dict[str, int], outcome: Outcome) -> dict[str, object]:
        return {
            "index": row.index,
            **({"id": row.record_id} if row.record_id is not None else {}),
            "file": row.item.source,
            "line": row.item.line,
            "window": window,
            "tokens": outcome.tokens,
            "target": self.target,
            "reason": outcome.reason or OVER_TARGET,
        }
