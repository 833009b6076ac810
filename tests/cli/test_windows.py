"""`--windows` end to end: every action trained once, windows within the budget or flagged,
one summary per later window, each the update of the one before with only the new turns."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_formats import openai_trajectory
from tests.conftest import make_trajectory, read_jsonl, run_cli, run_cli_subprocess, write_jsonl
from tests.fake_openai_server import FakeServerThread, prompt_text
from trajectory_compressor.read.formats import detect_format, to_turns
from trajectory_compressor.summarize.anchor_index import split_index

TARGET = 2500
BUDGET = ["--target-max-tokens", str(TARGET), "--summary-target-tokens", "300"]


def _rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [make_trajectory(i, steps=3 + 3 * i, output_lines=25 + 5 * i) for i in range(5)]
    rows.append(openai_trajectory(7, steps=14))
    rows.append(make_trajectory(8, steps=1, output_lines=5))  # within the budget
    return rows


def _windows_by_row(out: Path) -> dict[int, list[dict[str, Any]]]:
    by_row: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in read_jsonl(out):
        by_row[record["window"]["input_index"]].append(record)
    return by_row


def _compress(tmp_path: Path, *extra: str, rows: list[dict[str, Any]] | None = None) -> Path:
    source = write_jsonl(tmp_path / "in.jsonl", rows if rows is not None else _rows())
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--windows", *BUDGET, *extra)
    assert result.returncode == 0, result.stderr
    return out


def _messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record.get("conversations") or record["messages"]


def _is_assistant(message: dict[str, Any]) -> bool:
    return message.get("from") == "gpt" or message.get("role") == "assistant"


def test_every_gpt_turn_is_trained_exactly_once_verbatim_in_order(tmp_path: Path) -> None:
    rows = _rows()
    out = _compress(tmp_path, "--summarizer", "extractive", rows=rows)
    by_row = _windows_by_row(out)
    assert sorted(by_row) == list(range(len(rows)))
    assert max(len(w) for w in by_row.values()) >= 4, "long rows are split"
    for index, row in enumerate(rows):
        windows = by_row[index]
        assert [w["window"]["index"] for w in windows] == list(range(len(windows)))
        assert {w["window"]["count"] for w in windows} == {len(windows)}
        trained = [m for w in windows for m in _messages(w) if _is_assistant(m) and m["train"] is True]
        originals = [m for m in _messages(row) if _is_assistant(m)]
        assert [{k: v for k, v in m.items() if k != "train"} for m in trained] == originals
        for window in windows:  # every assistant turn carries a mark, other turns none
            for message in _messages(window):
                assert ("train" in message) == _is_assistant(message)
        # the row's other keys are kept
        other_keys = {k: v for k, v in row.items() if k not in ("conversations", "messages")}
        assert all({k: v for k, v in w.items() if k not in ("window", "conversations", "messages")} == other_keys
                   for w in windows)  # fmt: skip


def _mid_run_system_row() -> dict[str, Any]:
    """An OpenAI run with a system turn between a call and its result (a harness's reminder)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Read the files."},
    ]
    for k in range(6):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": f'{{"path": "/f{k}"}}'}}
        messages.append({"role": "assistant", "content": f"Reading file {k}.", "tool_calls": [call]})
        if k == 3:
            messages.append({"role": "system", "content": "Reminder: be brief."})
        result = "\n".join(f"line {i} of file {k}: value={i * k}" for i in range(120))
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": result})
    messages.append({"role": "assistant", "content": "All files read."})
    return {"id": "mid-run-system", "messages": messages}


def test_a_system_turn_between_a_call_and_its_result_leaves_no_window_without_a_trained_turn(
    tmp_path: Path,
) -> None:
    """Such a system turn and the result after it once made a window of their own, with no
    assistant turn to train: TRL drops that row, a sample silently lost."""
    row = _mid_run_system_row()
    source = write_jsonl(tmp_path / "in.jsonl", [row])
    out = tmp_path / "out" / "x.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--windows", "--write-format", "hf-chat",
        "--summarizer", "extractive", "--target-max-tokens", "3000", "--summary-target-tokens", "300", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    windows = read_jsonl(out)
    assert len(windows) > 3, "the run is split"
    for window in windows:
        assert any(m.get("train") is True for m in window["messages"]), json.loads(window["metadata"])["window"]
    trained = [m["content"] for w in windows for m in w["messages"] if m.get("train") is True]
    assert trained == [m["content"] for m in row["messages"] if m["role"] == "assistant"]


def test_windows_fit_the_budget_or_are_flagged_and_their_counts_are_exact(tmp_path: Path, counter: Any) -> None:
    rows = _rows()
    huge = make_trajectory(9, steps=5, output_lines=20)
    lines = "\n".join(f"log line {n}: value={n * 7}" for n in range(1500))
    # The row ends on a result over the budget alone: the last window keeps the row's ending (a
    # window before it would end on its last trained turn, before such a result).
    del huge["conversations"][-1]
    huge["conversations"][-1]["value"] = f"<tool_response>\n{lines}\n</tool_response>"
    rows.append(huge)
    out = _compress(tmp_path, "--summarizer", "extractive", rows=rows)
    records = read_jsonl(out)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert len(records) == len(metrics)
    for record, m in zip(records, metrics, strict=True):
        assert m["window"] == record["window"] and m["index"] == record["window"]["input_index"]
        fmt = detect_format(record)
        recount = sum(counter.count_many([turn.value for turn in to_turns(record, fmt)]))
        assert recount == m["compressed_tokens"]
        assert (m["compressed_tokens"] > TARGET) == m["still_over_limit"]
        if m["still_over_limit"]:
            assert m["reason"]
    elided = [m for m in metrics if m.get("elided_turns")]
    assert elided and all(not m["still_over_limit"] for m in elided), "the huge result is cut to fit"
    cut = next(r for r, m in zip(records, metrics, strict=True) if m.get("elided_turns"))
    assert any("characters elided" in t["value"] for t in cut["conversations"] if t["from"] == "tool")
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["training"]["trainable_share"] == 1.0
    assert report["windows"]["windows"] == len(records)


def test_one_summary_in_each_later_window_none_in_the_first(tmp_path: Path) -> None:
    out = _compress(tmp_path, "--summarizer", "extractive")
    for windows in _windows_by_row(out).values():
        for window in windows:
            summaries = [
                m for m in _messages(window) if str(m.get("value", m.get("content"))).startswith("[CONTEXT SUMMARY]:")
            ]
            assert len(summaries) == (1 if window["window"]["index"] else 0)


def test_a_row_within_the_budget_is_one_window_unchanged_but_for_its_marks(tmp_path: Path) -> None:
    rows = _rows()
    out = _compress(tmp_path, "--summarizer", "extractive", rows=rows)
    [window] = _windows_by_row(out)[6]
    assert window["window"] == {"index": 0, "count": 1, "input_index": 6}
    unmarked = {k: v for k, v in window.items() if k != "window"}
    unmarked["conversations"] = [{k: v for k, v in t.items() if k != "train"} for t in window["conversations"]]
    assert unmarked == rows[6]
    metrics = [m for m in read_jsonl(out.parent / "x.metrics.jsonl") if m["index"] == 6]
    assert metrics[0]["skipped_under_target"] and metrics[0]["reason"] == "under target"


def test_llm_windows_update_the_previous_summary_with_only_the_new_turns(tmp_path: Path) -> None:
    row = make_trajectory(3, steps=16, output_lines=30)
    args = ["--summarizer", "llm", "--model", "m", "--no-cache", "--retry-delay", "0.01"]
    with FakeServerThread() as server:
        out = _compress(tmp_path, *args, "--base-url", server.base_url, rows=[row])
        prompts = [prompt_text(request.body) for request in server.requests]
    windows = _windows_by_row(out)[0]
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert len(windows) >= 3 and len(prompts) == len(windows) - 1
    assert [m["summary_calls"] for m in metrics] == [0] + [1] * len(prompts), "each window counts its own"
    summaries = [_messages(w)[4]["value"].removeprefix("[CONTEXT SUMMARY]: ") for w in windows[1:]]
    for k, prompt in enumerate(prompts, start=1):
        assert "## Goal" in prompt and "## Critical Context" in prompt  # the structured template
        transcript = prompt.split("<transcript>", 1)[1]
        region = metrics[k]["compression_region"]
        before = metrics[k - 1]["compression_region"]
        first_new = before["end_idx"] + 1 if before else region["start_idx"]
        steps_sent = {int(s.split(":")[0]) for s in transcript.split("Step ")[1:]}
        steps_expected = {
            int(t["value"].split("Step ")[1].split(":")[0])
            for t in row["conversations"][first_new : region["end_idx"] + 1]
            if t["from"] == "gpt" and t["value"].startswith("Step ")
        }
        assert steps_sent == steps_expected, k  # only the turns that left the context since
        if k == 1:
            assert "<previous_summary>" not in prompt
        else:
            previous = prompt.split("<previous_summary>\n", 1)[1].split("\n</previous_summary>")[0]
            assert previous == split_index(summaries[k - 2])[0]  # without its anchor index


def test_a_failed_summary_under_keep_leaves_the_row_one_flagged_window(tmp_path: Path) -> None:
    row = make_trajectory(3, steps=10, output_lines=30)
    args = ["--summarizer", "llm", "--model", "m", "--no-cache", "--retry-delay", "0.01", "--max-retries", "0"]
    with FakeServerThread(default="500") as server:
        out = _compress(tmp_path, *args, "--on-summary-failure", "keep", "--base-url", server.base_url, rows=[row])
    [window] = read_jsonl(out)
    assert window["window"] == {"index": 0, "count": 1, "input_index": 0}
    [m] = read_jsonl(out.parent / "x.metrics.jsonl")
    assert m["summary_failed"] and m["still_over_limit"] and m["reason"].startswith("summary failed")
    assert (m["summary_calls"], m["summary_errors"]) == (1, 1)
    assert [t["value"] for t in window["conversations"]] == [t["value"] for t in row["conversations"]]


def test_drop_leaves_out_only_the_windows_over_the_limit(tmp_path: Path) -> None:
    rows = [make_trajectory(1, steps=6, output_lines=30), make_trajectory(2, steps=1, output_lines=3000)]
    rows[1]["conversations"][2]["value"] = "x " * 4000  # a gpt turn larger than the budget: cannot be cut
    out = _compress(tmp_path, "--summarizer", "extractive", "--over-limit", "drop", rows=rows)
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    dropped = [m for m in metrics if m.get("dropped")]
    assert dropped and all(m["still_over_limit"] and not m["written"] for m in dropped)
    assert len(read_jsonl(out)) == len(metrics) - len(dropped)
    over = read_jsonl(out.parent / "x.over_limit.jsonl")
    assert [o["window"] for o in over] == [m["window"] for m in dropped]


def test_drop_counts_what_the_dataset_holds_in_the_report_and_the_summary(tmp_path: Path) -> None:
    """Defect: under `--over-limit drop` the summary said every window cut was written, the report
    counted a row with some windows dropped both written and dropped, and `rows.by_summarizer`
    was empty. Every figure is held here to the dataset file itself."""
    split = make_trajectory(1, steps=8, output_lines=30)
    split["conversations"][8]["value"] = "y " * 4000  # a middle gpt turn over the budget: its window only
    whole = make_trajectory(2, steps=0)
    whole["conversations"][-1]["value"] = "x " * 4000  # the row's one window, over the budget
    rows = [split, whole, make_trajectory(3, steps=1, output_lines=5)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "x.jsonl"
    args = ["--windows", *BUDGET, "--summarizer", "extractive", "--over-limit", "drop"]
    result = run_cli("compress", str(source), "-o", str(out), *args)
    assert result.returncode == 0, result.stderr
    records, metrics = read_jsonl(out), read_jsonl(out.parent / "x.metrics.jsonl")
    cut: dict[int, int] = defaultdict(int)
    for m in metrics:
        cut[m["index"]] += 1
    written: dict[int, int] = defaultdict(int)
    for record in records:
        written[record["window"]["input_index"]] += 1
    whole_dropped = [i for i in cut if i not in written]
    part_dropped = [i for i in cut if 0 < written.get(i, 0) < cut[i]]
    assert whole_dropped == [1] and part_dropped == [0], "the input exercises both kinds of drop"
    report = json.loads((out.parent / "x.report.json").read_text())
    windows, report_rows = report["windows"], report["rows"]
    assert windows["windows"] == len(records)
    assert windows["dropped"] == len(metrics) - len(records) == windows["over_limit"]
    assert report_rows["written"] == len(written) == len(rows) - len(whole_dropped)
    assert report_rows["dropped_over_limit"] == len(whole_dropped)
    assert report_rows["partly_dropped"] == len(part_dropped)
    assert report_rows["written"] + report_rows["dropped_over_limit"] == report_rows["selected"] == len(rows)
    assert report_rows["by_summarizer"] == {"extractive": 1}  # the split row, once
    assert sum(windows["by_summarizer"].values()) == sum(m["was_compressed"] for m in metrics)
    assert f"windows: {len(records)} written, {windows['dropped']} dropped over the limit" in result.stderr
    assert f"{len(whole_dropped)} dropped, {len(part_dropped)} written without some of their windows" in result.stderr
    assert "summaries by: extractive: 1 rows (" in result.stderr


def test_dry_run_plans_the_windows_without_writing_a_dataset(tmp_path: Path) -> None:
    out = _compress(tmp_path, "--dry-run")
    assert not out.exists()
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    later = [m for m in metrics if m["window"]["index"] > 0]
    assert later and all(m["planned_tokens"] == m["compressed_tokens"] and not m["written"] for m in later)


@pytest.mark.parametrize(("flags", "message"), [(["--over-limit", "truncate"], "truncate does not apply")])
def test_windows_refuse_what_they_cannot_honour(tmp_path: Path, flags: list[str], message: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(0)])
    result = run_cli("compress", str(source), "-o", str(tmp_path / "o.jsonl"), "--windows", *flags)
    assert result.returncode == 2 and message in result.stderr


def test_windows_come_out_as_messages_with_their_marks(tmp_path: Path) -> None:
    rows = [make_trajectory(i, steps=8, output_lines=30) for i in range(2)]
    out = _compress(tmp_path, "--summarizer", "extractive", "--write-format", "messages", rows=rows)
    by_row = _windows_by_row(out)
    for index, row in enumerate(rows):
        trained = [m for w in by_row[index] for m in w["messages"] if m["role"] == "assistant" and m["train"]]
        assert len(trained) == sum(t["from"] == "gpt" for t in row["conversations"])
        assert all(m["tool_calls"][0]["function"]["name"] == "bash" for m in trained[:-1])


def test_windows_counted_as_the_trainer_counts_them(tmp_path: Path) -> None:
    """--count-mode chat-template: every window's size is the trainer's apply_chat_template count."""
    from trajectory_compressor.count import load_tokenizer
    from trajectory_compressor.count.named_templates import read_chat_template

    rows = [make_trajectory(i, steps=10, output_lines=30) for i in range(3)]
    template = ["--count-mode", "chat-template", "--chat-template", "deepseek-v3.1"]
    out = _compress(tmp_path, "--summarizer", "extractive", *template, rows=rows)
    tokenizer = load_tokenizer()
    tokenizer.chat_template = read_chat_template("deepseek-v3.1")
    roles = {"system": "system", "human": "user", "gpt": "assistant", "tool": "tool"}
    metrics = read_jsonl(out.parent / "x.metrics.jsonl")
    assert max(m["window"]["count"] for m in metrics) >= 3
    for record, m in zip(read_jsonl(out), metrics, strict=True):
        messages = [{"role": roles[t["from"]], "content": t["value"]} for t in record["conversations"]]
        rendered = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True)
        assert len(rendered["input_ids"]) == m["compressed_tokens"] <= TARGET


def test_the_end_of_run_summary_says_windows_write_more_tokens_than_they_read(tmp_path: Path) -> None:
    """Windows repeat the context their turns had: written tokens exceed read ones by design, so
    the summary says "read -> written", never a negative saving that reads as a loss."""
    source = write_jsonl(tmp_path / "in.jsonl", _rows())
    result = run_cli("compress", str(source), "-o", str(tmp_path / "x.jsonl"), "--windows", *BUDGET,
                     "--summarizer", "extractive")  # fmt: skip
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("tokens:")]
    assert " read -> " in line and "written in the windows" in line and "saved" not in line


def test_a_windows_run_killed_after_split_rows_were_committed_resumes_instead_of_starting_over(tmp_path: Path) -> None:
    """A split row writes a metrics line per window: the resume's check of the metrics file against
    the checkpoint's totals counted one per row, called every such work folder damaged and
    started over (the output was still right, the work done was thrown away)."""
    source = write_jsonl(tmp_path / "in.jsonl", _rows())
    out = tmp_path / "out" / "x.jsonl"
    args = ["compress", str(source), "-o", str(out), "--windows", *BUDGET]
    env = {"TC_CHECKPOINT_ROWS": "2", "TC_CHECKPOINT_SECONDS": "1e9"}
    killed = run_cli_subprocess(*args, env={**env, "TC_CRASH_AT": "checkpoint-renamed:1"})
    assert killed.returncode == -9, killed.stderr
    resumed = run_cli(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert re.search(r"resuming: [1-9]\d* input rows already committed", resumed.stderr), resumed.stderr
    assert "damaged" not in resumed.stderr
    reference = tmp_path / "reference" / "x.jsonl"
    assert run_cli("compress", str(source), "-o", str(reference), "--windows", *BUDGET).returncode == 0
    assert out.read_bytes() == reference.read_bytes()
    assert (out.parent / "x.metrics.jsonl").read_bytes() == (reference.parent / "x.metrics.jsonl").read_bytes()
