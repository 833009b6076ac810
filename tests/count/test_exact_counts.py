"""Every metrics line's `compressed_tokens` equals an independent recount of the row written.

Hermes-style system prompts end in `</tool_call>`-like text; the notice appended to them starts
with "\\n\\n", and the tokenizer merges the two ends into one token. Counting the notice alone
is then one token too many: the edited system turn must be counted whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_trajectory, read_jsonl, run_cli, write_jsonl
from trajectory_compressor.settings import DEFAULT_NOTICE
from trajectory_compressor.types import Turn

HERMES_SYSTEM = (
    "You are a function calling AI model. You may call one or more functions to assist with the user query. "
    "For each function call return a json object with function name and arguments within <tool_call></tool_call> "
    'XML tags as follows:\n<tool_call>\n{"name": <function-name>, "arguments": <args-dict>}\n</tool_call>'
)
SMALL = ["--target-max-tokens", "2500", "--summary-target-tokens", "200", "-q", "--summarizer", "extractive"]


def _hermes_rows(count: int = 8) -> list[dict]:
    rows = []
    for index in range(count):
        row = make_trajectory(index, steps=2 + index * 2)
        row["conversations"][0]["value"] = HERMES_SYSTEM
        rows.append(row)
    rows.append(make_trajectory(99, steps=1, output_lines=400))  # protected turns alone over the budget
    rows.append({"id": "bad", "conversations": [{"from": "robot", "value": "x"}]})  # rejected, kept
    return rows


def test_the_notice_merges_with_a_hermes_system_prompt(counter) -> None:
    # The premise of this file: counted alone, the notice costs one token more than in place.
    joined = counter.count(HERMES_SYSTEM + DEFAULT_NOTICE)
    assert joined == counter.count(HERMES_SYSTEM) + counter.count(DEFAULT_NOTICE) - 1


def _recount_values(counter, row: dict) -> int:
    return sum(counter.count_many([turn["value"] for turn in row["conversations"]]))


# With a summary budget close to the target, a row whose middle is no bigger than a summary is
# not compressed, and `--over-limit truncate` cuts it instead.
TRUNCATING = ["--target-max-tokens", "2600", "--summary-target-tokens", "2000", "--protect-last-n-turns", "2"]


@pytest.mark.parametrize("over_limit", ["keep", "truncate"])
def test_every_metrics_line_equals_a_recount(tmp_path: Path, counter, over_limit: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", _hermes_rows())
    out = tmp_path / "o.jsonl"
    settings = [*SMALL, *TRUNCATING] if over_limit == "truncate" else SMALL
    result = run_cli("compress", str(source), "-o", str(out), "--over-limit", over_limit, *settings)
    assert result.returncode == 0, result.stderr
    rows, metrics = read_jsonl(out), read_jsonl(tmp_path / "o.metrics.jsonl")
    assert len(rows) == len(metrics)
    kinds = set()
    for row, m in zip(rows, metrics, strict=True):
        if m["rejected"]:
            kinds.add("rejected")
            continue
        kinds.add("compressed" if m["was_compressed"] else "truncated" if m.get("truncated") else "unchanged")
        assert _recount_values(counter, row) == m["compressed_tokens"], m
        assert m["original_tokens"] - m["compressed_tokens"] == m["tokens_saved"]
        if m["was_compressed"] and not m["still_over_limit"]:
            assert m["compressed_tokens"] <= (2600 if over_limit == "truncate" else 2500)
    assert {"compressed", "unchanged", "rejected"} <= kinds
    if over_limit == "truncate":
        assert "truncated" in kinds
    compressed = [m for m in metrics if m["was_compressed"]]
    assert compressed
    assert all(rows[m["index"]]["conversations"][0]["value"].endswith(DEFAULT_NOTICE) for m in compressed)
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert report["tokens"]["after"] == sum(m["compressed_tokens"] for m in metrics)


def test_chat_template_counts_equal_a_recount(tmp_path: Path, counter) -> None:
    from trajectory_compressor.count import build_counter

    template = tmp_path / "t.jinja"
    template.write_text(
        "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    )
    source = write_jsonl(tmp_path / "in.jsonl", _hermes_rows(6)[:6])
    out = tmp_path / "o.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--count-mode", "chat-template", "--chat-template", str(template),
        *SMALL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    recounter = build_counter(count_mode="chat-template", chat_template=str(template))
    rows, metrics = read_jsonl(out), read_jsonl(tmp_path / "o.metrics.jsonl")
    assert any(m["was_compressed"] for m in metrics)
    for row, m in zip(rows, metrics, strict=True):
        turns = [Turn(t["from"], t["value"]) for t in row["conversations"]]
        assert sum(recounter.count_conversations([turns])[0]) == m["compressed_tokens"], m


@pytest.mark.parametrize("mode", ["values", "chat-template"])
def test_pruned_rows_equal_a_recount(tmp_path: Path, mode: str) -> None:
    """`--prune-tool-outputs`: rows fitted by pruning alone and rows summarized on the pruned row,
    ShareGPT and OpenAI, count as written whatever the mode (placeholders counted in place)."""
    from tests.cli.test_formats import openai_trajectory
    from trajectory_compressor.count import build_counter
    from trajectory_compressor.read.formats import detect_format, to_turns

    template = tmp_path / "t.jinja"
    template.write_text(
        "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    )
    rows = [make_trajectory(i, steps=3 + 2 * i, output_lines=30) for i in range(6)]
    rows += [openai_trajectory(7, steps=5), openai_trajectory(8, steps=12)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "o.jsonl"
    counting = ["--count-mode", "chat-template", "--chat-template", str(template)] if mode == "chat-template" else []
    result = run_cli(
        "compress", str(source), "-o", str(out), "--prune-tool-outputs", "--target-max-tokens", "2500",
        "--summary-target-tokens", "200", "-q", "--summarizer", "extractive", *counting,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    recounter = build_counter(count_mode=mode, chat_template=str(template) if counting else None)
    written, metrics = read_jsonl(out), read_jsonl(tmp_path / "o.metrics.jsonl")
    kinds = set()
    for row, m in zip(written, metrics, strict=True):
        turns = to_turns(row, detect_format(row))
        assert sum(recounter.count_conversations([turns])[0]) == m["compressed_tokens"], m
        kinds.add(("pruned" if m.get("pruned_turns") else "") + ("+summary" if m["was_compressed"] else ""))
        if not m["still_over_limit"]:
            assert m["compressed_tokens"] <= 2500
    assert {"pruned", "pruned+summary", ""} <= kinds
