"""`--windows`: one row in, its context windows out, each summary the update of the one before.

The replay (`plan.windows.WindowReplay`) says where each window ends and what its summary
covers; this module gets the summaries, measures each window exactly, and builds its record.
With an iterative summarizer (the LLM), window k's summary is asked as the update of window
k-1's with only the turns that left the context since; the extractive summarizer, deterministic,
digests everything from the head to the cut each time (its lists are then cumulative by
construction), but reads only the turns that left: the region's request grows by them
(`_GrowingRegion`) and the summarizer extends the digest it kept (`SummaryCarry`), so a row's
windows cost what they write, not windows times the row. The second pass, the fidelity gate and the failure policy apply
per window; a failure under `--on-summary-failure keep` leaves the whole row as one window,
unchanged but for its marks, flagged. With `--prune-tool-outputs`, the replay clears context
tool results before a window closes (the summarizer is then sent them as placeholders too);
with `--summarizer none`, a cut keeps the tail and asks for no summary.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import cached_property

from trajectory_compressor.plan.apply import earlier_summary
from trajectory_compressor.plan.protect import head_end
from trajectory_compressor.plan.region import system_turn_in_head
from trajectory_compressor.plan.windows import Cut, Window, WindowReplay
from trajectory_compressor.read.formats import text_of, with_text
from trajectory_compressor.run.prepare import ValidRow
from trajectory_compressor.run.row.measure import RowMeasure
from trajectory_compressor.run.row.options import RowOptions
from trajectory_compressor.run.row.outcome import FinishedRow
from trajectory_compressor.run.row.summary_step import SummaryFailure, SummaryStep, region_request
from trajectory_compressor.run.row.window_records import BuiltWindow, WindowRecords
from trajectory_compressor.summarize.fidelity.windows import WindowFidelity
from trajectory_compressor.summarize.huge_turns import elide_huge, elide_huge_turns
from trajectory_compressor.summarize.llm.prompt import elide_middle
from trajectory_compressor.summarize.masking import EDGE_TURNS, RowSecrets, region_edges
from trajectory_compressor.summarize.tally import counting
from trajectory_compressor.types import EditedTurn, SummaryCarry, SummaryRequest, Turn

MIN_ELIDED_TOKENS = 64  # a tool result is never cut below this: its head and tail still say something


class WindowFinisher:
    """Turns a prepared row into its windows' records (`--windows`)."""

    def __init__(
        self,
        measure: RowMeasure,
        step: SummaryStep | None,
        options: RowOptions,
        *,
        iterative: bool,
    ) -> None:
        self.measure = measure
        self.step = step
        self.iterative = iterative
        self.row_timeout = options.row_timeout  # each window's summary has its own deadline
        self.primary_name = options.primary_name
        self.summaries = options.summaries  # off for --summarizer none: windows grow by pruning only
        self.records = WindowRecords(measure, options)
        self.target = measure.plan_config.target_max_tokens

    async def finish(self, row: ValidRow) -> FinishedRow:
        """Every window of `row` (a valid one), in order, as one finished row."""
        replay = self.replay(row)
        if replay.fits_whole():
            return self.records.finished(row, replay, [BuiltWindow(replay.whole())])
        if self.step is None and self.summaries:  # a dry run: every summary at its budget
            windows = replay.replay_at_budget()
            built = [BuiltWindow(windows[0])]
            built += [BuiltWindow(w, cut=Cut(w.index, 0, w.context_start, w.summary_tokens)) for w in windows[1:]]
            return self.records.finished(row, replay, built)
        scores = WindowFidelity(row.turns, replay.head)
        built_or_failure = await self._replay(row, replay, scores)
        if isinstance(built_or_failure, SummaryFailure):
            return self._kept_after_failure(row, replay, built_or_failure)
        return self.records.finished(row, replay, built_or_failure, scores=scores)

    def replay(self, row: ValidRow) -> WindowReplay:
        """The row's replay: its counts, the notice's cost, the placeholders its windows may use."""
        return WindowReplay(
            row.roles,
            row.token_counts,
            self.measure.plan_config,
            notice_tokens=self._notice(row) if self.summaries else 0,
            placeholders=row.placeholders.tokens if row.placeholders is not None else None,
            summaries=self.summaries,
            untrained=row.untrained,
        )

    def _notice(self, row: ValidRow) -> int:
        """The notice's exact cost in this row's head (0: no system turn in it, or it has it already)."""
        index = system_turn_in_head(row.roles, head_end(row.roles, self.measure.plan_config))
        if index is None or not self.measure.notice_for(row):
            return 0
        return self.measure.notice_cost(row, index)

    async def _replay(
        self, row: ValidRow, replay: WindowReplay, scores: WindowFidelity
    ) -> list[BuiltWindow] | SummaryFailure:
        """The windows one after the other, each summary within its own deadline, each judged
        (`scores`) as soon as it is built."""
        loop = asyncio.get_running_loop()
        region = None if self.iterative else _GrowingRegion(row, replay.head)
        built = [self._exact(row, replay, BuiltWindow(replay.first()))]
        previous = ""
        cleared: set[int] = set()  # every result cleared so far: the summaries are sent them so
        while built[-1].window.end < len(replay.roles):
            closed = built[-1].window
            cleared.update(closed.cleared)
            if not self.summaries:  # --summarizer none: the next window keeps the tail, no summary
                cut = replay.cut_after(closed)
                window = replay.grow(cut, 0, end_before=closed.end, cleared=closed.cleared)
                built.append(self._exact(row, replay, BuiltWindow(window, cut)))
                continue
            deadline = loop.time() + self.row_timeout
            got = await self._summary(row, replay, closed, previous, deadline, cleared, region)
            if isinstance(got, SummaryFailure):
                return got
            exact = self._exact(row, replay, got)
            built.append(replace(exact, judged=self.records.judge(row, replay, exact, scores)))
            assert got.result is not None
            previous = got.result.text
        return built

    def _exact(self, row: ValidRow, replay: WindowReplay, item: BuiltWindow) -> BuiltWindow:
        """`item` with its last groups given back while the exact count of the window as written
        is over the target (only a chat-template rendering can differ from the plan's sum); a
        window over it with one new group left has that group's tool results shortened."""
        window = item.window
        while window.end > window.new_start:
            if self._size(row, replay, replace(item, window=window)) <= self.target:
                break
            smaller = replay.shrink(window)
            if smaller == window:
                return self._elided(row, replay, replace(item, window=window))
            window = smaller
        return replace(item, window=window)

    def _elided(self, row: ValidRow, replay: WindowReplay, item: BuiltWindow) -> BuiltWindow:
        """`item` with the tool results of its new turns cut in the middle, largest first, until
        the window fits: they are context, not training targets, and their head and tail say
        what ran and how it ended. Left over when even that is not enough (a gpt turn too big)."""
        window = item.window
        shown_end = replay.written_end(row.turns, window)
        tools = [i for i in range(window.new_start, shown_end) if row.roles[i] == "tool"]
        elided: dict[int, EditedTurn] = {}
        excess = self._size(row, replay, item) - self.target
        for index in sorted(tools, key=lambda i: -row.token_counts[i]):
            if excess <= 0:
                break
            keep = row.token_counts[index] - excess
            if keep < MIN_ELIDED_TOKENS:
                keep = MIN_ELIDED_TOKENS
            shortened = self._shortened(row, index, keep)
            if shortened is None:
                continue
            elided[index] = shortened
            excess = self._size(row, replay, replace(item, elided=tuple(elided.items()))) - self.target
        return replace(item, elided=tuple(sorted(elided.items())))

    def _shortened(self, row: ValidRow, index: int, max_tokens: int) -> EditedTurn | None:
        """Turn `index` middle-elided to at most `max_tokens` tokens, or None if it is not longer."""
        record, turn = row.item.record, row.turns[index]
        text = text_of(record, row.fmt, index, turn)
        if row.token_counts[index] <= max_tokens:
            return None
        keep = int(len(text) * max_tokens / max(row.token_counts[index], 1) * 0.9)
        for _ in range(6):
            edited = with_text(record, row.fmt, index, turn, elide_middle(text, max(keep, 0)))
            if self.measure.counter.count(edited.value) <= max_tokens or keep <= 0:
                return edited
            keep = int(keep * 0.75)
        return edited

    def _size(self, row: ValidRow, replay: WindowReplay, item: BuiltWindow) -> int:
        return self.measure.size(row, self.records.layout(row, replay, item)[0])

    async def _summary(
        self,
        row: ValidRow,
        replay: WindowReplay,
        closed: Window,
        previous: str,
        deadline: float,
        cleared: set[int] | frozenset[int] = frozenset(),
        region: _GrowingRegion | None = None,
    ) -> BuiltWindow | SummaryFailure:
        """The window after `closed`: its summary (a second pass if the first overshoots so far
        that the next group no longer fits), and how far it then grows. The summarizer is sent
        the `cleared` results as their placeholders. Every request sent for the window's summary
        is counted in one tally, read once here."""
        with counting() as tally:
            got = await self._window_summary(row, replay, closed, previous, deadline, cleared, region)
        return replace(got, calls=tally.calls, errors=tally.errors)

    async def _window_summary(
        self,
        row: ValidRow,
        replay: WindowReplay,
        closed: Window,
        previous: str,
        deadline: float,
        cleared: set[int] | frozenset[int],
        region: _GrowingRegion | None,
    ) -> BuiltWindow | SummaryFailure:
        assert self.step is not None
        cut = replay.cut_after(closed)
        request = self._request(row, replay, cut, previous, cleared, region)
        result = await self.step.ask(row, request, deadline)
        if isinstance(result, SummaryFailure):
            return result
        tokens = self.measure.summary_tokens(result)
        window = replay.grow(cut, tokens, end_before=closed.end, cleared=closed.cleared)
        if not window.over or tokens <= cut.budget:
            return BuiltWindow(window, cut, result, passes=1)
        second_cut = replay.cut_after(closed, summary_tokens=tokens)
        if second_cut.context_start != cut.context_start:
            second = await self.step.ask(
                row, self._request(row, replay, second_cut, previous, cleared, region), deadline, second_pass=True
            )
            if not isinstance(second, SummaryFailure):  # a failed second pass: the first stands
                second_tokens = self.measure.summary_tokens(second)
                second_window = replay.grow(second_cut, second_tokens, end_before=closed.end, cleared=closed.cleared)
                if not second_window.over:
                    return BuiltWindow(second_window, second_cut, second, passes=2)
        if not replay.grow(cut, cut.budget, end_before=closed.end, cleared=closed.cleared).over:
            # At its budget the next group would fit: the overshoot is the summary's fault.
            refusal = f"summary of {tokens} tokens (budget {cut.budget}) leaves no room for the next turns"
            failure = SummaryFailure(refusal)
            fallback = await self.step.by_policy(
                row, request, failure, from_fallback=result.summarizer != self.primary_name
            )
            if isinstance(fallback, SummaryFailure):
                return fallback
            fallback_tokens = self.measure.summary_tokens(fallback)
            grown = replay.grow(cut, fallback_tokens, end_before=closed.end, cleared=closed.cleared)
            return BuiltWindow(grown, cut, fallback, 1, refusal)
        return BuiltWindow(window, cut, result, passes=1)

    def _request(
        self,
        row: ValidRow,
        replay: WindowReplay,
        cut: Cut,
        previous: str,
        cleared: set[int] | frozenset[int] = frozenset(),
        region: _GrowingRegion | None = None,
    ) -> SummaryRequest:
        """An update of `previous` with the turns that left the context (iterative summarizers),
        or a digest of everything from the head to the cut (`region`, grown by the turns that
        left); `cleared` results as placeholders."""
        if region is not None:
            return region.request(cut.context_start, cut.budget, cleared)
        start = cut.previous_start if self.iterative else replay.head
        turns: list[Turn] | _Shown = row.turns
        if cleared:
            turns = _Shown(row, cleared)
        return region_request(
            row,
            start,
            cut.context_start,
            cut.budget,
            previous=previous if self.iterative else "",
            structured=True,
            turns=turns,
        )

    def _kept_after_failure(self, row: ValidRow, replay: WindowReplay, failure: SummaryFailure) -> FinishedRow:
        """`--on-summary-failure keep`: the row as one window, unchanged but for its marks, flagged."""
        return self.records.finished(row, replay, [BuiltWindow(replay.whole())], failure)


def first_window_request(row: ValidRow, measure: RowMeasure) -> SummaryRequest | None:
    """The one summary request of a row's windows known before any answer: the first cut's
    (`requests` writes it; the later ones update its answer, so a run asks them itself)."""
    options = RowOptions(measure.plan_config.target_max_tokens, dry_run=True)  # writes nothing: asks the request
    finisher = WindowFinisher(measure, None, options, iterative=True)
    replay = finisher.replay(row)
    if replay.fits_whole():
        return None
    return finisher._request(row, replay, replay.cut_after(replay.first()), "")


class _Shown:
    """A row's turns as a window shows them: each cleared result as its placeholder (made only
    for the turns read, not the whole row each window)."""

    def __init__(self, row: ValidRow, cleared: set[int] | frozenset[int]) -> None:
        self._turns = row.turns
        self._cleared = cleared
        self._edits = row.placeholder_edits

    def __len__(self) -> int:
        return len(self._turns)

    def __getitem__(self, index: slice) -> list[Turn]:
        start, stop, _ = index.indices(len(self._turns))
        return [self._turn(i) for i in range(start, stop)]

    def _turn(self, index: int) -> Turn:
        turn = self._turns[index]
        return Turn(turn.role, self._edits[index].value) if index in self._cleared else turn


class _GrowingRegion:
    """The request for turns [head, end) of a row, for an end that grows window after window:
    each turn is prepared once (its placeholder if cleared, a huge one elided, an earlier
    summary set apart), as `region_request` prepares the whole region, and the same turn objects
    are sent each time, so the summarizer can extend what it read (`SummaryCarry`).

    A result is cleared, if ever, while it is in a window's context, before any cut passes it:
    by the time a turn joins the region, how it is shown is final."""

    def __init__(self, row: ValidRow, head: int) -> None:
        self.row = row
        self.head = head
        self.carry = SummaryCarry()
        self._kept: list[Turn] = []
        self._earlier: list[str] = []
        self._end = head
        self._task = elide_huge(
            next((t.value for t in row.turns[:head] if t.role == "human" and earlier_summary(t) is None), "")
        )

    def request(self, end: int, budget: int, cleared: set[int] | frozenset[int]) -> SummaryRequest:
        if end < self._end:  # a region shorter than the last (not seen in practice): start again
            self._kept, self._earlier, self._end, self.carry = [], [], self.head, SummaryCarry()
        edits = self.row.placeholder_edits
        for index in range(self._end, end):
            turn = self.row.turns[index]
            if index in cleared:
                turn = Turn(turn.role, edits[index].value)
            body = earlier_summary(turn)
            if body is not None:
                self._earlier.append(elide_huge(body))
            else:
                self._kept.extend(elide_huge_turns([turn]))
        self._end = max(self._end, end)
        return SummaryRequest(
            turns=tuple(self._kept),
            budget_tokens=budget,
            label=self.row.label,
            task=self._task,
            previous_summary="\n\n".join(part for part in self._earlier if part),
            structured=True,
            carry=self.carry,
            edges=region_edges(
                self.row.turns[max(0, self.head - EDGE_TURNS) : self.head], self.row.turns[end : end + EDGE_TURNS]
            ),
            known_secrets=self.known_secrets,
        )

    @cached_property
    def known_secrets(self) -> RowSecrets:
        """The credentials known in the row, read once for all its windows (per window, a long
        row's reading would be windows x row)."""
        return RowSecrets(self.row.turns)
