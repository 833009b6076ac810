"""`ChatTokens` on records whose first answer comes before any user message, through TRL's own code.

Llama 3.1's template, given tools, writes the first message after the system prompt as the first
user turn, the tools' instructions before it: an assistant message there is no assistant turn,
and its loss once covered the system prompt and the tools' instructions. Every template the
trainers' tests use is checked: the loss is exactly on the marked turns the template renders as
assistant turns (`tests.trainers.ownership`, found apart from the product's code), and a marked
turn it does not is named in `TrainingRow.unrendered` and carries no loss.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.trainers.chat_tokenizers import TEMPLATE_NAMES
from tests.trainers.ownership import assert_loss_covers, token_owners
from trajectory_compressor.training import ChatTokens, is_trained, messages_of, tools_of

pytestmark = pytest.mark.trainers

SYSTEM = {"role": "system", "content": "You are an agent."}
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {}}}}]
CALL = {"id": "c0", "type": "function", "function": {"name": "read", "arguments": {"path": "/f0"}}}
ANSWER = {"role": "assistant", "content": "I will read it.", "train": True}
CALLING = {"role": "assistant", "content": "", "tool_calls": [CALL], "train": True}
LAST = [{"role": "user", "content": "Go on."}, {"role": "assistant", "content": "Done.", "train": True}]
RESULT_THEN_LAST = [
    {"role": "tool", "tool_call_id": "c0", "content": "row 0: value=0"},
    {"role": "assistant", "content": "Done.", "train": True},
]

# (name, messages, whether tools are given, the marked messages Llama 3.1's template does not render as assistant turns)
RECORDS: list[tuple[str, list[dict[str, Any]], bool, tuple[int, ...]]] = [
    ("system, answer", [SYSTEM, ANSWER, *LAST], True, (1,)),
    ("system, call", [SYSTEM, CALLING, *RESULT_THEN_LAST], True, (1,)),
    ("answer first", [ANSWER, *LAST], True, (0,)),
    ("call first", [CALLING, *RESULT_THEN_LAST], True, (0,)),
    ("system, answer, no tools", [SYSTEM, ANSWER, *LAST], False, ()),
    ("answer first, no tools", [ANSWER, *LAST], False, ()),
]


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
def test_a_first_answer_before_any_user_message_trains_only_as_an_assistant_turn(
    template: str, chat_tokenizer: Callable[..., Any], trl_sft: Callable[..., Any], tmp_path: Path
) -> None:
    import datasets

    tokenizer = chat_tokenizer(template)
    records = [
        {"messages": messages, "tools": json.dumps(TOOLS) if tools else None} for _, messages, tools, _ in RECORDS
    ]
    chat_tokens = ChatTokens(tokenizer)
    rows = [chat_tokens.row(record) for record in records]
    prepared = datasets.Dataset.from_list([row.as_columns() for row in rows])
    sft = trl_sft(prepared, tokenizer, tmp_path / "trl", max_length=4096)
    assert len(sft.rows) == len(records)
    for (name, _, _, folded), record, row, prepared_row in zip(RECORDS, records, rows, sft.rows, strict=True):
        unrendered = folded if template == "llama3.1-style" else ()
        assert row.unrendered == unrendered, name
        messages = messages_of(record)
        plain = [{k: v for k, v in m.items() if k != "train"} for m in messages]
        ownership = token_owners(plain, tools_of(record), tokenizer, prepared_row.input_ids)
        trained = [i for i, message in enumerate(messages) if is_trained(message) and i not in unrendered]
        assert_loss_covers(ownership, prepared_row.labels, trained, trailer="trained")
        # Nothing of the system prompt or the tools' instructions is learned, whatever the template.
        labels = zip(row.input_ids, prepared_row.labels, strict=True)
        learned = tokenizer.decode([token for token, label in labels if label != -100])
        assert "You are an agent" not in learned and '"properties"' not in learned, (name, learned)
        assert learned.count("Done.") == 1, (name, learned)


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
def test_a_first_answer_trains_from_its_own_header_without_thinking_or_a_later_system_prompt(
    template: str, chat_tokenizer: Callable[..., Any]
) -> None:
    """Qwen3 without thinking opens an answer it is asked for with an empty think block, but
    writes a record's first answer with none: its header was looked for whole and not found, and
    the loss began inside the tools' system turn, at the `<|im_start|>` it shares with the header.
    (`enable_thinking=False` changes nothing for the other templates.)"""
    tokenizer = chat_tokenizer(template)
    chat_tokens = ChatTokens(tokenizer, enable_thinking=False)
    # DeepSeek V3.1 writes every system message first, one after the first answer too, which
    # opens with no header: its loss began at the record's start, on that system prompt.
    system_later = ("answer first, system later", [ANSWER, LAST[0], SYSTEM, LAST[1]], False, ())
    for name, messages, tools, folded in [*RECORDS, system_later]:
        row = chat_tokens.row({"messages": messages, "tools": json.dumps(TOOLS) if tools else None})
        assert row.unrendered == (folded if template == "llama3.1-style" else ()), name
        learned = tokenizer.decode(
            [token for token, mask in zip(row.input_ids, row.assistant_masks, strict=True) if mask]
        )
        if name != system_later[0]:  # the harness's ownership cannot follow a system message written first
            record_messages = messages_of({"messages": messages})
            plain = [{k: v for k, v in m.items() if k != "train"} for m in record_messages]
            tools_given = TOOLS if tools else None
            ownership = token_owners(plain, tools_given, tokenizer, row.input_ids, enable_thinking=False)
            trained = [i for i, m in enumerate(record_messages) if is_trained(m) and i not in row.unrendered]
            labels = [token if mask else -100 for token, mask in zip(row.input_ids, row.assistant_masks, strict=True)]
            assert_loss_covers(ownership, labels, trained, trailer="trained")
        assert "You are an agent" not in learned and '"properties"' not in learned, (name, learned)
        assert "system" not in learned and learned.count("Done.") == 1, (name, learned)
        # The answer is learned (but for a first token DeepSeek V3.1 glues to the system prompt's end).
        said = str(messages[1 if name.startswith("system") else 0]["content"]).partition(" ")[2]
        assert row.unrendered or said in learned, (name, learned)
