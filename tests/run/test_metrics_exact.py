"""Every number in the metrics and the report, checked against an independent recount.

The expectations are computed here from the input and output files with the real tokenizer
(and plain arithmetic), never by calling the code that produced them: a test that asks the
same function twice cannot see it being wrong. Each assertion below was seen to fail with a
deliberate mistake in the code (a ratio inverted, a count off by one).

Directions, as the README and the report define them: ``compression_ratio`` is
compressed / original tokens (below 1 when a row shrank), ``tokens_saved`` is original −
compressed, ``turns_removed`` is original − compressed turns; the report's ``overall_ratio``
is tokens after / tokens before and ``saved`` is before − after.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "-q"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One extractive run over rows under, near and far over the budget (and one rejected)."""
    tmp = tmp_path_factory.mktemp("exact")
    rows: list[Any] = [make_trajectory(i, steps=1 + 3 * i, output_lines=30 + 5 * i) for i in range(7)]
    rows.insert(3, {"id": "bad", "conversations": [{"from": "human"}]})  # rejected, still written
    source = write_jsonl(tmp / "in.jsonl", rows)
    out = tmp / "out" / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--summarizer", "extractive", *BUDGET)
    assert result.returncode == 0, result.stderr
    return {
        "inputs": rows,
        "outputs": read_jsonl(out),
        "metrics": read_jsonl(out.parent / "x.metrics.jsonl"),
        "report": json.loads((out.parent / "x.report.json").read_text()),
    }


def _tokens(counter: Any, row: dict[str, Any]) -> int:
    return sum(counter.count_many([turn["value"] for turn in row["conversations"]]))


def test_the_run_has_compressed_unchanged_and_rejected_rows(run: dict[str, Any]) -> None:
    metrics = run["metrics"]
    assert sum(m["was_compressed"] for m in metrics) >= 3
    assert sum(m["skipped_under_target"] for m in metrics) >= 1
    assert [m["rejected"] for m in metrics].count(True) == 1


def test_original_tokens_and_turns_are_a_recount_of_the_input(run: dict[str, Any], counter: Any) -> None:
    for before, m in zip(run["inputs"], run["metrics"], strict=True):
        if m["rejected"]:
            continue
        assert m["original_tokens"] == _tokens(counter, before)
        assert m["original_turns"] == len(before["conversations"])


def test_compressed_sizes_match_the_written_rows(run: dict[str, Any], counter: Any) -> None:
    for before, after, m in zip(run["inputs"], run["outputs"], run["metrics"], strict=True):
        if m["rejected"]:
            continue
        # Turns: exact. Tokens: the summary notice joins the system turn's text, where the
        # tokenizer may merge one token across the join; a per-turn recount is exact to 1.
        assert m["compressed_turns"] == len(after["conversations"])
        assert m["turns_removed"] == len(before["conversations"]) - len(after["conversations"])
        assert abs(m["compressed_tokens"] - _tokens(counter, after)) <= 1
        if not m["was_compressed"]:
            assert m["compressed_tokens"] == m["original_tokens"] and m["turns_removed"] == 0


def test_per_row_saving_and_ratio_follow_from_the_sizes(run: dict[str, Any]) -> None:
    for m in run["metrics"]:
        if m["rejected"]:
            continue
        assert m["tokens_saved"] == m["original_tokens"] - m["compressed_tokens"]
        # compressed / original, as the report's overall_ratio: below 1 when the row shrank.
        assert m["compression_ratio"] == round(m["compressed_tokens"] / m["original_tokens"], 4)
        if m["was_compressed"]:
            assert m["compression_ratio"] < 1 and m["tokens_saved"] > 0 and m["turns_removed"] > 0
        else:
            assert m["compression_ratio"] == 1.0 and m["tokens_saved"] == 0


def test_report_totals_are_the_sums_of_the_recounted_rows(run: dict[str, Any], counter: Any) -> None:
    rows = zip(run["inputs"], run["outputs"], run["metrics"], strict=True)
    kept = [(b, a, m) for b, a, m in rows if not m["rejected"]]
    before = sum(_tokens(counter, b) for b, _, _ in kept)
    after = sum(m["compressed_tokens"] for _, _, m in kept)
    assert abs(after - sum(_tokens(counter, a) for _, a, _ in kept)) <= len(kept)
    tokens = run["report"]["tokens"]
    assert tokens["before"] == before
    assert tokens["after"] == after
    assert tokens["saved"] == before - after
    assert tokens["overall_ratio"] == round(after / before, 4) < 1
    turns = run["report"]["turns"]
    turns_before = sum(len(b["conversations"]) for b, _, _ in kept)
    turns_after = sum(len(a["conversations"]) for _, a, _ in kept)
    assert (turns["before"], turns["after"], turns["removed"]) == (
        turns_before,
        turns_after,
        turns_before - turns_after,
    )
    rows = run["report"]["rows"]
    assert rows["compressed"] == sum(m["was_compressed"] for _, _, m in kept)
    assert rows["rejected"] == 1 and rows["selected"] == len(run["inputs"]) == rows["written"]
