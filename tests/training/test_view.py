"""The training view and the recipes' shapes, without a trainer: the marks, the arguments, the
LLaMA-Factory samples' alternation, and the token mask of `ChatTokens` on a real template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.count.chat_fixtures import QWEN25, family_tokenizer
from trajectory_compressor.count.named_templates import read_chat_template
from trajectory_compressor.training import (
    ChatTokens,
    llamafactory_samples,
    loss_mask,
    messages_of,
    tools_of,
    write_llamafactory,
)
from trajectory_compressor.training.llamafactory import RESULTS_JOIN

CALL = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def compressed_row() -> dict[str, Any]:
    """A compressed ShareGPT row: head (ending on a result), the summary, the kept tail."""
    return {
        "id": "r",
        "tools": json.dumps(TOOLS),
        "conversations": [
            {"from": "system", "value": "You are an agent."},
            {"from": "human", "value": "List the files.", "train": True},
            {"from": "gpt", "value": f"I will look.\n{CALL}"},
            {"from": "tool", "value": "<tool_response>\na.py\n</tool_response>", "train": True},
            {"from": "human", "value": "[CONTEXT SUMMARY]: listed, read a.py."},
            {"from": "gpt", "value": CALL, "train": False},
            {"from": "tool", "value": "<tool_response>\nb.py\n</tool_response><tool_response>\nc.py\n</tool_response>"},
            {"from": "gpt", "value": "Done: a.py, b.py, c.py."},
        ],
    }


def test_the_view_gives_object_arguments_marks_on_assistants_only_and_decoded_tools() -> None:
    messages = messages_of(compressed_row())
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "user", "assistant", "tool", "tool", "assistant",
    ]  # fmt: skip
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == {"command": "ls"}
    assert [m.get("train") for m in messages] == [None, None, True, None, None, False, None, None, True]
    assert loss_mask(compressed_row()) == [False, False, True, False, False, False, False, False, True]
    assert tools_of(compressed_row()) == TOOLS


def test_an_hf_chat_row_as_older_datasets_pads_it_reads_back_without_the_nulls() -> None:
    row = {
        "messages": [
            {"role": "user", "content": "hi", "tool_calls": None, "train": None},
            {"role": "assistant", "content": "hello", "tool_calls": None, "train": True},
        ],
        "tools": None,
        "metadata": "{}",
    }
    assert messages_of(row) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "train": True},
    ]
    assert tools_of(row) is None


def test_llamafactory_samples_alternate_and_end_on_each_trained_turn() -> None:
    samples = llamafactory_samples(compressed_row())
    assert len(samples) == 2  # the two trained assistant turns, not the context one
    first, second = (sample["conversations"] for sample in samples)
    assert [t["from"] for t in first] == ["system", "human", "function_call"]
    assert (
        first[-1]["value"] == 'I will look.\n<tool_call>[{"name": "bash", "arguments": {"command": "ls"}}]</tool_call>'
    )
    # The summary joins the head's result; the call's two results are one observation.
    assert [t["from"] for t in second] == ["system", "human", "function_call", "observation", "function_call",
                                           "observation", "gpt"]  # fmt: skip
    assert second[3]["value"] == "a.py\n\n[CONTEXT SUMMARY]: listed, read a.py."
    assert second[5]["value"] == f"b.py{RESULTS_JOIN}c.py"
    assert all(json.loads(sample["tools"]) == TOOLS for sample in samples)


def test_write_llamafactory_makes_the_folder_it_writes_into(tmp_path: Path) -> None:
    """docs/trainers.md writes `data/agent.jsonl` from a folder with no `data/` in it."""
    path = tmp_path / "data" / "agent.jsonl"
    assert write_llamafactory([compressed_row()], path) == 2
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == llamafactory_samples(
        compressed_row()
    )


def test_chat_tokens_mask_exactly_the_marked_assistant_answers() -> None:
    tokenizer = family_tokenizer("qwen", QWEN25)
    row = ChatTokens(tokenizer).row(compressed_row())
    assert row.input_ids == tokenizer.apply_chat_template(
        [{k: v for k, v in m.items() if k != "train"} for m in messages_of(compressed_row())],
        tools=TOOLS,
        tokenize=True,
        return_dict=False,
    )
    trained = tokenizer.decode([t for t, m in zip(row.input_ids, row.assistant_masks, strict=True) if m])
    assert trained == (
        'I will look.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call><|im_end|>\n'
        "Done: a.py, b.py, c.py.<|im_end|>\n"
    )
    assert set(row.owners) == set(range(9)) and row.owners == sorted(row.owners)


def test_chat_tokens_train_the_first_token_of_a_deepseek_answer_that_follows_a_tool_result() -> None:
    """DeepSeek V3.1 writes no role header after a tool result: the answer's first token, whose
    text shares ``<｜`` (or ``<``) with the header written after a user turn, is trained too."""
    tokenizer = family_tokenizer("deepseek", read_chat_template("deepseek-v3.1"))
    call = {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}
    record = {
        "messages": [
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c0", "content": "a.py"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c0", "content": "a.py"},
            {"role": "assistant", "content": "<think>a.py again</think>Done: a.py."},
        ]
    }
    row = ChatTokens(tokenizer).row(record)
    trained = tokenizer.decode([t for t, m in zip(row.input_ids, row.assistant_masks, strict=True) if m])
    calls = '<｜tool▁call▁begin｜>bash<｜tool▁sep｜>{"command": "ls"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    answer = "<think>a.py again</think>Done: a.py.<｜end▁of▁sentence｜>"
    assert trained == f"<｜tool▁calls▁begin｜>{calls}<｜end▁of▁sentence｜>" * 2 + answer
    # A run opening on the assistant: the bos token before it is not its answer.
    opening = ChatTokens(tokenizer).row({"messages": record["messages"][1:]})
    assert opening.assistant_masks[0] == 0 and opening.input_ids[0] == tokenizer.bos_token_id
