"""Each tool result of a run is judged once, however many rows or windows read it.

A row's summary and its fidelity read the same turns; the second read finds them in the readers'
memo (`summarize/toolcalls/memo.TextMemo`, the last 512 texts; emptied when full, so the few read
just before that are read again). That holds only if a row's
scoring follows its own summary: a chunk of 64 rows each summarized before any was scored (a
summary run as a task of its own, `asyncio.wait_for`), or a long row whose windows were all
scored after its last summary, read far more than 512 results in between, and parsed every one
of them again.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_trajectory, read_jsonl, write_jsonl
from trajectory_compressor.api import compress
from trajectory_compressor.settings import PlanConfig, RunConfig
from trajectory_compressor.summarize.toolcalls import outcomes


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each tool result's outcome was worked out (memo misses), from a cold memo."""
    seen: Counter[str] = Counter()
    read = outcomes._FACTS._function

    def counted(text: str) -> Any:
        seen[text] += 1
        return read(text)

    monkeypatch.setattr(outcomes._FACTS, "_function", counted)
    monkeypatch.setattr(outcomes._FACTS, "_known", {})
    return seen


def _read_again(judged: Counter[str]) -> float:
    """The share of results worked out more than once (1.0 when every one was read twice)."""
    return sum(1 for times in judged.values() if times > 1) / len(judged)


def _run(tmp_path: Path, rows: list[dict[str, Any]], counter: Any, *, windows: bool) -> list[dict[str, Any]]:
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "o.jsonl"
    config = RunConfig(
        plan=PlanConfig(target_max_tokens=2500, summary_target_tokens=200, windows=windows),
        summarizer="extractive",
        quiet=True,
    )
    assert compress([str(source)], out, config, counter=counter)[0].exit_code == 0
    return read_jsonl(out.parent / "o.metrics.jsonl")


def test_a_chunk_of_rows_judges_each_result_once(tmp_path: Path, counter: Any, judged: Counter[str]) -> None:
    rows = [make_trajectory(i, steps=24, output_lines=12) for i in range(96)]  # 2,304 results
    metrics = _run(tmp_path, rows, counter, windows=False)
    assert sum(m["was_compressed"] for m in metrics) == 96
    assert len(judged) > 512 * 1.5
    assert _read_again(judged) <= 0.05, "results were parsed again: their rows were scored after others ran"


def test_a_long_rows_windows_judge_each_result_once(tmp_path: Path, counter: Any, judged: Counter[str]) -> None:
    row = make_trajectory(0, steps=700, output_lines=2)  # 700 distinct results in one row
    metrics = _run(tmp_path, [row], counter, windows=True)
    assert len(metrics) > 10 and all(m["was_compressed"] for m in metrics[1:])
    assert len(judged) > 512
    assert _read_again(judged) <= 0.05, "results were parsed again: windows were scored long after their summaries"
