"""Conversation formats: ShareGPT and OpenAI messages, in and back out.

Every stage after reading works on `Turn`s in the ShareGPT vocabulary (system / human / gpt /
tool). This module is the only place that knows the two on-disk shapes:

- ShareGPT: ``{"conversations": [{"from": "human", "value": "..."}, ...]}``, roles
  system / human / gpt / tool;
- OpenAI: ``{"messages": [{"role": "user", "content": "..."}, ...]}``, roles system / user /
  assistant / tool (``developer`` is read as system). ``content`` is a string, a list of text
  parts ``[{"type": "text", "text": ...}]``, or null on an assistant message that carries
  ``tool_calls``. Tool calls and tool results are rendered into the turn's text the way
  Hermes-style training data spells them, so that token counts and summaries see them:
  ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>`` and
  ``<tool_response>\\n{"tool_call_id": ..., "name": ..., "content": ...}\\n</tool_response>``.
- A list of text parts is read as one text, the parts' texts joined with newlines, as vLLM's
  OpenAI server joins them for a template that takes a string (the templates of Qwen 2.5,
  Llama 3.1 and DeepSeek V3.1 do; the multimodal templates that loop over parts write them back
  to back, which runs the last word of a part into the first of the next; OpenAI documents no
  joining): that text is what is counted, summarized, converted and handed to a trainer
  (`text_content`). A part of another type (an image, audio, a file) rejects the record, naming
  the part's type: this tool reads text only.

Writing back (`from_turns`) keeps the record in the format it came in. Turns kept verbatim are
the original message objects themselves, so their extra keys (``tool_calls``, ``weight``,
``name``...) and key order survive and they serialize to the same bytes; only the summary turn
and the turn that receives the notice are built anew. A rebuilt conversation is described by a
list of three small items:

- `KeptTurn(index)`: original message ``index``, unchanged;
- `EditedTurn(index, value)`: original message ``index`` with its text replaced by ``value``
  (ShareGPT ``value``, OpenAI ``content``), every other key kept: the system turn plus notice;
- `NewTurn(turn)`: a message built from a `Turn`: the ``[CONTEXT SUMMARY]:`` turn.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from trajectory_compressor.types import ROLES, EditedTurn, KeptTurn, NewTurn, OutputTurn, Turn

FormatName = Literal["sharegpt", "openai"]
FORMAT_NAMES: tuple[str, ...] = ("sharegpt", "openai")
DEFAULT_KEYS: dict[str, str] = {"sharegpt": "conversations", "openai": "messages"}
TRAIN_KEY = "train"  # axolotl's per-message training field: the marks `--windows` and hf-chat write

# OpenAI role → canonical role, and back (for new messages and chat templates).
_OPENAI_TO_ROLE = {"system": "system", "developer": "system", "user": "human", "assistant": "gpt", "tool": "tool"}
_ROLE_TO_OPENAI = {"system": "system", "human": "user", "gpt": "assistant", "tool": "tool"}


class RecordError(ValueError):
    """A record is not a conversation this tool can read; the message says where (``turn 3: ...``)."""


@dataclass(frozen=True)
class ConversationFormat:
    """How a record holds its conversation: the format's name and the key of the turn list."""

    name: FormatName
    key: str


def detect_format(record: Any, conversation_key: str | None = None, fmt: str | None = None) -> ConversationFormat:
    """Which format `record` is in, and under which key.

    Explicit `fmt` / `conversation_key` win. Otherwise ``conversations`` then ``messages`` is
    looked for, and the first turn decides: ``from`` means ShareGPT, ``role`` means OpenAI (some
    datasets keep OpenAI messages under ``conversations``). Raises `RecordError` when the record
    is not an object or has no conversation list to look at.
    """
    if not isinstance(record, dict):
        raise RecordError(f"record is not an object (got {_type_name(record)})")
    if fmt is not None and fmt not in FORMAT_NAMES:
        raise ValueError(f"unknown conversation format {fmt!r} (expected one of {', '.join(FORMAT_NAMES)})")
    if conversation_key is not None:
        key = conversation_key
    elif fmt is not None and DEFAULT_KEYS[fmt] in record:
        key = DEFAULT_KEYS[fmt]
    else:
        key = next((k for k in ("conversations", "messages") if k in record), "")
        if not key:
            raise RecordError("missing conversation list: no 'conversations' (ShareGPT) or 'messages' (OpenAI) key")
    if key not in record:
        raise RecordError(f"missing conversation list {key!r}")
    if fmt is not None:
        return ConversationFormat(name=fmt, key=key)  # type: ignore[arg-type]  # a FormatName: checked on entry
    turns = record[key]
    first = next((t for t in turns if isinstance(t, dict)), None) if isinstance(turns, list) else None
    if first is not None and "from" in first:
        return ConversationFormat(name="sharegpt", key=key)
    if first is not None and "role" in first:
        return ConversationFormat(name="openai", key=key)
    return ConversationFormat(name="openai" if key == "messages" else "sharegpt", key=key)


def to_turns(record: Any, fmt: ConversationFormat) -> list[Turn]:
    """The record's conversation as canonical `Turn`s, one per message, in order.

    Raises `RecordError` with the turn index for anything the pipeline could not faithfully
    write back: a non-object turn, a missing field, an unknown role, a non-string text; and for
    a conversation with no turns, which is no conversation to train on (a record without the
    key is rejected the same way): chat templates and trainers index its first message.
    """
    messages = _conversation(record, fmt)
    if not messages:
        raise RecordError(f"empty conversation: {fmt.key!r} holds no turns")
    if fmt.name == "sharegpt":
        return [_sharegpt_turn(i, message) for i, message in enumerate(messages)]
    call_names: dict[str, str] = {}  # tool_call_id → function name, to name tool results
    return [_openai_turn(i, message, call_names) for i, message in enumerate(messages)]


def from_turns(record: dict[str, Any], fmt: ConversationFormat, items: Sequence[OutputTurn]) -> dict[str, Any]:
    """A copy of `record` whose conversation is rebuilt from `items`, in the record's own format.

    Every other key of the record is kept, in its place. The original record is not modified;
    kept turns are shared with it (they are not copied), which is what keeps them byte-identical.
    """
    messages = _conversation(record, fmt)
    rebuilt: list[Any] = []
    for item in items:
        if isinstance(item, KeptTurn):
            rebuilt.append(messages[_checked_index(item.index, messages)])
        elif isinstance(item, EditedTurn):
            original = messages[_checked_index(item.index, messages)]
            rebuilt.append(_edited(original, item, fmt))
        elif isinstance(item, NewTurn):
            rebuilt.append(_new_message(item.turn, fmt))
        else:
            raise TypeError(f"expected KeptTurn, EditedTurn or NewTurn, got {type(item).__name__}")
    out = dict(record)
    out[fmt.key] = rebuilt
    return out


def with_text(record: dict[str, Any], fmt: ConversationFormat, index: int, turn: Turn, text: str) -> EditedTurn:
    """Turn `index` (as read: `turn`) with its own text replaced by `text`, tool results included.

    ShareGPT: the new `value`. OpenAI: a tool message's `content` becomes `text` and the turn's
    value is its rendering again (the `<tool_response>` block the reader makes); any other
    text-only message's `content` becomes `text`. `text` is what the turn's text was made of
    (`text_of`), shortened or rewritten.
    """
    if fmt.name == "sharegpt" or turn.role != "tool":
        return EditedTurn(index, text)
    prefix, suffix = "<tool_response>\n", "\n</tool_response>"
    payload = json.loads(turn.value[len(prefix) : -len(suffix)])
    payload["content"] = text
    return EditedTurn(index, f"{prefix}{json.dumps(payload, ensure_ascii=False)}{suffix}", content=text)


def text_of(record: dict[str, Any], fmt: ConversationFormat, index: int, turn: Turn) -> str:
    """The text `with_text` replaces: a ShareGPT value, or an OpenAI tool message's content."""
    if fmt.name == "sharegpt" or turn.role != "tool":
        return turn.value
    content = record[fmt.key][index].get("content")
    return "" if content is None else _content_text(index, content)


def with_training_marks(record: dict[str, Any], fmt: ConversationFormat, marks: Sequence[bool | None]) -> None:
    """Set `"train": mark` on each assistant message of `record`'s conversation (in place), and take
    any `"train"` off every other message.

    `marks` has one entry per message, None for a message that is no assistant turn. The marks
    are the run's own (`--windows`): a mark an input put on a tool or user message would make
    axolotl train on tool output, in every window that shows it. An input's `"train": false` on
    an assistant turn is kept by the marks themselves (`plan.windows.window_layout`: never
    true). The messages are copied before they are changed: a rebuilt record shares its kept
    messages with the original. The key is axolotl's per-message training field; OpenAI messages
    get it on assistant messages.
    """
    messages = record[fmt.key]
    for position, mark in enumerate(marks):
        message = messages[position]
        if not isinstance(message, dict):
            continue
        if mark is not None:
            messages[position] = {**message, TRAIN_KEY: mark}
        elif TRAIN_KEY in message:
            messages[position] = {key: value for key, value in message.items() if key != TRAIN_KEY}


def marked_untrained(record: dict[str, Any], fmt: ConversationFormat) -> frozenset[int]:
    """The positions of the messages of `record`'s conversation marked `"train": false`.

    Only the boolean counts, as this tool writes it and every trainer's recipe reads it; any
    other value of the key (`"false"`, 0, null) is no mark of the input's (a `--windows` run
    replaces it with its own, and `hf-chat` writes `true`). With one message per turn, the
    positions are the turns' indexes.
    """
    messages = record[fmt.key]
    return frozenset(
        position
        for position, message in enumerate(messages)
        if isinstance(message, dict) and message.get(TRAIN_KEY) is False
    )


def chat_messages(turns: Sequence[Turn]) -> list[dict[str, str]]:
    """`{"role", "content"}` dicts for `tokenizer.apply_chat_template` (system/user/assistant/tool)."""
    return [{"role": _ROLE_TO_OPENAI[turn.role], "content": turn.value} for turn in turns]


def template_messages(record: Any, fmt: ConversationFormat) -> list[Any]:
    """The record's conversation as a trainer hands it to `tokenizer.apply_chat_template`.

    OpenAI: the message objects themselves, as written (``tool_calls``, tool messages with
    ``tool_call_id`` / ``name``), not this module's text rendering of them, but for a content
    given as a list of text parts, which is the one text the reader reads (`text_content`: the
    templates of Qwen 2.5, Llama 3.1 and DeepSeek V3.1 stop on a list). ShareGPT: ``from`` /
    ``value`` as ``role`` / ``content`` (human → user, gpt → assistant). For a rewritten row,
    pass the record `from_turns` returns: what is written is what is counted.
    """
    messages = _conversation(record, fmt)
    if fmt.name == "openai":
        return [text_content(message) for message in messages]
    return [
        {"role": _openai_role(message.get("from")), "content": message.get("value")}
        if isinstance(message, dict)
        else message
        for message in messages
    ]


def text_content(message: Any) -> Any:
    """An OpenAI message whose ``content`` is a list of text parts, with that content as the one
    string the reader reads (the texts joined with newlines); any other message as it is (a list
    holding a part that is not text is the reader's to refuse, and left to it)."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return message
    try:
        text = _content_text(0, content)
    except RecordError:
        return message
    return {**message, "content": text}


def _openai_role(sharegpt_role: Any) -> Any:
    """A ShareGPT role as OpenAI names it; any other value as written, for the template to judge."""
    return _ROLE_TO_OPENAI.get(sharegpt_role, sharegpt_role)


def record_tools(record: Any, key: str = "tools") -> list[Any] | None:
    """The record's tool schemas for the chat template: a list of objects, or a JSON string of one.

    None when the key is absent, null or an empty string. Raises `RecordError` for anything
    `apply_chat_template` would refuse (text that is not JSON, a value that is not a list of
    objects), naming the key.
    """
    value = record.get(key) if isinstance(record, dict) else None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise RecordError(f"{key!r} is not valid JSON: {exc}") from None
    if value is None:
        return None
    if not isinstance(value, list):
        raise RecordError(f"{key!r} is not a list of tool schemas (got {_type_name(value)})")
    for index, tool in enumerate(value):
        if not isinstance(tool, dict):
            raise RecordError(f"{key!r}[{index}] is not an object (got {_type_name(tool)})")
    return value


# --- reading -----------------------------------------------------------------------------------


def _conversation(record: Any, fmt: ConversationFormat) -> list[Any]:
    if not isinstance(record, dict):
        raise RecordError(f"record is not an object (got {_type_name(record)})")
    if fmt.key not in record:
        raise RecordError(f"missing conversation list {fmt.key!r}")
    messages = record[fmt.key]
    if not isinstance(messages, list):
        raise RecordError(f"{fmt.key!r} is not a list (got {_type_name(messages)})")
    return messages


def _sharegpt_turn(i: int, message: Any) -> Turn:
    if type(message) is dict:  # a valid turn, the usual case, costs two lookups (one per turn read)
        role, value = message.get("from"), message.get("value")
        if type(role) is str and role in ROLES and type(value) is str:
            return Turn(role, value)
    if not isinstance(message, dict):
        raise RecordError(f"turn {i}: not an object (got {_type_name(message)})")
    for field in ("from", "value"):
        if field not in message:
            raise RecordError(f"turn {i}: missing {field!r}")
    role, value = message["from"], message["value"]
    if not isinstance(role, str) or role not in ROLES:  # a list or an object is no role either
        raise RecordError(f"turn {i}: unknown role {role!r} (expected system, human, gpt or tool)")
    if not isinstance(value, str):
        raise RecordError(f"turn {i}: 'value' is not a string (got {_type_name(value)})")
    return Turn(role=role, value=value)


def _openai_turn(i: int, message: Any, call_names: dict[str, str]) -> Turn:
    if not isinstance(message, dict):
        raise RecordError(f"turn {i}: not an object (got {_type_name(message)})")
    if "role" not in message:
        raise RecordError(f"turn {i}: missing 'role'")
    role = _OPENAI_TO_ROLE.get(message["role"]) if isinstance(message["role"], str) else None
    if role is None:
        raise RecordError(f"turn {i}: unknown role {message['role']!r} (expected system, user, assistant or tool)")
    tool_calls = message.get("tool_calls") if role == "gpt" else None
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise RecordError(f"turn {i}: 'tool_calls' is not a list (got {_type_name(tool_calls)})")
    if "content" not in message and not tool_calls:
        raise RecordError(f"turn {i}: missing 'content'")
    content = message.get("content")
    if content is None and not tool_calls:
        raise RecordError(f"turn {i}: 'content' is null (allowed only on assistant messages with tool_calls)")
    text = "" if content is None else _content_text(i, content)
    if role == "gpt" and tool_calls:
        blocks = [_render_tool_call(i, j, call, call_names) for j, call in enumerate(tool_calls)]
        text = "\n".join([text, *blocks]) if text else "\n".join(blocks)
    elif role == "tool":
        text = _render_tool_response(i, message, text, call_names)
    return Turn(role=role, value=text)


def _content_text(i: int, content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RecordError(f"turn {i}: 'content' is not a string or a list of parts (got {_type_name(content)})")
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, dict):
            raise RecordError(f"turn {i}: content part {j} is not an object (got {_type_name(part)})")
        if part.get("type", "text") != "text":
            raise RecordError(f"turn {i}: content part {j} has unsupported type {part.get('type')!r}")
        if not isinstance(part.get("text"), str):
            raise RecordError(f"turn {i}: content part {j} has no string 'text'")
        texts.append(part["text"])
    return "\n".join(texts)


def _render_tool_call(i: int, j: int, call: Any, call_names: dict[str, str]) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise RecordError(f"turn {i}: tool_calls[{j}] has no function name")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        # Arguments travel as a JSON string; show them as the object they encode when they do.
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    if isinstance(call.get("id"), str):
        call_names[call["id"]] = function["name"]
    body = json.dumps({"name": function["name"], "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def _render_tool_response(i: int, message: dict[str, Any], text: str, call_names: dict[str, str]) -> str:
    payload: dict[str, Any] = {}
    call_id = message.get("tool_call_id")
    if call_id is not None:
        payload["tool_call_id"] = call_id
    name = message.get("name") or (call_names.get(call_id) if isinstance(call_id, str) else None)
    if name is not None:
        payload["name"] = name
    payload["content"] = text
    return f"<tool_response>\n{json.dumps(payload, ensure_ascii=False)}\n</tool_response>"


# --- writing -----------------------------------------------------------------------------------


def _checked_index(index: int, messages: list[Any]) -> int:
    if not 0 <= index < len(messages):
        raise IndexError(f"turn index {index} out of range for {len(messages)} turns")
    return index


def _edited(original: Any, item: EditedTurn, fmt: ConversationFormat) -> dict[str, Any]:
    if not isinstance(original, dict):
        raise RecordError(f"turn {item.index}: not an object (got {_type_name(original)})")
    edited = dict(original)
    if fmt.name == "sharegpt":
        edited["value"] = item.value
        return edited
    if item.content is not None and original.get("role") == "tool":
        edited["content"] = item.content
        return edited
    if original.get("tool_calls") or original.get("role") == "tool":
        raise ValueError(f"turn {item.index}: cannot edit the text of a tool call or tool result message")
    edited["content"] = item.value
    return edited


def _new_message(turn: Turn, fmt: ConversationFormat) -> dict[str, Any]:
    if turn.role not in ROLES:
        raise ValueError(f"unknown role {turn.role!r} for a new turn")
    if fmt.name == "sharegpt":
        return {"from": turn.role, "value": turn.value}
    return {"role": _ROLE_TO_OPENAI[turn.role], "content": turn.value}


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(value), type(value).__name__)
