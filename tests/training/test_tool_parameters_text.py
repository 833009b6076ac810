"""A tool schema whose `parameters` are JSON text is written with them as an object: every trainer shows one schema.

axolotl 0.19 decodes a tool's `parameters` given as JSON text (`_get_tools`,
axolotl/prompt_strategies/chat_template.py:1204-1220); TRL, veRL and the metrics hand the schema to
the template as it is, and `tool | tojson` wrote the parameters as one quoted string, every quote
escaped: the model saw another system prompt under axolotl than under the others, and axolotl's
rows were shorter than the metrics' count. `hf-chat` writes those parameters as the object they
encode (as it does a call's arguments), so every recipe renders the same schema.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import read_jsonl, run_cli, write_jsonl
from trajectory_compressor.training import ChatTokens, tools_of

pytestmark = pytest.mark.trainers

PARAMETERS = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [
    {"type": "function", "function": {"name": "read", "description": "Read.", "parameters": json.dumps(PARAMETERS)}},
    {"name": "ls", "description": "List.", "parameters": json.dumps(PARAMETERS)},  # ToolBench's bare schema
]
MESSAGES = [{"role": "user", "content": "Read /a."}, {"role": "assistant", "content": "It says A."}]
RECORD = {"messages": MESSAGES, "tools": json.dumps(TOOLS)}
# Text that is no JSON: axolotl raises on it (a row that would stop the trainer), so it is refused.
BROKEN = {"messages": MESSAGES, "tools": [{"type": "function", "function": {"name": "note", "parameters": "{no"}}]}


def test_text_parameters_are_written_as_objects_and_axolotl_renders_what_chat_tokens_counts(
    chat_tokenizer: Callable[..., Any], axolotl: Callable[..., Any], tmp_path: Path
) -> None:
    import datasets

    tokenizer = chat_tokenizer("qwen2.5")
    tokenizer.save_pretrained(tmp_path / "tokenizer")
    out = tmp_path / "x.jsonl"
    source = write_jsonl(tmp_path / "in.jsonl", [RECORD, BROKEN])
    result = run_cli(
        "compress", str(source), "-o", str(out), "--write-format", "hf-chat",
        "--count-mode", "chat-template", "--tokenizer", str(tmp_path / "tokenizer"), "--summarizer", "extractive", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = read_jsonl(out)
    (rejected,) = read_jsonl(tmp_path / "x.rejects.jsonl")
    assert (
        rejected["line"] == 2
        and "'tools'[0] ('note'): 'parameters' are text that is not valid JSON" in rejected["error"]
    )
    metrics = read_jsonl(tmp_path / "x.metrics.jsonl")[0]
    tools = tools_of(record)
    assert tools is not None
    assert tools[0]["function"]["parameters"] == PARAMETERS and tools[1]["parameters"] == PARAMETERS
    ours = ChatTokens(tokenizer).row(record)
    assert len(ours.input_ids) == metrics["compressed_tokens"]
    (row,) = axolotl(
        datasets.Dataset.from_list([record]), tokenizer, field_messages="messages", message_field_training="train"
    )
    assert row["input_ids"] == ours.input_ids
