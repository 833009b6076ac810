"""From `--windows` records to what each trainer reads: the `train` marks as its loss mask.

A window record marks every assistant turn `"train": true` (new in this window: a training
target) or `false` (context the agent had). Trainers take that mask in different shapes:

- axolotl reads the per-message field itself (`message_field_training: train`): no conversion.
- TRL trains the `completion` of a prompt/completion example: `prompt_completion` cuts a window
  before its first trained turn (the new turns of a window are its last turns).
- veRL's multi-turn SFT and custom loops want a per-message mask: `loss_mask`.
- LLaMA-Factory trains the last assistant turn with `mask_history: true`: `last_turn_samples`
  gives one sample per trained turn, the conversation up to it.

Each takes a record as written (ShareGPT `conversations` or OpenAI `messages`) and works on its
OpenAI messages (a ShareGPT record is converted as `--write-format messages` converts it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trajectory_compressor.read.convert_format import convert_record
from trajectory_compressor.read.formats import detect_format

TRAIN_KEY = "train"


def messages_of(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The record's conversation as OpenAI messages (with their `train` marks).

    `record` may be any mapping (a `datasets` row as `Dataset.map` passes it)."""
    record = dict(record)
    fmt = detect_format(record)
    if fmt.name == "openai":
        return list(record[fmt.key])
    return list(convert_record(record, fmt, "messages")["messages"])


def loss_mask(record: Mapping[str, Any]) -> list[bool]:
    """One flag per message: whether its tokens are a training target (a marked assistant turn)."""
    return [message.get("role") == "assistant" and message.get(TRAIN_KEY) is True for message in messages_of(record)]


def prompt_completion(record: Mapping[str, Any]) -> dict[str, Any]:
    """TRL's conversational prompt/completion example of a window: the prompt is everything before
    its first trained turn, the completion the rest (the marks themselves are dropped).

    The completion also holds the tool results between the new assistant turns, which TRL then
    trains on too; axolotl's per-message field is exact. A window with no trained turn (a row
    without assistant turns) gives an empty completion: filter those out.
    """
    messages = [{k: v for k, v in m.items() if k != TRAIN_KEY} for m in messages_of(record)]
    mask = loss_mask(record)
    first = mask.index(True) if True in mask else len(messages)
    example: dict[str, Any] = {"prompt": messages[:first], "completion": messages[first:]}
    if "tools" in record:
        example["tools"] = record["tools"]
    return example


def last_turn_samples(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One sample per trained assistant turn: the conversation up to and including it, for a
    trainer that trains the last turn only (LLaMA-Factory's `mask_history: true`)."""
    messages = [{k: v for k, v in m.items() if k != TRAIN_KEY} for m in messages_of(record)]
    samples = []
    for position, trained in enumerate(loss_mask(record)):
        if trained:
            sample: dict[str, Any] = {"messages": messages[: position + 1]}
            if "tools" in record:
                sample["tools"] = record["tools"]
            samples.append(sample)
    return samples
