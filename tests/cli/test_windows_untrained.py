"""`--windows` honours an input's `"train": false` on a gpt turn: context in every window that
shows it, never a training target; the other gpt turns trained once each, verbatim, in order;
every window still trains a turn; metrics, the report, `eval` and `analyze` count the same."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_formats import openai_trajectory
from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.read.formats import detect_format, to_turns

BUDGET = ["--target-max-tokens", "2500", "--summary-target-tokens", "300", "--summarizer", "extractive", "-q"]


def _marked_false(row: dict[str, Any], positions: list[int]) -> dict[str, Any]:
    """`row` with the assistant messages at `positions` (among its assistant messages) marked false."""
    key = "conversations" if "conversations" in row else "messages"
    assistant = [i for i, m in enumerate(row[key]) if m.get("from", m.get("role")) in ("gpt", "assistant")]
    messages = list(row[key])
    for position in positions:
        messages[assistant[position]] = {**messages[assistant[position]], "train": False}
    return {**row, key: messages}


def _rows() -> list[dict[str, Any]]:
    return [
        # ShareGPT: an untrained turn early, two in a row mid-run, and the row's last answer.
        _marked_false(make_trajectory(1, steps=14, output_lines=25), [2, 6, 7, 14]),
        # OpenAI messages: every third call untrained.
        _marked_false(openai_trajectory(2, steps=14), [3, 6, 9, 12]),
        # Every gpt turn after the head marked false (the head's first answer stays trained).
        _marked_false(make_trajectory(3, steps=14, output_lines=25), list(range(1, 15))),
        # No marks at all: split as before.
        make_trajectory(4, steps=10, output_lines=25),
        # Within the budget, its first answer marked false.
        _marked_false(make_trajectory(5, steps=1, output_lines=5), [0]),
    ]


def _messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record.get("conversations") or record["messages"]


def _is_assistant(message: dict[str, Any]) -> bool:
    return message.get("from") == "gpt" or message.get("role") == "assistant"


def _assistant(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """Each assistant turn as the reader reads it (the same text in every write format) and its
    `train` mark (None: none)."""
    texts = [turn.value for turn in to_turns(record, detect_format(record)) if turn.role == "gpt"]
    marks = [message.get("train") for message in _messages(record) if _is_assistant(message)]
    return list(zip(texts, marks, strict=True))


def _compress(tmp_path: Path, rows: list[dict[str, Any]], *extra: str) -> Path:
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), *BUDGET, *extra)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize("write_format", ["as-read", "hf-chat"])
def test_an_untrained_turn_is_context_in_every_window_and_never_a_target(tmp_path: Path, write_format: str) -> None:
    rows = _rows()
    extra = [] if write_format == "as-read" else ["--write-format", "hf-chat"]
    out = _compress(tmp_path, rows, "--windows", *extra)
    by_row: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in read_jsonl(out):
        window = record["window"] if "window" in record else json.loads(record["metadata"])["window"]
        by_row[window["input_index"]].append(record)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    for index in (0, 1, 3):
        windows, row = by_row[index], rows[index]
        assert len(windows) >= 3, "the row is split"
        untrained = [text for text, mark in _assistant(row) if mark is False]
        trainable = [text for text, mark in _assistant(row) if mark is not False]
        trained = [text for w in windows for text, mark in _assistant(w) if mark is True]
        assert trained == trainable  # each trainable turn once, verbatim, in order
        shown_false: set[str] = set()
        for window in windows:
            marks = [mark for _, mark in _assistant(window)]
            assert True in marks, "every window trains a turn"
            for text, mark in _assistant(window):
                if text in untrained:
                    assert mark is False
                    shown_false.add(text)
        assert shown_false == set(untrained)  # each shown (with its mark) in some window
        # The last window ends as the row ends, its untrained last answer included.
        assert to_turns(windows[-1], detect_format(windows[-1]))[-1] == to_turns(row, detect_format(row))[-1]
        lines = [m for m in metrics if m["index"] == index]
        assert {m["gpt_turns"] for m in lines} == {len(trainable)}
        assert sum(m["train_turns"] for m in lines) == len(trainable)
    # All gpt turns after the head untrained: one window, the row itself, flagged with why.
    [whole] = by_row[2]
    assert [text for text, _ in _assistant(whole)] == [text for text, _ in _assistant(rows[2])]
    assert len(_messages(whole)) == len(_messages(rows[2]))
    assert [mark for _, mark in _assistant(whole)] == [True] + [False] * 14
    [line] = [m for m in metrics if m["index"] == 2]
    assert line["still_over_limit"] and line["reason"] == (
        'every gpt turn after the head is marked "train": false: not cut into windows'
    )
    assert (line["gpt_turns"], line["train_turns"]) == (1, 1)
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["training"]["trainable_share"] == 1.0
    assert report["training"]["gpt_turns"] == sum(m["gpt_turns"] for m in metrics if m["window"]["index"] == 0)
    [fits] = by_row[4]  # within the budget: one window, the input's mark kept
    assert [mark for _, mark in _assistant(fits)] == [False, True]


def test_a_non_boolean_mark_is_replaced_by_the_runs_own(tmp_path: Path) -> None:
    row = make_trajectory(6, steps=2, output_lines=5)
    row["conversations"][2] = {**row["conversations"][2], "train": "false"}
    row["conversations"][4] = {**row["conversations"][4], "train": 0}
    out = _compress(tmp_path, [row], "--windows")
    [window] = read_jsonl(out)
    assert [m["train"] for m in window["conversations"] if m["from"] == "gpt"] == [True, True, True]


def test_single_rows_keep_an_input_false_mark_and_do_not_count_it_trained(tmp_path: Path) -> None:
    rows = _rows()
    out = _compress(tmp_path, rows, "--write-format", "hf-chat")
    records = read_jsonl(out)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    fits = records[4]  # within the budget: every message kept, marks as the input's
    assert [m["train"] for m in fits["messages"] if m["role"] == "assistant"] == [False, True]
    for record, row, line in zip(records, rows, metrics, strict=True):
        untrained = {text for text, mark in _assistant(row) if mark is False}
        assert line["gpt_turns"] == len(_assistant(row)) - len(untrained)
        assert all(text in untrained for text, mark in _assistant(record) if mark is False)
        assert line["train_turns"] == sum(mark is True for _, mark in _assistant(record))
    assert any(m["train"] is False for r in records for m in r["messages"] if m["role"] == "assistant")


@pytest.mark.parametrize("mode", ["single", "windows"])
def test_eval_and_analyze_count_what_the_run_counted(tmp_path: Path, mode: str) -> None:
    rows = _rows()
    extra = ["--windows"] if mode == "windows" else []
    out = _compress(tmp_path, rows, *extra)
    source = tmp_path / "in.jsonl"
    report = json.loads((out.parent / "x.report.json").read_text())

    def evaluated(path: Path) -> dict[str, Any]:
        result = run_cli("eval", str(path), "--input", str(source), "--json")
        assert result.returncode == 0, result.stderr
        return dict(json.loads(result.stdout)["outputs"][0]["training"])

    from_metrics = evaluated(out)
    assert (from_metrics["gpt_turns"], from_metrics["trained"]) == (
        report["training"]["gpt_turns"],
        report["training"]["gpt_turns_trained"],
    )
    older = tmp_path / "older"  # metrics from before they counted: eval counts the files
    shutil.copytree(out.parent, older)
    lines = read_jsonl(older / "x.metrics.jsonl")
    for line in lines:
        del line["gpt_turns"], line["train_turns"]
    write_jsonl(older / "x.metrics.jsonl", lines)
    assert evaluated(older / "x.jsonl") == {**from_metrics, "from": "files"}
    analyzed = run_cli("analyze", str(source), *BUDGET[:4], *extra, "--json")
    assert analyzed.returncode == 0, analyzed.stderr
    data = json.loads(analyzed.stdout)
    assert data["gpt_turns"] == report["training"]["gpt_turns"]
    if mode == "windows":
        assert data["windows"]["gpt_turns_trainable"] == report["training"]["gpt_turns_trained"]
