"""axolotl 0.19 drops every null of a row, a call's null arguments too: what docs/trainers.md warns of.

`ChatTokenizationStrategy.tokenize_prompt` (axolotl/prompt_strategies/chat_template.py:450) starts
with `remove_none_values(prompt)` (axolotl/utils/dict.py:41-51), which removes a None value at any
depth: meant for the nulls Arrow adds to a merged schema, it also takes `"path": null` out of a
call's arguments. axolotl then trains a call without that key, shorter than the one TRL, veRL and
the metrics (`--count-mode chat-template`) render. Nothing in an `hf-chat` row can keep it (the
arguments are objects, as the templates need), so the docs say so; this test fails the day axolotl
keeps them, and the warning can go.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from trajectory_compressor.training import ChatTokens

pytestmark = pytest.mark.trainers

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}]


def test_axolotl_trains_a_call_without_its_null_arguments_so_its_row_is_shorter(
    chat_tokenizer: Callable[..., Any], axolotl: Callable[..., Any]
) -> None:
    import datasets

    tokenizer = chat_tokenizer("qwen2.5")
    call = {"id": "c0", "type": "function", "function": {"name": "read", "arguments": {"path": "/a", "lines": None}}}
    record = {
        "messages": [
            {"role": "user", "content": "Read /a."},
            {"role": "assistant", "content": "", "tool_calls": [call], "train": True},
            {"role": "tool", "tool_call_id": "c0", "content": "A"},
            {"role": "assistant", "content": "Done.", "train": True},
        ],
        "tools": json.dumps(TOOLS),
        "metadata": "{}",
    }
    ours = ChatTokens(tokenizer).row(record)
    (row,) = axolotl(
        datasets.Dataset.from_list([record]),
        tokenizer,
        field_messages="messages",
        message_field_training="train",
    )
    assert '"lines": null' in tokenizer.decode(ours.input_ids)
    labelled = zip(row["input_ids"], row["labels"], strict=True)
    trained_by_axolotl = tokenizer.decode([token for token, label in labelled if label != -100])
    assert '"path": "/a"' in trained_by_axolotl and "lines" not in trained_by_axolotl
    assert len(row["input_ids"]) < len(ours.input_ids)
