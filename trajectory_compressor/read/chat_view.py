"""A record as a trainer hands it to `tokenizer.apply_chat_template`: its messages and its tools.

One view, shared by the two places that must agree on it: `--count-mode chat-template` counts
what this returns (so `compressed_tokens` is what the trainer counts), and the training recipes
(`trajectory_compressor.training`) render and mask what it returns (so they train what is counted).

- OpenAI messages (``messages`` and ``hf-chat`` outputs): the message objects as written, each
  call's ``arguments`` the object its JSON text encodes (as axolotl decodes them, and as the
  Hugging Face templates expect them: `read.convert_format.hf_chat_message`), the ``train``
  marks taken off (they tell a trainer what to learn, not what to show), and a ``developer``
  message a ``system`` one, as `hf-chat` writes it (`read.convert_format.as_template_role`).
- ShareGPT turns: ``role`` / ``content`` pairs (human → user, gpt → assistant), the markup
  inside the text as written: what TRL's `maybe_convert_to_chatml` and axolotl's ShareGPT
  mapping hand the template.
- ``tools``: the schemas, decoded from JSON text (TRL and axolotl decode a string ``tools``); an
  empty list is no tools, as the recipes render it (axolotl passes ``tools`` only ``if tools``,
  `training.view.tools_of` likewise), where Llama 3.1's template, given ``[]``, would write its
  tool preamble with no tool in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trajectory_compressor.read.convert_format import as_template_role, with_object_arguments, without_mark
from trajectory_compressor.read.formats import ConversationFormat, record_tools, template_messages


@dataclass(frozen=True)
class TrainerChat:
    """What the chat template renders: messages (role, content, tool_calls...) and tool schemas."""

    messages: Sequence[dict[str, Any]]
    tools: Sequence[Any] | None


def trainer_chat(record: Any, fmt: ConversationFormat, tools_key: str = "tools") -> TrainerChat:
    """The record's messages and tools as the trainer renders them (see the module docstring).

    Raises `read.formats.RecordError` for tools that are not a list of schemas."""
    messages = template_messages(record, fmt)
    if fmt.name == "openai":
        messages = [_as_rendered(message) for message in messages]
    return TrainerChat(messages, record_tools(record, tools_key) or None)


def _as_rendered(message: Any) -> Any:
    return without_mark(with_object_arguments(as_template_role(message))) if isinstance(message, dict) else message
