"""The report's low-fidelity warning: said when a large share of the LLM summaries state almost
nothing of the turns they replace (a model that refuses, or answers off-topic), and only then."""

from __future__ import annotations

import pytest

from trajectory_compressor.types import RowMetrics
from trajectory_compressor.write.report import LOW_FIDELITY_MIN_SUMMARIES, RunTotals
from trajectory_compressor.write.run_report import build_report


def _report(scores: list[float | None], summarizer: str = "llm") -> dict:
    totals = RunTotals()
    for index, score in enumerate(scores):
        fidelity = {"score": score}
        totals.add(
            RowMetrics(index, "in.jsonl", index + 1, was_compressed=True, summarizer=summarizer, fidelity=fidelity)
        )
    return build_report(totals, status="completed", settings={}, outputs={}, timings={}).to_dict()


@pytest.mark.parametrize(
    ("scores", "warned"),
    [
        ([0.0] * 5 + [0.8] * 15, True),  # a quarter near zero
        ([0.0] * 4 + [0.8] * 16, False),  # a fifth: a weak summary here and there
        ([0.09] * (LOW_FIDELITY_MIN_SUMMARIES - 1), False),  # too few to say anything
        ([0.1] * 30, False),  # low, but not near zero
        ([None] * 30, False),  # regions with nothing salient are not scored
    ],
)
def test_the_warning_needs_a_large_share_of_near_zero_llm_summaries(scores: list, warned: bool) -> None:
    report = _report(scores)
    assert bool(report.get("warnings")) is warned
    if warned:
        [warning] = report["warnings"]
        assert warning.startswith("warning: 5 of 20 LLM summaries (25%) have fidelity under 0.1")
        assert "--min-fidelity" in warning
    fidelity = report["summaries"]["fidelity"]
    assert fidelity["llm_scored"] == sum(score is not None for score in scores)


def test_extractive_summaries_are_not_counted() -> None:
    assert not _report([0.0] * 30, summarizer="extractive").get("warnings")
