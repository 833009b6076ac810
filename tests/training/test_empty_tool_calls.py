"""An assistant message with `"tool_calls": []` (no calls, as some OpenAI SDK dumps write it) trains as a plain answer.

The reader reads an empty list as no calls; `hf-chat` wrote the key as it came. Meta's Llama 3.1
template (and the reconstruction the harness uses) takes any message holding a `tool_calls` key
for a call turn and refuses one without exactly one call ("This model only supports single
tool-calls at once!"): with `--count-mode chat-template` the record was rejected, without it the
trainer stopped on it mid-dataset. `hf-chat` leaves the empty list out, and the chat-template count
and the training view read it so (a null `tool_calls` transformers drops itself).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.trainers.chat_tokenizers import TEMPLATE_NAMES
from tests.training.chat_count_run import written_with_chat_count
from trajectory_compressor.training import ChatTokens

pytestmark = pytest.mark.trainers

RECORD = {
    "messages": [
        {"role": "user", "content": "Which day is it?"},
        {"role": "assistant", "content": "It is Monday.", "tool_calls": []},
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": "Tuesday."},
    ]
}


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
def test_an_empty_tool_calls_list_is_written_as_no_calls_and_every_template_trains_the_answer(
    template: str, chat_tokenizer: Callable[..., Any], tmp_path: Path
) -> None:
    tokenizer = chat_tokenizer(template)
    chat_tokens = ChatTokens(tokenizer)
    for write_format in ("hf-chat", "messages"):
        record, metrics = written_with_chat_count(RECORD, tokenizer, tmp_path, write_format)
        if write_format == "hf-chat":
            assert "tool_calls" not in record["messages"][1]
        row = chat_tokens.row(record)
        learned = tokenizer.decode(
            [token for token, mask in zip(row.input_ids, row.assistant_masks, strict=True) if mask]
        )
        assert "It is Monday." in learned and "Tuesday." in learned, (write_format, learned)
        assert len(row.input_ids) == metrics["compressed_tokens"], write_format
