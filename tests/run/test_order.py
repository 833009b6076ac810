"""Rows are written in input order even when their summaries arrive out of order.

The fake endpoint answers each row after a seeded random latency, and holds one early row
until every other row's summary has been sent (a known point, not a sleep), so completions
certainly arrive out of order. Each reply names the row its prompt came from: the dataset and
the metrics must be in input order, and every row must carry its own summary.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import make_trajectory, read_jsonl, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.summarize.anchor_index import split_index

MARKER = re.compile(r"test_mod(\d+)\.py")
ROWS, SLOW = 14, 1


def reply(number: int, body: Any) -> dict[str, Any]:
    row = int(MARKER.search(prompt_text(body)).group(1))  # type: ignore[union-attr]
    action: dict[str, Any] = {"content": f"Summary of row {row}: the tests of module {row} were run."}
    if row == SLOW:
        action["hold"] = True
    else:
        action["delay"] = random.Random(1000 + row).uniform(0.0, 0.4)
    return action


def test_out_of_order_completions_are_written_in_input_order(tmp_path: Path) -> None:
    rows = [make_trajectory(i, steps=6 + i % 5, output_lines=30, extra={"n": i}) for i in range(ROWS)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    with FakeServerThread(faults=reply) as server:
        args = [
            "compress", str(source), "-o", str(out), "--target-max-tokens", "2000", "--summary-target-tokens", "150",
            "--summarizer", "llm", "--base-url", server.base_url, "--model", "m", "--no-cache", "-q",
            "--max-concurrency", "32", "--request-timeout", "120",
        ]  # fmt: skip
        process = subprocess.Popen(
            [sys.executable, "-m", "trajectory_compressor", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 90
        try:
            # Hold the slow row until every other summary has been sent.
            while not (
                len(server.requests) == ROWS and sum(r.finished is not None for r in server.requests) == ROWS - 1
            ):
                assert process.poll() is None and time.monotonic() < deadline, process.stderr
                time.sleep(0.01)
            server.release()
            _, stderr = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 0, stderr.decode()
        finished = sorted(server.requests, key=lambda r: r.finished or 0.0)
        finish_order = [int(MARKER.search(prompt_text(r.body)).group(1)) for r in finished]  # type: ignore[union-attr]
    assert finish_order[-1] == SLOW and finish_order != sorted(finish_order), "completions were out of order"
    outputs = read_jsonl(out)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert [row["id"] for row in outputs] == [row["id"] for row in rows]
    assert [row["n"] for row in outputs] == list(range(ROWS))
    assert [m["index"] for m in metrics] == list(range(ROWS))
    assert [m["id"] for m in metrics] == [row["id"] for row in rows]
    for i, (row, m) in enumerate(zip(outputs, metrics, strict=True)):
        assert m["was_compressed"], m
        turns = row["conversations"]
        summary = turns[m["compression_region"]["start_idx"]]["value"]
        body = split_index(summary)[0]  # the model's text, then the anchor index
        assert body == f"[CONTEXT SUMMARY]: Summary of row {i}: the tests of module {i} were run."
        # The kept turns are this row's own.
        assert turns[-1] == rows[i]["conversations"][-1] and turns[1] == rows[i]["conversations"][1]
