"""`--write-format`: a record written as ShareGPT, as OpenAI messages, or in the trainers' shape.

Pure functions over one parsed, valid record (one `read.formats.to_turns` accepts); the record
is never modified, a new one is returned. Both directions are the inverse of what the reader
accepts, so a converted row reads back as the same conversation (tested both ways by round
trips in `tests/write/test_convert_round_trip.py`):

- ShareGPT → messages: roles system / user / assistant / tool. An assistant value's
  ``<tool_call>`` blocks become ``tool_calls`` entries ``{"id", "type": "function", "function":
  {"name", "arguments": <JSON text>}}`` and the text around them its ``content`` (null when
  empty and there are calls, as OpenAI does); a tool turn becomes one ``tool`` message per
  ``<tool_response>`` block, with ``tool_call_id``, ``name`` and ``content`` (`read.hermes` says
  what is markup and what stays text). Results are matched to the calls of the assistant turn
  before them, in order: by id, else by name when the result names a function (a result naming
  no call of that turn answers none), else the next unanswered call. A call takes the id of the
  result matched to it; without one, ids are ``call_<turn>_<n>`` (turn index in the
  conversation, call index in the turn), deterministic.
- messages → ShareGPT: ``conversations`` of ``from`` / ``value``, each value as the reader renders
  the message (tool calls and results as Hermes blocks, a list of text parts joined).
- either → ``hf-chat``, the trainers' shape (`to_hf_chat`): the OpenAI messages as Hugging Face
  chat templates take them (a call's ``arguments`` the object they encode, not its JSON text,
  so a template's ``arguments | tojson`` writes it once), ``train`` only on assistant messages,
  and a record of three keys whatever the sources held: ``messages``, ``tools`` (JSON text,
  ``"[]"`` for none) and ``metadata`` (every other key, as JSON text). See `to_hf_chat` for why.

Both ways, every other key of a turn (``train``, ``weight``, ``name`` of a non-tool message...)
is kept on it, after the keys the format defines (a tool turn split into several messages gives
its keys to each); the conversation goes under the format's usual key (``messages`` /
``conversations``) in the same place among the record's keys, unless another key of the record
already has that name (then it stays under its own); a list ``tools`` is written as its JSON text
(see `tools_text`); every other top-level key is kept as it is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trajectory_compressor.read.formats import DEFAULT_KEYS, TRAIN_KEY, ConversationFormat, text_content, to_turns
from trajectory_compressor.read.hermes import (
    AssistantParts,
    HermesCall,
    HermesResult,
    arguments_object,
    json_text,
    split_assistant,
    split_tool,
)
from trajectory_compressor.read.hf_chat_checks import hf_chat_refusal
from trajectory_compressor.read.hf_chat_tools import hf_chat_tools

HF_CHAT = "hf-chat"
WRITE_FORMATS: tuple[str, ...] = ("sharegpt", "messages", HF_CHAT)
_READ_FORMAT = {"sharegpt": "sharegpt", "messages": "openai", HF_CHAT: "openai"}  # → the reader's name
HF_CHAT_KEYS = ("messages", "tools", "metadata")
_OPENAI_ROLE = {"system": "system", "human": "user", "gpt": "assistant", "tool": "tool"}
_TOOL_KEYS = ("tools",)
_Part = AssistantParts | tuple[HermesResult, ...] | None  # a turn taken apart (None: not gpt or tool)


@dataclass(frozen=True)
class WriteShape:
    """How a run writes its rows: `--write-format` (None: each as read) and the key its records keep
    their tool schemas under (`--tools-key`), which ``hf-chat`` writes as ``tools``."""

    write_format: str | None = None
    tools_key: str = "tools"

    def converts(self, fmt: ConversationFormat) -> bool:
        """Whether a row read in `fmt` is written in another shape."""
        return needs_conversion(fmt, self.write_format)

    def convert(self, record: dict[str, Any], fmt: ConversationFormat) -> dict[str, Any]:
        """`record` (read in `fmt`) as it is written."""
        return convert_record(record, fmt, self.write_format, tools_key=self.tools_key)

    def check(self, record: dict[str, Any], fmt: ConversationFormat) -> None:
        """Raise `RecordError` for a record (one the reader accepts) this shape cannot write as its
        readers need it: with ``hf-chat``, tools a trainer cannot pass to the chat template, a
        call whose arguments are no object (`hf_chat_refusal`). Every other shape writes any
        record."""
        if self.write_format == HF_CHAT:
            hf_chat_refusal(record, fmt, tools_key=self.tools_key)

    @property
    def json_lists(self) -> tuple[str, ...]:
        """Columns a columnar output stores as lists of JSON values (`write.converters`): the
        messages of ``hf-chat``, whose keys differ from message to message."""
        return ("messages",) if self.write_format == HF_CHAT else ()


AS_READ = WriteShape()


def needs_conversion(fmt: ConversationFormat, write_format: str | None) -> bool:
    """Whether a row read in `fmt` is written in another shape (None: as read; ``hf-chat``: always)."""
    if write_format is None:
        return False
    if write_format not in _READ_FORMAT:
        raise ValueError(f"unknown write format {write_format!r} (expected one of {', '.join(WRITE_FORMATS)})")
    return write_format == HF_CHAT or _READ_FORMAT[write_format] != fmt.name


def written_format(fmt: ConversationFormat, write_format: str | None) -> ConversationFormat:
    """The format a row read in `fmt` is written in: its own, or the one `write_format` names."""
    if not needs_conversion(fmt, write_format):
        return fmt
    assert write_format is not None
    name = _READ_FORMAT[write_format]
    return ConversationFormat(name, DEFAULT_KEYS[name])  # type: ignore[arg-type]  # a FormatName


def convert_record(
    record: dict[str, Any], fmt: ConversationFormat, write_format: str | None, *, tools_key: str = "tools"
) -> dict[str, Any]:
    """`record` (read in `fmt`) written in `write_format`; the record itself when it is already in it.

    `tools_key` is the record's key of tool schemas (`--tools-key`): ``hf-chat`` writes them as ``tools``."""
    return convert_with_owners(record, fmt, write_format, tools_key=tools_key)[0]


def convert_with_owners(
    record: dict[str, Any], fmt: ConversationFormat, write_format: str | None, *, tools_key: str = "tools"
) -> tuple[dict[str, Any], list[int] | None]:
    """`convert_record`, and for each message of the written conversation the index of the turn of
    `record` it comes from (None: one message per turn, in order). A ShareGPT tool turn holding
    several results becomes several tool messages: a count per written message is folded back
    into a count per turn with it (`--count-mode chat-template` counts the record as written)."""
    if not needs_conversion(fmt, write_format):
        return record, None
    if write_format == HF_CHAT:
        return to_hf_chat(record, fmt, tools_key=tools_key)
    if fmt.name == "sharegpt":
        messages, owners = sharegpt_messages(record[fmt.key])
        return _with_conversation(record, fmt.key, DEFAULT_KEYS["openai"], messages), owners
    return _with_conversation(record, fmt.key, DEFAULT_KEYS["sharegpt"], messages_to_sharegpt(record, fmt)), None


def tools_text(tools: Any) -> Any:
    """A record's ``tools`` as a dataset column: a list becomes its JSON text, anything else stays.

    Tool schemas differ from row to row; Arrow gives a column of such lists one struct type
    holding every row's fields, so `datasets` before 4.7 hands each tool back with the other
    rows' parameters added as nulls (the chat template then shows them to the model), and JSON
    text loads the same in every version. TRL's SFTTrainer and axolotl ``json.loads`` a string
    ``tools``; LLaMA-Factory expects one.
    """
    return json.dumps(tools, ensure_ascii=False) if isinstance(tools, list) else tools


# --- ShareGPT → messages -----------------------------------------------------------------------


def sharegpt_to_messages(turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """ShareGPT turns (``from`` / ``value`` objects) as OpenAI messages (see the module docstring)."""
    return sharegpt_messages(turns)[0]


def sharegpt_messages(turns: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
    """`sharegpt_to_messages`, and the index of the turn each message comes from."""
    parts: list[_Part] = []
    for turn in turns:
        role, value = turn["from"], turn["value"]
        parts.append(split_assistant(value) if role == "gpt" else split_tool(value) if role == "tool" else None)
    links = _link_results(parts)
    messages: list[dict[str, Any]] = []
    owners: list[int] = []
    for i, (turn, part) in enumerate(zip(turns, parts, strict=True)):
        extra = {key: value for key, value in turn.items() if key not in ("from", "value")}
        if isinstance(part, AssistantParts):
            messages.append(_ordered(_assistant(part, links.call_ids.get(i, [])), extra))
        elif isinstance(part, tuple):
            for k, result in enumerate(part):
                message: dict[str, Any] = {"role": "tool", "tool_call_id": links.result_ids[i, k]}
                if links.result_names[i, k] is not None:
                    message["name"] = links.result_names[i, k]
                message["content"] = result.content
                messages.append(_ordered(message, extra))
                owners.append(i)
            continue
        else:
            messages.append(_ordered({"role": _OPENAI_ROLE[turn["from"]], "content": turn["value"]}, extra))
        owners.append(i)
    return messages, owners


@dataclass
class _Links:
    """The ids of every call (by assistant turn) and of every result, and each result's name."""

    call_ids: dict[int, list[str]] = field(default_factory=dict)
    result_ids: dict[tuple[int, int], str] = field(default_factory=dict)  # (tool turn, result) → id
    result_names: dict[tuple[int, int], str | None] = field(default_factory=dict)


def _link_results(parts: Sequence[_Part]) -> _Links:
    """Match every result to a call of the nearest assistant turn before it (tool turns between).

    A call's id is its own, else its result's, else ``call_<turn>_<n>``; a result answering no
    call keeps its own id, else gets ``call_<turn>_<n>`` of its own place.
    """
    links = _Links()
    owner: int | None = None
    results: list[tuple[int, int, HermesResult]] = []
    for i, part in enumerate(parts):
        if isinstance(part, tuple):
            results.extend((i, k, result) for k, result in enumerate(part))
            continue
        _link_group(parts, owner, results, links)
        owner, results = (i if isinstance(part, AssistantParts) else None), []
    _link_group(parts, owner, results, links)
    return links


def _link_group(
    parts: Sequence[_Part], owner: int | None, results: list[tuple[int, int, HermesResult]], links: _Links
) -> None:
    part = parts[owner] if owner is not None else None
    calls = part.calls if isinstance(part, AssistantParts) else ()
    answered: dict[int, tuple[int, int, HermesResult]] = {}
    for i, k, result in results:
        n = _match(result, calls, answered)
        if n is None:
            links.result_ids[i, k] = result.call_id or f"call_{i}_{k}"
            links.result_names[i, k] = result.name
        else:
            answered[n] = (i, k, result)
    if owner is None:
        return
    ids = []
    for n, call in enumerate(calls):
        result_id = answered[n][2].call_id if n in answered else None
        ids.append(call.call_id or result_id or f"call_{owner}_{n}")
    links.call_ids[owner] = ids
    for n, (i, k, result) in answered.items():
        links.result_ids[i, k] = ids[n]
        links.result_names[i, k] = result.name or calls[n].name


def _match(result: HermesResult, calls: Sequence[HermesCall], answered: dict[int, Any]) -> int | None:
    """The unanswered call `result` answers: same id, else same name, else (unnamed) the next one."""
    open_calls = [n for n in range(len(calls)) if n not in answered]
    if result.call_id is not None:
        for n in open_calls:
            if calls[n].call_id == result.call_id:
                return n
    # A call with an id of its own is answered by that id only.
    fits = [n for n in open_calls if calls[n].call_id is None]
    if result.name is not None:
        return next((n for n in fits if calls[n].name == result.name), None)
    return fits[0] if fits else None


def _assistant(part: AssistantParts, ids: list[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": part.content if part.calls else part.content or ""}
    if part.calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call, call_id in zip(part.calls, ids, strict=True)
        ]
    return message


def _ordered(message: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """The format's keys first, then the turn's own keys (a clash is won by the format's key)."""
    return {**message, **{key: value for key, value in extra.items() if key not in message}}


# --- messages → ShareGPT -----------------------------------------------------------------------


def messages_to_sharegpt(record: dict[str, Any], fmt: ConversationFormat) -> list[dict[str, Any]]:
    """OpenAI messages as ShareGPT turns, each value as the reader renders the message."""
    messages = record[fmt.key]
    turns = to_turns(record, fmt)
    conversation = []
    for message, turn in zip(messages, turns, strict=True):
        used = {"role", "content"}
        if turn.role == "gpt":
            used.add("tool_calls")
        elif turn.role == "tool":
            used.update(("tool_call_id", "name"))
        extra = {key: value for key, value in message.items() if key not in used}
        conversation.append(_ordered({"from": turn.role, "value": turn.value}, extra))
    return conversation


# --- the record ---------------------------------------------------------------------------------


def _with_conversation(record: dict[str, Any], key: str, new_key: str, conversation: list[Any]) -> dict[str, Any]:
    """`record` with its conversation under `new_key` in place of `key`, `tools` as JSON text."""
    if new_key != key and new_key in record:
        new_key = key  # never overwrite another key of the record
    out: dict[str, Any] = {}
    for name, value in record.items():
        if name == key:
            out[new_key] = conversation
        elif name in _TOOL_KEYS:
            out[name] = tools_text(value)
        else:
            out[name] = value
    return out


# --- the trainers' shape: hf-chat --------------------------------------------------------------


def to_hf_chat(
    record: dict[str, Any], fmt: ConversationFormat, *, tools_key: str = "tools"
) -> tuple[dict[str, Any], list[int] | None]:
    """`record` (read in `fmt`) in the trainers' shape, and the turn each message comes from.

    The shape is what a training recipe needs and nothing it must undo:

    - ``messages``: the OpenAI messages (a ShareGPT record converted as for ``messages``), each
      call's ``arguments`` the object its JSON text encodes (Hugging Face's convention: the
      templates of Qwen, Llama 3.1 and DeepSeek write ``arguments | tojson``, which turns JSON
      text into a quoted string); arguments that encode no object stay as they are, a null
      ``content`` beside calls is ``""`` (`with_object_arguments`), a ``developer`` message is a
      ``system`` one (`as_template_role`), and a content given as a list
      of text parts is their texts joined with newlines, as the reader reads it (the templates
      take a string). ``train`` is kept on
      assistant messages (set to true where there is none: every assistant turn a record holds
      is a training target unless marked otherwise) and removed from every other message: a mark
      on a tool or user message would make axolotl train on it.
    - ``tools``: the schemas (under `tools_key`) as JSON text: tool schemas differ from source to
      source, and a column of objects gets one Arrow struct type fixed by the first block
      `datasets` reads, so a later block with other tools stops the load; text loads whatever the
      mix. A record with no tools (none, null, blank or ``"null"`` text) has ``"[]"`` (`hf_chat_tools.NO_TOOLS`; each
      schema's ``parameters`` given as JSON text are written as an object: `read.hf_chat_tools`),
      never null: a column null in every row of the first block (or file) `datasets` reads is
      typed null, and a later block's text stops the load. TRL and axolotl ``json.loads`` a
      string, and stop on blank text (axolotl on the None ``"null"`` gives); an empty list is
      no tools to axolotl and to every recipe of `training` (`tools_of`).
    - ``metadata``: every other key of the record, as JSON text (``"{}"`` when there is none),
      for the same reason: sources keep their own keys (``reward``, ``task_id``...).

    The messages themselves stay objects: their keys differ (``tool_calls`` on some, ``train``
    on assistant messages only), so `datasets` (4.7 and later) types the column as JSON objects,
    each message read back with exactly its own keys and its arguments with exactly theirs. A
    record already in this shape (re-compressed) keeps its metadata as it is.
    """
    if fmt.name == "sharegpt":
        messages, owners = sharegpt_messages(record[fmt.key])
    else:
        messages, owners = list(record[fmt.key]), None
    own_shape = fmt.key == "messages" and set(record) <= set(HF_CHAT_KEYS) and isinstance(record.get("metadata"), str)
    if own_shape:
        metadata = record["metadata"]
    else:
        rest = {key: value for key, value in record.items() if key not in (fmt.key, tools_key)}
        metadata = _json_text_of(rest)
    tools = record.get(tools_key)
    out = {
        "messages": [hf_chat_message(message) for message in messages],
        "tools": hf_chat_tools(tools),
        "metadata": metadata,
    }
    return out, owners


def hf_chat_message(message: Any) -> Any:
    """One OpenAI message as Hugging Face chat templates take it, with its mark (see `to_hf_chat`):
    a content given as a list of text parts is the one text the reader reads (`read.formats.text_content`)."""
    if not isinstance(message, dict):
        return message
    message = as_template_role(text_content(message))
    if message.get("role") != "assistant":
        return without_mark(message)
    out = with_object_arguments(message)
    if not isinstance(out.get(TRAIN_KEY), bool):
        out = {**out, TRAIN_KEY: True}
    return out


def with_object_arguments(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with each call's ``arguments`` the object its JSON text encodes (itself if none
    does), and a null ``content`` beside calls as ``""``: transformers drops a null key before
    rendering, and templates that read ``message.content`` (Qwen3's) then stop on it. An empty
    ``tool_calls`` list is left out, as the reader reads it (no calls): Llama 3.1's template takes
    a message holding the key for a call turn and refuses one without exactly one call."""
    if message.get("role") == "assistant" and "content" in message and message["content"] is None:
        message = {**message, "content": ""}
    if message.get("tool_calls") == []:
        message = {key: value for key, value in message.items() if key != "tool_calls"}
    return _object_arguments(message)


def _object_arguments(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return message
    converted = [_call_with_object_arguments(call) for call in calls]
    if all(new is old for new, old in zip(converted, calls, strict=True)):
        return message
    return {**message, "tool_calls": converted}


def as_template_role(message: dict[str, Any]) -> dict[str, Any]:
    """`message` with OpenAI's ``developer`` role written ``system``, the role the reader reads it
    as: the templates of Qwen 2.5, Qwen3 and DeepSeek V3.1 render no other, and dropped it (the
    system prompt of OpenAI's newer models), so an answer was learned without its instructions."""
    if message.get("role") != "developer":
        return message
    return {**message, "role": "system"}


def without_mark(message: dict[str, Any]) -> dict[str, Any]:
    """`message` without a ``train`` key."""
    if TRAIN_KEY not in message:
        return message
    return {key: value for key, value in message.items() if key != TRAIN_KEY}


def _call_with_object_arguments(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    arguments = arguments_object(function["arguments"])
    if arguments is None or json_text(arguments) is None:  # no object, or nested past what JSON writes
        return call
    return {**call, "function": {**function, "arguments": arguments}}


def _json_text_of(value: Any) -> str:
    """JSON text of a value read from JSON: the standard library keeps what orjson would change
    (integers beyond 64 bits, NaN)."""
    return json.dumps(value, ensure_ascii=False)
