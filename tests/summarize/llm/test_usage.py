"""Summarizer counters: one output's own, taken from the counters its folder's outputs share
(`usage_since`), and a resumed output's, carried across its runs (`carried_usage`)."""

from __future__ import annotations

from trajectory_compressor.summarize.llm.usage import carried_usage, usage_since


def test_one_outputs_counters_are_the_shared_counters_less_those_at_its_start() -> None:
    before = {
        "summarizer": "llm", "requests": 7, "cost_usd": 0.25, "failures_by_cause": {"429": 2, "timeout": 1},
        "max_in_flight": 9, "rate_limit_wait_seconds": 1.2, "cache": None, "batch": False,
    }  # fmt: skip
    after = {
        "summarizer": "llm", "requests": 10, "cost_usd": 0.4, "failures_by_cause": {"429": 2, "timeout": 3, "5xx": 1},
        "max_in_flight": 9, "rate_limit_wait_seconds": 1.5, "cache": None, "batch": False,
    }  # fmt: skip
    assert usage_since(before, after) == {
        "summarizer": "llm", "requests": 3, "cost_usd": 0.15, "failures_by_cause": {"timeout": 2, "5xx": 1},
        "max_in_flight": 9, "rate_limit_wait_seconds": 0.3, "cache": None, "batch": False,
    }  # fmt: skip
    assert usage_since(None, after) is after  # the first output: everything so far is its own
    assert usage_since(before, None) is None  # no summarizer


def test_a_resumed_outputs_counters_add_the_checkpointed_ones_to_this_runs() -> None:
    resumed = {"summarizer": "llm", "requests": 5, "cost_usd": 0.2, "failures_by_cause": {"429": 1}, "max_in_flight": 9}
    before = {"summarizer": "llm", "requests": 1, "cost_usd": 0.05, "failures_by_cause": {}, "max_in_flight": 3}
    now = {"summarizer": "llm", "requests": 4, "cost_usd": 0.1, "failures_by_cause": {"5xx": 2}, "max_in_flight": 4}
    assert carried_usage(resumed, before, now) == {
        "summarizer": "llm", "requests": 8, "cost_usd": 0.25, "failures_by_cause": {"429": 1, "5xx": 2},
        "max_in_flight": 9,
    }  # fmt: skip
    assert carried_usage(None, before, now) == usage_since(before, now)  # not resumed: this run's own
    assert carried_usage(resumed, before, None) is None  # no summarizer
