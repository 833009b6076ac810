"""Summarizer counters: one output's own, taken from the counters its folder's outputs share (`usage_since`)."""

from __future__ import annotations

from trajectory_compressor.summarize.llm.usage import usage_since


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
