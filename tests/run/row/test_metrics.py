"""A row's metrics line is built once, from its typed outcome, and nothing changes it after."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.conftest import make_trajectory
from trajectory_compressor.count import TokenCounter
from trajectory_compressor.run.prepare import RejectedRow, ValidRow, prepare_rows
from trajectory_compressor.run.row.metrics import Outcome, failed_cost, rejected_metrics, row_metrics, written_cost
from trajectory_compressor.run.row.summary_step import SummaryFailure
from trajectory_compressor.settings import PlanConfig, ReadConfig
from trajectory_compressor.types import EXTRACTIVE_SUMMARIZER, LLM_SUMMARIZER, SourceRecord, SummaryResult

PLAN = PlanConfig(target_max_tokens=2500, summary_target_tokens=200)


def _rows(counter: TokenCounter) -> list[ValidRow | RejectedRow]:
    record = make_trajectory(0, steps=12, output_lines=20)
    items = [
        (0, 1, SourceRecord("mem.jsonl", 1, record, json.dumps(record).encode())),
        (1, 2, SourceRecord("mem.jsonl", 2, raw=b"{not json", error="invalid JSON")),
    ]
    return prepare_rows(items, counter, PLAN, notice_tokens=0, skip_under_target=True, reading=ReadConfig())


def test_a_chunk_yields_a_valid_row_and_a_rejected_row_in_input_order(counter: TokenCounter) -> None:
    valid, rejected = _rows(counter)
    assert isinstance(valid, ValidRow) and isinstance(rejected, RejectedRow)
    assert valid.plan.total_tokens == sum(valid.token_counts) and len(valid.turns) == len(valid.token_counts)
    assert rejected.error == "invalid JSON" and rejected.label == "mem.jsonl:2"
    with pytest.raises(dataclasses.FrozenInstanceError):
        valid.plan = None  # type: ignore[misc]


def test_the_metrics_line_is_what_the_outcome_says_and_cannot_change_after(counter: TokenCounter) -> None:
    row = _rows(counter)[0]
    assert isinstance(row, ValidRow)
    result = SummaryResult("s", LLM_SUMMARIZER, calls=1, errors=0, last_error=None, fidelity_retried=True)
    original = row.source_tokens
    outcome = Outcome(
        original - 1000,
        len(row.turns) - 5,
        False,
        was_compressed=True,
        region={"start_idx": 3, "end_idx": 8, "turns_count": 6},
        summary_tokens=180,
        summary=written_cost(result, 2, 1, passes=2, primary=LLM_SUMMARIZER),
    )
    metrics = row_metrics(row, outcome, written=True, train_turns=3, dropped=False)
    line = metrics.to_dict()
    assert line["original_tokens"] == original and line["tokens_saved"] == 1000
    assert line["compression_ratio"] == round((original - 1000) / original, 4)
    assert line["turns_removed"] == 5 and line["compressed_turns"] == len(row.turns) - 5
    assert (line["summarizer"], line["summary_calls"], line["summary_errors"], line["passes"]) == ("llm", 2, 1, 2)
    assert line["fidelity_retried"] is True and line["train_turns"] == 3
    assert "summary_failed" not in line, "the primary wrote it: nothing failed"
    assert "dropped" not in line and "truncated" not in line
    with pytest.raises(dataclasses.FrozenInstanceError):
        metrics.reason = "changed"  # type: ignore[misc]


def test_a_fallback_summary_and_a_failed_one_say_so(counter: TokenCounter) -> None:
    row = _rows(counter)[0]
    assert isinstance(row, ValidRow)
    fallback = SummaryResult("s", EXTRACTIVE_SUMMARIZER, last_error="HTTP 500")
    cost = written_cost(fallback, 3, 3, passes=1, primary=LLM_SUMMARIZER)
    assert cost.failed is True and cost.last_error == "HTTP 500"
    only = written_cost(dataclasses.replace(fallback, last_error=None), 0, 0, passes=1, primary=EXTRACTIVE_SUMMARIZER)
    assert only.failed is None
    failed = failed_cost(SummaryFailure("row deadline of 1s exceeded", calls=2, errors=2))
    outcome = Outcome(row.plan.total_tokens, len(row.turns), True, "summary failed: x", summary=failed)
    line = row_metrics(row, outcome, written=False, train_turns=0, dropped=True).to_dict()
    assert line["summary_failed"] is True and line["summarizer"] is None and line["summary_calls"] == 2
    assert line["last_error"] == "row deadline of 1s exceeded" and line["dropped"] is True
    assert line["written"] is False and line["reason"] == "summary failed: x"


def test_a_rejected_row_has_its_error_as_reason(counter: TokenCounter) -> None:
    rejected = _rows(counter)[1]
    assert isinstance(rejected, RejectedRow)
    line = rejected_metrics(rejected, written=False).to_dict()
    assert line["rejected"] is True and line["reason"] == "invalid JSON" and line["written"] is False
    assert line["original_tokens"] == 0 and "gpt_turns" not in line


def test_a_summary_result_is_never_changed() -> None:
    result = SummaryResult("s", LLM_SUMMARIZER, calls=1, errors=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.calls = 5  # type: ignore[misc]
