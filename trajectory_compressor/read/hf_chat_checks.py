"""What ``hf-chat`` refuses to write: a record the reader accepts, but that a trainer would stop on.

`read.convert_format.WriteShape.check` asks this of every record of an ``hf-chat`` run before it
is counted (`run.prepare.prepare_rows`), so such a record is a reject, named with its file, line
and reason, rather than a row that loads and then stops the trainer mid-dataset.
"""

from __future__ import annotations

import json
from typing import Any

from trajectory_compressor.read.formats import ConversationFormat, RecordError, record_tools
from trajectory_compressor.read.hermes import arguments_object, json_text
from trajectory_compressor.read.hf_chat_tools import parameters_problem


def hf_chat_refusal(record: dict[str, Any], fmt: ConversationFormat, *, tools_key: str = "tools") -> None:
    """Raise `RecordError` when `record` (read in `fmt`) has no ``hf-chat`` form the trainers take.

    The shape promises what the recipes rely on, and a row that breaks the promise loads and then
    stops the trainer mid-dataset, so it is refused here, with the reason, rather than written:

    - ``tools`` (under `tools_key`) must be what `apply_chat_template` takes: absent, null, a list
      of schema objects or its JSON text (``"not json"`` makes TRL's and `ChatTokens`' render
      fail, as it rejects the row under `--count-mode chat-template`), no schema's ``parameters``
      text that is not JSON (`read.hf_chat_tools.parameters_problem`: axolotl stops on it);
    - each OpenAI call's ``arguments`` must be an object or the JSON text of one: templates write
      ``arguments | tojson`` or iterate them, axolotl ``json.loads`` them. Nothing is made up for
      text that encodes no object. (ShareGPT markup needs no check: a ``<tool_call>`` that is no
      such call stays text, `read.hermes`.)
    """
    try:
        tools = record_tools(record, tools_key)
    except RecordError as exc:
        raise RecordError(f"{exc}: hf-chat writes them for the chat template, which takes a list of schemas") from None
    problem = parameters_problem(tools or [])
    if problem is not None:
        raise RecordError(f"{problem}: axolotl decodes a schema's text parameters and stops on this")
    if fmt.name != "openai":
        return
    for i, message in enumerate(record[fmt.key]):
        calls = message.get("tool_calls") if isinstance(message, dict) and message.get("role") == "assistant" else None
        for j, call in enumerate(calls if isinstance(calls, list) else ()):
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            problem = _arguments_problem(arguments)
            if problem is not None:
                name = function.get("name") if isinstance(function, dict) else None
                raise RecordError(
                    f"turn {i}: tool_calls[{j}] ({name!r}): 'arguments' {problem}: hf-chat writes each call's "
                    "arguments as an object, which chat templates and trainers read"
                )


def _arguments_problem(arguments: Any) -> str | None:
    """What keeps `arguments` from being written as an object (None: nothing)."""
    if isinstance(arguments, str):
        parsed = arguments_object(arguments)
        if parsed is not None:
            return None if json_text(parsed) is not None else "nest too deeply to write"
        try:
            json.loads(arguments)
        except ValueError:
            return "are not valid JSON"
        except RecursionError:
            return "nest too deeply to write"
        return "are JSON text of no object"
    if isinstance(arguments, dict):
        return None if json_text(arguments) is not None else "nest too deeply to write"
    if arguments is None:
        return "are missing"
    kind = {list: "an array", bool: "a boolean", int: "a number", float: "a number"}.get(type(arguments))
    return f"are {kind or type(arguments).__name__}, not an object"
