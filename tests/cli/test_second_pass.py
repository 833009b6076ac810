"""The second pass end to end: a summary that overshoots its budget is re-planned once.

README: "if a summary comes back longer than its budget and the row is still over the target,
the region is re-planned once with the summary's real size and summarized again". The fake
endpoint answers each row's first request with a summary twice its budget (which leaves the
row over the target) and its second with a short one; the row must come out under the target,
with `passes: 2` and the second summary in the dataset.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.summarize.anchor_index import split_index

TARGET, BUDGET = 2500, 200
ARGS = ["--target-max-tokens", str(TARGET), "--summary-target-tokens", str(BUDGET), "-q"]
MARKER = re.compile(r"test_mod(\d+)\.py")
SUMMARY = "[CONTEXT SUMMARY]: "


def long_summary(row: int) -> str:
    return f"Row {row}, first pass. " + " ".join(f"step{k} done." for k in range(100))


def short_summary(row: int) -> str:
    return f"Row {row}, second pass: the tests were run step by step and pass."


class OvershootThenShort:
    """Per row: the first request gets `long_summary`, later ones `short_summary`."""

    def __init__(self) -> None:
        self.seen: dict[int, int] = {}
        self.lock = threading.Lock()

    def __call__(self, number: int, body: Any) -> dict[str, Any]:
        row = int(MARKER.search(prompt_text(body)).group(1))  # type: ignore[union-attr]
        with self.lock:
            self.seen[row] = self.seen.get(row, 0) + 1
            first = self.seen[row] == 1
        return {"content": long_summary(row) if first else short_summary(row)}


def test_an_overshooting_summary_gets_a_second_pass_and_the_row_fits(tmp_path: Path, counter: Any) -> None:
    # Many small tool groups: the first plan leaves less than one group (~110 tokens) of slack,
    # so a summary 200 tokens over its budget leaves the row over the target.
    rows = [make_trajectory(i, steps=40, output_lines=4) for i in range(3)]
    assert counter.count(long_summary(0)) >= 2 * BUDGET > counter.count(short_summary(0)) * 10
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    schedule = OvershootThenShort()
    with FakeServerThread(faults=schedule) as server:
        result = run_cli(
            "compress", str(source), "-o", str(out), *ARGS, "--summarizer", "llm", "--base-url", server.base_url,
            "--model", "m", "--no-cache", "--retry-delay", "0.01", "--request-timeout", "20",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        requests = len(server.requests)
    assert requests == 6 and schedule.seen == {0: 2, 1: 2, 2: 2}
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    outputs = read_jsonl(out)
    report = json.loads((out.parent / "x.report.json").read_text())
    for i, (row, m) in enumerate(zip(outputs, metrics, strict=True)):
        assert m["was_compressed"] and m["passes"] == 2 and m["summary_calls"] == 2, m
        assert not m["still_over_limit"] and m["reason"] is None
        turns = row["conversations"]
        summary = turns[m["compression_region"]["start_idx"]]["value"]
        body, index = split_index(summary)
        assert body == SUMMARY + short_summary(i) and index, "the dataset holds the second summary"
        assert long_summary(i) not in json.dumps(row)
        recount = sum(counter.count_many([t["value"] for t in turns]))
        assert recount <= TARGET and m["compressed_tokens"] <= TARGET
        assert m["summary_tokens"] < BUDGET
    assert report["rows"]["second_pass"] == 3 and report["rows"]["still_over_limit"] == 0
