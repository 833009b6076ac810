"""LLaMA-Factory: one sample per trained assistant turn, in its own ShareGPT format.

LLaMA-Factory reads no per-message mask. With ``mask_history: true`` it trains the last
assistant-side turn of a sample and nothing before it (`data/processor/supervised.py`), so a
record with several trained turns (a window, a row) becomes one sample per trained turn: the
conversation up to and including it, which is the context the agent had when it wrote it.

Its converter (`data/converter.py`, `SharegptDatasetConverter`) takes a sample only if its
user-side turns (``human``, ``observation``) and assistant-side turns (``gpt``,
``function_call``) alternate, starting with the user's side; any other sample is emptied and
skipped. A compressed row breaks that rule where the summary (a user turn) follows the head's
tool result, and agent runs break it where one call has several results. So a sample here is
written the way LLaMA-Factory's own OpenAI converter and formatters read a conversation:

- the system message is the sample's first turn (``system``);
- a user message is ``human``; an assistant message ``gpt``, or with calls ``function_call``: its
  text, then one ``<tool_call>`` block holding its calls as a JSON list of ``{"name",
  "arguments"}`` objects. Their `FunctionFormatter` (`data/formatter.py`) renders the calls with
  the template's own tool format and keeps the text before the block; the OpenAI converter, given
  the same message, drops that text (`converter.py`: the content becomes the JSON of the calls);
- the tool results of one call turn are one ``observation``, joined as their OpenAI converter
  joins them (``"\\n</tool_response>\\n<tool_response>\\n"``);
- a user message right after tool results (the summary, most often) joins that observation after
  a blank line, and consecutive user messages join each other: the ``[CONTEXT SUMMARY]:`` prefix
  still says what it is;
- consecutive assistant turns before the trained one join into one (text, then calls); a trained
  turn right after another assistant turn is left so, and LLaMA-Factory skips that sample as it
  would skip it in the uncompressed input (joining them would train the earlier turn too);
- ``tools`` is the schemas' JSON text (``""`` when there are none), as their loader expects.

Every value is text, so `datasets` loads any mix of sources. The `dataset_info.json` entry is
`DATASET_INFO` (with ``file_name``); train with ``mask_history: true``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajectory_compressor.training.view import is_trained, messages_of, tools_of

DATASET_INFO: dict[str, Any] = {
    "formatting": "sharegpt",
    "columns": {"messages": "conversations", "tools": "tools"},
}
RESULTS_JOIN = "\n</tool_response>\n<tool_response>\n"  # LLaMA-Factory's OpenAI converter's join
_USER_SIDE = ("human", "observation")


@dataclass(frozen=True)
class _Turn:
    """One sample turn before it is written: its LLaMA-Factory role, its text, its calls."""

    role: str  # system, human, observation, gpt (calls: function_call)
    text: str
    calls: tuple[dict[str, Any], ...] = ()

    @property
    def user_side(self) -> bool:
        return self.role in _USER_SIDE

    @property
    def assistant_side(self) -> bool:
        return self.role == "gpt"

    def joined(self, other: _Turn) -> _Turn:
        """This turn and the next one of its side as one (see the module docstring)."""
        if self.assistant_side:
            texts = [text for text in (self.text, other.text) if text]
            return _Turn("gpt", "\n\n".join(texts), (*self.calls, *other.calls))
        results = self.role == other.role == "observation"
        role = "observation" if "observation" in (self.role, other.role) else "human"
        return _Turn(role, self.text + (RESULTS_JOIN if results else "\n\n") + other.text)

    def written(self) -> dict[str, str]:
        if not self.calls:
            return {"from": self.role, "value": self.text}
        block = "<tool_call>" + json.dumps(list(self.calls), ensure_ascii=False) + "</tool_call>"
        return {"from": "function_call", "value": f"{self.text}\n{block}" if self.text else block}


def llamafactory_samples(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One LLaMA-Factory sample per trained assistant turn of `record` (see the module docstring)."""
    messages = messages_of(record)
    tools = tools_of(record)
    tools_text = json.dumps(tools, ensure_ascii=False) if tools else ""
    turns = [_turn(message) for message in messages]
    samples = []
    for position, message in enumerate(messages):
        if is_trained(message):
            sample = [*_alternating(turns[:position]), turns[position]]
            samples.append({"conversations": [turn.written() for turn in sample], "tools": tools_text})
    return samples


def write_llamafactory(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write every sample of `records` as JSON lines to `path` (its folder made if missing, as
    LLaMA-Factory's `data/` is); returns how many were written."""
    written = 0
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            for sample in llamafactory_samples(record):
                handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
                written += 1
    return written


def _alternating(context: list[_Turn]) -> list[_Turn]:
    """The context before a trained turn, each run of same-side turns joined into one; a run of
    user-side turns is joined whatever follows it (the trained turn is assistant-side)."""
    joined: list[_Turn] = []
    for turn in context:
        previous = joined[-1] if joined else None
        same_side = previous is not None and (
            (turn.user_side and previous.user_side) or (turn.assistant_side and previous.assistant_side)
        )
        if previous is not None and same_side:
            joined[-1] = previous.joined(turn)
        else:
            joined.append(turn)
    return joined


def _turn(message: dict[str, Any]) -> _Turn:
    role = message.get("role")
    text = _text(message.get("content"))
    if role == "assistant":
        return _Turn("gpt", text, tuple(_call(call) for call in message.get("tool_calls") or ()))
    return _Turn({"system": "system", "tool": "observation"}.get(str(role), "human"), text)


def _call(call: Any) -> dict[str, Any]:
    function = call.get("function", {}) if isinstance(call, dict) else {}
    return {"name": function.get("name"), "arguments": function.get("arguments")}


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):  # text parts
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)
