"""Rows still over the limit: `--over-limit keep|drop|truncate` and `--fail-on-over-limit`, end to end.

Settings: a 2600-token budget, a 2000-token summary budget and the last 2 turns protected, so
that each kind of row appears once:

0  under the budget
1  over, but its middle (two calls and their results, 1672 tokens) is no bigger than a summary:
   not compressed ("no net saving"); truncation can make it fit
2  compressed and fits
3  not JSON: rejected
4  over with nothing compressible (protected turns alone exceed the budget)
5  compressed, but its protected turns alone exceed the budget: still over
6  valid JSON without a conversation list: rejected, written unchanged
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl

TARGET = 2600
SETTINGS = [
    "--summarizer", "extractive", "--target-max-tokens", str(TARGET), "--summary-target-tokens", "2000",
    "--protect-last-n-turns", "2", "-q",
]  # fmt: skip
SUMMARY = "[CONTEXT SUMMARY]:"


def _records() -> list[Any]:
    return [
        make_trajectory(0, steps=1),
        make_trajectory(1, steps=4),
        make_trajectory(2, steps=10),
        "{not json",
        make_trajectory(4, steps=1, output_lines=400),
        make_trajectory(5, steps=6, output_lines=200),
        {"id": "bad", "conversations": "not a list"},
    ]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("policies") / "in.jsonl", _records())


class Run:
    """One finished run's exit code, stderr and outputs."""

    def __init__(self, out: Path, returncode: int, stderr: str) -> None:
        self.returncode = returncode
        self.stderr = stderr
        self.lines = out.read_bytes().splitlines()
        self.rows = [json.loads(line) for line in self.lines]
        self.metrics = read_jsonl(out.parent / "x.metrics.jsonl")
        self.over = read_jsonl(out.parent / "x.over_limit.jsonl")
        self.report = json.loads((out.parent / "x.report.json").read_text())


@pytest.fixture(scope="module")
def runs(source: Path) -> dict[str, Run]:
    """keep, drop and truncate, each with --fail-on-over-limit, on the same input."""

    def run(policy: str) -> Run:
        out = source.parent / policy / "x.jsonl"
        args = ["--over-limit", policy, "--fail-on-over-limit"]
        result = run_cli("compress", str(source), "-o", str(out), *args, *SETTINGS)
        assert out.exists(), result.stderr
        return Run(out, result.returncode, result.stderr)

    return {policy: run(policy) for policy in ("keep", "drop", "truncate")}


def _turns(record: Any) -> list[dict[str, str]]:
    return record["conversations"]


def _check_tool_pairs(turns: list[dict[str, str]]) -> None:
    """No tool turn without the call before it; no call without its result after it."""
    for position, turn in enumerate(turns):
        if turn["from"] == "tool":
            assert position > 0 and turns[position - 1]["from"] in {"gpt", "tool"}, position
        if turn["from"] == "gpt" and "<tool_call>" in turn["value"]:
            assert position + 1 < len(turns) and turns[position + 1]["from"] == "tool", position


@pytest.mark.parametrize("policy", ["keep", "drop", "truncate"])
def test_every_input_row_is_in_the_metrics_exactly_once(runs: dict[str, Run], policy: str) -> None:
    run = runs[policy]
    assert "Traceback" not in run.stderr
    assert [m["index"] for m in run.metrics] == list(range(len(_records())))
    assert run.report["rows"]["selected"] == len(run.metrics)
    assert sum(m["written"] for m in run.metrics) == len(run.rows)
    assert run.metrics[6]["rejected"] and run.rows[-1] == _records()[6]
    # Rows still over the limit after the policy: in the over-limit list, in order, exit 3.
    still_over = [m["index"] for m in run.metrics if m["still_over_limit"]]
    assert [entry["index"] for entry in run.over] == still_over
    assert run.returncode == 3
    assert f"{len(still_over)} rows are still over the limit" in run.stderr
    assert all(entry["target"] == TARGET and entry["reason"] for entry in run.over)
    for row in run.rows[:-1]:
        _check_tool_pairs(_turns(row))


def test_keep_writes_over_limit_rows_unchanged(runs: dict[str, Run], source: Path) -> None:
    run = runs["keep"]
    inputs = source.read_bytes().splitlines()
    assert [entry["index"] for entry in run.over] == [1, 4, 5]
    assert [m["written"] for m in run.metrics] == [True, True, True, False, True, True, True]
    # Input rows 0, 1, 2, 4, 5, 6 (3 is not JSON and cannot be written).
    assert run.lines[0] == inputs[0] and run.lines[1] == inputs[1] and run.lines[3] == inputs[4]
    assert run.metrics[1]["reason"].startswith("no net saving")
    assert run.metrics[4]["reason"] == "protected turns alone exceed the budget"
    assert run.metrics[2]["was_compressed"] and not run.metrics[2]["still_over_limit"]
    assert run.report["rows"]["still_over_limit"] == 3 and run.report["rows"]["dropped_over_limit"] == 0


def test_drop_leaves_over_limit_rows_out_of_the_dataset_only(runs: dict[str, Run]) -> None:
    run, keep = runs["drop"], runs["keep"]
    assert [row["id"] for row in run.rows] == ["row-0000", "row-0002", "bad"]
    assert [m["written"] for m in run.metrics] == [True, False, True, False, False, False, True]
    assert [m.get("dropped", False) for m in run.metrics] == [False, True, False, False, True, True, False]
    assert run.over == keep.over
    assert run.report["rows"]["dropped_over_limit"] == 3
    assert run.report["rows"]["still_over_limit"] == 3
    # Dropping changes nothing else: the rows written are the rows `keep` wrote for them.
    assert run.lines == [keep.lines[0], keep.lines[2], keep.lines[5]]


def test_truncate_cuts_the_middle_until_the_row_fits(runs: dict[str, Run], counter) -> None:
    run = runs["truncate"]
    records = _records()
    row, m = run.rows[1], run.metrics[1]
    original = _turns(records[1])
    turns = _turns(row)
    assert m["truncated"] is True and m["turns_truncated"] == len(original) - len(turns) > 0
    assert not m["still_over_limit"] and m["reason"] is None
    assert m["compressed_tokens"] <= TARGET
    assert m["compressed_tokens"] == sum(counter.count_many([t["value"] for t in turns]))
    assert m["compressed_turns"] == len(turns)
    # Head and protected tail intact; the cut removed a contiguous block of the middle, ending before
    # the tail, and what follows the cut is not a tool turn.
    assert turns[:4] == original[:4]
    assert turns[-3:] == original[-3:]
    cut = next(i for i, (a, b) in enumerate(zip(turns, original, strict=False)) if a != b)
    assert turns[cut:] == original[cut + m["turns_truncated"] :]
    assert turns[:cut] == original[:cut]
    assert turns[cut]["from"] != "tool"
    # The turns either side of the cut follow each other as a conversation does (never a lone
    # user turn cut from between two assistant turns).
    assert (turns[cut - 1]["from"], turns[cut]["from"]) in {("human", "gpt"), ("tool", "gpt"), ("gpt", "human")}
    assert [entry["index"] for entry in run.over] == [4, 5]
    assert run.report["rows"]["truncated"] == 1
    assert run.report["rows"]["unchanged_over_target"] == runs["keep"].report["rows"]["unchanged_over_target"] - 1
    # A row that already fits is left alone; a row with nothing to cut stays over, unchanged.
    assert run.rows[0] == records[0] and run.rows[2] == runs["keep"].rows[2]
    assert run.metrics[4]["still_over_limit"] and not run.metrics[4]["truncated"]
    assert run.lines[3] == runs["keep"].lines[3]


def test_truncate_keeps_the_summary_of_a_compressed_row_it_cannot_cut(runs: dict[str, Run]) -> None:
    run, keep = runs["truncate"], runs["keep"]
    m = run.metrics[5]
    assert m["was_compressed"] and m["still_over_limit"] and m["turns_truncated"] == 0
    row = run.rows[4]
    assert len(_turns(row)) == m["compressed_turns"]
    assert any(t["value"].startswith(SUMMARY) for t in _turns(row))
    assert run.lines[4] == keep.lines[4]


@pytest.mark.parametrize("policy", ["keep", "drop"])
def test_report_counts_the_rows_in_the_dataset(runs: dict[str, Run], policy: str) -> None:
    run = runs[policy]
    assert run.report["rows"]["written"] == len(run.lines)


def test_truncate_with_fail_on_over_limit_exits_0_when_every_row_fits(source: Path) -> None:
    fits = write_jsonl(source.parent / "fits.jsonl", [_records()[i] for i in (0, 1, 2)])
    out = source.parent / "fits" / "x.jsonl"
    result = run_cli(
        "compress", str(fits), "-o", str(out), "--over-limit", "truncate", "--fail-on-over-limit", *SETTINGS
    )
    assert result.returncode == 0, result.stderr
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [m["index"] for m in metrics] == [0, 1, 2]
    assert [m.get("truncated", False) for m in metrics] == [False, True, False]
    assert not any(m["still_over_limit"] for m in metrics)
    assert (out.parent / "x.over_limit.jsonl").read_bytes() == b""
    assert len(read_jsonl(out)) == 3
