"""A record as every training recipe sees it: Hugging Face chat messages with their marks, and tools.

Any record this tool writes goes in (an ``hf-chat`` row as `datasets` loads it, a ``messages`` or
ShareGPT row, a window of `--windows`), and the same view comes out, so every recipe trains and
counts the same thing: the messages of `read.convert_format.to_hf_chat` (each call's arguments an
object, ``train`` on assistant messages only) and the tool schemas decoded from JSON text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trajectory_compressor.read.convert_format import HF_CHAT, convert_record
from trajectory_compressor.read.formats import TRAIN_KEY, detect_format, record_tools


def messages_of(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The record's conversation as Hugging Face chat messages, each assistant message marked.

    `record` may be any mapping (a `datasets` row as `Dataset.map` passes it). A message whose
    value `datasets` filled with null for a key it does not have (a column typed by older
    `datasets` as one struct for every message) is read without that key, as transformers does.
    """
    record = dict(record)
    fmt = detect_format(record)
    if fmt.name == "openai":
        record = {**record, fmt.key: [_without_nulls(message) for message in record[fmt.key]]}
    return list(convert_record(record, fmt, HF_CHAT)["messages"])


def tools_of(record: Mapping[str, Any]) -> list[Any] | None:
    """The record's tool schemas (``tools``, decoded from JSON text), or None when it has none.

    Raises `read.formats.RecordError` for a value that is no list of schemas."""
    return record_tools(dict(record)) or None


def is_trained(message: Mapping[str, Any]) -> bool:
    """Whether a message is a training target: an assistant message not marked otherwise (as
    axolotl reads its per-message field: a mark, when there is one, decides)."""
    return message.get("role") == "assistant" and bool(message.get(TRAIN_KEY, True))


def loss_mask(record: Mapping[str, Any]) -> list[bool]:
    """One flag per message of `messages_of(record)`: whether its tokens are a training target."""
    return [is_trained(message) for message in messages_of(record)]


def unmarked(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as the chat template is given them: the marks taken off."""
    return [{key: value for key, value in message.items() if key != TRAIN_KEY} for message in messages]


def _without_nulls(message: Any) -> Any:
    if not isinstance(message, Mapping):
        return message
    return {key: value for key, value in message.items() if value is not None or key == "content"}
