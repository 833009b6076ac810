"""Every metrics line's `compressed_tokens` equals an independent recount of the row written.

Hermes-style system prompts end in `</tool_call>`-like text; the notice appended to them starts
with "\\n\\n", and the tokenizer merges the two ends into one token. Counting the notice alone
is then one token too many: the edited system turn must be counted whole.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

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


# --- chat-template counts are the trainer's own counts (rows with tools, OpenAI tool calls) ---------

CHAT_SMALL = ["--target-max-tokens", "3000", "--summary-target-tokens", "200", "-q", "--summarizer", "extractive"]


@pytest.fixture(scope="module")
def qwen_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local model directory: the bundled tokenizer with Qwen's added tokens and Qwen2.5's template."""
    from tests.count.chat_fixtures import QWEN25, family_tokenizer

    directory = tmp_path_factory.mktemp("qwen") / "model"
    family_tokenizer("qwen", QWEN25).save_pretrained(str(directory))
    return directory


def _agent_messages(index: int, steps: int, lines: int) -> list[dict]:
    messages = [
        {"role": "system", "content": "You are an airline agent. Follow the policy."},
        {"role": "user", "content": f"Task {index}: change reservation EHGLP{index} for mia_li_3668."},
    ]
    for step in range(steps):
        call_id = f"call_{index}_{step}"
        arguments = json.dumps({"reservation_id": f"EHGLP{index}", "step": step})
        call = {"id": call_id, "type": "function", "function": {"name": f"tool_{step % 14}", "arguments": arguments}}
        messages.append({"role": "assistant", "content": None if step % 2 else f"Step {step}.", "tool_calls": [call]})
        body = "\n".join(f"flight HAT{step}{line:03d}: available, 3 seats, $1{line:02d}" for line in range(lines))
        messages.append({"role": "tool", "tool_call_id": call_id, "name": f"tool_{step % 14}", "content": body})
    messages.append({"role": "assistant", "content": f"Reservation EHGLP{index} is changed."})
    return messages


def _trainer_total(tokenizer, row: dict, tools_key: str = "tools", **kwargs) -> int:
    from tests.count.chat_fixtures import trainer_count

    if "messages" in row:  # a call's JSON-text arguments decoded, as axolotl and the recipes give them
        messages = [_decoded_arguments(message) for message in row["messages"]]
    else:
        roles = {"human": "user", "gpt": "assistant"}
        messages = [{"role": roles.get(t["from"], t["from"]), "content": t["value"]} for t in row["conversations"]]
    tools = row.get(tools_key)
    return trainer_count(tokenizer, messages, json.loads(tools) if isinstance(tools, str) else tools, **kwargs)


def _decoded_arguments(message: dict) -> dict:
    calls = message.get("tool_calls")
    if not calls:
        return {**message, "content": ""} if message.get("content", "") is None and "tool_calls" in message else message
    decoded = []
    for call in calls:
        arguments = call["function"]["arguments"]
        if isinstance(arguments, str) and isinstance(json.loads(arguments), dict):
            call = {**call, "function": {**call["function"], "arguments": json.loads(arguments)}}
        decoded.append(call)
    content = "" if message.get("content") is None else message["content"]
    return {**message, "tool_calls": decoded, "content": content}


def test_chat_template_counts_are_the_trainers_on_openai_rows_with_tools(tmp_path: Path, qwen_model: Path) -> None:
    """The issue's case: 14 tool schemas cost a row ~1,000 tokens the old count left out, so a row
    reported under the target was over it for a trainer that renders tools. Every metrics line now
    equals `apply_chat_template(messages, tools=tools)` on the row read and on the row written."""
    from tests.count.chat_fixtures import weather_tools
    from trajectory_compressor.count import load_tokenizer

    tokenizer = load_tokenizer(str(qwen_model))
    tools = weather_tools(14)
    rows = [
        {"id": f"r{index}", "messages": _agent_messages(index, steps, lines), "tools": tools if index % 3 else None}
        for index, (steps, lines) in enumerate([(8, 12), (4, 12), (14, 10), (6, 2), (20, 6), (3, 40)])
    ]
    rows[4]["tools"] = json.dumps(tools)  # a JSON string, as Parquet datasets often hold them
    under_without_tools = {"id": "premise", "messages": _agent_messages(9, 10, 12), "tools": tools}
    without = _trainer_total(tokenizer, {**under_without_tools, "tools": None})
    assert without <= 3000 < _trainer_total(tokenizer, under_without_tools)
    rows.append(under_without_tools)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "o.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--tokenizer", str(qwen_model), "--count-mode", "chat-template",
        *CHAT_SMALL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written, metrics = read_jsonl(out), read_jsonl(tmp_path / "o.metrics.jsonl")
    assert len(written) == len(metrics) == len(rows)
    for row, line, m in zip(rows, written, metrics, strict=True):
        assert m["original_tokens"] == _trainer_total(tokenizer, row), m
        assert m["compressed_tokens"] == _trainer_total(tokenizer, line), m
        if m["was_compressed"] and not m["still_over_limit"]:
            assert m["compressed_tokens"] <= 3000
    assert metrics[-1]["skipped_under_target"] is False and metrics[-1]["was_compressed"], metrics[-1]
    assert sum(m["was_compressed"] for m in metrics) >= 3


# A template that renders tools and reads a kwarg, for the settings' own test.
TOOLS_AND_THINKING = (
    "{%- if tools %}<|im_start|>system\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|im_end|>\n{% endif %}"
    "{%- for m in messages %}{%- set content = m.content %}"
    "{%- if m.role == 'assistant' and enable_thinking is defined and not enable_thinking %}"
    "{%- set content = content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}"
    "{{- '<|im_start|>' + m.role + '\\n' + content + '<|im_end|>\\n' }}{%- endfor %}"
)


@pytest.mark.parametrize("given_by", ["flags", "yaml"])
def test_tools_key_and_template_kwargs_reach_the_template(tmp_path: Path, given_by: str) -> None:
    from tests.count.chat_fixtures import sharegpt_record, weather_tools
    from trajectory_compressor.count import load_tokenizer

    template = tmp_path / "t.jinja"
    template.write_text(TOOLS_AND_THINKING)
    tools = json.dumps(weather_tools(5))
    rows = [{**sharegpt_record(steps), "id": f"r{steps}"} for steps in (2, 30, 60)]
    for row in rows:
        row["functions"] = tools
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    if given_by == "flags":
        settings = ["--tools-key", "functions", "--chat-template-kwargs", '{"enable_thinking": false}']
    else:
        config = tmp_path / "c.yaml"
        config.write_text("tokenizer:\n  tools_key: functions\n  chat_template_kwargs: {enable_thinking: false}\n")
        settings = ["--config", str(config)]
    out = tmp_path / "o.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--count-mode", "chat-template", "--chat-template", str(template),
        *settings, *CHAT_SMALL,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    tokenizer = load_tokenizer()
    tokenizer.chat_template = TOOLS_AND_THINKING
    metrics, written = read_jsonl(tmp_path / "o.metrics.jsonl"), read_jsonl(out)
    assert any(m["was_compressed"] for m in metrics)
    for row, line, m in zip(rows, written, metrics, strict=True):
        assert m["original_tokens"] == _trainer_total(tokenizer, row, "functions", enable_thinking=False)
        assert m["compressed_tokens"] == _trainer_total(tokenizer, line, "functions", enable_thinking=False)
    report = json.loads((tmp_path / "o.report.json").read_text())
    assert report["settings"]["tools_key"] == "functions"
    assert report["settings"]["chat_template_kwargs"] == {"enable_thinking": False}


def test_a_shipped_template_by_name_counts_with_the_bundled_tokenizer(tmp_path: Path) -> None:
    from trajectory_compressor.count import load_tokenizer
    from trajectory_compressor.count.named_templates import read_chat_template

    source = write_jsonl(tmp_path / "in.jsonl", _hermes_rows(4)[:4])
    out = tmp_path / "o.jsonl"
    result = run_cli("compress", str(source), "-o", str(out), "--count-mode", "chat-template",
                     "--chat-template", "deepseek-v3.1", *CHAT_SMALL)  # fmt: skip
    assert result.returncode == 0, result.stderr
    tokenizer = load_tokenizer()
    tokenizer.chat_template = read_chat_template("deepseek-v3.1")
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    for row, line, m in zip(read_jsonl(source), read_jsonl(out), metrics, strict=True):
        assert (m["original_tokens"], m["compressed_tokens"]) == (
            _trainer_total(tokenizer, row),
            _trainer_total(tokenizer, line),
        )
    assert any(m["was_compressed"] for m in metrics)


# Roles must alternate (Llama 2, Mistral, Gemma): a summary turn (user) beside a kept user turn
# would make a row the template, and so the trainer, refuses. The planner keeps them apart.
# (Llama 2's own rule, user first; and the rule alone, for runs opening on the assistant's greeting.)
ALTERNATING = (
    "{%- if messages[0]['role'] == 'system' %}{%- set loop_messages = messages[1:] %}"
    "{%- else %}{%- set loop_messages = messages %}{%- endif %}"
    "{%- for message in loop_messages %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{{- '[' + message['role'] + '] ' + message['content'] + '\\n' }}{%- endfor %}"
)
NO_REPEATS = (
    "{%- for message in messages %}"
    "{%- if loop.index0 and message['role'] == messages[loop.index0 - 1]['role'] %}"
    "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
    "{{- '[' + message['role'] + '] ' + message['content'] + '\\n' }}{%- endfor %}"
)
# A rule only a rewrite can break (a stand-in for any such rule of a real template).
NO_SUMMARIES = (
    "{%- for message in messages %}"
    "{%- if '[CONTEXT SUMMARY]' in message['content'] %}{{ raise_exception('no summaries here') }}{% endif %}"
    "{{- '[' + message['role'] + '] ' + message['content'] + '\\n' }}{%- endfor %}"
)


def _chat_rows(greeting: bool) -> list[dict[str, Any]]:
    """Six rows of alternating questions and answers (odd rows' answers longer, so the cut moves),
    opening with the assistant's greeting (tau-bench's shape) when `greeting`."""
    rows = []
    for index in range(6):
        turns = [{"from": "system", "value": "You are helpful."}]
        if greeting:
            turns.append({"from": "gpt", "value": "Hi! How can I help you today?"})
        for k in range(18 + index):
            turns.append({"from": "human", "value": f"Question {k}: " + "what about the weather in Paris? " * 8})
            answer = "it is sunny with a light breeze. " * (10 + 4 * (index % 2))
            turns.append({"from": "gpt", "value": f"Answer {k}: " + answer})
        rows.append({"id": f"r{index}", "conversations": turns})
    return rows


def _compress_with_template(tmp_path: Path, rows: list[dict[str, Any]], template: str, *extra: str) -> Path:
    path = tmp_path / "t.jinja"
    path.write_text(template)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "o.jsonl"
    result = run_cli(
        "compress", str(source), "-o", str(out), "--count-mode", "chat-template", "--chat-template", str(path),
        "--target-max-tokens", "1400", "--summary-target-tokens", "200", "--summarizer", "extractive", "-q", *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize(
    ("greeting", "last_n", "template"),
    [(False, 4, ALTERNATING), (False, 3, ALTERNATING), (True, 4, NO_REPEATS), (True, 3, NO_REPEATS)],
)
def test_rewrites_keep_the_roles_alternating(tmp_path: Path, greeting: bool, last_n: int, template: str) -> None:
    """The summary (a user turn) is never beside another user turn: after a head ending on the
    user's first request (a greeting first) its answer joins the head, and a tail opening on a user
    turn takes the turn before it; so a template that wants alternating roles takes every rewrite."""
    from trajectory_compressor.count import load_tokenizer

    rows = _chat_rows(greeting)
    out = _compress_with_template(tmp_path, rows, template, "--protect-last-n-turns", str(last_n))
    tokenizer = load_tokenizer()
    tokenizer.chat_template = template
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    assert all(m["was_compressed"] and not m.get("summary_failed") for m in metrics), [m["reason"] for m in metrics]
    for line, m in zip(read_jsonl(out), metrics, strict=True):
        assert m["compressed_tokens"] == _trainer_total(tokenizer, line), m
        roles = [turn["from"] for turn in line["conversations"]]
        assert all({a, b} != {"human"} for a, b in pairwise(roles)), roles


@pytest.mark.parametrize("over_limit", ["keep", "truncate"])
def test_a_rewrite_the_template_refuses_is_not_written(tmp_path: Path, over_limit: str) -> None:
    """A summary turn can break a rule the template enforces; that row is then a failed summary
    (written unchanged, flagged), not an internal error that stops the run."""
    from trajectory_compressor.count import load_tokenizer

    rows = _chat_rows(greeting=False)
    out = _compress_with_template(tmp_path, rows, NO_SUMMARIES, "--over-limit", over_limit)
    tokenizer = load_tokenizer()
    tokenizer.chat_template = NO_SUMMARIES
    metrics = read_jsonl(tmp_path / "o.metrics.jsonl")
    refused = [m for m in metrics if "the chat template refuses the rewritten row" in (m["reason"] or "")]
    assert len(refused) == len(rows), [m["reason"] for m in metrics]
    for row, line, m in zip(rows, read_jsonl(out), metrics, strict=True):
        assert m["compressed_tokens"] == _trainer_total(tokenizer, line), m  # every row written renders
        assert line == row and not m["was_compressed"] and m["summary_failed"]


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
    from tests.cli.test_prune import _parallel_cut_off
    from tests.run.test_pruning import cut_off

    # Pruning clears results no gpt turn answers: runs cut off after parallel calls (fitted by it),
    # runs with a long answered part before such results (pruned, then summarized), ordinary runs.
    rows = [cut_off(make_trajectory(i, steps=3 + 2 * i, output_lines=30)) for i in range(4)]
    for i in (4, 5):
        long_run = make_trajectory(i, steps=12, output_lines=30)["conversations"][:-1]
        rows.append(
            {"id": f"long-{i}", "conversations": long_run + cut_off(make_trajectory(i, steps=6))["conversations"][5:]}
        )
    rows += [make_trajectory(6, steps=9, output_lines=30)]
    rows += [_parallel_cut_off(openai_trajectory(7, steps=5)), openai_trajectory(8, steps=12)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "o.jsonl"
    counting = ["--count-mode", "chat-template", "--chat-template", str(template)] if mode == "chat-template" else []
    result = run_cli(
        "compress", str(source), "-o", str(out), "--prune-tool-outputs", "--target-max-tokens", "2500",
        "--summary-target-tokens", "200", "-q", "--summarizer", "extractive", "--protect-last-n-turns", "0",
        *counting,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    recounter = build_counter(count_mode=mode, chat_template=str(template) if counting else None)
    written, metrics = read_jsonl(out), read_jsonl(tmp_path / "o.metrics.jsonl")
    kinds = set()
    for row, m in zip(written, metrics, strict=True):
        fmt = detect_format(row)
        if mode == "chat-template":  # the trainer's count: the record's own messages, as written
            recount = sum(recounter.count_chats([recounter.chat_of(row, fmt)])[0])
        else:
            recount = sum(recounter.count_conversations([to_turns(row, fmt)])[0])
        assert recount == m["compressed_tokens"], m
        kinds.add(("pruned" if m.get("pruned_turns") else "") + ("+summary" if m["was_compressed"] else ""))
        if not m["still_over_limit"]:
            assert m["compressed_tokens"] <= 2500
    assert {"pruned", "pruned+summary", ""} <= kinds
