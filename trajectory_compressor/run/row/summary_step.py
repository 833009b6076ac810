"""One row's summary: within its deadline, with the failure policy, a second pass, and no overshoot.

The summarizer is asked for the planned region at the summary budget. If the summary comes
back longer and the row would still be over the target, the row is planned again with the
summary's real size and summarized once more (the second pass). A summary that would grow the
row, or miss a target its plan meets, is refused like a failed one. What a failure becomes is
the `--on-summary-failure` policy: the fallback summarizer writes it, the row stays unchanged,
or the run stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import Protocol

from trajectory_compressor.errors import RunAborted
from trajectory_compressor.exit_codes import ExitCode
from trajectory_compressor.plan.apply import earlier_summary
from trajectory_compressor.plan.region import Plan
from trajectory_compressor.run.prepare import CountedRow, ValidRow
from trajectory_compressor.run.row.fidelity_gate import FidelityGate, LowFidelityError
from trajectory_compressor.run.row.measure import RewriteRefused, RowMeasure
from trajectory_compressor.run.row.options import RowOptions
from trajectory_compressor.summarize.anchor_index import split_index
from trajectory_compressor.summarize.deadline import summary_deadline, within
from trajectory_compressor.summarize.fidelity import Fidelity, SalientItems, row_text, salient_items, score_items
from trajectory_compressor.summarize.fidelity.score import RowText
from trajectory_compressor.summarize.huge_turns import elide_huge, elide_huge_turns
from trajectory_compressor.summarize.masking import EDGE_TURNS, RowSecrets, region_edges
from trajectory_compressor.summarize.tally import counting, endpoint_silence
from trajectory_compressor.types import (
    LLM_SUMMARIZER,
    EndpointAuthError,
    EndpointUnreachableError,
    OutputTurn,
    Summarizer,
    SummaryError,
    SummaryRequest,
    SummaryResult,
    Turn,
)


@dataclass(frozen=True)
class SummaryFailure:
    """A summary that could not be had; the row stays unchanged, flagged with the error.

    `calls` and `errors`: every request sent for it, from the summary's tally (`SummaryStep.run`,
    `WindowFinisher`), set once when it is given up on.
    """

    error: str
    calls: int = 0
    errors: int = 0
    fidelity_retried: bool = False

    @property
    def reason(self) -> str:
        """The row's over-limit reason (and the metrics'), as a row and a window both say it."""
        return f"{SUMMARY_FAILED}: {self.error}"


SUMMARY_FAILED = "summary failed"


def refused_reason(refused: str, summarizer: str | None) -> str:
    """The reason of a row written with the fallback's summary because the first was refused."""
    return f"{SUMMARY_FAILED}: {refused}; used the {summarizer} summary"


@dataclass(frozen=True)
class Summarized:
    """A summary the row can be written with, and the rewritten row it gives."""

    plan: Plan  # the plan it summarizes (the second pass's, if that one stood)
    result: SummaryResult
    passes: int
    summary_tokens: int
    layout: list[OutputTurn]
    size: int  # exact tokens of the rewritten row
    refused: str | None = None  # why the primary's summary was refused and the fallback's used
    calls: int = 0  # every request sent for the row's summary (both passes, retries, refused ones)
    errors: int = 0  # and the failed attempts among them


class SummaryStep:
    """Gets each row its summary, by the run's summarizers and failure policy."""

    def __init__(
        self,
        measure: RowMeasure,
        summarizer: Summarizer | None,
        fallback: Summarizer | None,
        options: RowOptions,
        *,
        gate: FidelityGate | None = None,
        fill_room: bool = False,
    ) -> None:
        self.measure = measure
        self.primary = summarizer or fallback
        self.fallback = fallback
        self.options = options  # its failure policy and deadline
        self.gate = gate or FidelityGate()
        self.budget = measure.plan_config.summary_target_tokens
        self.target = measure.plan_config.target_max_tokens
        # With the anchor index a summary fills its budget: a row that cannot fit at the full
        # budget is asked for one that fits the room it has (`Plan.summary_room`).
        self.fill_room = fill_room

    async def run(self, row: ValidRow, plan: Plan) -> Summarized | SummaryFailure:
        """The summary of `plan`'s region (the row's plan, its notice cost already exact).

        Every request sent for it, whatever the path (a second pass, the fidelity gate's retry,
        a failure, the fallback, the deadline), is counted in one tally, read once here.
        """
        with counting() as tally:
            got = await self._run(row, plan)
        return replace(got, calls=tally.calls, errors=tally.errors)

    async def _run(self, row: ValidRow, plan: Plan) -> Summarized | SummaryFailure:
        deadline = asyncio.get_running_loop().time() + self.options.row_timeout
        first = await self._summarize(row, plan, deadline)
        if isinstance(first, SummaryFailure):
            return first
        try:
            summarized = await self._second_pass_if_due(row, plan, first, deadline)
        except RewriteRefused as exc:  # any summary would be refused alike: the policy, no fallback
            failure = SummaryFailure(str(exc))
            self._stop_if_fail(row, failure)
            return failure
        refusal = self._refusal(plan, summarized)
        if refusal is None:
            return summarized
        failure = SummaryFailure(refusal)
        from_fallback = self.fallback is None or summarized.result.summarizer == self.fallback.name
        try:
            fallback = await self.by_policy(row, self._request(row, plan), failure, from_fallback=from_fallback)
        except SummaryError as exc:
            return SummaryFailure(f"{refusal}; fallback: {exc}")
        if isinstance(fallback, SummaryFailure):
            return fallback
        return self._written(row, plan, fallback, passes=1, refused=refusal)

    async def _second_pass_if_due(
        self, row: ValidRow, plan: Plan, result: SummaryResult, deadline: float
    ) -> Summarized:
        """The first summary, or, if it overshot and leaves the row over, the second pass's."""
        summarized = self._written(row, plan, result, passes=1)
        tokens = summarized.summary_tokens
        if tokens <= self.budget or plan.size_with_summary(tokens) <= self.target:
            return summarized
        replanned = self.measure.replan(row, notice_tokens=plan.notice_tokens, summary_tokens=tokens)
        if replanned.region is None or replanned.region == plan.region:
            return summarized
        second = await self._summarize(row, replanned, deadline, second_pass=True)
        if isinstance(second, SummaryFailure):  # the first pass stands (the second's requests count: the tally)
            return summarized
        try:
            return self._written(row, replanned, second, passes=2)
        except RewriteRefused:  # the second region's rewrite is refused: the first pass stands
            return summarized

    def _written(
        self, row: ValidRow, plan: Plan, result: SummaryResult, *, passes: int, refused: str | None = None
    ) -> Summarized:
        layout = self.measure.layout(row, plan, result.text)
        tokens = self.measure.summary_tokens(result)
        return Summarized(plan, result, passes, tokens, layout, self.measure.size(row, layout), refused)

    def _refusal(self, first_plan: Plan, summarized: Summarized) -> str | None:
        """Why a summary over its budget must not be written, or None when it may.

        Refused: one that makes the row larger than it came in, or over the target when the
        plan at the budget fits.
        """
        tokens, size, original = summarized.summary_tokens, summarized.size, first_plan.total_tokens
        if tokens <= self.budget:
            return None
        if size > original:
            return f"summary of {tokens} tokens (budget {self.budget}) would grow the row from {original} to {size}"
        if size > self.target and not first_plan.still_over_limit:
            return f"summary of {tokens} tokens (budget {self.budget}) leaves the row at {size}, over {self.target}"
        return None

    async def _summarize(
        self, row: ValidRow, plan: Plan, deadline: float, *, second_pass: bool = False
    ) -> SummaryResult | SummaryFailure:
        """One summary of `plan`'s region within the row's deadline (see `ask`)."""
        return await self.ask(row, self._request(row, plan), deadline, second_pass=second_pass)

    async def ask(
        self, row: ValidRow, request: SummaryRequest, deadline: float, *, second_pass: bool = False
    ) -> SummaryResult | SummaryFailure:
        """One summary within the row's deadline, through the fidelity gate; a failed first pass
        takes the failure policy (a second pass's failure is returned: the first pass stands).
        Its requests count in the caller's tally (`run`, or a window's)."""
        assert self.primary is not None
        remaining = deadline - asyncio.get_running_loop().time()
        retried = False
        try:
            if remaining <= 0:
                raise TimeoutError
            with summary_deadline(remaining):  # what a summarizer that computes checks (`summarize.deadline`)
                result = await within(remaining, self.primary.summarize(request))
            if self.gate.active and result.summarizer == LLM_SUMMARIZER:
                result = await self._gated(self.primary, row, request, result, deadline)
            return result
        except EndpointAuthError as exc:
            raise RunAborted(str(exc), ExitCode.USAGE) from None  # it names the endpoint and the refusal
        except EndpointUnreachableError as exc:  # a wrong URL or a server that is down: not a row's failure
            raise RunAborted(str(exc), ExitCode.USAGE) from None
        except SummaryError as exc:
            error, retried = str(exc), isinstance(exc, LowFidelityError)
        except TimeoutError:
            if (silence := endpoint_silence()) is not None:  # cut waiting on an endpoint that never answered
                raise RunAborted(silence, ExitCode.USAGE) from None
            # Cancelled mid-flight: the requests already sent are in the tally.
            error = f"row deadline of {self.options.row_timeout:g}s exceeded"
        failure = SummaryFailure(error, fidelity_retried=retried)
        if second_pass:
            return failure
        return await self.by_policy(row, request, failure, from_fallback=self.primary is self.fallback)

    async def by_policy(
        self, row: ValidRow, request: SummaryRequest, failure: SummaryFailure, *, from_fallback: bool
    ) -> SummaryResult | SummaryFailure:
        """What a summary that could not be had becomes: the run stops (`fail`), the row stays
        unchanged (`keep`, or nothing else to try), or the fallback summarizer writes it."""
        self._stop_if_fail(row, failure)
        if self.options.failure_policy == "keep" or self.fallback is None or from_fallback:
            return failure
        result = await self.fallback.summarize(request)
        return replace(result, last_error=failure.error, fidelity_retried=failure.fidelity_retried)

    def _stop_if_fail(self, row: ValidRow, failure: SummaryFailure) -> None:
        """`--on-summary-failure fail`: a summary that could not be had stops the run."""
        if self.options.failure_policy == "fail":
            raise RunAborted(f"summary failed for {row.label}: {failure.error}", ExitCode.FAILED)

    async def _gated(
        self, primary: Summarizer, row: ValidRow, request: SummaryRequest, result: SummaryResult, deadline: float
    ) -> SummaryResult:
        """`result` if it passes the fidelity gate, else a second summary asked for with what was
        missing; raises `LowFidelityError` when that one falls short too."""
        # The region's items and the row's text are found once, for both summaries. The model's
        # own text is judged, without the anchor index added to it: the index is exact whatever
        # the model wrote, and asking again is asking the model.
        items, corpus = salient_items(request.turns), row_text(row.turns)
        result, first = _gate_score(result, items, corpus)
        if self.gate.shortfall(first) is None:
            return result
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise TimeoutError
        again = replace(request, feedback=first.shortfall())
        second = await within(remaining, primary.summarize(again))
        second = replace(second, fidelity_retried=True)
        second, score = _gate_score(second, items, corpus)
        why = self.gate.shortfall(score)
        if why is not None:
            raise LowFidelityError(f"{why}, asked twice")
        return second

    def _request(self, row: ValidRow, plan: Plan) -> SummaryRequest:
        return summary_request(row, plan, summary_budget(plan, self.budget, self.target, fill_room=self.fill_room))


def _gate_score(result: SummaryResult, items: SalientItems, corpus: RowText) -> tuple[SummaryResult, Fidelity]:
    """The fidelity of the model's own text, and `result`, holding it as the row's score
    (`fidelity`) when that text is the whole summary (no anchor index), so the finisher does not
    score it again."""
    text = split_index(result.text)[0]
    fidelity = score_items(items, text, corpus)
    if text == result.text:
        return replace(result, fidelity=fidelity), fidelity
    return result, fidelity


def summary_budget(plan: Plan, budget: int, target: int, *, fill_room: bool) -> int:
    """The budget `plan`'s summary is asked for: the configured one, or with `fill_room` (the
    anchor index) the room a row that cannot fit at the full budget has (`Plan.summary_room`)."""
    return plan.summary_room(budget, target) if fill_room else budget


def summary_request(row: ValidRow, plan: Plan, budget: int) -> SummaryRequest:
    """What the summarizer is asked for `plan`'s region: its turns, the budget, and the task
    (the head's first user request) as context. `requests` writes the same for its batch file."""
    assert plan.region is not None
    return region_request(row, plan.region.start, plan.region.end, budget)


class _Slices(Protocol):
    """Turns that can be sliced (a list, or a window's view of a row)."""

    def __getitem__(self, index: slice, /) -> Sequence[Turn]: ...


def region_request(
    row: CountedRow,
    start: int,
    end: int,
    budget: int,
    *,
    previous: str = "",
    structured: bool = False,
    turns: _Slices | None = None,
) -> SummaryRequest:
    """The request for turns [start, end) of `row` (of `turns`, the row as a window shows it,
    when given), on top of the `previous` summary if any.

    A summary turn of an earlier compaction inside the region (a re-compressed dataset, or a
    Hermes run that compacted itself) is not a turn to condense with the others: it is the
    summary to update, carried whole, so its lists survive. A huge turn is sent by its head and
    tail (`huge_turns`), before any summarizer reads it.
    """
    source = row.turns if turns is None else turns
    region = source[start:end]
    earlier = [elide_huge(body) for turn in region if (body := earlier_summary(turn)) is not None]
    kept = tuple(elide_huge_turns([turn for turn in region if earlier_summary(turn) is None]))
    # The task is a user turn, never cleared: read from the row, up to the first one.
    task = next((t.value for t in islice(row.turns, start) if t.role == "human" and earlier_summary(t) is None), "")
    task = elide_huge(task)
    previous = "\n\n".join(part for part in (previous, *earlier) if part)
    return SummaryRequest(
        turns=kept,
        budget_tokens=budget,
        label=row.label,
        task=task,
        previous_summary=previous,
        structured=structured,
        edges=region_edges(source[max(0, start - EDGE_TURNS) : start], source[end : end + EDGE_TURNS]),
        known_secrets=RowSecrets(row.turns),
    )
