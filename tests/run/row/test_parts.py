"""The parts of a row's path, each on its own: the summary step, truncation, the outcome, the dry run.

Rows are real (counted with the bundled tokenizer, planned by the real planner); the summarizers
are small implementations of the `Summarizer` protocol that fail, stall or overshoot on purpose.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.conftest import make_trajectory
from trajectory_compressor.errors import RunAborted
from trajectory_compressor.read.formats import detect_format
from trajectory_compressor.run.prepare import CountedRow, ValidRow, notice_tokens, prepare_rows
from trajectory_compressor.run.row import RowFinisher
from trajectory_compressor.run.row.measure import RowMeasure
from trajectory_compressor.run.row.metrics import Outcome
from trajectory_compressor.run.row.options import RowOptions
from trajectory_compressor.run.row.outcome import RowOutcome
from trajectory_compressor.run.row.over_limit import truncate_row
from trajectory_compressor.run.row.summary_step import Summarized, SummaryFailure, SummaryStep, region_request
from trajectory_compressor.settings import PlanConfig, ReadConfig, RunConfig
from trajectory_compressor.summarize.extractive import ExtractiveSummarizer
from trajectory_compressor.summarize.huge_turns import HUGE_TURN_CHARS
from trajectory_compressor.summarize.tally import note_call, note_error
from trajectory_compressor.types import SourceRecord, SummaryError, SummaryRequest, SummaryResult, Turn

PLAN = PlanConfig(target_max_tokens=2500, summary_target_tokens=200)


class Scripted:
    """A summarizer that fails, stalls, or answers with a fixed text."""

    name = "llm"

    def __init__(self, behaviour: str, text: str = "") -> None:
        self.behaviour, self.text, self.calls = behaviour, text, 0

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        note_call()  # as the client does, in the row's tally
        if self.behaviour == "fail":
            note_error()
            raise SummaryError("endpoint said no")
        if self.behaviour == "stall":
            await asyncio.sleep(3600)
        return SummaryResult(text=self.text, summarizer=self.name, calls=1)

    def stats(self) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        pass


def _row(counter, plan: PlanConfig = PLAN, **trajectory: Any) -> ValidRow:
    record = make_trajectory(0, **({"steps": 12, "output_lines": 20} | trajectory))
    raw = json.dumps(record).encode()
    item = SourceRecord(source="mem.jsonl", line=1, record=record, raw=raw)
    [row] = prepare_rows(
        [(0, 1, item)],
        counter,
        plan,
        notice_tokens=notice_tokens(counter, plan),
        skip_under_target=True,
        reading=ReadConfig(),
    )
    assert isinstance(row, ValidRow)
    return row


def _step(counter, summarizer, policy: str, timeout: float = 60.0) -> SummaryStep:
    measure = RowMeasure(counter, PLAN, skip_under_target=True)
    options = RowOptions(PLAN.target_max_tokens, failure_policy=policy, row_timeout=timeout)
    return SummaryStep(measure, summarizer, ExtractiveSummarizer(counter), options)


@pytest.mark.parametrize("policy", ["extractive", "keep", "fail"])
def test_a_failed_summary_takes_the_failure_policy(counter, policy: str) -> None:
    row = _row(counter)
    assert row.plan is not None and row.plan.region is not None
    step = _step(counter, Scripted("fail"), policy)
    if policy == "fail":
        with pytest.raises(RunAborted, match="endpoint said no"):
            asyncio.run(step.run(row, row.plan))
        return
    got = asyncio.run(step.run(row, row.plan))
    if policy == "keep":
        assert isinstance(got, SummaryFailure) and got.error == "endpoint said no"
        assert (got.calls, got.errors) == (1, 1)
    else:
        assert isinstance(got, Summarized) and got.result.summarizer == "extractive"
        assert got.result.last_error == "endpoint said no" and got.size <= PLAN.target_max_tokens


def test_a_stalled_summary_ends_at_the_row_deadline(counter) -> None:
    row = _row(counter)
    assert row.plan is not None
    got = asyncio.run(_step(counter, Scripted("stall"), "keep", timeout=0.2).run(row, row.plan))
    assert isinstance(got, SummaryFailure) and "row deadline of 0.2s exceeded" in got.error


def test_a_summary_that_would_grow_the_row_is_refused_and_the_fallback_used(counter) -> None:
    row = _row(counter)
    assert row.plan is not None
    huge = "word " * 20_000
    got = asyncio.run(_step(counter, Scripted("answer", huge), "extractive").run(row, row.plan))
    assert isinstance(got, Summarized) and got.refused is not None and "would grow the row" in got.refused
    assert got.result.summarizer == "extractive" and got.passes == 1
    assert got.size == RowMeasure(counter, PLAN, skip_under_target=True).size(row, got.layout)


def test_truncation_cuts_only_the_middle_until_the_row_fits(counter) -> None:
    plan = PlanConfig(target_max_tokens=1500, summary_target_tokens=200, protect_last_n_turns=4)
    row = _row(counter, plan, steps=20, output_lines=20)
    assert row.plan is not None and row.turns is not None and row.plan.total_tokens > 1500
    measure = RowMeasure(counter, plan, skip_under_target=True)
    cut = truncate_row(row, row.plan, None, 0, measure)
    assert cut.turns_removed > 0 and cut.size <= 1500
    kept = [item.index for item in cut.layout]
    assert kept[:3] == [0, 1, 2] and kept[-4:] == list(range(len(row.turns) - 4, len(row.turns)))
    assert cut.size == measure.size(row, cut.layout)


def test_the_outcome_writes_unchanged_rows_byte_for_byte_and_drop_leaves_them_out(counter) -> None:
    row = _row(counter)
    size = sum(row.token_counts)
    kept = RowOutcome(RowOptions(2500, over_limit="keep")).finish(row, Outcome(size, len(row.turns), False), None)
    assert kept.data == row.item.raw and kept.over_limit is None and kept.metrics.written is True
    over = Outcome(size, len(row.turns), True)
    dropped = RowOutcome(RowOptions(2500, over_limit="drop")).finish(row, over, None)
    assert dropped.data is None and dropped.metrics.dropped is True and dropped.over_limit is not None
    assert dropped.over_limit["reason"] == "over target" and dropped.metrics.to_dict()["dropped"] is True
    assert dropped.metrics.written is False and dropped.metrics.reason == "over target"


def test_a_dry_run_is_the_plan_without_a_summary_and_writes_no_dataset_line(counter) -> None:
    row = _row(counter)
    assert row.plan is not None and row.plan.region is not None
    never = Scripted("fail")
    finished = asyncio.run(RowFinisher(RunConfig(plan=PLAN, dry_run=True), counter, never, never).finish(row))
    assert never.calls == 0 and finished.data is None
    line = finished.metrics.to_dict()
    assert line["planned_tokens"] == row.plan.estimated_tokens == line["compressed_tokens"]
    assert line["was_compressed"] is False and "dropped" not in line and "truncated" not in line


def test_a_summarizer_is_sent_a_huge_turn_by_its_head_and_tail() -> None:
    """Before any prompt is built: the LLM's, the extractive digest's, the fidelity gate's."""
    log = "\n".join(f"line {i:07d} ok" for i in range(200_000))  # 3.2 MB
    task = "Please fix it. " + "context " * 300_000  # a huge first request, the prompt's <task>
    turns = [Turn("system", "s"), Turn("human", task), Turn("gpt", "look"), Turn("tool", log), Turn("gpt", "done")]
    record = {"conversations": [{"from": turn.role, "value": turn.value} for turn in turns]}
    row = CountedRow(0, 1, SourceRecord("mem.jsonl", 1, record), detect_format(record), turns, [0] * len(turns))
    request = region_request(row, 2, 4, 200)
    assert [turn.role for turn in request.turns] == ["gpt", "tool"]
    assert request.turns[0] is turns[2], "a turn of ordinary size is sent as it is"
    view = request.turns[1].value
    assert len(view) <= HUGE_TURN_CHARS and view.startswith("line 0000000 ok\n") and view.endswith("line 0199999 ok")
    assert "characters elided ...]" in view and "line 0100000 ok" not in view
    assert len(request.task) <= HUGE_TURN_CHARS and request.task.startswith("Please fix it.")
