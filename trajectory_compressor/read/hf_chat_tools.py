"""``hf-chat``'s ``tools`` column: the schemas as JSON text, never null, each one's parameters an object.

- Text, so `datasets` types the column one way whatever the sources' schemas (see
  `read.convert_format.to_hf_chat`); ``"[]"`` (`NO_TOOLS`) for a record with none, never null: a
  column null through the first block (10 MB of JSON lines) or the first of several files is
  typed null, and the next text stops the load.
- A schema's ``parameters`` given as JSON text is written as the value it encodes. axolotl 0.19
  decodes such text itself (`_get_tools`, axolotl/prompt_strategies/chat_template.py:1204-1220);
  TRL, veRL and the chat-template count hand the schema to the template as it is, and ``tool |
  tojson`` wrote the parameters as one quoted string: the model saw another system prompt under
  axolotl than under the others, and axolotl's rows were shorter than the metrics' count. Text
  that is not JSON, in a ``{"function": ...}`` schema, stops axolotl (it raises on it):
  `parameters_problem` names it, and `read.hf_chat_checks` refuses the record.
"""

from __future__ import annotations

import json
from typing import Any

NO_TOOLS = "[]"


def hf_chat_tools(tools: Any) -> str:
    """The record's tools (a list, its JSON text, or none) as ``hf-chat`` writes them."""
    if isinstance(tools, str):
        if not tools.strip() or tools.strip() == "null":
            return NO_TOOLS
        try:
            decoded = json.loads(tools)
        except ValueError:  # refused before it is written (`read.hf_chat_checks`)
            return tools
        if not isinstance(decoded, list):
            return tools
        schemas = _with_object_parameters(decoded)
        return tools if schemas is decoded else _text(schemas)
    if tools is None:
        return NO_TOOLS
    return _text(_with_object_parameters(tools) if isinstance(tools, list) else tools)


def parameters_problem(tools: list[Any]) -> str | None:
    """The first ``{"function": ...}`` schema whose ``parameters`` are text that is not JSON, as a
    reason (None: none is)."""
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            continue
        parameters = function.get("parameters")
        if isinstance(parameters, str) and _decoded(parameters) is None:
            return f"'tools'[{index}] ({function.get('name')!r}): 'parameters' are text that is not valid JSON"
    return None


def _with_object_parameters(tools: list[Any]) -> list[Any]:
    converted = [_tool_with_object_parameters(tool) for tool in tools]
    return tools if all(new is old for new, old in zip(converted, tools, strict=True)) else converted


def _tool_with_object_parameters(tool: Any) -> Any:
    if not isinstance(tool, dict):
        return tool
    function = tool.get("function")
    if isinstance(function, dict):
        decoded = _holder_with_object_parameters(function)
        return tool if decoded is function else {**tool, "function": decoded}
    return _holder_with_object_parameters(tool)  # a bare schema (ToolBench's): name, parameters


def _holder_with_object_parameters(holder: dict[str, Any]) -> dict[str, Any]:
    parameters = holder.get("parameters")
    if not isinstance(parameters, str):
        return holder
    decoded = _decoded(parameters)
    return holder if decoded is None else {**holder, "parameters": decoded[0]}


def _decoded(text: str) -> tuple[Any] | None:
    """The value `text` encodes, in a 1-tuple (None: it is not JSON)."""
    try:
        return (json.loads(text),)
    except (ValueError, RecursionError):
        return None


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
