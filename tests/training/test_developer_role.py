"""An OpenAI `developer` message (the system prompt of OpenAI's newer models) is trained on as the system prompt.

The reader reads `developer` as `system` (`read/formats.py`), and summarizes and counts it so;
`hf-chat` wrote it as it came. The templates of Qwen 2.5, Qwen3 and DeepSeek V3.1 render no role
but system, user, assistant and tool: they dropped the message, so the trainers learned every
answer without the instructions it followed (and Qwen 2.5's template wrote its default system
prompt in their place), and the metrics counted that. `hf-chat` writes it as a `system` message,
and every view of a record (`training.view`, the chat-template count) reads it so.
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

PROMPT = "Answer in French, and never run rm."
RECORD = {
    "messages": [
        {"role": "developer", "content": PROMPT},
        {"role": "user", "content": "What is in /tmp?"},
        {"role": "assistant", "content": "Deux fichiers."},
    ]
}


@pytest.mark.parametrize("template", TEMPLATE_NAMES)
def test_a_developer_message_is_written_as_system_and_every_template_renders_it(
    template: str, chat_tokenizer: Callable[..., Any], tmp_path: Path
) -> None:
    tokenizer = chat_tokenizer(template)
    chat_tokens = ChatTokens(tokenizer)
    for write_format in ("hf-chat", "messages"):
        record, metrics = written_with_chat_count(RECORD, tokenizer, tmp_path, write_format)
        # OpenAI's shape keeps OpenAI's role; the trainers' shape has the one the templates know.
        assert record["messages"][0]["role"] == ("system" if write_format == "hf-chat" else "developer")
        row = chat_tokens.row(record)
        assert PROMPT in tokenizer.decode(row.input_ids), write_format
        assert len(row.input_ids) == metrics["compressed_tokens"], write_format
