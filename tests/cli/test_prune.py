"""`--prune-tool-outputs` end to end: a result the next gpt turn answers is never cleared, so an
ordinary run is written as without pruning; results no assistant turn answers (a run cut off
after parallel calls) are cleared oldest first, every gpt turn verbatim; `--summarizer none`;
OpenAI rows; windows; exact counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_formats import openai_trajectory
from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from tests.run.test_pruning import cut_off
from trajectory_compressor.read.formats import detect_format, to_turns
from trajectory_compressor.run.row.finisher import FITTED_BY_PRUNING, NO_SUMMARIZER

PLACEHOLDER = "[tool output cleared: "
RESPONSE = ("<tool_response>\n", "\n</tool_response>")


def _values(row: dict[str, Any]) -> list[str]:
    return [turn["value"] for turn in row["conversations"]]


def _tokens(counter: Any, row: dict[str, Any]) -> list[int]:
    return counter.count_many(_values(row))


def _cleared(value: str) -> int:
    """Characters a placeholder of this tool value says were cleared (its block's content)."""
    return len(value) - len(RESPONSE[0]) - len(RESPONSE[1])


def _run(tmp_path: Path, rows: list[dict[str, Any]], *flags: str, name: str = "o") -> tuple[list[Any], list[Any], Any]:
    source = write_jsonl(tmp_path / f"{name}.in.jsonl", rows)
    out = tmp_path / f"{name}.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "-q", "--summary-target-tokens", "200", *flags)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / f"{name}.report.json").read_text())
    return read_jsonl(out), read_jsonl(tmp_path / f"{name}.metrics.jsonl"), report


NO_TAIL = ["--protect-last-n-turns", "0"]


def test_a_result_the_next_gpt_turn_answers_is_never_cleared(tmp_path: Path) -> None:
    rows = [make_trajectory(1, steps=8, output_lines=40), make_trajectory(3, steps=20, output_lines=30)]
    flags = ["--target-max-tokens", "1800", "--summarizer", "extractive"]
    plain, plain_metrics, _ = _run(tmp_path, rows, *flags, name="plain")
    pruned, metrics, report = _run(tmp_path, rows, *flags, "--prune-tool-outputs", name="pruned")
    # Every result of these runs is answered by the gpt turn after it, which a single row keeps
    # (and trains on): nothing is cleared, the rows are written as without pruning.
    assert pruned == plain and not any(m.get("pruned_turns") for m in metrics)
    assert [m["compressed_tokens"] for m in metrics] == [m["compressed_tokens"] for m in plain_metrics]
    assert "pruning" not in report or report["pruning"]["rows_pruned"] == 0


def test_pruning_alone_fits_a_row_oldest_results_first_and_only_as_far_as_needed(tmp_path: Path, counter) -> None:
    row = cut_off(make_trajectory(1, steps=8, output_lines=40))  # results 5.. answered by no gpt turn
    small = make_trajectory(2, steps=1, output_lines=3)
    counts = _tokens(counter, row)
    first, second = 5, 6  # the first two unanswered results (the head holds the first call and its result)
    target = sum(counts) - counts[first] - counts[second] + 30  # two placeholders (~12 tokens each) fit in 30
    flags = ["--prune-tool-outputs", "--target-max-tokens", str(target), *NO_TAIL]
    rows, metrics, report = _run(tmp_path, [row, small], *flags)
    pruned, m = rows[0], metrics[0]
    assert m["was_compressed"] is False and m["reason"] == FITTED_BY_PRUNING and not m["still_over_limit"]
    assert m["pruned_turns"] == 2 and m["pruned_tokens"] == sum(counts) - m["compressed_tokens"]
    before, after = _values(row), _values(pruned)
    assert len(after) == len(before) and m["train_turns"] == m["gpt_turns"] == 2
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == [first, second]  # the oldest middle results, nothing else: every gpt turn verbatim
    for index in changed:
        assert after[index] == f"{PLACEHOLDER}{_cleared(before[index]):,} characters]"
    # Exact, within the target, and only as far as needed: one placeholder fewer would not fit.
    assert sum(_tokens(counter, pruned)) == m["compressed_tokens"] <= target
    assert m["compressed_tokens"] - counter.count(after[second]) + counts[second] > target
    assert m["fidelity"]["future"]["anchors"] >= 0 and "score" not in m["fidelity"]
    assert rows[1] == small and metrics[1]["skipped_under_target"] and "pruned_turns" not in metrics[1]
    assert report["pruning"] == {
        "rows_pruned": 1,
        "rows_fitted_by_pruning": 1,
        "turns_pruned": 2,
        "tokens_cleared": m["pruned_tokens"],
    }
    assert report["rows"]["compressed"] == 0 and report["rows"]["unchanged_over_target"] == 0


def test_summarizer_none_prunes_only_and_flags_the_rows_still_over(tmp_path: Path, counter) -> None:
    fits, too_long = (
        cut_off(make_trajectory(1, steps=8, output_lines=40)),
        make_trajectory(2, steps=200, output_lines=8),
    )
    counts = _tokens(counter, fits)
    target = str(sum(counts) - counts[5] - counts[6] + 30)
    flags = ["--prune-tool-outputs", "--summarizer", "none", "--target-max-tokens", target, *NO_TAIL]
    rows, metrics, report = _run(tmp_path, [fits, too_long], *flags)
    assert metrics[0]["reason"] == FITTED_BY_PRUNING and not metrics[0]["still_over_limit"]
    over = metrics[1]
    assert over["still_over_limit"] and over["reason"] == NO_SUMMARIZER and not over["was_compressed"]
    assert over["summary_calls"] == 0 and "pruned_turns" not in over  # every result answered: none cleared
    assert not any(value.startswith("[CONTEXT SUMMARY]") for row in rows for value in _values(row))
    assert sum(_tokens(counter, rows[1])) == over["compressed_tokens"] == over["original_tokens"]
    listed = read_jsonl(tmp_path / "o.over_limit.jsonl")
    assert [entry["index"] for entry in listed] == [1] and listed[0]["reason"] == NO_SUMMARIZER
    assert report["rows"]["still_over_limit"] == 1 and report["summaries"]["calls"] == 0
    # --over-limit truncate then cuts the pruned row's middle, from its end, until it fits.
    flags = flags[: -len(NO_TAIL)]  # the last turns protected again
    rows, metrics, _ = _run(tmp_path, [too_long], *flags, "--over-limit", "truncate", name="cut")
    cut = metrics[0]
    assert cut["truncated"] and not cut["still_over_limit"] and cut["compressed_tokens"] <= int(target)
    assert sum(_tokens(counter, rows[0])) == cut["compressed_tokens"]
    assert _values(rows[0])[:4] == _values(too_long)[:4] and _values(rows[0])[-4:] == _values(too_long)[-4:]


def test_summarizer_none_without_pruning_or_with_batch_is_refused_in_one_line(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [make_trajectory(1)])
    out = str(tmp_path / "o.jsonl")
    for extra, message in (
        ([], "--summarizer none writes no summary: add --prune-tool-outputs"),
        (["--prune-tool-outputs", "--batch", "--base-url", "http://127.0.0.1:9/v1"], "need the llm summarizer"),
    ):
        result = run_cli("compress", str(source), "-o", out, "--summarizer", "none", *extra)
        assert result.returncode == 2 and message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def _parallel_cut_off(row: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI run whose second assistant message made every later call at once, and stopped
    when the results came back: those results are answered by no assistant message."""
    messages = row["messages"]
    assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls")]
    calls = [call for i in assistants[1:] for call in messages[i]["tool_calls"]]
    second = {**messages[assistants[1]], "tool_calls": calls}
    tools = [m for m in messages[assistants[1] :] if m["role"] == "tool"]
    return {**row, "messages": [*messages[: assistants[1]], second, *tools]}


def test_openai_tool_messages_keep_their_keys_and_only_their_content_is_cleared(tmp_path: Path, counter) -> None:
    row = _parallel_cut_off(openai_trajectory(4, steps=10))
    flags = ["--prune-tool-outputs", "--target-max-tokens", "3500", "--summarizer", "extractive", *NO_TAIL]
    rows, metrics, _ = _run(tmp_path, [row], *flags)
    m = metrics[0]
    assert m["pruned_turns"] > 0
    messages = rows[0]["messages"]
    cleared = [message for message in messages if str(message.get("content", "")).startswith(PLACEHOLDER)]
    assert len(cleared) == m["pruned_turns"] - sum(
        1 for i, turn in enumerate(row["messages"]) if turn["role"] == "tool" and _in_region(i, m)
    )
    originals = {message.get("tool_call_id"): message for message in row["messages"] if message["role"] == "tool"}
    for message in cleared:
        original = originals[message["tool_call_id"]]
        # Every key kept (the call it answers, `weight`); the name comes from the call it answers.
        assert {**message, "content": original["content"]} == original
        assert message["content"] == f"{PLACEHOLDER}bash, {len(original['content']):,} characters]"
    assert m["compressed_tokens"] <= 3500


def _in_region(index: int, metrics: dict[str, Any]) -> bool:
    region = metrics.get("compression_region")
    return region is not None and region["start_idx"] <= index <= region["end_idx"]


@pytest.mark.parametrize("summarizer", ["extractive", "none"])
def test_windows_clear_only_context_results_and_train_every_gpt_turn_once(
    tmp_path: Path, counter: Any, summarizer: str
) -> None:
    from tests.cli.test_windows import TARGET, _is_assistant, _messages, _rows, _windows_by_row

    rows = _rows()
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    budget = ["--target-max-tokens", str(TARGET), "--summary-target-tokens", "300", "-q", "--windows"]
    outs = {}
    for name, flags in (("plain", []), ("pruned", ["--prune-tool-outputs"])):
        if summarizer == "none" and not flags:
            continue
        outs[name] = tmp_path / name / "x.jsonl"
        result = run_cli("compress", str(source), "-o", str(outs[name]), *budget, "--summarizer", summarizer, *flags)
        assert result.returncode == 0, result.stderr
    out = outs["pruned"]
    by_row, metrics = _windows_by_row(out), read_jsonl(out.parent / "x.metrics.jsonl")
    records = read_jsonl(out)
    assert sum(bool(m.get("pruned_turns")) for m in metrics) >= 1
    for index, row in enumerate(rows):
        # Every assistant turn trained exactly once, verbatim, in order.
        trained = [m for w in by_row[index] for m in _messages(w) if _is_assistant(m) and m["train"] is True]
        assert [{k: v for k, v in m.items() if k != "train"} for m in trained] == [
            m for m in _messages(row) if _is_assistant(m)
        ]
    for record, m in zip(records, metrics, strict=True):
        messages = _messages(record)
        texts = [str(message.get("value", message.get("content"))) for message in messages]
        cleared = [i for i, text in enumerate(texts) if text.startswith(PLACEHOLDER)]
        assert len(cleared) == (m.get("pruned_turns") or 0)
        first_new = next((i for i, message in enumerate(messages) if message.get("train") is True), len(messages))
        assert all(i < first_new for i in cleared)  # context only: never before a trained turn of this window
        # ... and never a result the first trained turn answers (those since the assistant turn before it)
        before = [i for i in range(first_new) if _is_assistant(messages[i])]
        answered = range(before[-1] + 1 if before else 0, first_new)
        assert not set(answered) & set(cleared)
        assert all(not text.startswith("[CONTEXT SUMMARY]") for text in texts) or summarizer != "none"
        recount = sum(counter.count_many([turn.value for turn in to_turns(record, detect_format(record))]))
        assert recount == m["compressed_tokens"] and (recount > TARGET) == m["still_over_limit"]
        if record["window"]["index"] and summarizer == "none":
            assert not m["was_compressed"] and "future" in m["fidelity"]  # what left the context, judged
    report = json.loads((out.parent / "x.report.json").read_text())
    assert report["training"]["trainable_share"] == 1.0
    assert report["pruning"]["turns_pruned"] == sum(m.get("pruned_turns") or 0 for m in metrics)
    if "plain" in outs:  # pruning makes room: fewer windows, so fewer summaries, than without it
        assert len(records) < len(read_jsonl(outs["plain"]))


def test_a_credential_as_a_results_tool_name_is_masked_in_its_placeholder(tmp_path: Path, counter) -> None:
    """The placeholder is text this tool writes: the tool names it quotes are masked like a
    summary's (a harness that logged a key as a tool's name must not see it quoted back)."""
    key = "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
    row = cut_off(make_trajectory(1, steps=8, output_lines=40))
    content = "line of output\n" * 200
    row["conversations"][5]["value"] = RESPONSE[0] + json.dumps({"name": key, "content": content}) + RESPONSE[1]
    counts = _tokens(counter, row)
    target = sum(counts) - counts[5] + 30  # clearing the first unanswered result fits
    rows, metrics, _ = _run(tmp_path, [row], "--prune-tool-outputs", "--target-max-tokens", str(target), *NO_TAIL)
    assert metrics[0]["pruned_turns"] == 1
    assert _values(rows[0])[5] == f"{PLACEHOLDER}[REDACTED], {len(content):,} characters]"
    assert not any(key in path.read_text() for path in tmp_path.glob("o.*") if path.name != "o.in.jsonl")
