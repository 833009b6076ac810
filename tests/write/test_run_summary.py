"""The end-of-run summary's text from a report: the budget, the LLM's work in a user's terms, internals with -v."""

from __future__ import annotations

from typing import Any

from trajectory_compressor.run.settings_record import settings_record
from trajectory_compressor.settings import PlanConfig, RunConfig
from trajectory_compressor.types import RowMetrics
from trajectory_compressor.write.report import RunTotals
from trajectory_compressor.write.run_report import build_report
from trajectory_compressor.write.run_summary import SummaryView, render_text_summary

ENDPOINT = {
    "summarizer": "llm",
    "model": "qwen3-8b",
    "endpoint": "http://127.0.0.1:8000/v1/chat/completions",
    "requests": 120,
    "failures": 2,
    "retries": 5,
    "cache_hits": 40,
    "prompt_tokens": 1_234_567,
    "completion_tokens": 89_000,
    "cost_usd": 0.5925,
    "max_in_flight": 32,
    "backoff_seconds": 1.5,
}


def _report(config: RunConfig | None = None, endpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    totals = RunTotals()
    totals.add(RowMetrics(0, "in.jsonl", 1, original_tokens=20_000, compressed_tokens=9_000, was_compressed=True))
    return _report_of(totals, config, endpoint)


def _report_of(
    totals: RunTotals, config: RunConfig | None = None, endpoint: dict[str, Any] | None = None
) -> dict[str, Any]:
    return build_report(
        totals,
        status="completed",
        settings=settings_record(config or RunConfig(), "bundled"),
        outputs={"data": "out/x.jsonl"},
        timings={"total": 3.14, "cpu": 1.5, "finalize": 0.2},
        summarizer_stats=endpoint,
        counting={"backend": "hf", "fast_backend": None, "note": None, "guard": {"probes": 0}},
    ).to_dict()


def test_the_budget_is_named_per_row_or_per_window() -> None:
    assert "budget: 15,250 tokens per row (--target-max-tokens), 750 per summary" in render_text_summary(_report())
    windows = RunConfig(plan=PlanConfig(target_max_tokens=8192, summary_target_tokens=500, windows=True))
    assert "budget: 8,192 tokens per window (--target-max-tokens), 500 per summary" in render_text_summary(
        _report(windows)
    )


def test_the_llm_line_says_requests_cache_tokens_and_cost_the_raw_counters_only_with_v() -> None:
    report = _report(endpoint=ENDPOINT)
    plain = render_text_summary(report, SummaryView(currency="EUR"))
    assert (
        "LLM (qwen3-8b): 120 requests, 2 failed, 5 retried, 40 answered from the cache, "
        "1,234,567 prompt + 89,000 completion tokens, cost 0.5925 EUR"
    ) in plain.splitlines()
    assert "endpoint:" not in plain and "max_in_flight" not in plain and "counting:" not in plain
    verbose = render_text_summary(report, SummaryView(verbose=True))
    assert "max_in_flight=32" in verbose and "counting: hf" in verbose
    no_prices = render_text_summary(_report(endpoint={**ENDPOINT, "cost_usd": None}))
    assert "cost: no prices given (--price-in, --price-out)" in no_prices


def test_the_time_is_the_runs_own_without_a_command_clock_and_split_with_one() -> None:
    report = _report()
    assert "time: 3.1s" in render_text_summary(report).splitlines()  # the Python API's summary_text
    line = next(
        line for line in render_text_summary(report, SummaryView(since_start=9.0)).splitlines() if "time" in line
    )
    assert (
        line
        == "time: 9.0s since start (5.7s start-up: imports, tokenizer load, checks; 3.1s on the rows; 0.2s writing)"
    )


def test_a_run_stopped_before_any_row_says_its_status_only() -> None:
    assert render_text_summary({"status": "pending", "batches": []}, SummaryView(verbose=True)) == "status: pending"


def test_rows_cut_by_truncate_are_said_truncated_not_left_unchanged() -> None:
    totals = RunTotals()
    totals.add(RowMetrics(0, "in.jsonl", 1, original_tokens=20_000, compressed_tokens=20_000, still_over_limit=True))
    totals.add(RowMetrics(1, "in.jsonl", 2, original_tokens=20_000, compressed_tokens=15_000, truncated=True))
    report = _report_of(totals)
    assert report["rows"]["unchanged_over_target"] == 1 and report["rows"]["truncated"] == 1
    assert "1 over it left unchanged, 1 truncated (--over-limit truncate), 1 still over it" in render_text_summary(
        report
    )


def test_rows_dropped_over_the_limit_are_said_dropped() -> None:
    totals = RunTotals()
    totals.add(RowMetrics(0, "in.jsonl", 1, original_tokens=9_000, compressed_tokens=9_000, still_over_limit=True))
    totals.add(
        RowMetrics(
            1, "in.jsonl", 2, original_tokens=9_000, compressed_tokens=9_000, still_over_limit=True,
            written=False, dropped=True,
        )
    )  # fmt: skip
    report = _report_of(totals)
    assert report["rows"]["dropped_over_limit"] == 1 and "partly_dropped" not in report["rows"]
    assert "2 still over it, 1 dropped (--over-limit drop), 0 rejected" in render_text_summary(report)
